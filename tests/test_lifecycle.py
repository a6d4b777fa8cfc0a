"""The item lifecycle's transitions, one by one, and any sequence of them on a real tracker file."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from wavegit.model import lifecycle, tracker
from wavegit.model.lifecycle import CLAIM_FIELDS, KEPT, Status

AT = "2026-01-02T03:04:05Z"


@dataclass(frozen=True)
class Fields:
    status: str = "todo"
    attempts: int = 0
    cost: float = 0.0
    last_error: str | None = None
    id: str = "IT-0"
    wave: str | None = None
    merge_sha: str | None = None
    pr: int | None = None


def test_status_is_the_text_the_tracker_and_the_reports_hold() -> None:
    assert lifecycle.STATUSES == ("todo", "in_progress", "review", "done", "failed", "blocked")
    assert Status.TODO == "todo" and f"{Status.IN_PROGRESS}" == str(Status.IN_PROGRESS) == "in_progress"
    assert "review" in lifecycle.IN_FLIGHT and "done" not in lifecycle.IN_FLIGHT
    assert Status("failed") is Status.FAILED


def test_claim_takes_the_item_for_the_wave_with_its_lease() -> None:
    update = lifecycle.claim("w-1", AT)
    assert update.status is Status.IN_PROGRESS
    assert update.fields == {"status": "in_progress", "wave": "w-1", "claimed_at": AT, "pr": None,
                             "merge_sha": None, "updated_at": AT}
    assert type(update.fields["status"]) is str  # what yaml and marshal can write


def test_after_failure_is_the_one_max_attempts_rule() -> None:
    assert [lifecycle.after_failure(n, 3) for n in (1, 2, 3, 4)] == [Status.TODO, Status.TODO,
                                                                    Status.FAILED, Status.FAILED]


def test_attempts_left_is_the_per_wave_count_within_the_cap() -> None:
    assert lifecycle.attempts_left(Fields(attempts=0), 2, 4) == 2
    assert lifecycle.attempts_left(Fields(attempts=3), 2, 4) == 1
    assert lifecycle.attempts_left(Fields(attempts=4), 2, 4) == 0
    assert lifecycle.attempts_left(Fields(attempts=6), 2, 4) == 0


def test_exhausted_fails_only_a_todo_item_with_no_attempt_left() -> None:
    assert lifecycle.exhausted(Fields(attempts=3), 4, AT) is None
    assert lifecycle.exhausted(Fields(status="failed", attempts=4), 4, AT) is None
    update = lifecycle.exhausted(Fields(attempts=4), 4, AT)
    assert update is not None and update.status is Status.FAILED
    assert "4 of max_attempts 4" in str(update.fields["last_error"])
    assert update.fields["claimed_at"] is None and "wave" not in update.fields


def test_record_verified_goes_to_review_with_its_pr_attempts_and_cost() -> None:
    update = lifecycle.record(Fields(attempts=1, cost=0.5, last_error="x"), verified=True, used=2, cost=0.25,
                              error=None, max_attempts=4, at=AT, pr=7)
    assert update.status is Status.REVIEW
    assert {k: update.fields[k] for k in ("attempts", "cost", "pr", "last_error")} == {
        "attempts": 3, "cost": 0.75, "pr": 7, "last_error": None}
    assert "wave" not in update.fields and "claimed_at" not in update.fields


def test_record_not_verified_counts_attempts_then_fails_at_the_cap() -> None:
    back = lifecycle.record(Fields(attempts=1), verified=False, used=1, cost=0.0, error="test  exit\n1",
                            max_attempts=4, at=AT)
    assert (back.status, back.fields["attempts"]) == (Status.TODO, 2)
    assert back.fields["last_error"] == "test exit 1"
    assert back.fields["wave"] is None and back.fields["claimed_at"] is None
    failed = lifecycle.record(Fields(attempts=3), verified=False, used=1, cost=0.0, error=None,
                              max_attempts=4, at=AT)
    assert (failed.status, failed.fields["last_error"]) == (Status.FAILED, "not verified")
    assert failed.fields["claimed_at"] is None and "wave" not in failed.fields


def test_record_of_an_item_never_started_keeps_its_attempts_and_error() -> None:
    update = lifecycle.record(Fields(attempts=3, last_error="before"), verified=False, used=0, cost=0.0,
                              error=None, max_attempts=3, at=AT)
    assert update.status is Status.TODO and "attempts" not in update.fields
    assert update.fields["last_error"] == "before"


def test_release_counts_one_attempt() -> None:
    back = lifecycle.release(Fields(status="in_progress", attempts=0), "lease expired", 2, AT)
    assert (back.status, back.fields["attempts"], back.fields["wave"]) == (Status.TODO, 1, None)
    failed = lifecycle.release(Fields(status="in_progress", attempts=1), "lease expired", 2, AT)
    assert (failed.status, failed.fields["attempts"], failed.fields["claimed_at"]) == (Status.FAILED, 2, None)


def test_done_keeps_where_it_was_delivered_and_reopen_keeps_nothing() -> None:
    done = lifecycle.done("abc1234", AT)
    assert done.status is Status.DONE and done.fields["merge_sha"] == "abc1234"
    assert done.fields["claimed_at"] is None and not {"wave", "pr"} & set(done.fields)
    reopened = lifecycle.reopen("PR #3 was closed without merging", AT)
    assert reopened.status is Status.TODO and "attempts" not in reopened.fields
    assert all(reopened.fields[name] is None for name in CLAIM_FIELDS)


def test_one_line_folds_and_shortens_an_error() -> None:
    assert lifecycle.one_line(" a\n\tb ") == "a b"
    long = lifecycle.one_line("x" * 1000)
    assert len(long) == lifecycle.ERROR_CHARS and long.endswith("…")


# -- any sequence of transitions -------------------------------------------------------------------------

MAX_ATTEMPTS, PER_WAVE, ITEMS = 3, 2, 3
SOURCES = {
    "claim": (Status.TODO,),
    "record": (Status.IN_PROGRESS,),
    "release": (Status.IN_PROGRESS,),
    "done": (Status.IN_PROGRESS, Status.REVIEW),
    "reopen": (Status.REVIEW,),
}
"""The statuses each transition is applied from (by the engine, sync and review)."""

Step = tuple[str, int, bool, int, float, str, "int | None", "str | None"]
errors = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)
steps = st.tuples(st.sampled_from(sorted(SOURCES)), st.integers(0, ITEMS - 1), st.booleans(),
                  st.integers(0, PER_WAVE), st.floats(0, 5, allow_nan=False), errors,
                  st.none() | st.integers(1, 99), st.none() | st.sampled_from(["abc1234", "f" * 40]))


def initial_text(attempts: list[int]) -> str:
    items = [{"id": f"IT-{n}", "prompt": "do it", "owns": [f"src/{n}/"], "test": "true", "attempts": a}
             for n, a in enumerate(attempts)]
    return yaml.safe_dump({"version": 1, "items": items}, sort_keys=False)


def step(item: tracker.Item, kind: str, verified: bool, used: int, cost: float, error: str,
         pr: int | None, merge_sha: str | None) -> lifecycle.Update | None:
    """The engine's order: an item with no attempt left is failed instead of claimed."""
    if item.status not in SOURCES[kind]:
        return None
    if kind == "claim":
        return lifecycle.exhausted(item, MAX_ATTEMPTS, AT) or lifecycle.claim("w-1", AT)
    if kind == "record":
        used = min(used, lifecycle.attempts_left(item, PER_WAVE, MAX_ATTEMPTS))
        return lifecycle.record(item, verified=verified, used=used, cost=cost, error=error or None,
                                max_attempts=MAX_ATTEMPTS, at=AT, pr=pr)
    if kind == "release":
        return lifecycle.release(item, lifecycle.one_line(error) or "lease expired", MAX_ATTEMPTS, AT)
    if kind == "done":
        return lifecycle.done(merge_sha, AT)
    return lifecycle.reopen(lifecycle.one_line(error) or "dropped", AT)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, MAX_ATTEMPTS + 1), min_size=ITEMS, max_size=ITEMS),
       st.lists(steps, max_size=25))
