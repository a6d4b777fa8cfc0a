"""An item's lifecycle: its statuses and every change between them, as pure functions.

::

    todo --claim--> in_progress --record: verified--> review --done (merge SHA)--> done
      ^                 |  |                             |
      |   record: not verified / release (lease expired, lost wave): one attempt more
      +--- ... while attempts < max_attempts;  failed once they reach it
      +------------------------------------------------ reopen (PR closed unmerged, dropped by a reviewer)

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

This module is imported by the planner (``wavegit plan`` is a hot path): it imports nothing but the standard
library's ``enum`` and ``typing``, and times come in as text (``report.utc_timestamp``).
"""

from collections.abc import Mapping
from enum import Enum
from typing import NamedTuple, Protocol


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


def exhausted(item: ItemState, max_attempts: int, at: str) -> Update | None:
    """A ``todo`` item with no attempt left (set back to ``todo`` by hand) goes to ``failed``; else None."""
    if item.status != Status.TODO or item.attempts < max_attempts:
        return None
    return _update(Status.FAILED, at, last_error=(
        f"not claimed: {item.attempts} of max_attempts {max_attempts} attempts used; set attempts lower "
        "(or raise max_attempts) to try it again"))


def claim(wave_id: str, at: str) -> Update:
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


def release(item: ItemState, reason: str, max_attempts: int, at: str) -> Update:
    """A claim that ended with nothing to show (its lease expired, its wave was lost): one attempt more."""
    attempts = item.attempts + 1
    return _update(after_failure(attempts, max_attempts), at, attempts=attempts, last_error=reason)


def done(merge_sha: str | None, at: str) -> Update:
    """A reviewed (or in-progress, already merged) item whose change reached the base branch."""
    return _update(Status.DONE, at, merge_sha=merge_sha, last_error=None)


def reopen(reason: str, at: str) -> Update:
    """An item under review sent back to ``todo`` without counting an attempt: its pull request was closed
    unmerged, or a reviewer dropped it from the wave."""
    return _update(Status.TODO, at, last_error=reason)
