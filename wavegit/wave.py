"""A wave's lifecycle: preflight, claim, worktrees and workers, verify, collect, record, report.

1. **Preflight and claim**: first, worktrees half-made by an interrupted ``git worktree add`` (a killed
   wave's) are removed, since they make every fetch fail; they become report notes. Then one
   compare-and-swap commit: its ``apply`` checks ``.wavegit/HALT`` and the day's budget on the snapshot it
   edits, re-plans with the (deterministic) planner and marks the chosen items ``in_progress`` with
   ``wave`` and ``claimed_at``. Halted or over budget: exit 3, nothing claimed.
   Nothing selected: an empty report, exit 0, nothing written.
2. **The wave branch** ``wavegit/<wave-id>`` starts at the base branch head (the claim commit when the
   tracker lives on the base branch). Nothing on it edits the tracker.
3. **Each item** runs in a fresh worktree on ``wavegit/items/<wave-id>/<item-id>``, ``concurrency`` items at
   once, its attempts one after another. First attempts' worktrees are made up to one batch ahead, in the
   background (:mod:`wavegit.workspaces`); a worktree is removed before its item's retry, else by the wave's
   cleanup, all at once (the files, then one ``git worktree prune``). Before every launch: HALT re-read
   (a read under ``HALT_FRESH_S`` old, the claim's included, is shared by a burst of launches), the wave
   budget (with what is left of the day's), cancellation.
   An attempt is verified when the worker exits 0, every changed path (new, deleted, both sides of a
   rename, mode changes, symlinks as paths) is owned by the item, something changed, and the item's test
   exits 0. Otherwise its changes are discarded and the next attempt, in a new worktree, gets the reason
   (test output tail, violations, timeout) in ``$WAVEGIT_FEEDBACK_FILE`` and appended to the prompt.
   A worker that cannot be launched stops the batch: running workers are cancelled, nothing new starts.
4. **Collect**: verified item commits (trailers ``Wavegit-Item``, ``Wavegit-Wave``, ``Wavegit-Prompt-Sha256``)
   are replayed onto the wave branch in tracker order, ``wave_test`` runs on the result, the branch is
   pushed (unless ``--no-push`` or there is no remote), then the optional ``open_pr`` hook (the GitHub
   step) may open the wave's pull request; its number is recorded as ``pr`` on the verified items.
5. **Record** is one compare-and-swap commit with a ``Wavegit-Cost`` trailer: verified items go to
   ``review``; failed items to ``todo`` with ``attempts`` and ``last_error``, or ``failed`` once their total
   attempts reach ``max_attempts``; items never started (halt, budget, a launch failure) back to ``todo``
   with ``attempts`` unchanged. Verified items go to ``review`` even without a pull request; ``wavegit sync``
   marks them ``done`` when the wave branch is merged into the base branch. A failed ``wave_test`` leaves
   them in ``review`` (the combination is for a human to judge) but the wave is not a success. When the
   wave branch could not be built or pushed, its items go back to ``todo``.
6. **Report**: JSON and Markdown under ``<git dir>/wavegit/reports/``; worktrees are removed and item
   branches deleted whatever happened (in the background while the wave branch is combined and pushed).

What a ``kill -9`` of the scheduler can leave (each commit is atomic, the branch is pushed before the
record): nothing at all; the claim only (items ``in_progress`` with this wave, no remote wave branch:
``sync`` returns them to ``todo`` once ``lease_ttl_s`` has passed); the claim and a pushed wave branch whose
commits' ``Wavegit-Item`` trailers name the finished items (``sync`` recovers them from it); or the full
record. Leftover worktrees and item branches are pruned by ``sync``.
"""

from __future__ import annotations

import hashlib
import math
import os
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Protocol

from wavegit import budget, git, halt, paths, report, runner, sandbox, tracker, worktree
from wavegit.config import HALT_PATH, Config
from wavegit.errors import (
    EXIT_HALTED,
    EXIT_OK,
    EXIT_RACE_LOST,
    EXIT_WORK_FAILED,
    RaceLostError,
    UsageError,
    WavegitError,
)
from wavegit.repo import Repo
from wavegit.select import Plan, select
from wavegit.store import Change, Snapshot, TrackerStore, mutate
from wavegit.workspaces import Spec, Workspaces

FEEDBACK_TAIL_LINES = 40
REPORT_TAIL_LINES = 30
_ERROR_CHARS = 300

Publish = Callable[[report.WaveReport], "int | None"]
"""The GitHub step: given the report of a pushed wave, open or find its pull request; its number or None."""
OpenPr = Callable[[report.WaveReport], "int | None"]
"""Called after the push, before the record, with the report so far: the pull request's number or None."""
Produce = Callable[["Wave", "list[ItemRun]"], None]
"""Fills the item runs of a wave in place; ``Wave.run_items`` unless the items ran elsewhere (scale-out)."""


