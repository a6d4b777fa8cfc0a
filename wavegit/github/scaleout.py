"""Scale-out: a wave's items on many runners (``wavegit claim`` -> ``wavegit work`` per item -> ``collect``;
the workflow: docs/action.md, "Fan-out: the matrix").

- **claim** is the wave's usual claim, then pushes ``wavegit/<W>`` at the wave's base, where every runner
  starts its item.
- **work** runs one claimed item as ``wavegit run`` runs each item and pushes (forced) its item branch
  ``wavegit/items/<W>/<ID>``: ONE commit on the base, holding the verified change (or the base's own tree),
  whose message ``wavegit result: <ID> in <W>`` carries ``Wavegit-Result-Json: {...}``, the attempts as the
  report and the tracker record need them plus the last logs' tails. No ``Wavegit-Item`` trailer: sync and
  the hook do not take it for a delivered item.
- **collect** finishes the wave like ``wavegit run`` (``engine.pipeline.run_claimed`` with
  :class:`ResultBranches` as its item source); an item without a result branch goes back to ``todo`` as one
  that never started. Once the wave is recorded it deletes the result branches it read, with a lease.

The wave budget (``budget.wave_usd``) applies per runner; the day budget is checked by every runner.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from wavegit.attempts import logcap, snapshot, wavebranch
from wavegit.core import git, jsondecode
from wavegit.core.errors import UsageError
from wavegit.core.git import WaveId
from wavegit.core.repo import Repo
from wavegit.engine.claim import Claim, claim, earlier_claim, load_tracker, resolve_base
from wavegit.engine.outcome import REPORT_TAIL_LINES, WaveOutcome
from wavegit.engine.pipeline import Delivery, NoDelivery, WaveOptions, run_claimed
from wavegit.engine.runs import Attempt, Events, ItemRun, NoEvents, utc_now
from wavegit.engine.wave import Wave
from wavegit.model import report, tracker
from wavegit.model.config import Config, protected_of
from wavegit.model.lifecycle import Status
from wavegit.ownership import changes
from wavegit.trackerbranch import budget
from wavegit.trackerbranch.store import Snapshot, TrackerStore

RESULT_KEY = "Wavegit-Result-Json"
RESULT_FORMAT = 1
_LOG_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*\Z")


# -- the tracker and the wave branch ------------------------------------------------------------------------

def wave_items(loaded: tracker.Tracker, wave_id: WaveId, status: Status) -> tuple[tracker.Item, ...]:
    """The items of ``wave_id`` in ``status``, in tracker order."""
    return tuple(item for item in loaded.items if item.wave == wave_id and item.status == status)


def remote_wave_tip(repo: Repo, config: Config, wave_id: WaveId) -> str:
    """The wave branch's tip on the remote (fetched); before ``collect``, the base ``claim`` put it at."""
    branch = wavebranch.wave_branch(wave_id)
    if not repo.has_remote(config.remote):
        raise UsageError(f"scale-out needs the remote {config.remote!r}, where the runners meet")
    refspec = f"+refs/heads/{branch}:refs/remotes/{config.remote}/{branch}"
    try:
        git.fetch(repo.root, config.remote, [refspec])
    except git.GitError as exc:
        raise UsageError(f"no wave branch {branch} on {config.remote} (claim the wave with `wavegit claim`)"
                         ) from exc
    return git.commit_of(repo.root, f"refs/remotes/{config.remote}/{branch}")


# -- claim --------------------------------------------------------------------------------------------------

MAX_MATRIX_JOBS = 256
"""GitHub runs at most this many jobs per matrix: a wave fanned out over runners claims no more items."""


@dataclass(frozen=True)
class Claimed:
    wave_id: WaveId
    """Empty when nothing was selected."""
    item_ids: tuple[str, ...]


def claim_wave(repo: Repo, config: Config, store: TrackerStore, *, max_items: int) -> Claimed:
    """Claim the next wave (at most :data:`MAX_MATRIX_JOBS` items) and push its branch at its base."""
    max_items = min(max_items, MAX_MATRIX_JOBS)
    now = utc_now()
    claimed = claim(repo, config, store, max_items=max_items, wave_id=wavebranch.new_wave_id(now), now=now)
    if not claimed.items:
        return Claimed(WaveId(""), ())
    base = resolve_base(repo, config, claimed.commit)
    branch = wavebranch.wave_branch(claimed.wave_id)
    git.push(repo.root, config.remote, [f"{base}:refs/heads/{branch}"])
    return Claimed(claimed.wave_id, claimed.plan.selected)


