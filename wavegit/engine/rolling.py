"""Rolling waves (``wavegit run --continuous``): one scheduler keeps up to ``concurrency`` items in flight,
across several waves at once; each wave is still claimed, run, combined, tested, pushed, recorded and
reported as one (:func:`.pipeline.run_claimed`), so it stays the unit of review.

- Whenever a worker exits, the scheduler claims (one compare-and-swap commit, :func:`.claim.claim`) as many
  ready items as worker slots are idle (:class:`.slots.RollingSlots`), plus ``2 * concurrency`` more that
  wait for a slot, so that a freed slot starts the next item at once rather than after a claim; while no slot
  idles, it waits until half of those can be taken by one claim, or ``POLL_S`` passed since the last one.
  The planner never takes one that overlaps an item in flight (``in_progress`` or ``review``), this
  scheduler's or another's, and takes, within a priority, the longest chain of expected work first
  (:mod:`.order`); claimed items take the slots in that order, across waves. The exited worker's attempt is
  read back and tested meanwhile, as in a wave.
- A claim that left no ready item aside for want of room drained the backlog: the next look, once a wave was
  recorded or after ``POLL_S``, is a fetch (and a plan when the tracker changed), and claims, holding a new
  wave's heartbeat, only when something is ready.
- Claims go to the *open* wave. It closes to new items once it has ``max_items``, ``wave_window_s`` after its
  first claim, when its spend reached the wave ceiling, when an item became ``done`` since it opened (merged
  work: what depends on it or overlaps it must start from a base that has it), or when nothing is ready and
  none of its items runs. The next claim then opens a new wave.
- A closed wave whose last item ended is delivered in its own thread (combine, wave test, push, pull request,
  record, report) while later waves run.
- Every claim checks HALT and the day budget, the latter also against what this scheduler's unrecorded
  waves spent; a halt or a ceiling stops new claims and lets running items finish (exit 3).
- An item whose worker or test could not launch (no attempt counted, back to todo) is not claimed again by
  this scheduler until its ``test`` or ``worker`` is edited: the same launch would fail the same way.
- Without ``watch`` the scheduler ends when nothing is ready and nothing is in flight; with it, it looks
  every ``POLL_S`` until interrupted.
- Ctrl-C or SIGTERM: every wave's workers are cancelled, and each wave records and reports what it has.

Each wave holds its lock (``wavegit.core.wavelock``) and its heartbeat from before its first claim until its
record landed, so ``kill -9`` leaves what ``wavegit run`` leaves, once per wave in flight, and ``sync``
recovers it alike.
"""

from __future__ import annotations

import itertools
import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from wavegit.attempts import sandbox, wavebranch
from wavegit.core import wavelock
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
from wavegit.engine import order, preflight
from wavegit.engine.claim import Claim, claim, load_tracker
from wavegit.engine.eventlog import EventLog
from wavegit.engine.outcome import WaveOutcome
from wavegit.engine.pipeline import Delivery, WaveOptions, hold
from wavegit.engine.rollingwave import RollingWave
from wavegit.engine.runs import utc_now
from wavegit.engine.slots import RollingSlots
from wavegit.engine.wave import HaltWatch
from wavegit.model import lifecycle, report, tracker
from wavegit.model.config import Config
from wavegit.model.select import Plan, Skip, select
from wavegit.trackerbranch import budget
from wavegit.trackerbranch.store import TrackerStore

POLL_S = 1.0
"""How often a scheduler whose last claim drained the backlog looks for new ready items (a fetch, and a plan
when the tracker changed); ``--watch`` polls so while nothing runs."""
UNLAUNCHABLE = "not taken again by this run: its worker or test could not launch (edit its test or worker)"
EXIT_ORDER = (EXIT_BAD_INPUT, EXIT_HALTED)
"""Exit codes that outrank any wave's (bad input, then halted or over budget); below them the highest wave
code wins (4, 1, 0). Ctrl-C or SIGTERM: 130, whatever came before."""


class WaveStopped(WavegitError):
    """A rolling wave stopped on an error of its own: no new claim (exit 1, the wave's work failed)."""

    exit_code = EXIT_WORK_FAILED


