"""The selection planner: readiness, in-flight exclusion, priority-first packing, tie-breaks, reasons."""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wavegit.model import select as select_mod
from wavegit.model.select import Plan, Skip, select
from wavegit.model.tracker import PRIORITIES, Item, Tracker
from wavegit.ownership.overlap import overlaps


@dataclass(frozen=True)
class Spec:
    id: str
    owns: tuple[str, ...]
    priority: str = "P2"
    status: str = "todo"
    depends_on: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()


def T(*specs: Spec) -> Tracker:
    """A tracker whose items are ``specs`` in file order (index = position)."""
    items = tuple(
        Item(id=s.id, prompt="do it", owns=s.owns, test="true", priority=s.priority, status=s.status,
             depends_on=s.depends_on, problems=s.problems, index=i, line=i * 8 + 2)
        for i, s in enumerate(specs)
    )
    return Tracker(version=1, items=items)


def S(item_id: str, *owns: str, p: str = "P2", status: str = "todo", deps: Sequence[str] = (),
      problems: Sequence[str] = ()) -> Spec:
    return Spec(item_id, tuple(owns), p, status, tuple(deps), tuple(problems))


def reasons(plan: Plan) -> dict[str, str]:
    return {skip.id: skip.reason for skip in plan.skipped}


# (name, tracker, max_items, expected selected, expected skip reasons)
CASES: list[tuple[str, Tracker, int, tuple[str, ...], dict[str, str]]] = [
    ("a 3-file P1 beats a 1-file P3 that is older",
     T(S("small", "src/a.py", p="P3"), S("big", "src/a.py", "src/b.py", "src/c.py", p="P1")),
     8, ("big",), {"small": "overlaps big"}),
    ("one P1 beats three disjoint P3s it overlaps",
     T(S("x", "a", p="P3"), S("y", "b", p="P3"), S("z", "c", p="P3"), S("top", "a", "b", "c", p="P1")),
     8, ("top",), {"x": "overlaps top", "y": "overlaps top", "z": "overlaps top"}),
    ("P0 outranks P1 regardless of file order",
     T(S("one", "f", p="P1"), S("zero", "f", p="P0")),
     8, ("zero",), {"one": "overlaps zero"}),
    ("disjoint items are all taken, highest priority first then oldest",
     T(S("a", "a.py", p="P3"), S("b", "b.py", p="P1"), S("c", "c.py", p="P1"), S("d", "d.py")),
     8, ("b", "c", "d", "a"), {}),
    ("an item overlapping an in_progress item is not taken",
     T(S("busy", "src/a.py", status="in_progress"), S("t", "src/a.py", p="P0")),
     8, (), {"t": "in flight: busy"}),
    ("an item overlapping an item in review is not taken",
     T(S("pr", "docs/", status="review"), S("t", "docs/guide.md"), S("u", "README.md")),
     8, ("u",), {"t": "in flight: pr"}),
    ("done, failed and blocked items neither block nor appear",
     T(S("old", "a", status="done"), S("bad", "a", status="failed"), S("stuck", "a", status="blocked"),
       S("t", "a")),
     8, ("t",), {}),
    ("a dependency that is not done keeps an item out",
     T(S("base", "a"), S("next", "b", deps=["base"])),
     8, ("base",), {"next": "depends on base"}),
    ("a done dependency lets the item in",
     T(S("base", "a", status="done"), S("next", "b", deps=["base"])),
     8, ("next",), {}),
    ("a failed dependency is named as failed",
     T(S("base", "a", status="failed"), S("next", "b", deps=["base"])),
     8, (), {"next": "depends on base (failed)"}),
    ("a blocked dependency is named as blocked",
     T(S("base", "a", status="blocked"), S("next", "b", deps=["base"])),
     8, (), {"next": "depends on base (blocked)"}),
    ("the first undone dependency is the one named",
     T(S("d1", "a", status="done"), S("d2", "b", status="in_progress"), S("d3", "c"),
       S("next", "e", deps=["d1", "d2", "d3"])),
     8, ("d3",), {"next": "depends on d2"}),
    ("a dependency on an unknown id is reported",
     T(S("next", "e", deps=["ghost"])),
     8, (), {"next": "depends on ghost (no such item)"}),
    ("an invalid item is skipped with its problems",
     T(S("bad", "a", problems=["owns is empty", "test is missing"]), S("good", "a")),
     8, ("good",), {"bad": "invalid: owns is empty; test is missing"}),
    ("max items keeps the highest priority, then oldest",
     T(S("a", "a"), S("b", "b", p="P1"), S("c", "c"), S("d", "d")),
     2, ("b", "a"), {"c": "max items", "d": "max items"}),
    ("max items of 1 with a conflict: overlap reason for the loser, cap for the rest",
     T(S("a", "x"), S("b", "x"), S("c", "y")),
     1, ("a",), {"b": "overlaps a", "c": "max items"}),
    ("ties go to the oldest item",
     T(S("first", "shared.py"), S("second", "shared.py")),
     8, ("first",), {"second": "overlaps first"}),
    ("more items beat older items at the same priority",
     T(S("hub", "a", "b"), S("left", "a"), S("right", "b")),
     8, ("left", "right"), {"hub": "overlaps left"}),
    ("overlap is case-insensitive",
     T(S("upper", "Src/Auth.py"), S("lower", "src/auth.py")),
     8, ("upper",), {"lower": "overlaps upper"}),
    ("a directory overlaps the files below it",
     T(S("dir", "src/auth/"), S("file", "src/auth/limiter.py"), S("other", "src/authz.py")),
     8, ("dir", "other"), {"file": "overlaps dir"}),
    ("a glob overlaps the paths it could match",
     T(S("glob", "tests/*.py"), S("file", "tests/test_x.py"), S("deeper", "tests/sub/test_y.py")),
     8, ("glob", "deeper"), {"file": "overlaps glob"}),
    ("in-flight exclusion names the oldest in-flight owner",
     T(S("w1", "a", status="review"), S("w2", "a", status="in_progress"), S("t", "a")),
     8, (), {"t": "in flight: w1"}),
    ("in-flight items that only overlap each other leave the rest alone",
     T(S("w1", "a", status="in_progress"), S("w2", "a", status="in_progress"), S("t", "b")),
     8, ("t",), {}),
    ("among equally many P1s, the choice that leaves room for a P2 wins over the older P1",
     T(S("x", "a", "b", p="P1"), S("y", "a", p="P1"), S("z", "b")),
     8, ("y", "z"), {"x": "overlaps y"}),
    ("priority is kept across a chain: P1 middle beats two P2 ends",
     T(S("l", "a"), S("m", "a", "b", p="P1"), S("r", "b")),
     8, ("m",), {"l": "overlaps m", "r": "overlaps m"}),
]


