"""One item's attempts: the worker in a fresh worktree, then verification (exit, ownership, a change, the
item's test), and what the next attempt is told when one fails."""

from __future__ import annotations

import errno
import functools
import math
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path

from wavegit.attempts import (
    agents,
    cost,
    limits,
    logcap,
    objectstore,
    runner,
    sandbox,
    snapshot,
    wavebranch,
    workerenv,
    workspace,
)
from wavegit.attempts.workspaces import Ready, Spec, Workspaces
from wavegit.core.errors import WavegitError
from wavegit.core.git import CommitChanges, CommitSha, WaveId
from wavegit.core.repo import Repo
from wavegit.engine.launchpad import Ahead, Launchpad, TestPad, checkout_of, set_up, test_sandbox
from wavegit.engine.runs import Attempt, Events, ItemRun, utc_now
from wavegit.engine.slots import Slot, WorkerSlots
from wavegit.model import report, tracker
from wavegit.model.config import Config, protected_of
from wavegit.model.lifecycle import one_line
from wavegit.ownership import changes
from wavegit.trackerbranch import budget

FEEDBACK_TAIL_LINES = 40
LAUNCH_WAIT_S = 1.0
"""How long a finished attempt's read-back waits at most for the launches under way (WorkerSlots)."""
_EXHAUSTED = ("No space left on device", "Out of diskspace", "Resource temporarily unavailable",
              "Cannot allocate memory", "Out of memory", "cannot fork")
"""How git says the machine ran out of something, rather than that a tree is bad."""


@dataclass(frozen=True)
class Confiner:
    """How a wave's workers and tests run: in the sandbox decided for the wave (or unsandboxed), each process
    with a private HOME and TMPDIR of its own outside every tree, and an allowlisted environment."""

    repo: Repo
    config: Config
    wave_id: WaveId
    jail: sandbox.Decision
    reading: Callable[[], tuple[Path, ...]] | None = None
    """:attr:`others` as read ahead (:func:`sandbox.others_soon`, begun by the wave), else read when first
    asked for (a wave test's checkout out of any wave)."""

    @property
    def private_root(self) -> Path:
        return self.repo.wave_sandbox(self.wave_id)

    @functools.cached_property
    def others(self) -> tuple[Path, ...]:
        """The repository's checkouts and the local repositories it shares objects with, which every sandbox
        hides; listed once per wave."""
        if self.jail.bwrap is None:
            return ()
        return self.reading() if self.reading is not None else sandbox.others(self.repo)

    def confine(self, tree: Path, stem: str, *, item_id: str, owns: Sequence[str], prompt_file: Path,
                feedback_file: Path | None, pass_github_token: bool,
                test: bool = False) -> tuple[runner.Confinement, dict[str, str]]:
        """The sandbox of one process run in ``tree`` (``stem`` names its private directory) and its
        environment; :meth:`release` removes the private directory again. A ``test`` gets a network namespace
        of its own: its servers listen on a loopback no worker or other test shares."""
        private = self.private_root / stem
        workspace.remove(private)
        home, tmp = sandbox.private_dirs(private)
        marker = runner.new_marker()
        env = workerenv.worker_env(os.environ, item_id=item_id, wave_id=self.wave_id, prompt_file=prompt_file,
                                cost_file=private / "cost.json", feedback_file=feedback_file, owns=owns,
                                pass_github_token=pass_github_token, home=home, tmp=tmp,
                                passed=self.config.worker_env, marker=marker)
        shown = tuple(p for p in (prompt_file, feedback_file) if p is not None)
        settings = self.config.sandbox
        layout = sandbox.attempt_layout(self.repo, settings, tree, private, shown, os.environ,
                                        self.others, objectstore.store_of(tree.parent),
                                        isolated_network=test, hardened=self.jail.hardened)
        ceilings = limits.Limits(pids=settings.pids, memory_bytes=settings.memory_bytes)
        return runner.Confinement(self.jail.bwrap, layout, marker, ceilings), env

    @staticmethod
    def release(confinement: runner.Confinement) -> None:
        # The worker filled its HOME: removed the way its tree is (no recursion, no symlink followed).
        workspace.remove(confinement.layout.private)