# -- one item -----------------------------------------------------------------------------------------------

def run_item(repo: Repo, config: Config, store: TrackerStore, wave_id: WaveId, item: tracker.Item, base: str,
             snapshot: Snapshot) -> ItemRun:
    """Run one item of a claimed wave from ``base`` the way a wave runs each of its items."""
    day_spent = budget.check_day(config.budget, repo.root, snapshot.commit, utc_now())
    claimed = earlier_claim(wave_id, (item,), snapshot, day_spent)
    wave = Wave(repo, config, store, claimed, base)
    run = ItemRun(item)
    try:
        wave.run_items([run])
    finally:
        # Only this item's branch: other items of the wave may be running in this clone.
        wavebranch.delete_branch(repo.root, wavebranch.item_branch(wave_id, item.id))
    return run


def work(repo: Repo, config: Config, store: TrackerStore, wave_id: WaveId, item_id: str, *,
         bundle: Path | None = None) -> ItemRun:
    """``wavegit work``: run a claimed item and push its result branch, or with ``bundle`` write it there
    as a git bundle (for a job whose token cannot push: the collecting job fetches it)."""
    snapshot = store.read()
    item = _claimed_item(load_tracker(snapshot, repo, config), wave_id, item_id)
    base = remote_wave_tip(repo, config, wave_id)
    run = run_item(repo, config, store, wave_id, item, base, snapshot)
    tree = git.tree_of(repo.root, run.commit or base)
    message = f"wavegit result: {item.id} in {wave_id}\n\n{RESULT_KEY}: {encode_result(run, base)}\n"
    commit = git.commit_tree(repo.root, tree, [git.CommitSha(base)], message)
    branch = wavebranch.item_branch(wave_id, item.id)
    if bundle is None:
        git.push(repo.root, config.remote, [f"{commit}:refs/heads/{branch}"], force=True)
        return run
    wavebranch.set_branch(repo.root, branch, commit)
    try:
        git.create_bundle(repo.root, bundle.resolve(), [f"refs/heads/{branch}"])
    finally:
        wavebranch.delete_branch(repo.root, branch)
    return run


def _claimed_item(loaded: tracker.Tracker, wave_id: WaveId, item_id: str) -> tracker.Item:
    item = loaded.get(item_id)
    if item is None:
        raise UsageError(f"--item {item_id}: no such item in the tracker")
    if item.status != Status.IN_PROGRESS or item.wave != wave_id:
        raise UsageError(f"--item {item_id}: not claimed by wave {wave_id} (status {item.status}, "
                         f"wave {item.wave or 'none'})")
    return item


# -- the result JSON ----------------------------------------------------------------------------------------

def encode_result(run: ItemRun, base: str) -> str:
    """One line of JSON: the item's attempts (times as the report writes them, logs by file name), why it
    stopped, its last logs' tails."""
    last = run.attempts[-1] if run.attempts else None
    logs = (last.log_path, last.test_log_path) if last is not None else ()
    tails = {path.name: logcap.log_tail(path, REPORT_TAIL_LINES) for path in logs if path is not None}

    def plain(value: object) -> str:
        if isinstance(value, datetime):
            return report.utc_timestamp(value)
        if isinstance(value, Path):
            return value.name
        raise TypeError(f"{type(value).__name__} in a result")

    return json.dumps({"format": RESULT_FORMAT, "base": base, "not_started": run.not_started,
                       "attempts": [asdict(attempt) for attempt in run.attempts], "tails": tails},
                      separators=(",", ":"), ensure_ascii=True, default=plain)


@dataclass(frozen=True)
class ItemResult:
    base: str
    not_started: str | None
    attempts: list[Attempt]
    tails: dict[str, str]