class Events(Protocol):
    """Where a wave tells what happens (``wavegit.progress.Progress``); thread-safe."""

    def event(self, item_id: str, state: str, detail: str = "", *, attempt: int | None = None) -> None: ...

    def note(self, text: str) -> None: ...


class _NoEvents:
    def event(self, item_id: str, state: str, detail: str = "", *, attempt: int | None = None) -> None:
        del item_id, state, detail, attempt

    def note(self, text: str) -> None:
        del text


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass
class Attempt:
    """One try of one item, as the report and the tracker need it."""

    number: int
    worker: str
    prompt_sha256: str
    base: str
    started_at: datetime
    finished_at: datetime | None = None
    exit_code: int | None = None
    test_exit: int | None = None
    cost: float | None = None
    log_path: Path | None = None
    test_log_path: Path | None = None
    killed: str | None = None
    error: str | None = None
    feedback: str = ""
    """What the next attempt is told (empty when verified)."""
    files_changed: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    commit: str | None = None
    """The item commit when verified."""
    message: str = ""
    """Its commit message (with the trailers)."""
    counted: bool = True
    """Whether it counts toward the item's attempts: False when wavegit, not the item, stopped it."""
    launch_failed: bool = False

    def failed(self, what: str, result: runner.ProcessResult) -> bool:
        """Whether ``result`` (of the ``what`` process: worker or test) ends the attempt, noting why."""
        if result.killed == "cancelled":
            self.error, self.counted = "cancelled: the batch stopped", False
            return True
        if not result.ok:
            self.error = f"{what} {result.describe()}"
            return True
        return False


@dataclass
class ItemRun:
    item: tracker.Item
    attempts: list[Attempt] = field(default_factory=list)
    not_started: str | None = None
    """Why (another) attempt did not start: halted, budget, cancelled."""
    undelivered: str | None = None
    """Why a verified item's commit did not reach a pushed wave branch."""

    @property
    def commit(self) -> str | None:
        last = self.attempts[-1] if self.attempts else None
        return last.commit if last is not None else None

    @property
    def verified(self) -> bool:
        return self.commit is not None and self.undelivered is None

    @property
    def used(self) -> int:
        return sum(1 for a in self.attempts if a.counted)

    @property
    def cost(self) -> float:
        return sum(a.cost or 0.0 for a in self.attempts)

    @property
    def error(self) -> str | None:
        if self.verified:
            return None
        if self.undelivered:
            return self.undelivered
        last = self.attempts[-1] if self.attempts else None
        if last is not None and last.error and (last.counted or not self.not_started):
            return last.error
        return self.not_started or (last.error if last else None)


@dataclass
class Claim:
    wave_id: str
    plan: Plan
    commit: str | None
    """The claim commit; None when nothing was selected."""
    snapshot_commit: str | None
    """The tracker branch head the plan was made on."""
    items: tuple[tracker.Item, ...]
    day_spent: float
    halt_read_at: float = -math.inf
    """``time.monotonic()`` when the HALT read the claim rests on had started, at the latest."""
    repaired: tuple[str, ...] = ()
    """Half-made worktrees the preflight removed (``worktree.repair_half_made``), one line each."""


HALT_FRESH_S = 0.5
"""A HALT read that started at most this long before a launch is reused by it (launches come in bursts)."""


class _HaltWatch:
    """Re-reads HALT before launches; a launch reuses a read that started at most HALT_FRESH_S earlier."""

    def __init__(self, store: TrackerStore, git_lock: threading.Lock, read_at: float = -math.inf) -> None:
        """``read_at``: when a read that found no HALT had started (the claim's), else never."""
        self._store = store
        self._lock = git_lock
        self._read_started = read_at
        self._reason: str | None = None

    def reason(self) -> str | None:
        asked = time.monotonic()
        with self._lock:
            if self._read_started < asked - HALT_FRESH_S:
                started = time.monotonic()
                try:
                    text = halt.halt_text(self._store, self._store.read())
                    self._reason = None if text is None else halt.describe(text)
                except WavegitError as exc:
                    # Fail closed: when HALT cannot be read, nothing new starts.
                    self._reason = f"cannot read {HALT_PATH}: {exc}"
                self._read_started = started
            return self._reason


def load_tracker(snapshot: Snapshot, store_repo: Repo, config: Config) -> tracker.Tracker:
    if snapshot.text is None or snapshot.blob_sha is None:
        raise UsageError(f"no tracker at {config.tracker_path} on {config.tracker_branch} "
                         "(run `wavegit init`)")
    return tracker.load_cached(snapshot.text, snapshot.blob_sha, store_repo.state_dir / "cache",
                               config.tracker_path, strict=False)