@dataclass
class AttemptContext:
    """What every attempt of a wave shares: where it runs and logs, what it spends, how the batch stops."""

    repo: Repo
    config: Config
    wave_id: WaveId
    base: str
    worktrees: Path
    logs: Path
    events: Events
    spend: budget.WaveSpend
    workspaces: Workspaces
    confiner: Confiner
    slots: WorkerSlots
    cancel: threading.Event = field(default_factory=threading.Event)
    launch_error: str | None = None
    """Set by the first launch failure, which stops the batch."""
    stopped_profiles: dict[str, str] = field(default_factory=dict)
    """Profiles whose failure will repeat (a rejected key, an unknown model): no further attempt of them
    starts in the wave; the value says why, for the report."""
    verified: dict[str, CommitChanges] = field(default_factory=dict)
    """Each verified commit's parent and changes as its read-back wrote them, for collect to replay without
    asking git: known in this process only (a result commit's claims are never taken for them)."""
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def agent(self, item: tracker.Item) -> agents.Agent:
        """The agent that runs ``item``: its ``worker`` profile, or config ``worker`` (preflight has checked
        that the profile exists)."""
        return agents.resolve(self.config, item.worker)

    def label(self, item: tracker.Item) -> str:
        """What runs ``item``, as the report and its commit's ``Wavegit-Worker`` trailer say it."""
        return self.agent(item).label(self.confiner.jail.bwrap is not None)

    def spec(self, item: tracker.Item, number: int) -> Spec:
        """The worktree of ``item``'s attempt ``number``."""
        return Spec(self.worktrees / f"{item.id}-{number}", wavebranch.item_branch(self.wave_id, item.id),
                    self.base)

    def stop_profile(self, profile: str, why: str) -> None:
        """A failure of ``profile`` will repeat: no further attempt of it starts in this wave."""
        with self._lock:
            self.stopped_profiles.setdefault(profile, why)

    def profile_stopped(self, item: tracker.Item) -> str | None:
        """Why ``item``'s profile gets no further attempt in this wave (``not started: ...``), or None."""
        profile = self.agent(item).profile
        with self._lock:
            why = self.stopped_profiles.get(profile)
        return None if why is None else f"not started: worker profile {profile!r} failed for good ({why})"

    def stop_batch(self, reason: str) -> None:
        """A worker could not be launched: cancel the running ones, start nothing new."""
        with self._lock:
            if self.launch_error is None:
                self.launch_error = f"launch failure: {reason}"
        self.stop()

    def stop(self) -> None:
        """Cancel the running workers; no attempt starts any more."""
        self.cancel.set()
        self.slots.stop()


WORKING = "working"
"""The event of a running agent's latest action (its detail), which ``wavegit status`` shows."""
ACTION_EVERY_S = 0.5
"""At most one action event this often per attempt: a worker printing actions in a loop floods no log."""


@dataclass
class ActionWatch:
    """Tells the wave's events the latest action a preset's agent streams (``Write src/a.py``)."""

    events: Events
    item_id: str
    attempt: int
    agent: agents.Agent
    last: str | None = None
    told_at: float = -math.inf

    def line(self, raw: bytes) -> None:
        action = self.agent.action(raw)
        now = time.monotonic()
        if action is None or action == self.last or now - self.told_at < ACTION_EVERY_S:
            return
        self.last, self.told_at = action, now
        self.events.event(self.item_id, WORKING, action, attempt=self.attempt)


def tail_source(attempt: Attempt) -> Path | None:
    """The log that says why an attempt failed: the test's when the test ran and failed, else the worker's."""
    return attempt.test_log_path if attempt.test_exit not in (None, 0) else attempt.log_path