def result_from_message(message: str, where: str) -> ItemResult:
    """The :class:`ItemResult` in a result commit's message; UsageError naming ``where`` when it is bad."""
    prefix = f"{RESULT_KEY}: "
    lines = [line for line in message.splitlines() if line.startswith(prefix)]
    if len(lines) != 1:
        raise UsageError(f"{where}: not a wavegit result commit (no {RESULT_KEY} line)")
    try:
        data = jsondecode.loads(lines[0][len(prefix):])
        if not isinstance(data, dict) or data.pop("format", None) != RESULT_FORMAT:
            raise ValueError(f"expected a format {RESULT_FORMAT} object")
        result = jsondecode.decode_object(ItemResult, data, "$", _FROM_TEXT)
        for name in result.tails:
            _log_name(name)
    except ValueError as exc:
        raise UsageError(f"{where}: unreadable result: {exc}") from None
    return result


def _log_name(name: str) -> Path:
    # Only a bare file name: the collector writes tails under its own log folder.
    if not _LOG_NAME.match(name):
        raise ValueError(f"{name!r} is not a log file name")
    return Path(name)


def _utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc)


_FROM_TEXT: jsondecode.FromText = {datetime: _utc, Path: _log_name}


def restore_run(item: tracker.Item, result: ItemResult, commit: str, logs: Path) -> ItemRun:
    """The :class:`ItemRun` a result describes; log tails written under ``logs``, the verified commit
    replaced by ``commit`` (the pushed result commit: the same tree on the same base)."""
    logs.mkdir(parents=True, exist_ok=True)
    for name, text in result.tails.items():
        (logs / name).write_text(text + "\n" if text else "", encoding="utf-8")
    for attempt in result.attempts:
        attempt.log_path = logs / attempt.log_path.name if attempt.log_path else None
        attempt.test_log_path = logs / attempt.test_log_path.name if attempt.test_log_path else None
    if result.attempts and result.attempts[-1].commit is not None:
        result.attempts[-1].commit = commit
    return ItemRun(item, attempts=result.attempts, not_started=result.not_started)


# -- collect ------------------------------------------------------------------------------------------------

RESULT_ARTIFACT_PREFIX = "wavegit-result-"
"""The artifact a fan-out work job uploads its item's bundle as: ``wavegit-result-<ID>``."""
NO_RESULT = "not started: no result from `wavegit work` (the runner did not finish)"


def collect(repo: Repo, config: Config, store: TrackerStore, wave_id: WaveId, *, push: bool = True,
            delivery: Delivery | None = None, bundles: Path | None = None) -> WaveOutcome:
    """``wavegit collect``: finish a scaled-out wave from its item branches (see the module docstring);
    with ``bundles``, from the ``<ITEM>.bundle`` files ``wavegit work --bundle`` wrote (found under it)."""
    snapshot = store.read()
    items = wave_items(load_tracker(snapshot, repo, config), wave_id, Status.IN_PROGRESS)
    if not items:
        raise UsageError(f"--wave {wave_id}: no item is in progress in this wave (already collected?)")
    base = remote_wave_tip(repo, config, wave_id)
    prefix = f"{wavebranch.ITEM_BRANCH_PREFIX}{wave_id}/"
    tracking = f"refs/remotes/{config.remote}/{prefix}"
    git.fetch(repo.root, config.remote, [f"+refs/heads/{prefix}*:{tracking}*"], prune=True)
    pushed = git.for_each_ref(repo.root, tracking)
    if bundles is not None:
        _fetch_bundles(repo, bundles, items, prefix, tracking)
    started = utc_now()
    rep = report.WaveReport(wave_id=wave_id, base_sha=base, started_at=report.utc_timestamp(started),
                            budget=report.BudgetReport(wave_usd_limit=config.budget.wave_usd,
                                                       day_usd_limit=config.budget.day_usd))
    events = NoEvents()
    outcome = run_claimed(repo, config, store, earlier_claim(wave_id, items, snapshot, 0.0), rep,
                          source=ResultBranches(repo, base, tracking), delivery=delivery or NoDelivery(),
                          options=WaveOptions(push=push, events=events))
    if push and pushed:
        _delete_result_branches(repo, config, pushed, tracking, prefix, events)
    git.delete_refs(repo.root, dict.fromkeys(git.for_each_ref(repo.root, tracking)))
    return outcome


