"""An item's lifecycle: its statuses and every change between them, as pure functions.

::

    todo --claim--> in_progress --record: verified--> review --done (merge SHA)--> done
      ^                 |  |                             |
      |   record: not verified / release (lease expired, lost wave): one attempt more
      +--- ... while attempts < max_attempts;  failed once they reach it
      +------------------------------------------------ reopen (PR closed unmerged, dropped by a reviewer)

    by hand (``wavegit done|reopen|block``), from any status but ``in_progress`` (its wave's scheduler may
    still record it: ``wavegit release --wave W`` first): -> done, -> todo with attempts reset, -> blocked

Each function takes plain facts (the item's current fields, configuration numbers, the time as the tracker
writes it) and returns an :class:`Update`: the new status and the tracker fields that change with it, which
the tracker editor applies (``tracker.set_fields``). Nothing here reads git, a clock or a file.

Two rules live only here:

- **max_attempts is a hard cap.** A failed attempt sends an item back to ``todo`` while its attempts across
  all waves stay under ``max_attempts``, to ``failed`` once they reach it (:func:`after_failure`). A wave runs
  at most the attempts an item has left (:func:`attempts_left`), and an item set back to ``todo`` by hand with
  no attempt left is not claimed: the claim marks it ``failed`` with a ``last_error`` saying how to retry it
  (:func:`exhausted`).
- **The claim's fields follow the status** (:data:`KEPT`): ``claimed_at`` is the claim's lease, held only in
  flight (``in_progress``, ``review``); ``pr`` comes with review. An item that ends keeps where it ended: a
  ``done`` item its ``wave``, ``pr`` and ``merge_sha``, a ``failed`` one its ``wave`` (whose report has the
  logs). An item back in ``todo`` (or ``blocked``) is nobody's: it carries none of them.

The changes by hand (:func:`mark_done`, :func:`reopen_by_hand`, :func:`block`, and the checks
:func:`check_droppable` and :func:`check_editable`) return None when the item is already where they would put
it, so a retried command writes nothing, and raise :class:`NotAllowed` when its status forbids them.

This module is imported by the planner (``wavegit plan`` is a hot path): it imports nothing but the standard
library's ``enum`` and ``typing``, and times come in as text (``report.utc_timestamp``).
"""

from collections.abc import Mapping
from enum import Enum
from typing import NamedTuple, Protocol

from wavegit.core.git import WaveId


class Status(str, Enum):
    """An item's status; a ``str``, so the tracker, the reports and the CLI read the same text."""

    value: str

    TODO = "todo"
    IN_PROGRESS = "in_progress"
    REVIEW = "review"
    DONE = "done"
    FAILED = "failed"
    BLOCKED = "blocked"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


STATUSES = tuple(status.value for status in Status)
IN_FLIGHT = (Status.IN_PROGRESS, Status.REVIEW)
"""Statuses whose items hold their ownership: nothing overlapping them is planned or pushed."""

CLAIM_FIELDS = ("wave", "claimed_at", "pr", "merge_sha")
"""Fields that describe an item's claim and its delivery."""
KEPT: Mapping[Status, tuple[str, ...]] = {
    Status.TODO: (),
    Status.IN_PROGRESS: ("wave", "claimed_at"),
    Status.REVIEW: ("wave", "claimed_at", "pr"),
    Status.DONE: ("wave", "pr", "merge_sha"),
    Status.FAILED: ("wave",),
    Status.BLOCKED: (),
}
"""The claim fields an item keeps in each status; every other one is removed when it gets there."""

ERROR_CHARS = 300
"""``last_error`` is one line of at most this many characters."""


class ItemState(Protocol):
    """What the transitions read of an item (``tracker.Item`` has it)."""

    @property
    def status(self) -> str: ...

    @property
    def attempts(self) -> int: ...

    @property
    def cost(self) -> float: ...

    @property
    def last_error(self) -> str | None: ...