def feedback_text(attempt: Attempt) -> str:
    """What the next attempt is told about this one."""
    lines = [f"Attempt {attempt.number} was not accepted: {attempt.error}."]
    if attempt.violations:
        lines.append("These paths are outside what the item owns; change only owned paths:")
        lines += [f"  {p}" for p in attempt.violations]
    tail_of = tail_source(attempt)
    tail = logcap.log_tail(tail_of, FEEDBACK_TAIL_LINES) if tail_of else ""
    if tail:
        which = "test" if tail_of == attempt.test_log_path else "worker"
        lines += [f"Last lines of the {which} output:", tail]
    return "\n".join(lines) + "\n"


def earlier_feedback(item: tracker.Item) -> str | None:
    """What a wave's first attempt of ``item`` is told: the tracker's ``last_error`` (an earlier wave's
    failure, the reason given to ``wavegit reopen``), as a retry is told why the attempt before failed."""
    return f"Before this wave: {item.last_error}\n" if item.last_error else None


def _not_started(context: AttemptContext, run: ItemRun, reason: str, attempt: int) -> None:
    """``run`` ends before its next attempt; ``reason`` (``not started: ...``) is its error, and the event's
    detail says why without saying "not started" a second time after its state."""
    run.not_started = reason
    context.events.event(run.item.id, "not started", reason.removeprefix("not started: "), attempt=attempt)


def run_attempts(context: AttemptContext, run: ItemRun, tries: int, stop_reason: Callable[[], str | None],
                 turn: int | None) -> None:
    """Up to ``tries`` attempts of ``run``'s item, until one is verified, the first at queue position
    ``turn`` (:class:`WorkerSlots`; None: whenever a slot is free, as a retry); ``stop_reason`` is asked
    before each launch, once it has its worker slot (halted, over budget, cancelled). ``run`` is filled in
    place."""
    item = run.item
    if tries < 1:
        _not_started(context, run, f"not started: no attempt left ({item.attempts} of max_attempts "
                     f"{context.config.max_attempts} used)", item.attempts + 1)
        return
    feedback = earlier_feedback(item)
    for number in range(1, tries + 1):
        # Numbered across waves, as the tracker counts them: the progress, the report and the tracker agree.
        counted = item.attempts + number
        # A first attempt waiting for its slot starts its sandboxes meanwhile, parked (Ahead).
        ahead = Ahead(context, item, feedback) if number == 1 and turn is not None and \
            context.confiner.jail.bwrap is not None else None
        slot = context.slots.take(turn if number == 1 else None,
                                  ahead.meanwhile() if ahead is not None else None)
        try:
            wave_stop = stop_reason()
            stop = wave_stop or context.profile_stopped(item)
            if slot is None or stop is not None:
                # No slot: the batch stopped, as stop_reason says (it asks the cancel first).
                # Another worker's launch failure is the setup's, every item's: their last_error says it.
                run.stopped_by_wave = (slot is None or wave_stop is not None) and context.launch_error is None
                _not_started(context, run, stop or "not started: the wave stopped", counted)
                return
            try:
                attempt = run_attempt(context, item, number, feedback, slot,
                                      ahead.take() if ahead is not None else None)
            except (WavegitError, OSError) as exc:
                # wavegit's own failure (a git step), not the item's: not counted, no further tries.
                attempt = Attempt(counted, context.label(item), "", context.base, utc_now(), utc_now(),
                                  error=one_line(str(exc)), counted=False)
        finally:
            if ahead is not None:
                ahead.close()
            if slot is not None:
                slot.give_back()
        run.attempts.append(attempt)
        if attempt.commit is not None:
            context.events.event(item.id, "verified", attempt=counted)
            return
        # An attempt not counted is said without a number: `status` must not show it as a failed attempt.
        state = "cancelled" if attempt.killed == "cancelled" else "failed"
        shown = counted if attempt.counted else None
        context.events.event(item.id, state, attempt.error or "", attempt=shown)
        if attempt.launch_failed or not attempt.counted:
            return
        if attempt.permanent is not None:
            # Counted once; the next try of this item would fail the same way (and, unless the reason is
            # the item's own, any of its profile's: run_attempt stopped the profile).
            return
        feedback = attempt.feedback