def claim(repo: Repo, config: Config, store: TrackerStore, *, max_items: int, wave_id: str,
          now: datetime) -> Claim:
    """Preflight and claim in one compare-and-swap commit (see the module docstring)."""
    # A worktree half-made by a killed wave makes the claim's fetch (and every `worktree add`) fail.
    repaired = tuple(worktree.repair_half_made(repo))
    chosen: list[tuple[Plan, float]] = []

    def apply(snapshot: Snapshot) -> Change | None:
        halt.check(store, snapshot)
        day_spent = budget.check_day(config.budget, repo.root, snapshot.commit, now)
        loaded = load_tracker(snapshot, repo, config)
        plan = select(loaded, max_items, snapshot.blob_sha or "")
        chosen[:] = [(plan, day_spent)]
        if not plan.selected:
            return None
        assert snapshot.text is not None
        text = snapshot.text
        for item_id in plan.selected:
            text = tracker.set_fields(text, item_id, {"status": "in_progress", "wave": wave_id,
                                                      "claimed_at": report.utc_timestamp(now)})
        return Change(text)

    message = f"wavegit: claim wave {wave_id}\n\n{worktree.TRAILER_WAVE}: {wave_id}"
    # The snapshot `apply` finds no HALT in is read after this moment: the wave's first launches reuse it.
    halt_read_at = time.monotonic()
    result = mutate(store, apply, message=message)
    plan, day_spent = chosen[0]
    loaded = load_tracker(result.snapshot, repo, config)
    items = tuple(sorted((i for i in loaded.items if i.id in plan.selected), key=lambda i: i.index))
    return Claim(wave_id, plan, result.commit, result.snapshot.commit, items, day_spent, halt_read_at,
                 repaired)


def resolve_base(repo: Repo, config: Config, claim_commit: str | None) -> str:
    """The commit the wave branch starts from: the base branch head (the claim commit if they coincide)."""
    if config.base_branch == config.tracker_branch and claim_commit:
        return claim_commit
    if repo.has_remote(config.remote):
        return worktree.fetch_branch(repo.root, config.remote, config.base_branch)
    return worktree.rev_parse(repo.root, f"refs/heads/{config.base_branch}")


def _tail_source(attempt: Attempt) -> Path | None:
    """The log that says why an attempt failed: the test's when the test ran and failed, else the worker's."""
    return attempt.test_log_path if attempt.test_exit not in (None, 0) else attempt.log_path


def feedback_text(attempt: Attempt) -> str:
    """What the next attempt is told about this one."""
    lines = [f"Attempt {attempt.number} was not accepted: {attempt.error}."]
    if attempt.violations:
        lines.append("These paths are outside what the item owns; change only owned paths:")
        lines += [f"  {p}" for p in attempt.violations]
    tail_of = _tail_source(attempt)
    tail = runner.log_tail(tail_of, FEEDBACK_TAIL_LINES) if tail_of else ""
    if tail:
        which = "test" if tail_of == attempt.test_log_path else "worker"
        lines += [f"Last lines of the {which} output:", tail]
    return "\n".join(lines) + "\n"


def prompt_with_feedback(prompt: str, feedback: str | None) -> str:
    if not feedback:
        return prompt
    return f"{prompt.rstrip()}\n\n---\nFeedback from wavegit on the previous attempt:\n{feedback}"


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _ERROR_CHARS else flat[: _ERROR_CHARS - 1] + "…"