class Update(NamedTuple):
    """An item's new status and every tracker field that changes with it (None removes the field).

    A NamedTuple, not a dataclass: this module is on the planner's import path, where making a dataclass
    costs more than the planning of a small tracker."""

    status: Status
    fields: Mapping[str, object | None]


def _update(status: Status, at: str, **changes: object | None) -> Update:
    cleared = {name: None for name in CLAIM_FIELDS if name not in KEPT[status] and name not in changes}
    return Update(status, {"status": status.value, **cleared, **changes, "updated_at": at})


def one_line(text: str) -> str:
    """``text`` as a ``last_error``: whitespace folded, at most ``ERROR_CHARS`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= ERROR_CHARS else flat[: ERROR_CHARS - 1] + "…"


def after_failure(attempts: int, max_attempts: int) -> Status:
    """Where an item goes when a claim ends without a verified change, ``attempts`` counted."""
    return Status.FAILED if attempts >= max_attempts else Status.TODO


def attempts_left(item: ItemState, per_wave: int, max_attempts: int) -> int:
    """How many attempts a wave may give ``item``: ``per_wave``, within what ``max_attempts`` leaves."""
    return max(0, min(per_wave, max_attempts - item.attempts))


def exhausted(item: "HandState", max_attempts: int, at: str) -> Update | None:
    """A ``todo`` item with no attempt left (set back to ``todo`` by hand) goes to ``failed``; else None."""
    if item.status != Status.TODO or item.attempts < max_attempts:
        return None
    return _update(Status.FAILED, at, last_error=(
        f"not claimed: {item.attempts} of max_attempts {max_attempts} attempts used; `wavegit reopen "
        f"{item.id} --reason ...` resets them (or raise max_attempts) to try it again"))


def claim(wave_id: WaveId, at: str) -> Update:
    """A ready item taken by wave ``wave_id``."""
    return _update(Status.IN_PROGRESS, at, wave=wave_id, claimed_at=at)


def record(item: ItemState, *, verified: bool, used: int, cost: float, error: str | None,
           max_attempts: int, at: str, pr: int | None = None) -> Update:
    """The outcome of a claim's attempts: ``used`` counted attempts costing ``cost``, verified or not
    (``error``: why not). Verified goes to review (with ``pr`` when a pull request was opened)."""
    changes: dict[str, object | None] = {}
    if cost:
        changes["cost"] = round(item.cost + cost, 6)
    total = item.attempts + used
    if used:
        changes["attempts"] = total
    if verified:
        if pr is not None:
            changes["pr"] = pr
        return _update(Status.REVIEW, at, last_error=None, **changes)
    # Never started (halted, over budget, a launch failure): nothing counted, back to todo.
    status = after_failure(total, max_attempts) if used else Status.TODO
    last_error = one_line(error) if error else (item.last_error if status == Status.TODO else "not verified")
    return _update(status, at, last_error=last_error, **changes)


def release(item: ItemState, reason: str, max_attempts: int, at: str, *, counted: bool = True) -> Update:
    """A claim that ended with nothing to show (its lease expired, its wave was lost): one attempt more --
    none when ``counted`` is False (its scheduler is known to have died: wavegit's death, not the item's)."""
    if not counted:
        return _update(Status.TODO, at, last_error=f"{reason}; no attempt counted")
    attempts = item.attempts + 1
    return _update(after_failure(attempts, max_attempts), at, attempts=attempts, last_error=reason)


def done(merge_sha: str | None, at: str) -> Update:
    """A reviewed (or in-progress, already merged) item whose change reached the base branch."""
    return _update(Status.DONE, at, merge_sha=merge_sha, last_error=None)


def reopen(reason: str, at: str) -> Update:
    """An item under review sent back to ``todo`` without counting an attempt: its pull request was closed
    unmerged, or a reviewer dropped it from the wave."""
    return _update(Status.TODO, at, last_error=reason)


# -- changes by hand (wavegit done | reopen | block | drop | edit) ------------------------------------------

class NotAllowed(ValueError):
    """A change by hand that the item's status forbids; the message says why and what to do instead."""