def run_attempt(context: AttemptContext, item: tracker.Item, number: int, feedback: str | None,
                slot: Slot, pad: Launchpad | None = None) -> Attempt:
    """Attempt ``number`` of ``item`` in this wave (its tree and logs are named by it; the attempt is
    numbered ``item.attempts + number``, across waves): its worker in its worktree (in ``slot``, given back
    once the worker has exited), then :func:`verify`. ``pad``: the attempt set up ahead (:class:`Ahead`)."""
    pad = pad or set_up(context, item, number, feedback)
    attempt, ready, confinement = pad.attempt, pad.ready, pad.confinement
    assert attempt.log_path is not None and ready is not None and confinement is not None
    config, env, stem = context.config, pad.env, pad.stem
    agent = context.agent(item)
    sandboxed = context.confiner.jail.bwrap is not None
    watch = ActionWatch(context.events, item.id, attempt.number, agent)
    try:
        context.events.event(item.id, "started", attempt=attempt.number)
        attempt.started_at = utc_now()
        # Reading the tree back counts against the attempt's wall clock too.
        deadline = time.monotonic() + config.timeout_s
        result = runner.run_process(agent.argv(sandboxed), cwd=ready.path, env=env,
                                    stdin_text=pad.prompt, log_path=attempt.log_path,
                                    timeout_s=config.timeout_s,
                                    idle_timeout_s=config.idle_timeout_s, cancel=context.cancel,
                                    confine=confinement, log_bytes=config.sandbox.log_bytes,
                                    on_line=watch.line if agent.preset is not None else None,
                                    parked=pad.worker, on_start=slot.launched)
        attempt.exit_code, attempt.killed = result.exit_code, result.killed
        ended = result.killed is None and result.exit_code is not None and result.exit_code >= 0
        reading = cost.cost_reading(Path(env["WAVEGIT_COST_FILE"]), attempt.log_path, agent, config.prices,
                                    ended=ended, exited_ok=ended and result.exit_code == 0,
                                    lost=result.log_lost)
        attempt.cost, attempt.input_tokens, attempt.output_tokens = (reading.usd, reading.input_tokens,
                                                                     reading.output_tokens)
        # Counted before the next launch asks the budget.
        context.spend.record(f"{item.id} attempt {attempt.number}", reading.usd, reading.tokens, reading.note)
        if reading.permanent is not None and agent.stops_profile(reading.permanent):
            # Before the slot is given back: the launch it lets through asks whether the profile stopped.
            context.stop_profile(attempt.profile, f"{item.id} attempt {attempt.number}: {reading.permanent}")
        slot.give_back()
        try:
            verify(context, item, ready, attempt, result, deadline, reading.error, pad.test)
        except (WavegitError, OSError) as exc:
            # wavegit's own failure after the worker ran: not counted, but what the worker cost is kept.
            attempt.error, attempt.counted = one_line(str(exc)), False
        if attempt.commit is None and attempt.counted and limits.disk_full(ready.path):
            # What finished attempts left for the wave's cleanup must not be what excuses this one.
            context.workspaces.flush()
            if limits.excused_by_full_disk(ready.path, context.repo.worktrees_dir,
                                           context.confiner.private_root / stem,
                                           context.confiner.private_root.parent,
                                           test=(checkout_of(ready), context.confiner.private_root
                                                 / f"{item.id}-{attempt.number}.test")):
                attempt.error = (f"{attempt.error} (not counted: the attempt trees' disk is full, and not by "
                                 "this attempt's tree)")
                attempt.counted = False
        if attempt.commit is None and attempt.error and reading.denied:
            # A denied tool is no failure by itself (wavegit runs the test), but may say why one happened.
            attempt.error = f"{attempt.error}; {reading.denied}"
        if attempt.commit is None and attempt.counted and reading.permanent is not None:
            attempt.permanent = reading.permanent
            attempt.error = f"{attempt.error} (not retried: {reading.permanent})"
    finally:
        attempt.finished_at = utc_now()
        # Read back (or failed): the tree and the worker's HOME go in the background, not in this slot's time.
        pad.close()
    if attempt.commit is None and attempt.counted:
        attempt.feedback = feedback_text(attempt)
    return attempt