class Wave:
    """One wave after its claim: runs the items, collects, records and reports."""

    def __init__(self, repo: Repo, config: Config, store: TrackerStore, claimed: Claim, base: str, *,
                 events: Events | None = None, spend_limit: float = 0.0) -> None:
        self.repo = repo
        self.config = config
        self.store = store
        self.claimed = claimed
        self.wave_id = claimed.wave_id
        self.base = base
        self.events: Events = events or _NoEvents()
        self.cancel = threading.Event()
        self.spend = budget.WaveSpend(spend_limit)
        self.launch_error: str | None = None
        self.halted: str | None = None
        self.budget_exceeded = False
        self.worktrees = repo.state_dir / "worktrees" / self.wave_id
        self.logs = repo.state_dir / "logs" / self.wave_id
        self.private = repo.state_dir / "sandbox" / self.wave_id
        self.sandbox = sandbox.decide(config.sandbox, os.environ)
        self._flag_lock = threading.Lock()
        # git reads every worktree's admin files in `worktree add` and `fetch`; one half-made by another
        # thread makes them fail ("failed to read .../commondir", "bad object worktrees/X/HEAD").
        self.git_lock = threading.Lock()
        self.halt_watch = _HaltWatch(store, self.git_lock, claimed.halt_read_at)
        self.workspaces = Workspaces(repo.root, self.git_lock)
        self._tidy: _Background | None = None
        self._untidy = True
        """Whether worktrees may exist that no cleanup has covered yet."""

    # -- running items ------------------------------------------------------------------------------------

    def run_items(self, runs: Sequence[ItemRun]) -> None:
        """Every item's attempts, ``concurrency`` items at once (``runs`` are filled in place)."""
        order = {item_id: n for n, item_id in enumerate(self.claimed.plan.selected)}
        # Start in plan order (highest priority first); report and combine in tracker order.
        queue = sorted(runs, key=lambda r: order.get(r.item.id, len(order)))
        for run in queue:
            self.events.event(run.item.id, "queued")
        concurrency = max(1, self.config.concurrency)
        # Worktrees are made this many items ahead: the running ones and the next batch, no more (disk).
        ahead = 2 * concurrency
        self.workspaces = Workspaces(self.repo.root, self.git_lock)
        # Item branches made before their worktrees: registering one (serialised) takes one git call less.
        worktree.set_branches(self.repo.root, [self._spec(run.item, 1).branch for run in queue], self.base)
        for run in queue[:ahead]:
            self.workspaces.prepare(self._spec(run.item, 1))
        upcoming = [run.item for run in queue[ahead:]]
        try:
            with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="wavegit-item") as pool:
                futures = [pool.submit(self._run_item, run, upcoming[n] if n < len(upcoming) else None)
                           for n, run in enumerate(queue)]
                try:
                    for future in futures:
                        future.result()
                except BaseException:
                    self.cancel.set()
                    raise
        finally:
            self.workspaces.close()

    def _spec(self, item: tracker.Item, number: int) -> Spec:
        return Spec(self.worktrees / f"{item.id}-{number}", worktree.item_branch(self.wave_id, item.id),
                    self.base)

    def _stop_reason(self) -> str | None:
        if self.cancel.is_set():
            return f"not started: the batch stopped ({self.launch_error or 'cancelled'})"
        if self.spend.exceeded:
            with self._flag_lock:
                self.budget_exceeded = True
            return f"not started: wave budget reached (${budget.format_usd(self.spend.spent)})"
        reason = self.halt_watch.reason()
        if reason is not None:
            with self._flag_lock:
                self.halted = reason
            return f"not started: {reason}"
        return None

    def _run_item(self, run: ItemRun, upcoming: tracker.Item | None) -> None:
        """``run``'s attempts; first, the worktree of the ``upcoming`` item is started ahead."""
        if upcoming is not None:
            self.workspaces.prepare(self._spec(upcoming, 1))
        feedback: str | None = None
        for number in range(1, self.config.attempts + 1):
            stop = self._stop_reason()
            if stop is not None:
                run.not_started = stop
                self.events.event(run.item.id, "not started", stop, attempt=number)
                return
            try:
                attempt = self._attempt(run.item, number, feedback)
            except (WavegitError, OSError) as exc:
                # wavegit's own failure (a git step), not the item's: not counted, no further tries.
                attempt = Attempt(number, self.config.worker, "", self.base, utc_now(), utc_now(),
                                  error=_one_line(str(exc)), counted=False)
            run.attempts.append(attempt)
            if attempt.commit is not None:
                self.events.event(run.item.id, "verified", attempt=number)
                return
            self.events.event(run.item.id, "failed", attempt.error or "", attempt=number)
            if attempt.launch_failed or not attempt.counted:
                return
            feedback = attempt.feedback
            # The retry needs the item branch, which git lets only one worktree have.
            self.workspaces.release(self._spec(run.item, number))

    def _attempt(self, item: tracker.Item, number: int, feedback: str | None) -> Attempt:
        stem = f"{item.id}-{number}"
        self.logs.mkdir(parents=True, exist_ok=True)
        prompt = prompt_with_feedback(item.prompt, feedback)
        prompt_file = self.logs / f"{stem}.prompt"
        prompt_file.write_text(prompt, encoding="utf-8")
        feedback_file = self.logs / f"{stem}.feedback" if feedback else None
        if feedback_file is not None:
            feedback_file.write_text(feedback or "", encoding="utf-8")
        attempt = Attempt(number, self.config.worker, hashlib.sha256(prompt.encode("utf-8")).hexdigest(),
                          self.base, utc_now(), log_path=self.logs / f"{stem}.log")
        assert attempt.log_path is not None
        spec = self._spec(item, number)
        path = spec.path
        confine, env = self._confinement(path, stem, item.id, item.owns, prompt_file, feedback_file)
        cost_file = Path(env["WAVEGIT_COST_FILE"])
        try:
            self.workspaces.take(spec)
            self.events.event(item.id, "started", attempt=number)
            result = runner.run_process(runner.worker_argv(self.config.worker), cwd=path, env=env,
                                        stdin_text=prompt, log_path=attempt.log_path,
                                        timeout_s=self.config.timeout_s,
                                        idle_timeout_s=self.config.idle_timeout_s, cancel=self.cancel,
                                        confine=confine)
            attempt.exit_code, attempt.killed = result.exit_code, result.killed
            attempt.cost = runner.read_cost(cost_file, attempt.log_path, self.config.worker)
            if attempt.cost:
                self.spend.add(attempt.cost)
            self._verify(item, path, attempt, result, env, confine)
        finally:
            attempt.finished_at = utc_now()
            shutil.rmtree(confine.layout.private, ignore_errors=True)
        if attempt.commit is None and attempt.counted:
            attempt.feedback = feedback_text(attempt)
        return attempt

    def _confinement(self, tree: Path, stem: str, item_id: str, owns: Sequence[str], prompt_file: Path,
                     feedback_file: Path | None) -> tuple[runner.Confinement, dict[str, str]]:
        """The sandbox of one attempt's processes (``stem``) and their allowlisted environment."""
        private = self.private / stem
        shutil.rmtree(private, ignore_errors=True)
        home, tmp = sandbox.private_dirs(private)
        marker = runner.new_marker()
        env = runner.worker_env(os.environ, item_id=item_id, wave_id=self.wave_id, prompt_file=prompt_file,
                                cost_file=private / "cost.json", feedback_file=feedback_file, owns=owns,
                                pass_github_token=self.config.worker_github_token, home=home, tmp=tmp,
                                passed=self.config.worker_env, marker=marker)
        shown = tuple(p for p in (prompt_file, feedback_file) if p is not None)
        layout = sandbox.attempt_layout(self.repo, self.config.sandbox, tree, private, shown, os.environ)
        return runner.Confinement(self.sandbox.bwrap, layout, marker), env

    def _verify(self, item: tracker.Item, path: Path, attempt: Attempt, result: runner.ProcessResult,
                env: dict[str, str], confine: runner.Confinement) -> None:
        """Judge a finished worker (exit, ownership, a change, the item's test); commit when verified."""
        if result.launch_error is not None:
            self._stop_batch(result.launch_error)
            attempt.error, attempt.counted, attempt.launch_failed = result.launch_error, False, True
            return
        if attempt.failed("worker", result):
            return
        tree = worktree.stage_all(path)
        attempt.files_changed = worktree.changed_paths(self.repo.root, self.base, tree)
        attempt.violations = [p for p in attempt.files_changed
                              if not any(paths.matches(pattern, p) for pattern in item.owns)]
        if attempt.violations:
            shown = ", ".join(attempt.violations[:5]) + (" …" if len(attempt.violations) > 5 else "")
            attempt.error = f"ownership violation: changed {shown}, not owned by {item.id}; changes discarded"
            return
        if not attempt.files_changed:
            attempt.error = "the worker changed nothing"
            return
        attempt.test_log_path = self.logs / f"{item.id}-{attempt.number}.test.log"
        self.events.event(item.id, "testing", attempt=attempt.number)
        test = runner.run_process(runner.command_argv(item.test), cwd=path, env=env, stdin_text="",
                                  log_path=attempt.test_log_path, timeout_s=self.config.timeout_s,
                                  idle_timeout_s=self.config.idle_timeout_s, cancel=self.cancel,
                                  confine=confine)
        attempt.test_exit = test.exit_code
        if attempt.failed("test", test):
            return
        trailers = worktree.Trailers(item.id, self.wave_id, attempt.prompt_sha256)
        attempt.message = worktree.item_message(item.title, trailers)
        attempt.commit = worktree.commit_tree(self.repo.root, tree, [self.base], attempt.message)
        worktree.set_branch(self.repo.root, worktree.item_branch(self.wave_id, item.id), attempt.commit)

    def _stop_batch(self, reason: str) -> None:
        with self._flag_lock:
            if self.launch_error is None:
                self.launch_error = f"launch failure: {reason}"
        self.cancel.set()

    # -- collect ------------------------------------------------------------------------------------------

    def collect(self, runs: Sequence[ItemRun], *, push: bool,
                lease: str | None = None) -> tuple[str, WaveTest | None, bool]:
        """Combine verified items on the wave branch, run ``wave_test``, push; (head, wave test, pushed).

        ``lease``: the remote wave branch's tip when it is being rebuilt (a review command); the push then
        replaces it, but only if it is still there.
        """
        commits = [(a.commit, a.message) for run in runs for a in run.attempts[-1:] if a.commit is not None]
        branch = worktree.wave_branch(self.wave_id)
        head = worktree.combine(self.repo.root, self.base, commits, branch=branch)
        wave_test = self._wave_test(head) if commits and self.config.wave_test.strip() else None
        pushed = False
        if commits and push and self.repo.has_remote(self.config.remote):
            force = [f"--force-with-lease=refs/heads/{branch}:{lease}"] if lease else []
            refspec = f"refs/heads/{branch}:refs/heads/{branch}"
            git.run(["push", "--quiet", *force, self.config.remote, refspec], cwd=self.repo.root)
            pushed = True
        return head, wave_test, pushed

    def _wave_test(self, head: str) -> WaveTest:
        self.wait_cleanup()
        self._untidy = True
        path = self.worktrees / "_wave"
        log_path = self.logs / "_wave.test.log"
        worktree.add(self.repo.root, path, branch=None, start=head)
        # A worker's sandbox and environment with no item: nothing item-specific.
        confine, env = self._confinement(path, "_wave", "", (), Path(os.devnull), None)
        try:
            result = runner.run_process(runner.command_argv(self.config.wave_test), cwd=path, env=env,
                                        stdin_text="", log_path=log_path, timeout_s=self.config.timeout_s,
                                        idle_timeout_s=self.config.idle_timeout_s, cancel=None,
                                        confine=confine)
        finally:
            shutil.rmtree(confine.layout.private, ignore_errors=True)
            worktree.remove(self.repo.root, path)
        return WaveTest(self.config.wave_test, result.exit_code if result.ok or result.exit_code else None,
                        log_path, None if result.ok else result.describe())

    def cleanup(self) -> None:
        """Remove this wave's worktrees and item branches, whatever state they are in."""
        shutil.rmtree(self.private, ignore_errors=True)
        worktree.remove_all_under(self.repo.root, self.worktrees)
        worktree.delete_branches(self.repo.root, worktree.item_branches(self.repo.root, self.wave_id))

    def start_cleanup(self) -> None:
        """:meth:`cleanup` in a background thread, while the wave branch is combined and pushed.

        Those steps read no worktree admin files; everything that does (a ``fetch``, ``worktree add``)
        comes after :meth:`finish_cleanup`.
        """
        if self._tidy is None and self._untidy:
            self._tidy, self._untidy = _Background(self.cleanup), False

    def wait_cleanup(self) -> None:
        """Wait for the background cleanup if one was started; its failure is raised here."""
        tidy, self._tidy = self._tidy, None
        if tidy is not None:
            tidy.join()

    def finish_cleanup(self) -> None:
        """Wait for the background cleanup; run the cleanup (again) if worktrees may have been made since."""
        self.wait_cleanup()
        if self._untidy:
            self._untidy = False
            self.cleanup()

    # -- record -------------------------------------------------------------------------------------------

    def record(self, runs: Sequence[ItemRun], now: datetime, pr: int | None = None) -> str | None:
        """One compare-and-swap commit with every item's outcome; the commit (None: nothing to write)."""
        by_id = {run.item.id: run for run in runs}

        def apply(snapshot: Snapshot) -> Change | None:
            loaded = load_tracker(snapshot, self.repo, self.config)
            assert snapshot.text is not None
            text = snapshot.text
            for current in loaded.items:
                run = by_id.get(current.id)
                # Only items still claimed by this wave: a `sync` may have released them meanwhile.
                if run is None or current.status != "in_progress" or current.wave != self.wave_id:
                    continue
                text = tracker.set_fields(text, current.id, record_fields(run, current, self.config, now, pr))
            return None if text == snapshot.text else Change(text)

        verified = sum(1 for run in runs if run.verified)
        message = (f"wavegit: record wave {self.wave_id}: {verified} of {len(runs)} verified\n\n"
                   f"{worktree.TRAILER_WAVE}: {self.wave_id}\n{budget.cost_trailer(self.spend.spent)}")
        return mutate(self.store, apply, message=message).commit