def _delete_result_branches(repo: Repo, config: Config, pushed: dict[str, git.CommitSha], tracking: str,
                            prefix: str, events: Events) -> None:
    """The result branches the runners pushed, once the wave is recorded: each only while it is still the
    commit collect read (a lease), so a branch pushed since is kept. A failure leaves them, with a note."""
    remote_refs = {f"refs/heads/{prefix}{ref.removeprefix(tracking)}": sha for ref, sha in pushed.items()}
    try:
        git.push(repo.root, config.remote, [f":{ref}" for ref in remote_refs], lease=remote_refs)
    except git.GitError as exc:
        events.note(f"kept the result branches {prefix}*: could not delete them ({exc.stderr.strip()})")


@dataclass(frozen=True)
class ResultBranches:
    """A scaled-out wave's item runs, read from the result branches its runners pushed (fetched under
    ``tracking``), all built on its pinned ``base``."""

    repo: Repo
    pinned: str
    tracking: str

    def base(self, claimed: Claim) -> str:
        del claimed
        return self.pinned

    def fill(self, wave: Wave, runs: list[ItemRun]) -> None:
        events = wave.context.events
        links = snapshot.links_of(self.repo.root, self.pinned)  # the base's: one read for every item
        for n, run in enumerate(runs):
            runs[n] = found = _collected_run(self.repo, run.item, f"{self.tracking}{run.item.id}",
                                             self.pinned, wave.logs, protected_of(wave.config), links)
            # The wave's event log (`wavegit status`) says how each item ended, as a wave run here does.
            last = found.attempts[-1] if found.attempts else None
            if found.commit is not None:
                events.event(run.item.id, "verified", attempt=last.number if last else None)
            elif last is not None:
                events.event(run.item.id, "failed", last.error or "", attempt=last.number)
            else:
                events.event(run.item.id, "not started", found.not_started or "")


def _fetch_bundles(repo: Repo, folder: Path, items: tuple[tracker.Item, ...], prefix: str,
                   tracking: str) -> None:
    """Each item's result only from its own artifact's folder, ``<folder>/wavegit-result-<ID>/<ID>.bundle``
    (download-artifact puts each artifact in a folder named after it): one item's job cannot speak for
    another, not even with a file named after it in its own artifact."""
    for item in items:
        bundle = folder / f"{RESULT_ARTIFACT_PREFIX}{item.id}" / f"{item.id}.bundle"
        if bundle.is_file():
            git.fetch(repo.root, str(bundle.resolve()),
                         [f"+refs/heads/{prefix}{item.id}:{tracking}{item.id}"])


def _recheck_ownership(repo: Repo, run: ItemRun, base: str, protected: tuple[str, ...] | None,
                       links: Mapping[str, str]) -> ItemRun:
    """The ownership check again, here, on the result's tree: the job that ran the worker is not trusted;
    ``links``: the base's symlinks."""
    last = run.attempts[-1] if run.attempts else None
    if last is None or last.commit is None:
        return run
    changed = git.changed_paths(repo.root, base, git.tree_of(repo.root, last.commit))
    judged = changes.judge(run.item.id, run.item.owns, protected, changed, links)
    if judged.error is not None:
        last.commit, last.files_changed, last.violations = None, judged.changed, judged.violations
        last.error = f"found by collect: {judged.error}"
    return run


def _collected_run(repo: Repo, item: tracker.Item, ref: str, base: str, logs: Path,
                   protected: tuple[str, ...] | None, links: Mapping[str, str]) -> ItemRun:
    commit = git.resolve_commit(repo.root, ref)
    if commit is None:
        return ItemRun(item, not_started=NO_RESULT)
    where = ref.removeprefix("refs/remotes/")
    result = result_from_message(git.commit_message(repo.root, commit), where)
    parent = git.first_parent(repo.root, commit)
    if result.base != base or parent != base:
        raise UsageError(f"{where}: built on {parent[:12]}, not on the wave's base {base[:12]}")
    return _recheck_ownership(repo, restore_run(item, result, commit, logs), base, protected, links)