def test_any_sequence_of_transitions_keeps_the_tracker_valid(attempts: list[int],
                                                             sequence: list[Step]) -> None:
    text = initial_text(attempts)
    for kind, n, verified, used, cost, error, pr, merge_sha in sequence:
        item = tracker.loads(text).items[n]
        claimable = item.attempts < MAX_ATTEMPTS
        update = step(item, kind, verified, used, cost, error, pr, merge_sha)
        if update is None:
            continue
        text = tracker.set_fields(text, item.id, update.fields)
        after = tracker.loads(text).items[n]  # strict: raises on any invalid field
        assert after.status == update.status
        assert all(getattr(after, name) is None for name in CLAIM_FIELDS if name not in KEPT[update.status])
        if after.status == Status.IN_PROGRESS:
            assert claimable and after.wave == "w-1" and after.claimed_at == AT
        # The hard cap: a wave never takes an item past max_attempts (hand-set counts may start above it).
        assert after.attempts <= max(MAX_ATTEMPTS, item.attempts)
        assert after.attempts >= item.attempts


# -- changes by hand ---------------------------------------------------------------------------------------

HAND = ("done", "reopen", "block", "block --force")
ANY_STATUS = st.sampled_from(lifecycle.STATUSES)


def by_hand(item: lifecycle.HandState, kind: str, reason: str,
            merge_sha: str | None) -> lifecycle.Update | None:
    if kind == "done":
        return lifecycle.mark_done(item, merge_sha, AT)
    if kind == "reopen":
        return lifecycle.reopen_by_hand(item, reason, AT)
    return lifecycle.block(item, reason, AT, force=kind == "block --force")