class _Background:
    """A function run in a daemon thread; :meth:`join` waits and raises what it raised."""

    def __init__(self, work: Callable[[], None]) -> None:
        self._work = work
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="wavegit-cleanup", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._work()
        except BaseException as exc:  # handed to the joining thread
            self._error = exc

    def join(self) -> None:
        self._thread.join()
        if self._error is not None:
            raise self._error


@dataclass(frozen=True)
class WaveTest:
    command: str
    exit_code: int | None
    log_path: Path
    error: str | None

    def to_report(self) -> report.WaveTestReport:
        return report.WaveTestReport(command=self.command, exit_code=self.exit_code)


def wave_succeeded(rep: report.WaveReport, wave_test: WaveTest | None) -> bool:
    """The success rule: the tracker update landed, every item is verified within its ownership, and the
    wave test passed (when one ran)."""
    return (rep.tracker_updated and all(item.verified and not item.ownership_violations for item in rep.items)
            and (wave_test is None or wave_test.exit_code == 0))


def record_fields(run: ItemRun, current: tracker.Item, config: Config, now: datetime,
                  pr: int | None = None) -> dict[str, object | None]:
    """The tracker fields an item's outcome writes (see the module docstring)."""
    fields: dict[str, object | None] = {"updated_at": report.utc_timestamp(now)}
    if run.cost:
        fields["cost"] = round(current.cost + run.cost, 6)
    total = current.attempts + run.used
    if run.used:
        fields["attempts"] = total
    if run.verified:
        fields.update(status="review", last_error=None)
        if pr is not None:
            fields["pr"] = pr
    elif run.used and total >= config.max_attempts:
        fields.update(status="failed", last_error=_one_line(run.error or "not verified"))
    else:
        fields.update(status="todo", wave=None, claimed_at=None,
                      last_error=_one_line(run.error) if run.error else current.last_error)
    return fields


