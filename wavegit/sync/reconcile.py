"""``wavegit sync``: reconcile the tracker with what waves left behind — branches, pull requests, leases.

All tracker changes are one compare-and-swap commit (none when nothing changed). The rules, per item
(:mod:`wavegit.sync.rules`; README, "Item lifecycle" and "A wave killed with kill -9"):

- ``in_progress`` with its ``Wavegit-Item`` commit in the base branch -> ``done``. With an expired lease
  (``claimed_at`` older than ``lease_ttl_s``, or unreadable), or at once when its scheduler ran on this
  machine and is gone: a commit of it on the wave branch -> ``review``, else ``todo`` with ``attempts`` + 1
  (``failed`` at ``max_attempts``; no attempt counted when its scheduler is known gone).
- ``review`` with ``pr`` while GitHub is configured: merged -> ``done``, closed unmerged -> ``todo``, and
  the report comment says so; otherwise ``done`` once its changes are in the base branch by a rule of
  :mod:`wavegit.sync.merged`. An item whose wave branch is gone everywhere stays, said each time
  (:func:`stranded`).

A shallow clone is deepened first (``--unshallow``), or sync stops (exit 2). Then, outside the commit, the
attempt folders (listed before the tracker is read, so a wave claiming meanwhile keeps its own) and local item
branches of waves with nothing ``in_progress`` are pruned, and settled waves' branches deleted
(:mod:`wavegit.sync.branches`; ``keep_branches`` keeps both).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone

from wavegit.attempts import wavebranch
from wavegit.core import heartbeat, wavelock
from wavegit.core.errors import WavegitError
from wavegit.core.git import WaveId
from wavegit.core.repo import Repo
from wavegit.model import tracker
from wavegit.model.config import Config, protected_of
from wavegit.model.lifecycle import Status
from wavegit.sync import branches as sync_branches
from wavegit.sync.prune import Pruned, find_leftovers, prune
from wavegit.sync.refs import WaveRefs
from wavegit.sync.rules import Facts, ItemChange, PullRequests, decide
from wavegit.trackerbranch import claims
from wavegit.trackerbranch.missing import no_tracker
from wavegit.trackerbranch.mutation import mutate
from wavegit.trackerbranch.store import Change, Snapshot, TrackerStore

SYNC_MESSAGE = "wavegit: sync: reconcile in-flight items with branches, pull requests and leases"


@dataclass
class SyncResult:
    items: list[ItemChange] = field(default_factory=list)
    pruned: list[Pruned] = field(default_factory=list)
    commit: str | None = None
    """The tracker commit; None when nothing changed or on a dry run."""
    errors: list[str] = field(default_factory=list)
    """What failed after the commit landed (report comments)."""
    branches: list[sync_branches.BranchFate] = field(default_factory=list)
    """Branches of settled waves deleted, or kept because they hold work not in the base branch."""
    stranded: list[Stranded] = field(default_factory=list)
    """Items left in review that nothing sync watches can move any more."""

    def lines(self) -> list[str]:
        """What changed (or, on a dry run, would change)."""
        return ([c.line() for c in self.items] + [p.line() for p in self.pruned]
                + [b.line() for b in self.branches if b.deleted])

    def notes(self) -> list[str]:
        """What sync leaves as it is and why: the branches it keeps (each once, when it becomes kept)."""
        return ([b.line() for b in self.branches if not b.deleted and not b.told]
                + [stuck.line for stuck in self.stranded])

    def to_json(self) -> list[dict[str, object]]:
        return ([c.to_json() for c in self.items] + [p.to_json() for p in self.pruned]
                + [b.to_json() for b in self.branches] + [stuck.to_json() for stuck in self.stranded])


@dataclass(frozen=True)
class Stranded:
    """An item in review whose wave branch is gone, on the remote and here, with its change not in the base
    branch and no pull request to ask: it stays in review (and holds its files) until someone decides."""

    id: str
    wave: WaveId
    line: str

    def to_json(self) -> dict[str, object]:
        return {"kind": "stranded", "id": self.id, "wave": self.wave, "detail": self.line}


def stranded(items: Sequence[tracker.Item], changed: set[str], facts: Facts,
             config: Config) -> list[Stranded]:
    """The review items sync left as they are with nothing left to watch: no PR (or no GitHub to ask) and
    no wave branch anywhere (a wave branch that is gone is no sign of a merge), each with what to do."""
    found = []
    for item in items:
        if (item.status != Status.REVIEW or item.id in changed or item.wave is None
                or (item.pr is not None and facts.pulls is not None) or facts.refs.heads(item.wave)):
            continue
        branch = wavebranch.wave_branch(item.wave)
        where = f"on {facts.refs.where} and here" if facts.refs.remote else "here"
        found.append(Stranded(item.id, item.wave, (
            f"{item.id} stays in review: its wave branch {branch} is gone ({where}) and its change is not "
            f"in {config.base_branch}; `wavegit reopen {item.id} --reason ...` runs it again, `wavegit done "
            f"{item.id} --merge-sha SHA` records a merge sync cannot see")))
    return found


def _load(snapshot: Snapshot, repo: Repo, config: Config) -> tracker.Tracker:
    if snapshot.text is None or snapshot.blob_sha is None:
        raise no_tracker(repo.root, f"{config.tracker_path} on {config.tracker_branch}")
    return tracker.load_cached(snapshot.text, snapshot.blob_sha, repo.cache_dir, config.tracker_path,
                               protected=protected_of(config))


def sync(repo: Repo, config: Config, store: TrackerStore, *, pulls: PullRequests | None = None,
         now: datetime | None = None, dry_run: bool = False) -> SyncResult:
    """Apply the rules in one compare-and-swap commit, prune, then update report comments."""
    moment = now or datetime.now(timezone.utc)
    leftovers = find_leftovers(repo)
    facts = Facts(WaveRefs(repo, config), pulls, claims.dead_waves(repo, config))
    seen: list[tuple[tracker.Tracker, list[ItemChange]]] = []

    def apply(snapshot: Snapshot) -> Change | None:
        loaded = _load(snapshot, repo, config)
        changes = [c for c in (decide(item, facts, config, moment) for item in loaded.items) if c is not None]
        seen[:] = [(loaded, changes)]
        if not changes:
            return None
        assert snapshot.text is not None
        return Change(tracker.set_items_fields(snapshot.text, {c.id: c.fields for c in changes}, loaded))

    result = SyncResult()
    if dry_run:
        apply(store.read())
    else:
        result.commit = mutate(store, apply, message=SYNC_MESSAGE).commit
        wavelock.forget(repo, facts.dead_waves)  # their claims are released now
    loaded, result.items = seen[0]
    new_status = {c.id: c.new for c in result.items}
    in_flight = {item.wave for item in loaded.items
                 if item.wave and new_status.get(item.id, item.status) == Status.IN_PROGRESS}
    if not dry_run:
        heartbeat.delete_gone(repo, facts.refs.remote, set(facts.dead_waves) - in_flight)
    result.pruned = prune(repo, leftovers, in_flight, dry_run=dry_run, branches=not config.keep_branches)
    if not config.keep_branches:
        unsettled = {item.wave for item in loaded.items if item.wave and new_status.get(item.id, item.status)
                     in (Status.IN_PROGRESS, Status.REVIEW)}
        result.branches = sync_branches.clean(facts.refs.branches(), unsettled, dry_run=dry_run,
                                              told_file=repo.kept_branches_file)
    result.stranded = stranded(loaded.items, set(new_status), facts, config)
    if pulls is not None and result.commit is not None:
        result.errors = update_comments(pulls, result.items)
    return result


def update_comments(pulls: PullRequests, changes: list[ItemChange]) -> list[str]:
    """Say on each affected PR's report comment what sync did; the errors (the tracker commit stands)."""
    by_pr: dict[int, list[ItemChange]] = {}
    for change in changes:
        if change.pr is not None and change.old == Status.REVIEW and change.new in (Status.DONE, Status.TODO):
            by_pr.setdefault(change.pr, []).append(change)
    errors: list[str] = []
    for number, group in sorted(by_pr.items()):
        ids = ", ".join(c.id for c in group)
        merged = group[0].new == Status.DONE
        sha = (group[0].merge_sha or "")[:12]
        outcome = (f"merged{' as ' + sha if sha else ''}; `wavegit sync` marked {ids} done" if merged
                   else f"closed without merging; `wavegit sync` returned {ids} to todo")
        try:
            pulls.mark_outcome(number, outcome)
        except WavegitError as exc:
            errors.append(f"PR #{number}: cannot update the report comment: {exc}")
    return errors
