"""Worker slots: at most ``concurrency`` workers at once (README: "workers at once"), in the wave's order.

A slot is held while a worker runs, not while its attempt is read back and tested: the next worker starts
as soon as the previous one has exited, and the item's test runs beside it. First attempts take their
slots in queue order (highest priority first); a retry goes before any first attempt still waiting, as it
did when an item kept its slot for all its attempts. A finished attempt is read back and tested once no
worker is about to start (:meth:`WorkerSlots.wait_for_launches`): on a machine with few cores, eight
read-backs and tests (five git processes each) delayed the next batch's launches by 30-100 ms. A first
attempt that has to wait for its slot may do its own launch's work meanwhile (:class:`Meanwhile`: start
its sandbox, parked), once that work can be done.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass


class Slot:
    """One worker slot, held until :meth:`give_back` (which may be called again, doing nothing)."""

    def __init__(self, slots: WorkerSlots) -> None:
        self._slots: WorkerSlots | None = slots
        self._launching: WorkerSlots | None = slots

    def launched(self) -> None:
        """Its worker has started (or will not: :meth:`give_back` says so too)."""
        slots, self._launching = self._launching, None
        if slots is not None:
            slots.launched()

    def give_back(self) -> None:
        self.launched()
        slots, self._slots = self._slots, None
        if slots is not None:
            slots.put_back()


@dataclass(frozen=True)
class Meanwhile:
    """What a first attempt does while it waits for its slot: ``run``, once ``ready`` says it can (whoever
    makes it ready calls :meth:`WorkerSlots.poke`) and no worker is about to start; not when the slot comes
    first."""

    ready: Callable[[], bool]
    run: Callable[[], None]


class WorkerSlots:
    def __init__(self, size: int, on_launch: Callable[[], None] | None = None) -> None:
        """``on_launch``: called (outside the lock) each time a slot's worker has started, or will not."""
        self._on_launch = on_launch
        self._free = max(1, size)
        self._turn = 0
        """The queue position whose first attempt takes the next slot."""
        self._retries = 0
        """Retries waiting for a slot."""
        self._waiting = 0
        """Attempts waiting for a slot, first ones and retries."""
        self._launching = 0
        """Slots taken whose worker has not started yet."""
        self._stopped = False
        self._cond = threading.Condition()

    def take(self, turn: int | None, meanwhile: Meanwhile | None = None) -> Slot | None:
        """A slot for the first attempt at queue position ``turn`` (after every earlier position), or for a
        retry (``turn`` None); None when the batch stopped while waiting (:meth:`stop`). ``meanwhile`` runs
        here, in the caller's thread, if it is ready before the slot is."""
        if meanwhile is not None and turn is not None and self._ready_first(turn, meanwhile.ready):
            meanwhile.run()
        with self._cond:
            self._waiting += 1
            if turn is None:
                self._retries += 1
                self._cond.wait_for(lambda: self._stopped or self._free > 0)
                self._retries -= 1
            else:
                self._cond.wait_for(lambda: self._stopped or self._may_take(turn))
                self._turn = max(self._turn, turn + 1)
            self._waiting -= 1
            return self._hand_out()

    def _may_take(self, turn: int) -> bool:
        return self._free > 0 and self._retries == 0 and self._turn == turn

    def _ready_first(self, turn: int, ready: Callable[[], bool]) -> bool:
        """Wait until ``turn``'s slot is free, the batch stopped, or ``ready()`` with no worker about to
        start (work done ahead must not delay the launches under way); whether ``ready`` came first."""
        with self._cond:
            self._cond.wait_for(lambda: self._stopped or self._may_take(turn) or (
                self._launching == 0 and ready()))
            return not self._stopped and not self._may_take(turn)

    def poke(self) -> None:
        """Something a :class:`Meanwhile` waits for happened."""
        with self._cond:
            self._cond.notify_all()

    def _hand_out(self) -> Slot | None:
        """After a wait, the condition held: a slot (its worker about to start), or None once stopped."""
        # Whoever waits may go now: the next turn, or first attempts once no retry waits.
        self._cond.notify_all()
        if self._stopped:
            return None
        self._free -= 1
        self._launching += 1
        return Slot(self)

    def launched(self) -> None:
        """A slot's worker has started, or will not (:meth:`Slot.launched`)."""
        with self._cond:
            self._launching -= 1
            self._cond.notify_all()
        if self._on_launch is not None:
            self._on_launch()

    def wait_for_launches(self, timeout_s: float) -> None:
        """Wait, at most ``timeout_s``, while a worker is about to start, or an attempt waits for a free slot
        (it is about to take it): a finished attempt's read-back and test go after the launches, not
        before them."""
        with self._cond:
            self._cond.wait_for(lambda: self._stopped or (
                self._launching == 0 and (self._free == 0 or self._waiting == 0)), timeout=timeout_s)

    @property
    def stopped(self) -> bool:
        """Whether :meth:`stop` was called (a launch failure, Ctrl-C)."""
        return self._stopped

    def put_back(self) -> None:
        """A slot is free again (:meth:`Slot.give_back`)."""
        with self._cond:
            self._free += 1
            self._cond.notify_all()

    def stop(self) -> None:
        """The batch stopped: every wait ends, no slot is handed out any more."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()


class RollingSlots(WorkerSlots):
    """The worker slots every wave of a ``run --continuous`` scheduler shares, and how many are idle: free,
    less those that retries wait for and those promised to items claimed but not started yet. Each claimed
    item has a turn (a number) and a sort key: of the first attempts waiting, the one with the lowest key
    takes the next slot, so an item claimed later that the planner ranks first (a longer one) overtakes those
    still waiting, across waves; a turn whose item never asks (its wave stopped) holds no other back."""

    def __init__(self, size: int, on_free: Callable[[], None]) -> None:
        """``on_free``: called whenever a slot is given back."""
        super().__init__(size)
        self._promised: set[int] = set()
        self._queued: set[int] = set()
        """First attempts waiting for a slot, by turn."""
        self._keys: dict[int, tuple[float, ...]] = {}
        self._on_free = on_free

    def promise(self, keys: Mapping[int, tuple[float, ...]]) -> None:
        """A slot for each turn of ``keys`` (items just claimed), taken in the order of their keys."""
        with self._cond:
            self._promised.update(keys)
            self._keys.update(keys)

    def forget(self, turn: int) -> None:
        """``turn``'s item is over: a slot promised to it and never taken (no attempt left, its wave
        stopped) is idle again."""
        with self._cond:
            self._promised.discard(turn)
            self._keys.pop(turn, None)

    def idle(self) -> int:
        with self._cond:
            return self._free - self._retries - len(self._promised) - len(self._queued)

    def take(self, turn: int | None, meanwhile: Meanwhile | None = None) -> Slot | None:
        """``turn`` not None: an item's first attempt, which takes the slot promised to it once no retry and
        no first attempt with a lower key waits; None: a retry, first. ``meanwhile`` is not run: a rolling
        wave's items are claimed as slots free, so none waits long enough to start ahead."""
        if turn is None:
            return super().take(None)
        with self._cond:
            self._promised.discard(turn)
            self._queued.add(turn)
            self._waiting += 1
            self._cond.wait_for(lambda: self._stopped or (
                self._free > 0 and self._retries == 0 and min(self._queued, key=self._key) == turn))
            self._queued.discard(turn)
            self._waiting -= 1
            return self._hand_out()

    def _key(self, turn: int) -> tuple[float, ...]:
        return (*self._keys.get(turn, ()), turn)

    def put_back(self) -> None:
        super().put_back()
        self._on_free()