def item_status(run: ItemRun, config: Config) -> str:
    """The status the record gives an item (from the claimed item's attempt count)."""
    status = record_fields(run, run.item, config, utc_now())["status"]
    return str(status)


def item_report(run: ItemRun, config: Config) -> report.ItemReport:
    last = run.attempts[-1] if run.attempts else None
    records = [
        report.AttemptRecord(
            attempt=a.number, worker=a.worker, prompt_sha256=a.prompt_sha256, base_commit=a.base,
            started_at=report.utc_timestamp(a.started_at),
            finished_at=report.utc_timestamp(a.finished_at or a.started_at), exit_code=a.exit_code,
            test_exit=a.test_exit, cost=a.cost, log_path=str(a.log_path or ""), killed=a.killed,
            error=a.error)
        for a in run.attempts
    ]
    duration = sum(((a.finished_at or a.started_at) - a.started_at).total_seconds() for a in run.attempts)
    tail_of = _tail_source(last) if last else None
    return report.ItemReport(
        id=run.item.id, status=item_status(run, config), verified=run.verified, attempts=len(run.attempts),
        exit_code=last.exit_code if last else None, test_exit=last.test_exit if last else None,
        duration_s=round(duration, 3), files_changed=list(last.files_changed) if last else [],
        ownership_violations=list(last.violations) if last else [],
        cost=round(run.cost, 6) if any(a.cost is not None for a in run.attempts) else None,
        error=run.error, log_tail=runner.log_tail(tail_of, REPORT_TAIL_LINES) if tail_of else "",
        attempt_records=records)


