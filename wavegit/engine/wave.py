"""A claimed wave at work: its items' workers run ``concurrency`` at once, HALT watched before every launch,
then the wave branch combined, tested and pushed (:func:`collect`) while its worktrees are cleaned up."""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from wavegit.attempts import limits, logcap, objectstore, runner, sandbox, wavebranch, workspace
from wavegit.attempts.workspaces import Workspaces
from wavegit.core import git
from wavegit.core.errors import WavegitError
from wavegit.core.git import CommitChanges, WaveId
from wavegit.core.repo import Repo
from wavegit.engine.attempt import AttemptContext, Confiner, run_attempts
from wavegit.engine.claim import Claim
from wavegit.engine.runs import Events, ItemRun, NoEvents
from wavegit.engine.slots import WorkerSlots
from wavegit.model import lifecycle, report
from wavegit.model.config import HALT_PATH, Config
from wavegit.trackerbranch import budget, halt
from wavegit.trackerbranch.store import TrackerStore

HALT_FRESH_S = 0.5
"""A HALT read that started at most this long before a launch is reused by it (launches come in bursts)."""


def wave_spend(config: Config, day_spent: float) -> budget.WaveSpend:
    """What a wave may spend before no new attempt starts: its ceiling, or what is left of the day's when
    that is less (then named the day's, so that an item left not started says which ceiling stopped it)."""
    wave_usd, day_usd = config.budget.wave_usd, config.budget.day_usd
    left_today = max(day_usd - day_spent, 0.0)
    if day_usd > 0 and (wave_usd <= 0 or left_today < wave_usd):
        return budget.WaveSpend(left_today, config.budget.wave_tokens, day=True)
    return budget.WaveSpend(max(wave_usd, 0.0), config.budget.wave_tokens)


class HaltWatch:
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
                    text = halt.current_text(self._store)
                    self._reason = None if text is None else halt.describe(text)
                except WavegitError as exc:
                    # Fail closed: when HALT cannot be read, nothing new starts.
                    self._reason = f"cannot read {HALT_PATH}: {exc}"
                self._read_started = started
            return self._reason

    def found_none(self, read_at: float) -> None:
        """A read that started at ``read_at`` (another claim's) found no HALT: launches may reuse it."""
        with self._lock:
            if read_at > self._read_started:
                self._read_started, self._reason = read_at, None


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


class Cleanup:
    """Removing a wave's worktrees and item branches, whatever state they are in; in the background while the
    wave branch is combined and pushed, which read no worktree admin files."""

    def __init__(self, repo: Repo, wave_id: WaveId) -> None:
        self.repo = repo
        self.wave_id = wave_id
        self._tidy: _Background | None = None
        self._untidy = True
        """Whether worktrees may exist that no cleanup has covered yet."""

    def run(self) -> None:
        # One rename each; their files are removed after the wave returns (wavegit.attempts.reaper).
        workspace.move_to_trash(self.repo.wave_sandbox(self.wave_id), self.repo.trash_dir)
        workspace.move_to_trash(self.repo.wave_worktrees(self.wave_id), self.repo.trash_dir)
        wavebranch.delete_branches(self.repo.root, wavebranch.item_branches(self.repo.root, self.wave_id))

    def start(self) -> None:
        """:meth:`run` in a background thread; everything that reads worktree admin files (a ``fetch``,
        ``worktree add``) comes after :meth:`reserve` or :meth:`finish`."""
        if self._tidy is None and self._untidy:
            self._tidy, self._untidy = _Background(self.run), False

    def reserve(self) -> None:
        """Before a worktree is made: wait for the background cleanup; the final one covers the new one."""
        self._wait()
        self._untidy = True

    def finish(self) -> None:
        """Wait for the background cleanup; run the cleanup (again) if worktrees may have been made since."""
        self._wait()
        if self._untidy:
            self._untidy = False
            self.run()

    def _wait(self) -> None:
        tidy, self._tidy = self._tidy, None
        if tidy is not None:
            tidy.join()