def verify(context: AttemptContext, item: tracker.Item, ready: Ready, attempt: Attempt,
           result: runner.ProcessResult, deadline: float, agent_error: str | None = None,
           test_pad: TestPad | None = None) -> None:
    """Judge a finished worker (exit, its own account of failure ``agent_error``, its tree within the limits,
    ownership, a change, the item's test on a clean checkout of the commit, without write credentials); keep
    the commit when verified. ``test_pad``: the test's sandbox started ahead, parked."""
    if result.launch_error is not None:
        context.stop_batch(result.launch_error)
        attempt.error, attempt.counted, attempt.launch_failed = result.launch_error, False, True
        return
    # An agent's own words about its failure come from its preset (its output is an event stream).
    if attempt.failed("worker", result, quote=context.agent(item).preset is None) \
            or agent_error is not None:
        # What the agent says went wrong ("Not logged in", a denied tool) is the error, not a bare exit code.
        attempt.error = f"{attempt.error or 'worker'}: {agent_error}" if agent_error else attempt.error
        return
    root, config = context.repo.root, context.config
    limits = snapshot.Limits(config.max_file_bytes, config.max_changed_files)
    trailers = wavebranch.Trailers(item.id, context.wave_id, attempt.prompt_sha256, attempt.worker)
    message = wavebranch.item_message(item.title, trailers)
    # Written with the tree by the read itself (one git process fewer); dangling unless it is verified.
    said = snapshot.CommitInfo(message, *context.workspaces.idents())
    # The read-back and the test (git processes) go after the launches under way, which they would delay;
    # a launch that takes long (a big tree made by its own thread) keeps no verdict waiting for long.
    context.slots.wait_for_launches(min(LAUNCH_WAIT_S, max(0.0, deadline - time.monotonic())))
    try:
        taken = snapshot.read(root, ready.path, ready.base, ready.untouched, limits, deadline, said)
    except snapshot.TreeRejected as exc:
        # The worker's doing (a limit, the clock, an unreadable tree): the attempt counts.
        attempt.error = str(exc)
        return
    judged = changes.judge(item.id, item.owns, protected_of(config), taken.changed, ready.base.links)
    attempt.files_changed, attempt.violations = judged.changed, judged.violations
    if judged.error is not None:
        attempt.error = judged.error
        return
    if not attempt.files_changed or taken.commit is None:
        attempt.error = "the worker changed nothing"
        return
    commit = taken.commit
    attempt.test_log_path = report.item_test_log(context.logs / f"{item.id}-{attempt.number}.log")
    context.events.event(item.id, "testing", attempt=attempt.number)
    try:
        prepared = test_pad.prepared if test_pad is not None else None
        checkout = _test_checkout(context, ready, commit, taken.written, prepared, taken.changed)
    except _Exhausted:
        raise
    except WavegitError as exc:
        # The base checked out, so the worker's paths did not (`.git.`, a symlinked `.gitmodules`): its
        # doing, and counted, or it would be retried without end.
        attempt.error = f"the worker's tree cannot be checked out: {one_line(str(exc))}"
        return
    if test_pad is not None and test_pad.checkout == checkout:
        confinement, test_env, parked = test_pad.confinement, test_pad.env, test_pad.parked
    else:
        (confinement, test_env), parked = test_sandbox(context, item, checkout, attempt.number), None
    try:
        test = runner.run_process(runner.command_argv(item.test), cwd=checkout, env=test_env, stdin_text="",
                                  log_path=attempt.test_log_path, timeout_s=config.timeout_s,
                                  idle_timeout_s=config.idle_timeout_s, cancel=context.cancel,
                                  confine=confinement, log_bytes=config.sandbox.log_bytes, parked=parked)
    finally:
        context.workspaces.discard(confinement.layout.private)
        context.workspaces.discard(checkout)
    attempt.test_exit = test.exit_code
    if attempt.failed("test", test):
        if attempt.launch_failed and _changes_program(item.test, attempt.files_changed):
            # Not the setup's fault but the worker's commit (it deleted the program or made it unrunnable):
            # counted, or every later wave would run its agent again, never reaching max_attempts.
            attempt.counted, attempt.launch_failed = True, False
        return
    attempt.message, attempt.commit = message, commit
    context.verified[commit] = CommitChanges([CommitSha(ready.base.commit)], list(taken.changes))