@dataclass
class WaveOutcome:
    report: report.WaveReport
    exit_code: int


def _exit_code(rep: report.WaveReport, race_lost: bool) -> int:
    if rep.success:
        return EXIT_OK
    if race_lost:
        return EXIT_RACE_LOST
    if rep.halted or rep.budget.exceeded:
        return EXIT_HALTED
    return EXIT_WORK_FAILED


def write_report(repo: Repo, rep: report.WaveReport) -> Path:
    """``<state dir>/reports/<wave>.json`` and ``.md``; the JSON path."""
    folder = repo.state_dir / "reports"
    folder.mkdir(parents=True, exist_ok=True)
    json_path = folder / f"{rep.wave_id}.json"
    json_path.write_text(rep.to_json() + "\n", encoding="utf-8")
    (folder / f"{rep.wave_id}.md").write_text(report.to_markdown(rep), encoding="utf-8")
    return json_path


def run_wave(repo: Repo, config: Config, store: TrackerStore, *, max_items: int | None = None,
             push: bool = True, publish: Publish | None = None, events: Events | None = None,
             open_pr: OpenPr | None = None, config_source: str = "") -> WaveOutcome:
    """Claim, run, collect, record, report (``wavegit run``). Halted or over the day budget: raises."""
    started = utc_now()
    # Before the claim: a sandbox that was asked for and cannot be had is bad input (exit 2), nothing claimed.
    jail = sandbox.decide(config.sandbox, os.environ)
    claimed = claim(repo, config, store, max_items=max_items or config.max_items,
                    wave_id=worktree.new_wave_id(started), now=started)
    limits = report.BudgetReport(wave_usd_limit=config.budget.wave_usd, day_usd_limit=config.budget.day_usd,
                                 day_spent_usd=round(claimed.day_spent, 6))
    skipped = [report.SkippedItem(id=s.id, reason=s.reason) for s in claimed.plan.skipped]
    rep = report.WaveReport(wave_id=claimed.wave_id, base_sha=claimed.snapshot_commit or "", skipped=skipped,
                            budget=limits, started_at=report.utc_timestamp(started),
                            config_source=config_source, sandbox=jail.mode)
    rep.notes += claimed.repaired
    if jail.warning:
        rep.notes.append(jail.warning)
    if claimed.commit is None:
        rep.success, rep.tracker_updated = True, False
        rep.notes.append("nothing selected: no ready item fits this wave; nothing was claimed")
        rep.finished_at = report.utc_timestamp()
        return WaveOutcome(rep, EXIT_OK)
    return run_claimed(repo, config, store, claimed, rep, push=push, publish=publish, events=events,
                       open_pr=open_pr)