@dataclass(frozen=True)
class RollingOptions:
    max_items: int | None = None
    """Items per wave (``--max-items``; default ``max_items``)."""
    watch: bool = False
    poll_s: float = POLL_S


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
        self.lookahead = 2 * self.concurrency
        """Items claimed beyond the idle slots, waiting for one: a freed slot takes the next item at once
        instead of after a claim (a push, after the look's fetch), as a wave's items wait for their slots; two
        rounds of slots, so that the next claim lands before the queue runs dry even when short items end in a
        burst."""
        self.batch = max(1, self.lookahead // 2)
        """While no slot idles, a claim waits until it can take this many items: fewer pushes."""
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
        self._unreadable: str | None = None
        """A wave of this run that spent an amount that cannot be read: over the day's ceiling from then on
        (its record holds only what could be read, so the next claim's ``day_spent`` no longer says so)."""
        self._changes = 0
        self._failure: BaseException | None = None
        """What a wave's thread raised (wavegit's own failure), raised once every other wave has ended."""
        self._next_claim_at = 0.0
        """No claim before this ``time.monotonic()``: the last one found nothing ready."""
        self._claimed_at = 0.0
        """When the last claim (or look) started."""
        self._cond = threading.Condition()
        self._claiming: RollingWave | None = None
        self.halt_watch = HaltWatch(store, threading.Lock())
        """Every wave's HALT reads before launches: one read serves all of them, and each claim is one."""
        self._turns = itertools.count()
        """Each claimed item's turn: its place among the claimed items (the tie-break of their ranks)."""
        self._drained: str | None = None
        """The tracker's blob SHA when the last claim (or look) left no ready item aside (None: it did): until
        the tracker changes, nothing more is ready."""
        self._unlaunchable: dict[str, tuple[str, str | None]] = {}
        """Item id -> its ``test`` and ``worker`` when its attempt could not launch: counted as no attempt, it
        goes back to todo, and taking it again would fail the same way without end (a new wave every few
        seconds), so this scheduler leaves it until either is edited."""

    def unlaunchable(self, item: tracker.Item) -> None:
        """``item``'s worker or test could not launch: not taken again as it is (:meth:`_plannable`)."""
        with self._cond:
            self._unlaunchable[item.id] = (item.test, item.worker)

    def _plannable(self, loaded: tracker.Tracker) -> tuple[tracker.Tracker, tuple[Skip, ...]]:
        """``loaded`` as this scheduler plans it: the todo items whose launch failed, not edited since, held
        back (as blocked), with their skip reasons."""
        with self._cond:
            held = {item.id: item for item in loaded.items if item.status == lifecycle.Status.TODO.value
                    and self._unlaunchable.get(item.id) == (item.test, item.worker)}
        if not held:
            return loaded, ()
        planned = tracker.Tracker(loaded.version, tuple(
            replace(item, status=lifecycle.Status.BLOCKED.value) if item.id in held else item
            for item in loaded.items))
        return planned, tuple(Skip(item_id, UNLAUNCHABLE) for item_id in held)

    def changed(self) -> None:
        """An item or a wave ended: the scheduler looks again."""
        with self._cond:
            self._changes += 1
            self._cond.notify_all()

    def run(self) -> RollingOutcome:
        interrupted = False
        # While it watches, `wavegit status` says so: between waves there is no wave to show.
        watching = wavelock.watch(self.repo, report.utc_timestamp()) if self.rolling.watch else None
        try:
            self._loop()
        except KeyboardInterrupt:
            interrupted = True
            self._interrupt()
        finally:
            if watching is not None:
                watching.unlink(missing_ok=True)
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
            # Nothing ready and none of its items runs: nothing would join it soon.
            if self.open is not None and (self._closes(self.open) or (
                    self._drained is not None and not self.open.running)):
                self._close_open()
            stopping = self.stopped is not None or self.slots.stopped or self._failure is not None
            idle = self.slots.idle()
            wanted = idle + self.lookahead
            # A claim is a push after a fetch: it takes several items at once, unless a slot has nothing to
            # run or POLL_S passed since the last one (items made ready since, by a merge, may rank first).
            polled_at = self._claimed_at + self.rolling.poll_s
            due = wanted > 0 and (idle > 0 or wanted >= self.batch or time.monotonic() >= polled_at)
            if not stopping and due and time.monotonic() >= self._next_claim_at and self._claim(wanted):
                continue
            if stopping:
                self._close_open()
            if not self.waves:
                if stopping or not self.rolling.watch:
                    return
                wait = self.rolling.poll_s
            elif self.open is not None and not self.open.closed:
                wait = max(0.0, self.open.opened_at + self.config.wave_window_s - time.monotonic())
            if wanted > 0 and not stopping:
                at = self._next_claim_at if due else max(self._next_claim_at, polled_at)
                wait = min(wait if wait is not None else math.inf, max(0.0, at - time.monotonic()))
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
        self._claimed_at = time.monotonic()
        try:
            if self._drained is not None and not self._ready():
                # Nothing ready: only a wave's record (an item back to todo) or another writer makes more.
                self._next_claim_at = time.monotonic() + self.rolling.poll_s
                return 0
        except WavegitError as exc:
            return self._stop_claims(exc)
        if wave is None:
            opened = time.monotonic()
            wave = RollingWave(self, wavebranch.new_wave_id(utc_now()), opened)
            wave.beating = hold(self.repo, self.config, wave.wave_id)
        self._claiming = wave
        try:
            self._check_day()
            claimed, moved, ranked = self._claim_into(wave, min(free, self.max_items - wave.count))
        except WavegitError as exc:
            self._claiming = None
            self._discard(wave)
            return self._stop_claims(exc)
        self._claiming = None
        if moved:
            # Work was merged since the open wave branched: the next items start from a base that has it.
            self._discard(wave)
            self._close_open()
            return 1
        claimed_ids = {item.id for item in claimed.items}
        taken = [item_id for item_id in claimed.plan.selected if item_id in claimed_ids]
        turns = dict(zip(taken, itertools.islice(self._turns, len(taken)), strict=True))
        self.slots.promise({turn: ranked.get(item_id, ()) for item_id, turn in turns.items()})
        # Nothing left for want of room: the backlog is drained until the tracker changes (a look costs a
        # fetch, no push).
        more = any(skip.reason == order.MAX_ITEMS for skip in claimed.plan.skipped)
        self._drained = None if more else claimed.plan.tracker_sha
        if self._drained is not None:
            self._next_claim_at = time.monotonic() + self.rolling.poll_s
        if not claimed.items:
            self._discard(wave)
            return 0
        wave.turns.update(turns)
        if wave.count == 0:
            self.open = wave
            self.waves.append(wave)
            self._unrecorded.append(wave)
            wave.deliver(claimed, self.options, self.delivery)
        else:
            log = EventLog(self.repo.events_dir / f"{wave.wave_id}.jsonl")
            log.claimed(wave.wave_id, claimed.plan.selected)
            # Said as the wave's first claim is: without it, an item taken into the open wave appeared as
            # "queued" with no word of its claim.
            self.options.events.note(f"wave {wave.wave_id}: claimed {', '.join(claimed.plan.selected)}")
            if not wave.add(claimed.items):
                for turn in turns.values():
                    self.slots.forget(turn)
                self._close_open()
        return len(claimed.items)

    def _stop_claims(self, exc: WavegitError) -> int:
        """A claim (or a look) failed: no new claim, the waves in flight end; nothing claimed yet, it is
        raised, as `wavegit run` would."""
        if not (self.waves or self.outcomes):
            raise exc
        self.stopped = exc
        return 0

    def _ready(self) -> bool:
        """Whether a claim would find a ready item, from a fetch, and a plan only when the tracker changed
        since the last claim found the backlog drained: a look costs no push (no heartbeat, no claim)."""
        snapshot = self.store.read()
        blob_sha = snapshot.blob_sha
        if blob_sha == self._drained:
            return False
        planned, _ = self._plannable(load_tracker(snapshot, self.repo, self.config))
        if select(planned, 1, blob_sha or "").selected:
            return True
        self._drained = blob_sha
        return False

    def _claim_into(self, wave: RollingWave, count: int) -> tuple[Claim, bool, dict[str, order.Rank]]:
        """The claim of ``count`` items into ``wave``; True when it took nothing because an item became
        ``done`` since ``wave`` opened; the ranks of the items the plan was made on (:func:`.order.ranks`)."""
        moved: list[bool] = []
        ranked: dict[str, order.Rank] = {}

        def planner(loaded: tracker.Tracker, max_items: int, tracker_sha: str) -> Plan:
            done = frozenset(item.id for item in loaded.items if item.status == lifecycle.Status.DONE.value)
            if wave.count and done != wave.done_at_open:
                moved.append(True)
                return Plan((), (), tracker_sha)
            if not wave.count:
                wave.done_at_open = done
            planned, held = self._plannable(loaded)
            ranked.update(order.ranks(loaded))
            plan = order.longest_first(planned, max_items, tracker_sha, ranked)
            if not held:
                return plan
            index = {item.id: item.index for item in loaded.items}
            skipped = sorted((*plan.skipped, *held), key=lambda skip: index[skip.id])
            return plan._replace(skipped=tuple(skipped))

        claimed = claim(self.repo, self.config, self.store, max_items=count, wave_id=wave.wave_id,
                        now=utc_now(), check=preflight.claim_checks(self.repo, self.config, wave.wave_id),
                        planner=planner)
        self.day_spent = claimed.day_spent
        self.halt_watch.found_none(claimed.halt_read_at)
        self._unrecorded = list(self.waves)
        return claimed, bool(moved), ranked

    def _check_day(self) -> None:
        reason = self.day_reached()
        if reason is not None:
            raise BudgetExceededError(reason)

    def day_reached(self) -> str | None:
        """Why the day ceiling stops claims and launches now, against the day's recorded spend and what this
        scheduler's waves spent since (an amount that could not be read is over it), or None. Asked by every
        launch too: a wave's own ceiling is what was left of the day's at its claim, before the waves claimed
        alongside it spent."""
        ceiling = self.config.budget.day_usd
        if ceiling <= 0:
            return None
        waves = sorted({*self._unrecorded, *self.waves}, key=lambda wave: wave.wave_id)
        spent = self.day_spent + sum(wave.spent for wave in waves)
        if spent >= ceiling:
            return (f"over the daily budget: spent ${budget.format_usd(spent)} of "
                    f"${budget.format_usd(ceiling)} today (UTC), waves in flight included")
        # A wave's unreadable cost stopped new attempts in that wave only, and each later wave let one more
        # start: a run through the whole backlog, one wave an item, none of its cost known.
        self._unreadable = self._unreadable or next((w.wave_id for w in waves if w.unreadable), None)
        if self._unreadable is not None:
            return (f"over the daily budget: wave {self._unreadable} spent an amount that could not be read, "
                    "which counts as over the ceiling")
        return None

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