class Wave:
    """One wave after its claim: runs its items, ``concurrency`` at once."""

    def __init__(self, repo: Repo, config: Config, store: TrackerStore, claimed: Claim, base: str, *,
                 events: Events | None = None, jail: sandbox.Decision | None = None,
                 hidden: Callable[[], tuple[Path, ...]] | None = None) -> None:
        self.repo = repo
        self.config = config
        self.claimed = claimed
        self.wave_id = claimed.wave_id
        self.base = base
        self.logs = repo.wave_logs(self.wave_id)
        self.halted: str | None = None
        self.budget_exceeded = False
        self.ceiling: str | None = None
        """Which ceiling stopped its launches when its own spend does not show it (a rolling run's day)."""
        self._flag_lock = threading.Lock()
        # Serialises the HALT reads of the item threads (one read serves a burst of launches).
        self.git_lock = threading.Lock()
        self.halt_watch = HaltWatch(store, self.git_lock, claimed.halt_read_at)
        jail = jail or sandbox.decide(config.sandbox, os.environ)
        if hidden is None and jail.bwrap is not None:
            # Read in the background from now (a rolling wave's, one decided here), not by the first launch.
            hidden = sandbox.others_soon(repo, config.sandbox)
        self.context = AttemptContext(repo, config, self.wave_id, base, repo.wave_worktrees(self.wave_id),
                                       self.logs, events or NoEvents(),
                                       wave_spend(config, claimed.day_spent),
                                       Workspaces(repo.root, repo.common_dir / "objects",
                                                  kept=kept_paths(config.concurrency)),
                                       Confiner(repo, config, self.wave_id, jail, hidden),
                                       WorkerSlots(config.concurrency))
        self.cleanup = Cleanup(repo, self.wave_id)

    @property
    def spent(self) -> float:
        return self.context.spend.spent

    @property
    def launch_error(self) -> str | None:
        return self.context.launch_error

    def run_items(self, runs: Sequence[ItemRun]) -> None:
        """Every item's attempts, ``concurrency`` workers at once (``runs`` are filled in place); while an
        attempt is read back and tested, the next worker runs in its slot."""
        context = self.context
        order = {item_id: n for n, item_id in enumerate(self.claimed.plan.selected)}
        # Start in plan order (highest priority first); report and combine in tracker order.
        queue = sorted(runs, key=lambda r: order.get(r.item.id, len(order)))
        for run in queue:
            context.events.event(run.item.id, "queued")
        config = self.config
        tries = {run.item.id: lifecycle.attempts_left(run.item, config.attempts, config.max_attempts)
                 for run in queue}
        # Queue positions (turns) of the items that have an attempt left, in order.
        starting = [run.item for run in queue if tries[run.item.id] >= 1]
        concurrency = max(1, config.concurrency)
        # The first batch's trees are made by their own item threads, side by side (Workspaces.take); each
        # next batch's in the background once every worker of the batch before it has started: trees exist
        # for the running items and the next batch, no more (disk).
        # A pool of its own (a closed one cannot be used again), on the same object directory.
        context.workspaces = Workspaces(self.repo.root, context.workspaces.objects,
                                        kept=kept_paths(concurrency))
        context.slots = WorkerSlots(concurrency, on_launch=context.workspaces.launched)
        for turn in range(concurrency, len(starting)):
            context.workspaces.prepare_after(turn - turn % concurrency, context.spec(starting[turn], 1))
        turns = {item.id: n for n, item in enumerate(starting)}
        if starting:
            context.workspaces.warm(context.spec(starting[0], 1))
        try:
            # Twice as many item threads as workers: one attempt verifies while the next worker runs.
            # Its threads carry the keyring filter: their unsandboxed processes inherit it as they start.
            with ThreadPoolExecutor(max_workers=2 * concurrency, thread_name_prefix="wavegit-item",
                                    initializer=limits.carry_keyring_filter) as pool:
                futures = [pool.submit(run_attempts, context, run, tries[run.item.id], self.stop_reason,
                                       turns.get(run.item.id, -1)) for run in queue]
                await_items(context, futures)
        finally:
            context.workspaces.close()

    def stop_reason(self) -> str | None:
        """Why no attempt of this wave may start now (cancelled, the wave's budget, HALT), or None."""
        context = self.context
        if context.cancel.is_set():
            return f"not started: the wave stopped ({context.launch_error or 'cancelled'})"
        if context.spend.exceeded:
            with self._flag_lock:
                self.budget_exceeded = True
            return f"not started: {context.spend.ceiling} budget reached ({context.spend.reached()})"
        reason = self.halt_watch.reason()
        if reason is not None:
            with self._flag_lock:
                self.halted = reason
            return f"not started: {reason}"
        return None

    def ceiling_reached(self, ceiling: str) -> str:
        """A ceiling beyond the wave's own (a rolling run's day) stops its launches: noted as its own is."""
        with self._flag_lock:
            self.budget_exceeded, self.ceiling = True, ceiling
        return f"not started: {ceiling}"


def kept_paths(concurrency: int) -> int:
    """How many finished attempts' paths wait for the wave's cleanup: two batches' worth (each attempt
    leaves its tree, its test checkout and their two private directories)."""
    return 4 * 2 * max(1, concurrency)


def await_items(context: AttemptContext, futures: Sequence[Future[None]]) -> None:
    """Wait for every item's attempts; the first failure (Ctrl-C included) stops the batch and is raised."""
    try:
        for future in futures:
            future.result()
    except BaseException:
        context.stop()
        raise


