"""Selection quality: does ``select`` reach the best plan, and what does it choose on a big backlog?

1. On random small backlogs (4-12 items over a tiny path alphabet with files, directories, globs and
   case-only differences; some items in flight, some with dependencies), the plan's count of chosen items
   per priority (P0 first, compared lexicographically) against the optimum found by enumerating every
   disjoint set of the items that are ready and clear of work in flight. Target (issues 2 and 6): always.
   Also checked: every plan is valid (disjoint, nothing overlapping work in flight, only ready items), and
   how often it is the very set the oldest-first tie-break names.
2. On the 10k backlog of ``bench/backlog.py``, with no item cap: items and P0/P1 items chosen by ``select``
   against a plain file-count-first greedy (fewest owned patterns first, priority ignored), as a plain
   scheduler does it (exact path strings, work in flight ignored) and with wavegit's overlap test.

    python bench/quality.py [--quick]      (--quick: 60 backlogs and a 1,000-item backlog)
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import backlog
import common

from wavegit.model import lifecycle, tracker
from wavegit.model.select import select
from wavegit.ownership.index import OwnershipIndex
from wavegit.ownership.overlap import overlaps

ALPHABET = ("a.py", "A.py", "b.py", "d/x.py", "d/y.py", "d/", "d/*.py", "d/**", "e/f.py", "e/", "e/?.py",
            "c/[ab].py", "c/a.py")
"""Small on purpose: many overlaps of every kind (exact, case-only, directory, glob)."""
UNCAPPED = 1_000_000


def random_backlog(rng: random.Random) -> tracker.Tracker:
    items: list[backlog.BenchItem] = []
    for k in range(rng.randint(4, 12)):
        owns = tuple(dict.fromkeys(rng.choice(ALPHABET) for _ in range(rng.randint(1, 3))))
        status = rng.choices(("todo", "in_progress", "done"), weights=(8, 1, 1))[0]
        depends_on = (f"R-{rng.randint(1, k)}",) if k and rng.random() < 0.15 else ()
        extra: tuple[tuple[str, str | int], ...] = (("wave", "w1"),) if status == "in_progress" else ()
        items.append(backlog.BenchItem(f"R-{k + 1}", "", "do it\n", owns, "true",
                                       rng.choice(tracker.PRIORITIES), status, depends_on, extra))
    return tracker.loads(backlog.to_yaml(items))


def _conflict(a: tracker.Item, b: tracker.Item) -> bool:
    return any(overlaps(x, y) for x in a.owns for y in b.owns)


def ready(t: tracker.Tracker) -> list[tracker.Item]:
    """Items ``todo`` whose dependencies are all done."""
    done = {item.id for item in t.items if item.status == "done"}
    return [item for item in t.items if item.status == "todo" and set(item.depends_on) <= done]


def candidates(t: tracker.Tracker) -> list[tracker.Item]:
    """Ready items overlapping nothing in flight, worked out independently of ``select``."""
    flight = [item for item in t.items if item.status in lifecycle.IN_FLIGHT]
    return [item for item in ready(t) if not any(_conflict(item, other) for other in flight)]


def in_flight_index(t: tracker.Tracker) -> OwnershipIndex[str]:
    """The ownership of every item in flight, keyed by item id."""
    index: OwnershipIndex[str] = OwnershipIndex()
    for item in t.items:
        if item.status in lifecycle.IN_FLIGHT:
            for pattern in item.owns:
                index.add(item.id, pattern)
    return index


def _key(chosen: Sequence[tracker.Item]) -> tuple[tuple[int, ...], tuple[tuple[int, int], ...]]:
    """Best first when sorted descending on counts, then ascending on (priority, position) of members."""
    counts = tuple(sum(1 for item in chosen if item.priority == p) for p in tracker.PRIORITIES)
    order = tuple(sorted((tracker.PRIORITIES.index(item.priority), item.index) for item in chosen))
    return counts, order


def brute_force(items: Sequence[tracker.Item]) -> tuple[tuple[int, ...], list[str]]:
    """The lexicographic optimum of counts per priority over every disjoint subset of ``items``, and
    the set the oldest-first tie-break picks among the optimal ones."""
    n = len(items)
    clash = [[_conflict(items[i], items[j]) for j in range(n)] for i in range(n)]
    best: tuple[tuple[int, ...], tuple[tuple[int, int], ...]] | None = None
    best_ids: list[str] = []

    def visit(i: int, chosen: list[int]) -> None:
        nonlocal best, best_ids
        if i == n:
            key = _key([items[k] for k in chosen])
            if best is None or key[0] > best[0] or (key[0] == best[0] and key[1] < best[1]):
                best, best_ids = key, [items[k].id for k in chosen]
            return
        if not any(clash[i][k] for k in chosen):
            visit(i + 1, [*chosen, i])
        visit(i + 1, chosen)

    visit(0, [])
    assert best is not None
    return best[0], best_ids


@dataclass(frozen=True)
class SmallFigures:
    backlogs: int
    optimal: int
    same_set: int
    invalid: int
    max_candidates: int


def small_backlogs(count: int, seed: int = 11) -> SmallFigures:
    rng = random.Random(seed)
    optimal = same_set = invalid = widest = 0
    for _ in range(count):
        t = random_backlog(rng)
        ready = candidates(t)
        widest = max(widest, len(ready))
        best_counts, best_ids = brute_force(ready)
        plan = select(t, UNCAPPED)
        chosen = [item for item in t.items if item.id in set(plan.selected)]
        allowed = {item.id for item in ready}
        valid = all(item.id in allowed for item in chosen) and not any(
            _conflict(a, b) for k, a in enumerate(chosen) for b in chosen[k + 1:])
        invalid += not valid
        optimal += valid and _key(chosen)[0] == best_counts
        same_set += valid and sorted(plan.selected) == sorted(best_ids)
    return SmallFigures(count, optimal, same_set, invalid, widest)


@dataclass(frozen=True)
class Choice:
    label: str
    items: int
    p0: int
    p1: int
    collisions: int
    """Picks overlapping work in flight or another pick (by wavegit's exact overlap test)."""
    ms: float


def _choice(label: str, t: tracker.Tracker, picked: Sequence[str], ms: float) -> Choice:
    by_id = {item.id: item for item in t.items}
    chosen = [by_id[item_id] for item_id in picked]
    index = in_flight_index(t)
    for item in chosen:
        for pattern in item.owns:
            index.add(item.id, pattern)
    collisions = sum(1 for item in chosen if any(index.conflicts(p) - {item.id} for p in item.owns))
    return Choice(label, len(chosen), sum(i.priority == "P0" for i in chosen),
                  sum(i.priority == "P1" for i in chosen), collisions, ms)


def plain_greedy(t: tracker.Tracker) -> list[str]:
    """Fewest owned patterns first, then file order; exact path strings; work in flight ignored."""
    used: set[str] = set()
    picks: list[str] = []
    for item in sorted(ready(t), key=lambda i: (len(i.owns), i.index)):
        if used.isdisjoint(item.owns):
            used.update(item.owns)
            picks.append(item.id)
    return picks


def overlap_greedy(t: tracker.Tracker) -> list[str]:
    """The same order, with wavegit's overlap test and work in flight excluded."""
    index = in_flight_index(t)
    picks: list[str] = []
    for item in sorted(ready(t), key=lambda i: (len(i.owns), i.index)):
        if not any(index.conflicts(p) for p in item.owns):
            for pattern in item.owns:
                index.add(item.id, pattern)
            picks.append(item.id)
    return picks


def big_backlog(n_items: int) -> list[Choice]:
    t = tracker.loads(backlog.to_yaml(backlog.generate(n_items)))
    choices = []
    planners: tuple[tuple[str, Callable[[], list[str]]], ...] = (
        ("wavegit `select` (no item cap)", lambda: list(select(t, UNCAPPED).selected)),
        ("file-count-first greedy, exact strings, in-flight ignored", lambda: plain_greedy(t)),
        ("file-count-first greedy, wavegit's overlap test", lambda: overlap_greedy(t)))
    for label, pick in planners:
        start = time.perf_counter()
        picked = pick()
        choices.append(_choice(label, t, picked, (time.perf_counter() - start) * 1000))
    return choices


def measure(quick: bool) -> common.Result:
    count, n_items = (60, 1000) if quick else (500, 10_000)
    small = small_backlogs(count)
    big = big_backlog(n_items)
    met = small.optimal == small.backlogs and small.invalid == 0
    rows = [(c.label, c.items, c.p0, c.p1, c.collisions, f"{c.ms:.0f}") for c in big]
    body = [
        "## selection quality",
        "",
        f"`python bench/quality.py{' --quick' if quick else ''}`: {count} small backlogs and a "
        f"{n_items}-item backlog, in-process (deterministic seeds).",
        "",
        f"**Small backlogs.** {count} random backlogs of 4-12 items over a tiny path alphabet (files, "
        "directories, globs, names differing only in case; some items in flight, some with dependencies). "
        "The optimum is found by enumerating every disjoint set of the items that are ready and clear of "
        "work in flight (worked out without `select`), maximising the count per priority, P0 first. "
        f"Up to {small.max_candidates} candidates per backlog.",
        "",
        common.table(["measure", "value"], [
            ("plans with the optimal count per priority", f"{small.optimal} / {small.backlogs} "
             f"(target: always — {common.verdict(met)})"),
            ("plans that are invalid (overlap, in flight, not ready)", str(small.invalid)),
            ("plans equal to the optimum with the oldest-first tie-break",
             f"{small.same_set} / {small.backlogs}"),
        ]),
        "",
        f"**The {n_items}-item backlog** (`bench/backlog.py`, seed 7), no item cap. Collisions: picks that "
        "overlap work in flight or another pick, by wavegit's exact overlap test.",
        "",
        common.table(["planner", "items", "P0", "P1", "collisions", "ms"], rows, numeric=(1, 2, 3, 4, 5)),
        "",
    ]
    target = common.Target(6, "selection reaches the brute-forced optimum (random small backlogs)", "always",
                           f"{small.optimal} / {small.backlogs}", met)
    return common.Result("quality", "\n".join(body), (target,))


if __name__ == "__main__":
    common.quick_main(__doc__, measure)
