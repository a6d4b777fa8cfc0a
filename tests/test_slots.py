"""wavegit.engine.slots: workers at once, handed out in queue order, retries first, with real threads."""

from __future__ import annotations

import threading
import time

from wavegit.engine.slots import Meanwhile, RollingSlots, Slot, WorkerSlots


def _waiting(slots: WorkerSlots, turn: int | None, got: list[int | None],
             label: int | None = None) -> threading.Thread:
    """A thread taking a slot for ``turn``; it appends ``label`` to ``got`` (None: stopped)."""
    def wait() -> None:
        slot = slots.take(turn)
        got.append(label if slot is not None else None)

    thread = threading.Thread(target=wait)
    thread.start()
    return thread


def test_first_attempts_take_their_slots_in_queue_order_whatever_order_they_ask_in() -> None:
    slots = WorkerSlots(1)
    first = slots.take(0)
    assert first is not None
    got: list[int | None] = []
    # Position 2 asks before position 1; both wait for the one slot.
    late = _waiting(slots, 2, got, 2)
    early = _waiting(slots, 1, got, 1)
    first.give_back()
    early.join(timeout=10)
    assert got == [1] and late.is_alive()
    slots.put_back()
    late.join(timeout=10)
    assert got == [1, 2]


def test_a_retry_goes_before_the_first_attempts_waiting() -> None:
    slots = WorkerSlots(1)
    held = slots.take(0)
    assert held is not None
    got: list[int | None] = []
    first_attempt = _waiting(slots, 1, got, 1)
    retry = _waiting(slots, None, got, -1)
    # Until the retry waits (its count, under the slots' own lock): then the freed slot is the retry's.
    while True:
        with slots._cond:
            if slots._retries == 1:
                break
    held.give_back()
    retry.join(timeout=10)
    assert got == [-1] and first_attempt.is_alive()
    slots.put_back()
    first_attempt.join(timeout=10)
    assert got == [-1, 1]


def test_never_more_slots_than_its_size_and_giving_back_twice_frees_one() -> None:
    slots = WorkerSlots(2)
    a, b = slots.take(0), slots.take(1)
    assert isinstance(a, Slot) and isinstance(b, Slot)
    got: list[int | None] = []
    third = _waiting(slots, 2, got, 2)
    a.give_back()
    a.give_back()
    third.join(timeout=10)
    assert got == [2]
    fourth = _waiting(slots, 3, got, 3)
    assert fourth.is_alive()
    slots.stop()
    fourth.join(timeout=10)
    assert got == [2, None]


def test_stop_ends_every_wait_and_hands_out_nothing_more() -> None:
    slots = WorkerSlots(1)
    assert slots.take(0) is not None
    got: list[int | None] = []
    waiting = [_waiting(slots, 1, got, 1), _waiting(slots, None, got, -1)]
    slots.stop()
    for thread in waiting:
        thread.join(timeout=10)
    assert got == [None, None] and slots.take(2) is None


def test_a_finished_attempt_waits_for_the_launch_its_slot_goes_to_not_longer() -> None:
    slots = WorkerSlots(1)
    first = slots.take(0)
    assert first is not None
    first.launched()
    got: list[int | None] = []
    nextone = _waiting(slots, 1, got, 1)
    first.give_back()
    nextone.join(timeout=10)
    assert got == [1]
    settled = threading.Event()
    reader = threading.Thread(target=lambda: (slots.wait_for_launches(30), settled.set()))
    reader.start()
    # The slot went to position 1, whose worker has not started yet: the read-back waits.
    assert not settled.wait(0.3)
    slots.launched()  # what Slot.launched of position 1's slot does
    assert settled.wait(10)
    reader.join(timeout=10)
    # Nothing waits and nothing is about to start: no wait at all.
    slots.put_back()
    started = time.monotonic()
    slots.wait_for_launches(30)
    assert time.monotonic() - started < 5
    # However long a launch takes, the wait ends at its bound.
    slots.take(None)
    started = time.monotonic()
    slots.wait_for_launches(0.2)
    assert 0.2 <= time.monotonic() - started < 5


def test_a_rolling_slot_counts_its_launch_so_a_read_back_after_it_does_not_wait() -> None:
    slots = RollingSlots(2, lambda: None)
    slots.promise({0: (1.0,)})
    slot = slots.take(0)
    assert slot is not None
    done = threading.Event()
    reader = threading.Thread(target=lambda: (slots.wait_for_launches(30), done.set()))
    reader.start()
    # Its worker has not started: a read-back waits for it, as with a wave's slots.
    assert not done.wait(0.3)
    slot.launched()
    assert done.wait(10)
    reader.join(timeout=10)
    # Launched and given back: nothing is about to start, so nothing waits (the count never went below zero).
    slot.give_back()
    started = time.monotonic()
    slots.wait_for_launches(30)
    assert time.monotonic() - started < 5


def test_a_meanwhile_runs_once_ready_with_no_launch_under_way_not_if_its_slot_comes_first() -> None:
    slots = WorkerSlots(1)
    held = slots.take(0)
    assert held is not None
    ready, ran, got = threading.Event(), threading.Event(), []
    waiting = threading.Thread(target=lambda: got.append(slots.take(1, Meanwhile(ready.is_set, ran.set))))
    waiting.start()
    ready.set()
    slots.poke()
    # Not while the held slot's worker is about to start: work ahead would delay that launch.
    assert not ran.is_set()
    held.launched()
    assert ran.wait(10) and not got  # done while the slot is still held
    held.give_back()
    waiting.join(10)
    assert got and got[0] is not None
    # The slot free at once: nothing is done meanwhile, even when it could be.
    got[0].give_back()
    skipped = threading.Event()
    assert slots.take(2, Meanwhile(lambda: True, skipped.set)) is not None and not skipped.is_set()


def test_on_launch_is_told_once_per_slot_when_its_worker_starts_or_never_will() -> None:
    told: list[str] = []
    slots = WorkerSlots(2, on_launch=lambda: told.append("launched"))
    started, unstarted = slots.take(0), slots.take(1)
    assert started is not None and unstarted is not None
    assert told == []
    started.launched()
    started.give_back()  # its launch was told already
    assert told == ["launched"]
    unstarted.give_back()  # no worker started in it: told all the same
    assert told == ["launched", "launched"]