@pytest.mark.parametrize(("tracker", "max_items", "selected", "skipped"),
                         [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_select_rule_table(tracker: Tracker, max_items: int, selected: tuple[str, ...],
                           skipped: dict[str, str]) -> None:
    plan = select(tracker, max_items, "abc123")
    assert plan.selected == selected
    assert reasons(plan) == skipped
    assert plan.tracker_sha == "abc123"


def test_skipped_lists_every_unchosen_todo_item_in_file_order() -> None:
    tracker = T(S("c", "x"), S("done", "q", status="done"), S("a", "x"), S("b", "y", deps=["a"]),
                S("inv", "z", problems=["bad"]))
    plan = select(tracker, 8)
    assert plan.selected == ("c",)
    assert [skip.id for skip in plan.skipped] == ["a", "b", "inv"]
    assert plan.skipped[0] == Skip("a", "overlaps c")


def test_plan_json_has_exactly_the_contract_keys() -> None:
    plan = select(T(S("a", "x"), S("b", "x")), 8, "f00d")
    assert json.loads(plan.to_json_text()) == {
        "selected": ["a"], "skipped": [{"id": "b", "reason": "overlaps a"}], "tracker_sha": "f00d"}


def test_plan_json_text_is_what_json_dumps_writes_of_it() -> None:
    plan = Plan(("a", "é"), (Skip("b", "overlaps a"), Skip("c\"", "in flight: \u2603 \ud800\n")), "f00d")
    extra = {"tracker": {"ref": "main"}, "would_start": True, "reason": None, "exit_code": 0}
    expected = {"selected": ["a", "é"], "skipped": [{"id": "b", "reason": "overlaps a"},
                                                     {"id": "c\"", "reason": "in flight: \u2603 \ud800\n"}],
                "tracker_sha": "f00d", **extra}
    assert plan.to_json_text(**extra) == json.dumps(expected)
    assert Plan((), (), "").to_json_text() == json.dumps({"selected": [], "skipped": [], "tracker_sha": ""})


def test_select_rejects_max_items_below_one() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        select(T(S("a", "x")), 0)


def test_same_tracker_gives_the_same_plan_every_time() -> None:
    specs = [S(f"i{n}", f"m{n % 7}", f"m{(n * 3) % 11}", p=PRIORITIES[n % 4]) for n in range(40)]
    first = select(T(*specs), 10)
    assert all(select(T(*specs), 10) == first for _ in range(5))


def test_large_component_beyond_exact_search_is_still_a_maximal_disjoint_set() -> None:
    # A ring of items each sharing one file with its neighbours: one component, larger than the exact limit.
    n = select_mod.EXACT_MAX_COMPONENT + 11
    specs = [S(f"r{k}", f"f{k}", f"f{(k + 1) % n}", p="P1" if k % 5 == 0 else "P2") for k in range(n)]
    plan = select(T(*specs), 1000)
    chosen = {int(item_id[1:]) for item_id in plan.selected}
    assert all((k + 1) % n not in chosen for k in chosen), "neighbours on the ring were both chosen"
    assert all(k in chosen or (k - 1) % n in chosen or (k + 1) % n in chosen for k in range(n)), "not maximal"
    assert all(skip.reason.startswith("overlaps ") for skip in plan.skipped)


def test_min_degree_greedy_packs_a_star_better_than_file_order() -> None:
    # Beyond the exact limit the fallback must still prefer many leaves over one old hub.
    leaves = select_mod.EXACT_MAX_COMPONENT + 5
    specs = [S("hub", *(f"f{k}" for k in range(leaves)))] + [S(f"leaf{k}", f"f{k}") for k in range(leaves)]
    plan = select(T(*specs), 1000)
    assert len(plan.selected) == leaves
    assert reasons(plan)["hub"] == "overlaps leaf0"


def test_search_budget_exhaustion_keeps_a_valid_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(select_mod, "TOTAL_NODE_BUDGET", 3)
    specs = [S(f"i{n}", f"m{n % 5}", f"m{(n * 2) % 7}", p=PRIORITIES[n % 3]) for n in range(20)]
    plan = select(T(*specs), 100)
    _assert_valid(T(*specs), plan)


# --- property tests against brute force -------------------------------------------------------------------

PATTERNS = ["a", "b", "c/", "c/x", "C/X", "c/*", "d/**", "d/e", "e?", "ex"]


@st.composite
def backlogs(draw: st.DrawFn) -> Tracker:
    n = draw(st.integers(min_value=1, max_value=9))
    specs = []
    for k in range(n):
        owns = draw(st.lists(st.sampled_from(PATTERNS), min_size=1, max_size=3, unique=True))
        status = draw(st.sampled_from(["todo"] * 12 + ["in_progress", "review", "done", "failed"]))
        has_dep = k > 0 and draw(st.integers(0, 5)) == 0
        deps = [draw(st.sampled_from([f"i{j}" for j in range(k)]))] if has_dep else []
        problems = ["broken"] if draw(st.integers(0, 12)) == 0 else []
        specs.append(S(f"i{k}", *owns, p=draw(st.sampled_from(PRIORITIES)), status=status, deps=deps,
                       problems=problems))
    return T(*specs)


def _conflict(a: Item, b: Item) -> bool:
    return any(overlaps(x, y) for x in a.owns for y in b.owns)


def _candidates(tracker: Tracker) -> list[Item]:
    """Ready items not overlapping anything in flight, computed the obvious way."""
    done = {i.id for i in tracker.items if i.status == "done"}
    flying = [i for i in tracker.items if i.status in ("in_progress", "review")]
    return [i for i in tracker.items
            if i.status == "todo" and not i.problems and all(d in done for d in i.depends_on)
            and not any(_conflict(i, f) for f in flying)]


def _counts(items: Sequence[Item]) -> tuple[int, ...]:
    return tuple(sum(1 for i in items if i.priority == p) for p in PRIORITIES)


def _order(item: Item) -> tuple[str, int]:
    return (item.priority, item.index)


def _brute_force(tracker: Tracker, max_items: int) -> tuple[tuple[int, ...], list[str]]:
    """Best counts per priority over every disjoint subset; and the oldest-first winner among those."""
    cands = _candidates(tracker)
    best: tuple[tuple[int, ...], list[tuple[str, int]]] | None = None
    winner: list[str] = []
    for size in range(min(max_items, len(cands)) + 1):
        for combo in itertools.combinations(cands, size):
            if any(_conflict(a, b) for a, b in itertools.combinations(combo, 2)):
                continue
            key = sorted(_order(i) for i in combo)
            counts = _counts(combo)
            # Better counts win; equal counts: the lexicographically earliest sorted (priority, index) list.
            if best is None or counts > best[0] or (counts == best[0] and key < best[1]):
                best = (counts, key)
                winner = [i.id for i in sorted(combo, key=_order)]
    assert best is not None
    return best[0], winner


def _assert_valid(tracker: Tracker, plan: Plan) -> None:
    by_id = {i.id: i for i in tracker.items}
    chosen = [by_id[i] for i in plan.selected]
    candidate_ids = {i.id for i in _candidates(tracker)}
    assert all(i.id in candidate_ids for i in chosen)
    assert not any(_conflict(a, b) for a, b in itertools.combinations(chosen, 2))
    todo = {i.id for i in tracker.items if i.status == "todo"}
    assert set(plan.selected) | {s.id for s in plan.skipped} == todo
    assert not set(plan.selected) & {s.id for s in plan.skipped}


@settings(max_examples=300, deadline=None)
@given(backlogs(), st.integers(min_value=1, max_value=10))
def test_plan_is_the_brute_forced_lexicographic_optimum(tracker: Tracker, max_items: int) -> None:
    plan = select(tracker, max_items)
    _assert_valid(tracker, plan)
    by_id = {i.id: i for i in tracker.items}
    best_counts, winner = _brute_force(tracker, max_items)
    assert _counts([by_id[i] for i in plan.selected]) == best_counts
    if max_items >= len(_candidates(tracker)):
        # Without a binding cap the oldest-first tie-break is exact too.
        assert list(plan.selected) == winner


@settings(max_examples=300, deadline=None)
@given(backlogs(), st.integers(min_value=1, max_value=3))
def test_a_plan_whose_cap_the_top_tiers_fill_is_still_the_brute_forced_optimum(tracker: Tracker,
                                                                                cap: int) -> None:
    # Small caps: the tier-by-tier solve stops before the lower priorities' conflicts are even looked at.
    plan = select(tracker, cap)
    _assert_valid(tracker, plan)
    by_id = {i.id: i for i in tracker.items}
    assert _counts([by_id[i] for i in plan.selected]) == _brute_force(tracker, cap)[0]


def test_lower_priorities_skipped_once_the_top_tier_fills_the_cap_get_true_reasons() -> None:
    specs = [S("p0a", "a", p="P0"), S("p0b", "b", p="P0"), S("p1", "a/x", "c", p="P1"), S("p2", "d", p="P2")]
    plan = select(T(*specs), 2)
    assert plan.selected == ("p0a", "p0b")
    assert reasons(plan) == {"p1": "overlaps p0a", "p2": "max items"}


@settings(max_examples=300, deadline=None)
@given(backlogs())
def test_every_skip_reason_is_true(tracker: Tracker) -> None:
    plan = select(tracker, 3)
    by_id = {i.id: i for i in tracker.items}
    chosen = [by_id[i] for i in plan.selected]
    for skip in plan.skipped:
        item = by_id[skip.id]
        kind, _, rest = skip.reason.partition(" ")
        if skip.reason.startswith("invalid: "):
            assert item.problems
        elif kind == "depends":
            dep = rest.removeprefix("on ").split(" ")[0]
            assert dep in item.depends_on and by_id[dep].status != "done"
        elif skip.reason.startswith("in flight: "):
            other = by_id[skip.reason.removeprefix("in flight: ")]
            assert other.status in ("in_progress", "review") and _conflict(item, other)
        elif kind == "overlaps":
            assert rest in plan.selected and _conflict(item, by_id[rest])
        else:
            assert skip.reason == "max items"
            assert len(plan.selected) == 3 and not any(_conflict(item, c) for c in chosen)


def test_plan_on_a_generated_backlog_is_disjoint_and_clear_of_in_flight_items() -> None:
    import backlog  # bench/ (not a package) is on pytest's pythonpath

    raw = backlog.generate(n_items=1000, seed=3)
    tracker = T(*(S(b.id, *b.owns, p=b.priority, status=b.status, deps=b.depends_on) for b in raw))
    plan = select(tracker, 10_000)
    by_id = {i.id: i for i in tracker.items}
    chosen = [by_id[i] for i in plan.selected]
    flying = [i for i in tracker.items if i.status in ("in_progress", "review")]
    assert len(chosen) > 50
    assert not any(_conflict(a, b) for a, b in itertools.combinations(chosen, 2))
    assert not any(_conflict(c, f) for c in chosen for f in flying)
    assert all(skip.reason != "max items" for skip in plan.skipped)
    # Every todo item is either chosen or skipped, and an unchosen candidate always names a chosen rival.
    assert len(plan.selected) + len(plan.skipped) == sum(1 for i in tracker.items if i.status == "todo")