class HandState(ItemState, Protocol):
    """What the changes by hand (and messages naming the way out) read of an item besides its
    :class:`ItemState`."""

    @property
    def id(self) -> str: ...

    @property
    def wave(self) -> str | None: ...

    @property
    def merge_sha(self) -> str | None: ...

    @property
    def pr(self) -> int | None: ...


def _not_in_progress(item: HandState, doing: str) -> None:
    if item.status == Status.IN_PROGRESS:
        raise NotAllowed(
            f"{item.id} is in_progress in wave {item.wave}, whose scheduler may still record it: once that "
            f"scheduler is gone, `wavegit release --wave {item.wave}` returns its claims; then {doing}")


def mark_done(item: HandState, merge_sha: str | None, at: str) -> Update | None:
    """``wavegit done``: the item's change is in the base branch (at ``merge_sha`` when known). None when it
    is done already and ``merge_sha`` adds nothing; a done item keeps its merge SHA unless given another."""
    _not_in_progress(item, "mark it done")
    if item.status == Status.DONE and merge_sha in (None, item.merge_sha):
        return None
    if merge_sha is None and item.status == Status.DONE:
        merge_sha = item.merge_sha
    return done(merge_sha, at)


def reopen_by_hand(item: HandState, reason: str, at: str) -> Update | None:
    """``wavegit reopen``: back to ``todo`` with its attempts reset, ``reason`` as its ``last_error`` (the
    next worker is told it). None when it is ``todo`` with no attempt counted already."""
    _not_in_progress(item, "reopen it")
    if item.status == Status.TODO and item.attempts == 0:
        return None
    return _update(Status.TODO, at, attempts=0, last_error=one_line(reason))


def block(item: HandState, reason: str, at: str, *, force: bool = False) -> Update | None:
    """``wavegit block``: not planned until reopened, ``reason`` kept as its ``last_error``. None when it is
    blocked already: the first reason stands unless ``force`` replaces it."""
    _not_in_progress(item, "block it")
    if item.status == Status.DONE:
        raise NotAllowed(f"{item.id} is done; nothing is left to block (`wavegit reopen {item.id} --reason "
                         "...` first if it needs more work)")
    if item.status == Status.BLOCKED and (not force or item.last_error == one_line(reason)):
        return None
    return _update(Status.BLOCKED, at, last_error=one_line(reason))


def check_droppable(item: HandState, *, force: bool = False) -> None:
    """``wavegit drop``: an item in progress is never removed; one in review only with ``force`` (its pull
    request may still be merged, and sync would then have nothing to mark done)."""
    _not_in_progress(item, "drop it")
    if item.status == Status.REVIEW and not force:
        where = f"PR #{item.pr}" if item.pr is not None else f"wave {item.wave}"
        raise NotAllowed(f"{item.id} is in review ({where}): its change may still be merged; "
                         "--force drops it anyway")


def check_editable(item: HandState) -> None:
    """``wavegit edit``: an item in flight is not edited (its worker has its prompt, and the hook and the
    planner hold its ownership)."""
    if item.status == Status.IN_PROGRESS:
        raise NotAllowed(f"{item.id} is in_progress in wave {item.wave}: its ownership is held while it is "
                         "in flight; edit it once its wave has recorded it (`wavegit release --wave "
                         f"{item.wave}` if its scheduler is gone)")
    if item.status == Status.REVIEW:
        where = f"PR #{item.pr}" if item.pr is not None else f"wave {item.wave}"
        raise NotAllowed(f"{item.id} is in review ({where}): its ownership is held while it is in flight; "
                         f"edit it once it is done or back to todo (`wavegit reopen {item.id} --reason ...`)")