@dataclass(frozen=True)
class WaveTest:
    command: str
    exit_code: int | None
    log_path: Path
    error: str | None

    def verdict(self) -> str:
        """One line for the progress view and the event log: ``wave test passed``, or why not and where."""
        if self.exit_code == 0:
            return "wave test passed"
        return f"wave test failed ({self.error or f'exit {self.exit_code}'}); log: {self.log_path}"

    def to_report(self, tail_lines: int = 30) -> report.WaveTestReport:
        failed = self.exit_code != 0 and self.log_path.is_file()
        return report.WaveTestReport(command=self.command, exit_code=self.exit_code,
                                     log_path=str(self.log_path),
                                     log_tail=logcap.log_tail(self.log_path, tail_lines) if failed else "")


@dataclass(frozen=True)
class Collected:
    head: str
    """The wave branch's head (the base when nothing was verified)."""
    wave_test: WaveTest | None
    pushed: bool
    held: bool = False
    """Built to be pushed, but held for the record's push to carry it (``collect``'s ``hold``)."""


def branch_refspec(wave_id: WaveId) -> str:
    """What pushes wave ``wave_id``'s branch to the same name on the remote."""
    branch = wavebranch.wave_branch(wave_id)
    return f"refs/heads/{branch}:refs/heads/{branch}"


def push_branch(repo: Repo, config: Config, wave_id: WaveId, lease: str | None = None) -> None:
    """Push the wave branch (``lease``: see :func:`collect`)."""
    branch = wavebranch.wave_branch(wave_id)
    git.push(repo.root, config.remote, [branch_refspec(wave_id)],
             lease={f"refs/heads/{branch}": lease} if lease else None)


def collect(repo: Repo, config: Config, wave_id: WaveId, base: str, runs: Sequence[ItemRun], *, push: bool,
            lease: str | None = None, cleanup: Cleanup | None = None,
            confiner: Confiner | None = None, idents: tuple[str, str] | None = None,
            hold: bool = False, known: Mapping[str, CommitChanges] | None = None) -> Collected:
    """Combine the verified items on the wave branch from ``base``, run ``wave_test``, push.

    ``lease``: the remote wave branch's tip when it is being rebuilt (a review command); the push then
    replaces it, but only if it is still there. ``hold``: a branch to push is not pushed here but left for
    the record's push to carry (``Collected.held``). ``cleanup``: the wave's, running in the background.
    ``confiner``: the wave's sandbox, so the wave test runs in the one its items ran in (else decided here).
    ``idents``: who the replayed commits are by (the wave's, already read: ``Workspaces.idents``).
    ``known``: the parents and changes of the commits verified here (``AttemptContext.verified``).
    """
    commits = [(a.commit, a.message) for run in runs for a in run.attempts[-1:] if a.commit is not None]
    branch = wavebranch.wave_branch(wave_id)
    head = wavebranch.combine(repo.root, base, commits, branch=branch, idents=idents, known=known)
    wave_test = None
    if commits and config.wave_test.strip():
        if cleanup is not None:
            cleanup.reserve()
        wave_test = _wave_test(repo, config, head,
                               confiner or Confiner(repo, config, wave_id,
                                                    sandbox.decide(config.sandbox, os.environ)))
    if commits and push and repo.has_remote(config.remote):
        if hold:
            return Collected(head, wave_test, pushed=False, held=True)
        push_branch(repo, config, wave_id, lease)
        return Collected(head, wave_test, pushed=True)
    return Collected(head, wave_test, pushed=False)


def _wave_test(repo: Repo, config: Config, head: str, confiner: Confiner) -> WaveTest:
    return test_commit(repo, config, head, config.wave_test, "_wave", confiner)


def test_commit(repo: Repo, config: Config, head: str, command: str, stem: str,
                confiner: Confiner) -> WaveTest:
    """Run ``command`` on a fresh checkout of ``head`` in the wave's sandbox (``stem`` names its tree and
    log), as the wave test runs."""
    wave_id = confiner.wave_id
    path = repo.wave_worktrees(wave_id) / stem
    log_path = repo.wave_logs(wave_id) / f"{stem}.test.log"
    store = objectstore.ensure(repo.root, path.parent, head)
    workspace.test_checkout(store, head, path, history=objectstore.history(store))
    # The sandbox and environment of a worker with no item, and no write credentials.
    confinement, env = confiner.confine(path, stem, item_id="", owns=(), prompt_file=Path(os.devnull),
                                        feedback_file=None, pass_github_token=False, test=True)
    try:
        result = runner.run_process(runner.command_argv(command), cwd=path, env=env,
                                    stdin_text="", log_path=log_path, timeout_s=config.timeout_s,
                                    idle_timeout_s=config.idle_timeout_s, cancel=None, confine=confinement,
                                    log_bytes=config.sandbox.log_bytes)
    finally:
        confiner.release(confinement)
        workspace.remove(path)
    return WaveTest(command, result.exit_code if result.ok or result.exit_code else None,
                    log_path, None if result.ok else result.describe())
