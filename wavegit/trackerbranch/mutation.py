"""The compare-and-swap loop every tracker write goes through: read, apply, validate, write, and on a lost
race replay or re-apply (``mutate``), whatever the backend (``wavegit.trackerbranch.store.TrackerStore``)."""

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass

from wavegit.core.errors import RaceLostError, WavegitError
from wavegit.trackerbranch.store import (
    OP_TRAILER,
    STALE_LOCK_S,
    CasConflict,
    Change,
    LockHeld,
    RemoteError,
    Snapshot,
    StaleLockError,
    TrackerStore,
    unique_id,
)


@dataclass(frozen=True)
class MutationResult:
    commit: str | None
    """The commit that landed; None when ``apply`` decided there was nothing to do."""
    snapshot: Snapshot
    """The snapshot ``apply`` last ran against."""
    attempts: int = 0
    """Writes tried (0 when there was nothing to do)."""
    reapplied: int = 0
    """How often ``apply`` ran again because the tracker changed under us (replays do not count)."""
    op_id: str = ""


def with_trailer(message: str, key: str, value: str) -> str:
    """``message`` with ``key: value`` added to its trailer block (a new block if it has none)."""
    body = message.rstrip("\n")
    paragraphs = body.split("\n\n")
    last = paragraphs[-1].splitlines()
    has_block = len(paragraphs) > 1 and all(_is_trailer(line) for line in last)
    separator = "\n" if has_block else "\n\n"
    return f"{body}{separator}{key}: {value}\n"


def _is_trailer(line: str) -> bool:
    key, sep, _ = line.partition(": ")
    return bool(sep) and bool(key) and all(ch.isalnum() or ch == "-" for ch in key)


def mutate(
    store: TrackerStore,
    apply: Callable[[Snapshot], Change | None],
    *,
    message: str,
    deadline_s: float = 120.0,
    stale_lock_s: float = STALE_LOCK_S,
    guard: Callable[[Snapshot], None] | None = None,
    known: Snapshot | None = None,
) -> MutationResult:
    """Read, apply, validate, write; on a lost race replay or re-apply with jittered backoff.

    ``guard`` runs on every snapshot a write is about to rest on -- the first, every re-applied one and
    every replayed one -- and raises to give up with nothing written: a precondition that lives outside
    the tracker blob (HALT, the day's spend) is re-checked even when the change is replayed unchanged.

    After a lost race: if our operation id is already in the branch's new history, our write landed
    (e.g. the push went through but its answer was lost) and we stop. If the tracker blob is unchanged
    (only unrelated commits), the same change is replayed on the new head without calling ``apply``.
    Otherwise ``apply`` runs again on the new snapshot. Past ``deadline_s``: RaceLostError (exit 4).
    A write failing on the same lock file for ``stale_lock_s`` while the branch does not move is no race:
    StaleLockError names the lock file.

    ``known``: the tracker as this clone last fetched it (``store.known``), read without asking the remote.
    The first write rests on it, and its compare-and-swap tells whether it was still the remote's head: a
    refusal goes on from a fetched read at once, without the backoff of a race. Nothing is decided on it
    alone: should ``guard`` or ``apply`` raise on it or find nothing to do, they run again on a fetched read.
    """
    op_id = unique_id()
    full_message = with_trailer(message, OP_TRAILER, op_id)
    started = time.monotonic()

    def prepared(snapshot: Snapshot) -> Change | None:
        if guard is not None:
            guard(snapshot)
        return apply(snapshot)

    snapshot, change, on_known = _first_change(store, prepared, known)
    first = snapshot
    expected = snapshot
    attempts = reapplied = 0
    delay = 0.05
    lock: LockHeld | None = None
    lock_since = started

    def result(commit: str | None) -> MutationResult:
        return MutationResult(commit, snapshot, attempts, reapplied, op_id)

    while change is not None:
        attempts += 1
        try:
            return result(store.write(expected, change, full_message))
        except LockHeld as exc:
            if lock is None or exc.lock_file != lock.lock_file:
                lock_since = time.monotonic()
            lock = exc
        except CasConflict:
            lock = None
        except RemoteError:
            # The push may have landed even though we saw it fail; look before reporting failure.
            head = store.read()
            if store.contains_op(head, first, op_id):
                return result(head.commit)
            raise
        import random  # only a lost race needs it; plan and the other read paths start faster without it

        # A refused first write on the known snapshot may only have been behind: no backoff before the read.
        pause = 0.0 if on_known and attempts == 1 else random.uniform(delay / 2, delay)
        out_of_time = time.monotonic() - started + pause > deadline_s
        if pause and not out_of_time:
            time.sleep(pause)
            delay = min(delay * 2, 2.0)
        head = store.read()
        if store.contains_op(head, first, op_id):
            return result(head.commit)
        if head.commit != expected.commit:
            lock = None  # the branch moved: whoever held the lock was a live writer
        elif lock is not None and (out_of_time or time.monotonic() - lock_since >= stale_lock_s):
            raise _stale_lock(store, lock, time.monotonic() - lock_since)
        if out_of_time:
            raise RaceLostError(
                f"lost the compare-and-swap race on {store.target} after {attempts} attempts "
                f"in {time.monotonic() - started:.1f}s; nothing of this change was written, try again")
        if guard is not None and head.commit != expected.commit:
            guard(head)  # the same commit would pass the same way
        if head.blob_sha != expected.blob_sha:
            snapshot = head
            change = apply(head)
            reapplied += 1
        expected = head
    return result(None)


def _first_change(store: TrackerStore, prepared: Callable[[Snapshot], Change | None],
                  known: Snapshot | None) -> tuple[Snapshot, Change | None, bool]:
    """The snapshot the first write rests on, its change, and whether that snapshot is ``known`` (the tracker
    as last fetched): a refusal or nothing to do on it is decided again on a fetched read."""
    if known is not None:
        with contextlib.suppress(WavegitError):
            change = prepared(known)
            if change is not None:
                return known, change, True
    snapshot = store.read()
    return snapshot, prepared(snapshot), False


def _stale_lock(store: TrackerStore, lock: LockHeld, held_s: float) -> StaleLockError:
    # Only a lock on the remote is something another writer could have held; a local one is ours.
    what = (f"lost the compare-and-swap race on {store.target} to a lock" if lock.on_remote
            else f"cannot write to {store.target}")
    return StaleLockError(
        f"{what}: every attempt for {held_s:.1f}s failed on the lock file {lock.lock_file} while the branch "
        "stood still (a git process killed in the middle of a ref update leaves one); remove it once no git "
        "uses that repository; nothing of this change was written")