def in_status(status: str, attempts: int) -> str:
    """A one-item tracker with the item in ``status``, its claim fields as that status keeps them."""
    extra: dict[str, object] = {"attempts": attempts, "last_error": "before"}
    if status in ("in_progress", "review", "done", "failed"):
        extra["wave"] = "w-1"
    if status in ("in_progress", "review"):
        extra["claimed_at"] = AT
    if status in ("review", "done"):
        extra["pr"] = 3
    if status == "done":
        extra["merge_sha"] = "abc1234"
    item = {"id": "IT-0", "prompt": "do it", "owns": ["src/"], "test": "true", "status": status, **extra}
    return yaml.safe_dump({"version": 1, "items": [item]}, sort_keys=False)


@settings(max_examples=80, deadline=None)
@given(ANY_STATUS, st.integers(0, 5), st.sampled_from(HAND), errors.filter(lambda e: bool(e.split())),
       st.none() | st.sampled_from(["abc1234", "f" * 40]))
def test_a_change_by_hand_lands_where_it_says_keeps_the_tracker_valid_and_is_idempotent(
        status: str, attempts: int, kind: str, reason: str, merge_sha: str | None) -> None:
    text = in_status(status, attempts)
    item = tracker.loads(text).items[0]
    try:
        update = by_hand(item, kind, reason, merge_sha)
    except lifecycle.NotAllowed as exc:
        # Only an item its scheduler may still record, or blocking a done one, is refused; the message
        # names the way out.
        assert status == "in_progress" or (status == "done" and kind.startswith("block"))
        assert "wavegit " in str(exc)
        return
    if update is None:
        assert (kind == "done" and status == "done") or (kind == "reopen" and status == "todo" and
                                                        attempts == 0) or (kind == "block" and
                                                                           status == "blocked")
        return
    text = tracker.set_fields(text, item.id, update.fields)
    after = tracker.loads(text).items[0]  # strict: raises on any invalid field
    target = {"done": Status.DONE, "reopen": Status.TODO}.get(kind, Status.BLOCKED)
    assert after.status == update.status == target
    assert all(getattr(after, name) is None for name in CLAIM_FIELDS if name not in KEPT[target])
    if kind == "reopen":
        assert after.attempts == 0 and after.last_error == lifecycle.one_line(reason)
    else:
        assert after.attempts == attempts
    if kind == "done":
        assert after.merge_sha == (merge_sha or (item.merge_sha if status == "done" else None))
    # The same command again writes nothing.
    assert by_hand(after, kind, reason, merge_sha) is None


def test_block_keeps_the_first_reason_unless_forced() -> None:
    blocked = Fields(status="blocked", last_error="waiting for the API")
    assert lifecycle.block(blocked, "another reason", AT) is None
    forced = lifecycle.block(blocked, "another  reason", AT, force=True)
    assert forced is not None and forced.fields["last_error"] == "another reason"
    assert lifecycle.block(blocked, "waiting for the API", AT, force=True) is None


def test_drop_refuses_an_item_in_progress_and_one_in_review_unless_forced() -> None:
    with pytest.raises(lifecycle.NotAllowed, match="release --wave w-1"):
        lifecycle.check_droppable(Fields(status="in_progress", wave="w-1"), force=True)
    with pytest.raises(lifecycle.NotAllowed, match=r"in review \(PR #4\).*--force"):
        lifecycle.check_droppable(Fields(status="review", wave="w-1", pr=4))
    lifecycle.check_droppable(Fields(status="review", wave="w-1", pr=4), force=True)
    for status in ("todo", "done", "failed", "blocked"):
        lifecycle.check_droppable(Fields(status=status))


def test_edit_refuses_only_items_in_flight() -> None:
    for status in lifecycle.IN_FLIGHT:
        with pytest.raises(lifecycle.NotAllowed, match="in flight"):
            lifecycle.check_editable(Fields(status=status, wave="w-1"))
    # Each says what makes it editable: its wave's record, or a reopen (with the reason reopen requires).
    with pytest.raises(lifecycle.NotAllowed, match=r"`wavegit release --wave w-1` if its scheduler is gone"):
        lifecycle.check_editable(Fields(status="in_progress", wave="w-1"))
    reopen = r"^A is in review \(wave w-1\): .*`wavegit reopen A --reason"
    with pytest.raises(lifecycle.NotAllowed, match=reopen):
        lifecycle.check_editable(Fields(id="A", status="review", wave="w-1"))
    for status in ("todo", "done", "failed", "blocked"):
        lifecycle.check_editable(Fields(status=status))
