"""One rolling wave of ``wavegit run --continuous`` (:mod:`.rolling`): its items handed over claim by claim
and run on the scheduler's shared worker slots, in the order they were claimed; delivered as one wave."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

from wavegit.attempts import limits
from wavegit.core import heartbeat, wavelock
from wavegit.core.errors import EXIT_INTERRUPTED
from wavegit.core.git import WaveId
from wavegit.engine.attempt import run_attempts
from wavegit.engine.claim import Claim, resolve_base
from wavegit.engine.outcome import WaveOutcome
from wavegit.engine.pipeline import Delivery, Interrupted, WaveOptions, claim_report, run_claimed
from wavegit.engine.runs import ItemRun, utc_now
from wavegit.engine.wave import Wave, await_items
from wavegit.model import lifecycle, report, tracker

if TYPE_CHECKING:
    from wavegit.engine.rolling import Scheduler


class RollingWave:
    """One rolling wave: its items handed over claim by claim and run on the scheduler's slots; it is its own
    :class:`.pipeline.ItemSource`, so :func:`.pipeline.run_claimed` delivers it once it is closed and its
    last item ended."""

    def __init__(self, scheduler: Scheduler, wave_id: WaveId, opened_at: float) -> None:
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
        self.turns: dict[str, int] = {}
        """Item id -> its turn for a worker slot (:class:`.slots.RollingSlots`)."""
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
        wave.halt_watch = self.scheduler.halt_watch
        with self._cond:
            self.wave = wave
        futures: list[Future[None]] = []
        batch = sorted(runs, key=self._turn)
        with ThreadPoolExecutor(max_workers=self.scheduler.max_items, thread_name_prefix="wavegit-item",
                                initializer=limits.carry_keyring_filter) as pool:
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
                        batch, self._pending = sorted(self._pending, key=self._turn), []
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

    def _turn(self, run: ItemRun) -> int:
        return self.turns[run.item.id]

    def _run_item(self, wave: Wave, run: ItemRun, tries: int) -> None:
        turn = self._turn(run)
        try:
            run_attempts(wave.context, run, tries, lambda: self._stop_reason(wave), turn)
            if run.attempts and run.attempts[-1].launch_failed:
                self.scheduler.unlaunchable(run.item)
        finally:
            self.scheduler.slots.forget(turn)
            with self._cond:
                self.running -= 1
            self.scheduler.changed()

    def _stop_reason(self, wave: Wave) -> str | None:
        """Why no attempt of ``wave`` may start now: its own reasons, then the day's ceiling over every wave
        of this run (the waves claimed ahead spent after this one's claim)."""
        reason = wave.stop_reason()
        if reason is not None:
            return reason
        day = self.scheduler.day_reached()
        return None if day is None else wave.ceiling_reached(day)

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

    @property
    def unreadable(self) -> bool:
        """Whether an attempt of the wave spent an amount that cannot be read."""
        wave = self.wave
        return wave is not None and wave.context.spend.has_unreadable

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
