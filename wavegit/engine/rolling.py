"""Rolling waves (``wavegit run --continuous``): one scheduler keeps up to ``concurrency`` items in flight,
across several waves at once; each wave is still claimed, run, combined, tested, pushed, recorded and
reported as one (:func:`.pipeline.run_claimed`), so it stays the unit of review.

- Whenever a worker exits, the scheduler claims (one compare-and-swap commit, :func:`.claim.claim`) as many
  ready items as worker slots are idle (:class:`RollingSlots`), plus ``concurrency`` more that wait for a
  slot, so that a freed slot starts the next item at once rather than after a claim; the planner never takes
  one that overlaps an item in flight (``in_progress`` or ``review``), this scheduler's or another's. The
  exited worker's attempt is read back and tested meanwhile, as in a wave. A claim that found nothing ready
  is retried once a wave was recorded, or after ``POLL_S``.
- Claims go to the *open* wave. It closes to new items once it has ``max_items``, ``wave_window_s`` after its
  first claim, when its spend reached the wave ceiling, when an item became ``done`` since it opened (merged
  work: what depends on it or overlaps it must start from a base that has it), or when nothing is ready and
  none of its items runs. The next claim then opens a new wave.
- A closed wave whose last item ended is delivered in its own thread (combine, wave test, push, pull request,
  record, report) while later waves run.
- Every claim checks HALT and the day budget, the latter also against what this scheduler's unrecorded
  waves spent; a halt or a ceiling stops new claims and lets running items finish (exit 3).
- Without ``watch`` the scheduler ends when nothing is ready and nothing is in flight; with it, it polls the
  tracker every ``POLL_S`` until interrupted.
- Ctrl-C or SIGTERM: every wave's workers are cancelled, and each wave records and reports what it has.

Each wave holds its lock (``wavegit.core.wavelock``) and its heartbeat from before its first claim until its
record landed, so ``kill -9`` leaves what ``wavegit run`` leaves, once per wave in flight, and ``sync``
recovers it alike.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace

from wavegit.attempts import sandbox, wavebranch
from wavegit.core import heartbeat, wavelock
from wavegit.core.errors import (
    EXIT_BAD_INPUT,
    EXIT_HALTED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_WORK_FAILED,
    BudgetExceededError,
    WavegitError,
)
from wavegit.core.repo import Repo
from wavegit.engine import preflight
from wavegit.engine.attempt import run_attempts
from wavegit.engine.claim import Claim, claim, resolve_base
from wavegit.engine.eventlog import EventLog
from wavegit.engine.outcome import WaveOutcome
from wavegit.engine.pipeline import Delivery, Interrupted, WaveOptions, claim_report, hold, run_claimed
from wavegit.engine.runs import ItemRun, utc_now
from wavegit.engine.slots import Slot, WorkerSlots
from wavegit.engine.wave import Wave, await_items
from wavegit.model import lifecycle, report, tracker
from wavegit.model.config import Config
from wavegit.model.select import Plan, select
from wavegit.trackerbranch import budget
from wavegit.trackerbranch.store import TrackerStore

POLL_S = 2.0
"""``--watch``: how often an idle scheduler asks the tracker for ready items."""
EXIT_ORDER = (EXIT_BAD_INPUT, EXIT_HALTED)
"""Exit codes that outrank any wave's (bad input, then halted or over budget); below them the highest wave
code wins (4, 1, 0). Ctrl-C or SIGTERM: 130, whatever came before."""


class RollingSlots(WorkerSlots):
    """The worker slots every wave of a scheduler shares, and how many are idle: free, less those that
    retries wait for and those promised to items claimed but not started yet. A slot is held while a worker
    runs, so the next item is claimed while the previous attempt is read back and tested."""

    def __init__(self, size: int, on_free: Callable[[], None]) -> None:
        """``on_free``: called whenever a slot is given back."""
        super().__init__(size)
        self._promised = 0
        self._on_free = on_free

    def promise(self, count: int) -> None:
        with self._cond:
            self._promised += count

    def idle(self) -> int:
        with self._cond:
            return self._free - self._retries - self._promised

    def take(self, turn: int | None) -> Slot | None:
        """``turn`` not None: an item's first attempt, which takes the slot promised to it (a rolling wave's
        items start as soon as they are claimed, in no queue); None: a retry."""
        if turn is not None:
            with self._cond:
                self._promised -= 1
        return super().take(None)

    def put_back(self) -> None:
        super().put_back()
        self._on_free()


class WaveStopped(WavegitError):
    """A rolling wave stopped on an error of its own: no new claim (exit 1, the wave's work failed)."""

    exit_code = EXIT_WORK_FAILED


@dataclass(frozen=True)
class RollingOptions:
    max_items: int | None = None
    """Items per wave (``--max-items``; default ``max_items``)."""
    watch: bool = False
    poll_s: float = POLL_S


class RollingWave:
    """One rolling wave: its items handed over claim by claim and run on the scheduler's slots; it is its own
    :class:`.pipeline.ItemSource`, so :func:`.pipeline.run_claimed` delivers it once it is closed and its
    last item ended."""

    def __init__(self, scheduler: Scheduler, wave_id: str, opened_at: float) -> None:
        self.scheduler = scheduler
        self.wave_id = wave_id
        self.opened_at = opened_at
        self.done_at_open: frozenset[str] | None = None
        """The ``done`` items when its first claim was planned: its base has their work."""
        self.count = 0
        self.running = 0
        self.closed = False
        self.interrupted = False
        self.wave: Wave | None = None
        self.outcome: WaveOutcome | None = None
        self.error: BaseException | None = None
        self.settled = False
        self.keep_lock = False
        """A claim into it was cut short (Ctrl-C): what it took is unknown, so its lock stays for ``sync``."""
        self.beating: heartbeat.Heartbeat | None = None
        """Its heartbeat on the remote, from before its first claim until its claims are settled."""
        self.ended = False
        """Its thread is done: it takes no more items."""
        self._pending: list[ItemRun] = []
        self._cond = threading.Condition()
        self.thread: threading.Thread | None = None
        self.report: report.WaveReport | None = None

    # The ItemSource side, in the wave's own thread.
    def base(self, claimed: Claim) -> str:
        return resolve_base(self.scheduler.repo, self.scheduler.config, claimed.commit)

    def fill(self, wave: Wave, runs: list[ItemRun]) -> None:
        config = self.scheduler.config
        context = wave.context
        context.slots = self.scheduler.slots
        with self._cond:
            self.wave = wave
        futures: list[Future[None]] = []
        batch = list(runs)
        with ThreadPoolExecutor(max_workers=self.scheduler.max_items,
                                thread_name_prefix="wavegit-item") as pool:
            try:
                while batch:
                    for run in batch:
                        context.events.event(run.item.id, "queued")
                        # Made in the background while it waits for its slot (its own thread makes it if
                        # the slot comes first).
                        context.workspaces.prepare(context.spec(run.item, 1))
                        tries = lifecycle.attempts_left(run.item, config.attempts, config.max_attempts)
                        futures.append(pool.submit(self._run_item, wave, run, tries))
                    with self._cond:
                        self._cond.wait_for(lambda: bool(self._pending) or self.closed or self.interrupted)
                        batch, self._pending = self._pending, []
                    runs += batch
                await_items(context, futures)
            finally:
                context.workspaces.close()
        # Reported and combined in tracker order, as a wave's items are.
        runs.sort(key=lambda run: run.item.index)
        if self.report is not None:
            # The first claim skipped, for want of room, items a later claim took into this wave.
            taken = {run.item.id for run in runs}
            self.report.skipped = [skip for skip in self.report.skipped if skip.id not in taken]
        if self.interrupted:
            raise KeyboardInterrupt

    def _run_item(self, wave: Wave, run: ItemRun, tries: int) -> None:
        try:
            run_attempts(wave.context, run, tries, wave.stop_reason, 0)
        finally:
            with self._cond:
                self.running -= 1
            self.scheduler.changed()

    # The scheduler side, in its thread.
    def add(self, items: Sequence[tracker.Item]) -> bool:
        """Hand over items claimed into this wave; False when it ended first (it failed before it could run
        them): they stay claimed, and its lock is written again, so ``sync`` returns them once this process
        is gone."""
        with self._cond:
            if self.ended:
                wavelock.write(self.scheduler.repo, wavelock.this_process(self.wave_id))
                return False
            self.count += len(items)
            self.running += len(items)
            self._pending += [ItemRun(item) for item in items]
            self._cond.notify_all()
            return True

    def close(self) -> None:
        with self._cond:
            self.closed = True
            self._cond.notify_all()

    def interrupt(self) -> None:
        with self._cond:
            self.interrupted = self.closed = True
            wave = self.wave
            self._cond.notify_all()
        if wave is not None:
            wave.context.stop()

    @property
    def spent(self) -> float:
        wave = self.wave
        return wave.spent if wave is not None else 0.0

    def over_wave_budget(self) -> bool:
        wave = self.wave
        return wave is not None and wave.context.spend.exceeded

    def deliver(self, claimed: Claim, options: WaveOptions, delivery: Delivery) -> None:
        """Start the wave's thread: :func:`.pipeline.run_claimed` with this wave as its item source."""
        scheduler = self.scheduler
        started = utc_now()
        self.count = self.running = len(claimed.items)
        rep = self.report = claim_report(scheduler.config, scheduler.store, claimed, options, started)

        def work() -> None:
            try:
                self.outcome = run_claimed(scheduler.repo, scheduler.config, scheduler.store, claimed, rep,
                                           source=self, delivery=delivery, options=options)
                self.settled = self.outcome.report.tracker_updated or not self.outcome.report.items
            except Interrupted as exc:
                self.settled = exc.settled
                if exc.report is not None:
                    self.outcome = WaveOutcome(exc.report, EXIT_INTERRUPTED)
            except BaseException as exc:  # handed to the scheduler thread
                self.error = exc
            finally:
                with self._cond:
                    self.ended = True
                    # Items handed over after it stopped taking them were never run nor recorded.
                    settled = self.settled and not self.keep_lock and not self._pending
                    if settled:
                        wavelock.remove(scheduler.repo, self.wave_id)
                if self.beating is not None:
                    self.beating.stop(settled=settled)
                scheduler.changed()

        self.thread = threading.Thread(target=work, name=f"wavegit-{self.wave_id}", daemon=True)
        self.thread.start()


@dataclass
class RollingOutcome:
    outcomes: list[WaveOutcome]
    """One per delivered wave, in the order they ended."""
    exit_code: int
    stopped: WavegitError | None
    """What stopped new claims (HALT, a budget, bad input), or None."""


class Scheduler:
    """``wavegit run --continuous``: see the module docstring."""

    def __init__(self, repo: Repo, config: Config, store: TrackerStore, *, delivery: Delivery,
                 options: WaveOptions, rolling: RollingOptions,
                 on_report: Callable[[WaveOutcome], None] = lambda outcome: None) -> None:
        self.repo = repo
        self.config = config
        self.store = store
        self.delivery = delivery
        self.options = replace(options, sandbox=options.sandbox or sandbox.decide(config.sandbox, os.environ))
        self.rolling = rolling
        self.max_items = rolling.max_items or config.max_items
        self.concurrency = max(1, config.concurrency)
        self.slots = RollingSlots(self.concurrency, self.changed)
        self.lookahead = self.concurrency
        """Items claimed beyond the idle slots, waiting for one: a freed slot takes the next item at once
        instead of after a claim (a fetch and a push), as a wave's items wait for their slots."""
        self.on_report = on_report
        self.open: RollingWave | None = None
        self.waves: list[RollingWave] = []
        """Waves claimed and not yet delivered."""
        self.outcomes: list[WaveOutcome] = []
        self.stopped: WavegitError | None = None
        self.day_spent = 0.0
        """The day's recorded spend as the last claim read it."""
        self._unrecorded: list[RollingWave] = []
        """The waves whose spend the last claim's ``day_spent`` did not hold."""
        self._changes = 0
        self._failure: BaseException | None = None
        """What a wave's thread raised (wavegit's own failure), raised once every other wave has ended."""
        self._next_claim_at = 0.0
        """No claim before this ``time.monotonic()``: the last one found nothing ready."""
        self._cond = threading.Condition()
        self._claiming: RollingWave | None = None

    def changed(self) -> None:
        """An item or a wave ended: the scheduler looks again."""
        with self._cond:
            self._changes += 1
            self._cond.notify_all()

    def run(self) -> RollingOutcome:
        interrupted = False
        try:
            self._loop()
        except KeyboardInterrupt:
            interrupted = True
            self._interrupt()
        self._reap()
        if self._failure is not None:
            raise self._failure
        return RollingOutcome(self.outcomes, self._exit_code(interrupted), self.stopped)

    def _exit_code(self, interrupted: bool) -> int:
        codes = [outcome.exit_code for outcome in self.outcomes]
        if self.stopped is not None:
            codes.append(self.stopped.exit_code)
        if interrupted:
            return EXIT_INTERRUPTED
        for code in EXIT_ORDER:
            if code in codes:
                return code
        return max(codes, default=EXIT_OK)

    def _loop(self) -> None:
        while True:
            self._reap()
            seen = self._changes
            wait: float | None = None
            if self.open is not None and self._closes(self.open):
                self._close_open()
            stopping = self.stopped is not None or self.slots.stopped or self._failure is not None
            wanted = self.slots.idle() + self.lookahead
            if not stopping and wanted > 0 and time.monotonic() >= self._next_claim_at:
                if self._claim(wanted):
                    continue
                # Nothing ready: only a wave's record (an item back to todo) or another writer makes more.
                self._next_claim_at = time.monotonic() + self.rolling.poll_s
            if stopping:
                self._close_open()
            if not self.waves:
                if stopping or not self.rolling.watch:
                    return
                wait = self.rolling.poll_s
            elif self.open is not None and not self.open.closed:
                wait = max(0.0, self.open.opened_at + self.config.wave_window_s - time.monotonic())
            if wanted > 0 and not stopping:
                wait = min(wait if wait is not None else math.inf,
                           max(0.0, self._next_claim_at - time.monotonic()))
            self._wait(seen, wait)

    def _wait(self, seen: int, timeout: float | None) -> None:
        """Until something changed since change number ``seen`` or ``timeout`` passed."""
        with self._cond:
            self._cond.wait_for(lambda: self._changes != seen, timeout=timeout)

    def _claim(self, free: int) -> int:
        """Claim up to ``free`` ready items into the open wave (opening one if needed); how many were taken.
        A HALT, a ceiling or bad input stops new claims (``stopped``) once anything was claimed."""
        wave = self.open
        if wave is not None and self._closes(wave):
            self._close_open()
            wave = None
        if wave is None:
            opened = time.monotonic()
            wave = RollingWave(self, wavebranch.new_wave_id(utc_now()), opened)
            wave.beating = hold(self.repo, self.config, wave.wave_id)
        self._claiming = wave
        try:
            self._check_day()
            claimed, moved = self._claim_into(wave, min(free, self.max_items - wave.count))
        except WavegitError as exc:
            self._claiming = None
            self._discard(wave)
            if not (self.waves or self.outcomes):
                raise  # nothing claimed yet: as `wavegit run` would
            self.stopped = exc
            return 0
        self._claiming = None
        if moved:
            # Work was merged since the open wave branched: the next items start from a base that has it.
            self._discard(wave)
            self._close_open()
            return 1
        self.slots.promise(len(claimed.items))
        if not claimed.items:
            self._discard(wave)
            if wave.count and not wave.running:
                self._close_open()
            return 0
        if wave.count == 0:
            self.open = wave
            self.waves.append(wave)
            self._unrecorded.append(wave)
            wave.deliver(claimed, self.options, self.delivery)
        else:
            log = EventLog(self.repo.events_dir / f"{wave.wave_id}.jsonl")
            log.claimed(wave.wave_id, claimed.plan.selected)
            if not wave.add(claimed.items):
                self._close_open()
        return len(claimed.items)

    def _claim_into(self, wave: RollingWave, count: int) -> tuple[Claim, bool]:
        """The claim of ``count`` items into ``wave``; True when it took nothing because an item became
        ``done`` since ``wave`` opened."""
        moved: list[bool] = []

        def planner(loaded: tracker.Tracker, max_items: int, tracker_sha: str) -> Plan:
            done = frozenset(item.id for item in loaded.items if item.status == lifecycle.Status.DONE.value)
            if wave.count and done != wave.done_at_open:
                moved.append(True)
                return Plan((), (), tracker_sha)
            if not wave.count:
                wave.done_at_open = done
            return select(loaded, max_items, tracker_sha)

        claimed = claim(self.repo, self.config, self.store, max_items=count, wave_id=wave.wave_id,
                        now=utc_now(), check=preflight.claim_checks(self.repo, self.config, wave.wave_id),
                        planner=planner)
        self.day_spent = claimed.day_spent
        self._unrecorded = list(self.waves)
        return claimed, bool(moved)

    def _check_day(self) -> None:
        """The day ceiling against the day's recorded spend and what this scheduler's waves spent since."""
        ceiling = self.config.budget.day_usd
        spent = self.day_spent + sum(wave.spent for wave in {*self._unrecorded, *self.waves})
        if ceiling > 0 and spent >= ceiling:
            raise BudgetExceededError(
                f"over the daily budget: spent ${budget.format_usd(spent)} of ${budget.format_usd(ceiling)} "
                "today (UTC), waves in flight included")

    def _closes(self, wave: RollingWave) -> bool:
        return (wave.closed or wave.count >= self.max_items or wave.over_wave_budget()
                or time.monotonic() - wave.opened_at >= self.config.wave_window_s)

    def _close_open(self) -> None:
        if self.open is not None:
            self.open.close()
            self.open = None

    def _discard(self, wave: RollingWave) -> None:
        """A wave that was about to open claimed nothing: its lock goes."""
        if wave.count == 0:
            wavelock.remove(self.repo, wave.wave_id)
            if wave.beating is not None:
                wave.beating.stop(settled=True)

    def _reap(self) -> None:
        """Hand over the waves that were delivered."""
        for wave in [wave for wave in self.waves if wave.thread is not None and not wave.thread.is_alive()]:
            self.waves.remove(wave)
            if wave is self.open:
                self.open = None
            self._next_claim_at = 0.0  # its record may have made items ready again
            if wave.error is not None:
                # wavegit's own failure in a wave: no new claim; the other waves end first, then it is raised.
                self._failure = self._failure or wave.error
            if wave.outcome is not None:
                error = wave.outcome.report.error
                if error is not None and self.stopped is None and not self.slots.stopped:
                    # What stopped it (a base that cannot be fetched, a record that did not land) would stop
                    # the next wave too, and its items are back to todo for the next claim: no new claim.
                    self.stopped = WaveStopped(f"wave {wave.wave_id} stopped: {error}")
                self.outcomes.append(wave.outcome)
                self.on_report(wave.outcome)

    def _interrupt(self) -> None:
        """Ctrl-C or SIGTERM: no new claim; every wave cancels its workers, records and reports. A claim cut
        short keeps its wave's lock, so ``sync`` here returns whatever it took."""
        if self._claiming is not None:
            self._claiming.keep_lock = True
        self._close_open()
        self.slots.stop()
        for wave in self.waves:
            wave.interrupt()
        for wave in list(self.waves):
            if wave.thread is not None:
                wave.thread.join()