def spend_limit(config: Config, day_spent: float) -> float:
    """What this wave may spend before no new attempt starts: its ceiling, or what is left of the day's."""
    limits = [config.budget.wave_usd] if config.budget.wave_usd > 0 else []
    if config.budget.day_usd > 0:
        limits.append(max(config.budget.day_usd - day_spent, 0.0))
    return min(limits) if limits else 0.0


def run_claimed(repo: Repo, config: Config, store: TrackerStore, claimed: Claim, rep: report.WaveReport, *,
                push: bool, publish: Publish | None, events: Events | None, open_pr: OpenPr | None = None,
                base: str | None = None, produce: Produce | None = None) -> WaveOutcome:
    """Run a claimed wave to its report; ``base`` pins the wave's base (scale-out), ``produce`` its items."""
    runs = [ItemRun(item) for item in claimed.items]
    branch = worktree.wave_branch(claimed.wave_id)
    notes: Events = events or _NoEvents()
    notes.note(f"wave {claimed.wave_id}: claimed {', '.join(claimed.plan.selected)}")
    wave: Wave | None = None
    wave_test: WaveTest | None = None
    delivered = pushed = interrupted = False
    try:
        base = base or resolve_base(repo, config, claimed.commit)
        rep.base_sha = base
        worktree.set_branch(repo.root, branch, base)
        wave = Wave(repo, config, store, claimed, base, events=events,
                    spend_limit=spend_limit(config, claimed.day_spent))
        (produce or Wave.run_items)(wave, runs)
        wave.start_cleanup()
        head, wave_test, pushed = wave.collect(runs, push=push)
        delivered = True
        if pushed:
            notes.note(f"pushed {branch} to {config.remote}")
        if any(run.commit for run in runs):
            rep.head_sha, rep.branch = head, branch
            if not pushed:
                rep.notes.append(f"wave branch {branch} was not pushed (--no-push or no remote "
                                 f"{config.remote!r}); it exists in this repository only")
    except WavegitError as exc:
        rep.notes.append(f"the wave stopped: {_one_line(str(exc))}")
    except KeyboardInterrupt:
        # Ctrl-C or SIGTERM: workers were cancelled; still release the claim before leaving.
        interrupted = True
        rep.notes.append("the wave was interrupted")
    finally:
        if wave is not None:
            wave.finish_cleanup()
    if not delivered:
        for run in runs:
            if run.commit is not None:
                run.undelivered = "verified, but the wave branch could not be built or pushed"
    pr: int | None = None
    if open_pr is not None and pushed and any(run.verified for run in runs):
        rep.items = [item_report(run, config) for run in runs]
        try:
            pr = open_pr(rep)
        except WavegitError as exc:
            rep.notes.append(f"opening the pull request failed: {_one_line(str(exc))}")
    race_lost = False
    try:
        rep.tracker_updated = _record(wave, runs, store, repo, config, claimed, pr) is not None
    except RaceLostError as exc:
        race_lost = True
        rep.notes.append(f"the tracker update did not land: {exc}")
    except WavegitError as exc:
        rep.notes.append(f"the tracker update did not land: {_one_line(str(exc))}")
    if wave is not None:
        rep.halted = wave.halted is not None
        if wave.halted:
            rep.notes.append(wave.halted)
        if wave.launch_error:
            rep.notes.append(wave.launch_error)
        rep.budget.wave_spent_usd = round(wave.spend.spent, 6)
        rep.budget.exceeded = wave.budget_exceeded
    if wave_test is not None:
        rep.wave_test = wave_test.to_report()
        if wave_test.error:
            rep.notes.append(f"wave test {wave_test.error}")
    rep.items = [item_report(run, config) for run in runs]
    rep.success = wave_succeeded(rep, wave_test)
    rep.pr = pr
    if publish is not None and pushed:
        try:
            rep.pr = publish(rep) or pr
        except WavegitError as exc:
            rep.success = False
            rep.notes.append(f"publishing failed: {_one_line(str(exc))}")
    rep.finished_at = report.utc_timestamp()
    write_report(repo, rep)
    if interrupted:
        raise KeyboardInterrupt
    return WaveOutcome(rep, _exit_code(rep, race_lost))


def _record(wave: Wave | None, runs: Sequence[ItemRun], store: TrackerStore, repo: Repo, config: Config,
            claimed: Claim, pr: int | None) -> str | None:
    """The record commit; before the wave object exists (base not found) a bare release of the claim."""
    recorder = wave or Wave(repo, config, store, claimed, "", spend_limit=0.0)
    return recorder.record(runs, utc_now(), pr)