def _changes_program(command: str, changed: list[str]) -> bool:
    """Whether ``changed`` (a worker's changed paths) holds the program ``command`` starts, when that is a
    file of the tree (a relative path with a slash), or a folder or link on the way to it."""
    program = runner.command_argv(command)[0]
    if "/" not in program or os.path.isabs(program):
        return False
    path = os.path.normpath(program)
    return any(path == change or path.startswith(f"{change}/") for change in changed)


class _Exhausted(WavegitError):
    """The machine ran out of disk, processes or memory: wavegit's failure, not counted against the item."""


def _test_checkout(context: AttemptContext, ready: Ready, commit: str, written: Sequence[str],
                   prepared: Future[bool] | None, changed: Sequence[str]) -> Path:
    """The clean checkout of ``commit`` (``written``: the objects it adds to its base; ``changed``: its
    paths) the item's test runs in, from the base's checkout ``prepared`` meanwhile when there is one.
    When the machine ran out, perhaps through this worker's own tree (gigabytes in ignored files), the tree
    is removed and the checkout tried once more; running out again is :class:`_Exhausted`, since what the
    worker left is gone by then, unless the base checks out there: then the commit itself is too big, the
    worker's doing (a WavegitError, counted)."""
    path = checkout_of(ready)
    narrow = context.confiner.jail.bwrap is not None
    try:
        return context.workspaces.test_checkout(commit, path, narrow=narrow, written=written,
                                                prepared=prepared, changed=changed)
    except (WavegitError, OSError) as exc:
        if not _ran_out(exc):
            raise
    workspace.remove(path)
    workspace.remove(ready.path)
    context.workspaces.flush()  # and what finished attempts left for the wave's cleanup
    try:
        return context.workspaces.test_checkout(commit, path, narrow=narrow, written=written)
    except (WavegitError, OSError) as exc:
        if not _ran_out(exc):
            raise
        said = one_line(str(exc))
    workspace.remove(path)
    if _base_fits(context.workspaces, ready.base.commit, path):
        # The commit, not the machine: its checkout outgrows the tree that held it (hard links, git's `ident`
        # or eol expansion); wavegit's failure, it would be run again in every wave, never counted.
        raise WavegitError(f"its checkout runs out of room where the base's does not: {said}")
    raise _Exhausted(f"checking out the worker's tree for its test: {said}")


def _base_fits(workspaces: Workspaces, base: str, path: Path) -> bool:
    """Whether ``base`` checks out at ``path`` now (removed again); what else fails is raised."""
    try:
        workspaces.test_checkout(base, path, narrow=False)
    except (WavegitError, OSError) as exc:
        if not _ran_out(exc):
            raise
        return False
    finally:
        workspace.remove(path)
    return True


def _ran_out(exc: WavegitError | OSError) -> bool:
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EAGAIN, errno.ENOMEM)
    return any(sign in str(exc) for sign in _EXHAUSTED)

