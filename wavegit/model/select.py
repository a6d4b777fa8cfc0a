"""The selection planner: which ready items the next wave takes, and why every other todo item is not taken.

Rules, in order of precedence:

- Ready = status ``todo``, no item-level problems, every ``depends_on`` item ``done``.
- A ready item whose ownership overlaps an item in flight (``in_progress``/``review``) is never taken.
- Among the rest (the *candidates*), the chosen items must not overlap each other. Priority comes first:
  the plan maximises the number of P0 items, then of P1 items, then P2, then P3 (a lexicographic optimum, so
  a P1 is never given up for any number of lower-priority items); that also fixes the total.
- Ties (several sets with the same count per priority) go to the oldest items: the set whose members, sorted
  by (priority, position in the file), come first lexicographically.
- ``max_items`` keeps the first ``max_items`` of that set in (priority, position) order. This is still optimal
  per priority: no set of ``max_items`` disjoint items has more P0s, then more P1s, and so on. The set is
  solved priority tier by tier, stopping as soon as the tiers so far fill the cap (see ``_choose``): then the
  set is the optimum of those tiers, whose oldest-first tie-break may differ from the whole backlog's, with
  the same counts.

The conflict graph among candidates splits into connected components that are solved independently (the
counts are additive). A component is solved exactly by branch and bound (see ``_exact``) when it has at most
``EXACT_MAX_COMPONENT`` items and the search finishes within its node budget; otherwise, the best of what the
search found and a minimum-degree greedy is used. Node budgets, not clocks, bound the search, so the plan is
deterministic.
"""

import heapq
import json
from collections.abc import Mapping, Sequence
from itertools import repeat
from json.encoder import encode_basestring_ascii
from operator import itemgetter
from typing import TYPE_CHECKING, NamedTuple

from wavegit.model.columns import PRIORITIES, Columns, columns
from wavegit.model.lifecycle import IN_FLIGHT, Status
from wavegit.ownership.index import FirstOverlap, OwnershipIndex, remember

if TYPE_CHECKING:
    from wavegit.model.tracker import Tracker

# Plain strings, compared against each item's status text: an Enum member on the other side costs an
# attribute lookup and an Enum-aware comparison per item, which a 10,000-item plan pays thousands of times.
_TODO, _DONE = Status.TODO.value, Status.DONE.value
_STUCK = frozenset((Status.FAILED.value, Status.BLOCKED.value))
_IN_FLIGHT = frozenset(status.value for status in IN_FLIGHT)

EXACT_MAX_COMPONENT = 64
"""Largest component (in items) searched exactly; bitmask search beyond this stops paying off."""
COMPONENT_NODE_BUDGET = 5_000
"""Search nodes one component may use before falling back to its best-so-far / greedy answer."""
TOTAL_NODE_BUDGET = 15_000
"""Search nodes for the whole plan (a node costs a few microseconds), so no backlog can make plan slow."""

_RANK = {priority: rank for rank, priority in enumerate(PRIORITIES)}
_LEVELS = len(PRIORITIES)
Counts = tuple[int, ...]
"""Chosen items per priority level, P0 first; compared lexicographically."""


class Skip(NamedTuple):
    id: str
    reason: str


class Plan(NamedTuple):
    selected: tuple[str, ...]
    """Chosen item ids, highest priority first, then oldest first."""
    skipped: tuple[Skip, ...]
    """Every other todo item with the reason it is not taken, in file order."""
    tracker_sha: str

    def to_json_text(self, **extra: object) -> str:
        """``json.dumps`` of ``{"selected": [...], "skipped": [{"id", "reason"}, ...], "tracker_sha": ...,
        **extra}``, byte for byte, written without a dict per skipped item (a plan skips thousands)."""
        enc = encode_basestring_ascii
        ids, reasons = map(enc, map(_ID, self.skipped)), map(enc, map(_REASON, self.skipped))
        skipped = ", ".join(map(_SKIP_JSON, ids, reasons))
        rest = json.dumps({"tracker_sha": self.tracker_sha, **extra})
        return f'{{"selected": {json.dumps(list(self.selected))}, "skipped": [{skipped}], {rest[1:]}'


_SKIP_JSON = '{{"id": {}, "reason": {}}}'.format
"""One skipped item as ``json.dumps`` writes ``{"id": ..., "reason": ...}``, from its encoded strings."""
_ID, _REASON = itemgetter(0), itemgetter(1)


def select(tracker: "Tracker", max_items: int, tracker_sha: str = "") -> Plan:
    """The next wave for ``tracker``: at most ``max_items`` (≥ 1) disjoint ready items, and skip reasons."""
    return select_columns(columns(tracker), max_items, tracker_sha)


def select_columns(cols: Columns, max_items: int, tracker_sha: str = "") -> Plan:
    """``select`` for a tracker's planning columns (``plancache.load_columns``: no Items)."""
    if max_items < 1:
        raise ValueError(f"max_items must be at least 1, not {max_items}")
    remember(cols.patterns, cols.keys)
    return _plan(cols, max_items, tracker_sha)


Age = tuple[int, int, int]
"""Sort key of a candidate: (priority rank, position in the file, row): higher priority first, then older."""


def _plan(cols: Columns, max_items: int, tracker_sha: str) -> Plan:
    ids, owns = cols.ids, cols.owns
    row_of = dict(zip(ids, range(len(ids)), strict=True))  # a duplicated id is invalid on every copy
    reasons: dict[int, str] = {}
    ready: list[int] = []
    problems, priorities, depends_on = cols.problems, cols.priorities, cols.depends_on
    for pos, status in enumerate(cols.statuses):
        if status != _TODO:
            continue
        # Most todo items have no problem and no dependency: ready without a call.
        if problems[pos] or depends_on[pos] or priorities[pos] not in _RANK:
            reason = _not_ready_reason(cols, pos, row_of)
            if reason is not None:
                reasons[pos] = reason
                continue
        ready.append(pos)

    blockers = _in_flight_blockers(cols, ready)
    candidates: dict[int, Age] = {}
    for pos in ready:
        blocker = blockers.get(pos)
        if blocker is None:
            candidates[pos] = (_RANK[cols.priorities[pos]], cols.indexes[pos], pos)
        else:
            reasons[pos] = f"in flight: {ids[blocker]}"

    selected = _choose(owns, candidates, max_items)
    # "overlaps X" names the first selected item (in selected order) that overlaps the candidate.
    rivals = FirstOverlap((rank, pattern) for rank, pos in enumerate(selected) for pattern in owns[pos])
    selected_set = set(selected)
    others = [pos for pos in candidates if pos not in selected_set]
    ranks = rivals.per_list((owns[pos] for pos in others), first_hit=False)
    for pos, rank in zip(others, ranks, strict=True):
        reasons[pos] = "max items" if rank is None else f"overlaps {ids[selected[rank]]}"

    order = sorted(reasons)
    # Thousands of Skips: made by tuple.__new__ in one C-level pass, not by a call of Skip's own __new__ each.
    pairs = zip(map(ids.__getitem__, order), map(reasons.__getitem__, order), strict=True)
    return Plan(
        selected=tuple(ids[pos] for pos in selected),
        skipped=tuple(map(tuple.__new__, repeat(Skip), pairs)),
        tracker_sha=tracker_sha,
    )


def _not_ready_reason(cols: Columns, pos: int, row_of: Mapping[str, int]) -> str | None:
    if cols.problems[pos]:
        return "invalid: " + "; ".join(cols.problems[pos])
    if cols.priorities[pos] not in _RANK:
        return f"invalid: unknown priority {cols.priorities[pos]!r}"
    for dep_id in cols.depends_on[pos]:
        dep = row_of.get(dep_id)
        if dep is None:
            return f"depends on {dep_id} (no such item)"
        status = cols.statuses[dep]
        if status == _DONE:
            continue
        if status in _STUCK:
            return f"depends on {dep_id} ({status})"
        return f"depends on {dep_id}"
    return None


def in_flight_lookup(cols: Columns) -> FirstOverlap:
    """The items in flight by the patterns they own (keys: rows), for ``_in_flight_blockers``; a cached
    load carries its tables (``Columns.in_flight``), content-addressed like the columns."""
    if cols.in_flight:
        return FirstOverlap.from_tables(cols.in_flight)
    # Tracker patterns are normalised (the tracker's validation normalises them; an item whose list failed
    # validation owns nothing), so they are not re-normalised here.
    return FirstOverlap((pos, pattern) for pos, status in enumerate(cols.statuses) if status in _IN_FLIGHT
                        for pattern in cols.owns[pos])


def _in_flight_blockers(cols: Columns, ready: Sequence[int]) -> dict[int, int]:
    """For each ready item that overlaps an item in flight, one such item: the first in the file that
    overlaps the item's first conflicting pattern."""
    owns = cols.owns
    in_flight = in_flight_lookup(cols)
    # One blocker is reason enough; not asking about an item's later patterns saves queries.
    hits = in_flight.per_list((owns[pos] for pos in ready), first_hit=True)
    return {pos: hit for pos, hit in zip(ready, hits, strict=True) if hit is not None}


def _choose(owns: Sequence[tuple[str, ...]], candidates: Mapping[int, Age], max_items: int) -> list[int]:
    """The first ``max_items`` candidates, in (priority, age) order, of a lexicographically optimal disjoint
    set of them, solving priority tier by tier and stopping once the cap is met.

    Why stopping early is exact: let S_t be the optimum of the candidates of priority rank <= t, with counts
    (c_0, ..., c_t). Any disjoint set of all candidates, restricted to those tiers, is a disjoint set of
    them, so it counts at most (c_0, ..., c_t) lexicographically there; and S_t is itself a disjoint set of
    all candidates. So the full optimum has exactly these counts on tiers <= t, and if c_0 + ... + c_t >=
    max_items, the first max_items of S_t in priority order count as many P0s, then P1s, ... as the first
    max_items of the full optimum: lower tiers cannot change them. No set of max_items disjoint candidates
    does better (it has at most c_0 P0s; with c_0 of them, at most c_1 P1s; and so on). With max_items at
    least the number of candidates, stopping at tier t means every candidate is of tier <= t and chosen, so
    the result is the full optimum with its oldest-first tie-break, as without tiers.
    """
    tiers: list[list[int]] = [[] for _ in range(_LEVELS)]
    for pos, age in candidates.items():
        tiers[age[0]].append(pos)
    index: OwnershipIndex[int] = OwnershipIndex()
    graph: dict[int, set[int]] = {}
    chosen: list[int] = []
    for rank, tier in enumerate(tiers):
        _add_to_graph(owns, tier, index, graph)
        # Fewer candidates so far than the cap: their optimum cannot meet it, so solving them now would be
        # wasted (each solve has the whole node budget; at most one per tier).
        if rank < _LEVELS - 1 and len(graph) < max_items:
            continue
        chosen = _solve(candidates, graph)
        if len(chosen) >= max_items:
            break
    chosen.sort(key=candidates.__getitem__)
    return chosen[:max_items]


def _add_to_graph(owns: Sequence[tuple[str, ...]], tier: Sequence[int], index: OwnershipIndex[int],
                  graph: dict[int, set[int]]) -> None:
    """Add the candidates of ``tier`` to ``index`` and to the conflict graph (edges both ways, no loops)."""
    for pos in tier:
        graph[pos] = set()
        for pattern in owns[pos]:
            index.add(pos, pattern, assume_normalized=True)
    owners: dict[str, set[int]] = {}  # one query per distinct pattern: backlogs repeat patterns a lot
    for pos in tier:
        found: set[int] = set()
        for pattern in owns[pos]:
            hits = owners.get(pattern)
            if hits is None:
                hits = owners[pattern] = index.conflicts(pattern, assume_normalized=True)
            found |= hits
        found.discard(pos)
        graph[pos] |= found
        for other in found:
            graph[other].add(pos)


def _solve(age: Mapping[int, Age], graph: Mapping[int, set[int]]) -> list[int]:
    """A lexicographically optimal (or, for large components, good) disjoint subset of the graph's items."""
    chosen: list[int] = []
    budget = TOTAL_NODE_BUDGET
    components = [sorted(comp, key=age.__getitem__) for comp in _components(graph)]
    # Components in order of their best item, so which ones get the shared search budget is deterministic.
    components.sort(key=lambda comp: age[comp[0]])
    for comp in components:
        if len(comp) == 1:
            chosen.extend(comp)
            continue
        # Bit k of a mask stands for comp[k]; comp is in (priority, age) order, the search's visiting order.
        local = {pos: k for k, pos in enumerate(comp)}
        levels = [age[pos][0] for pos in comp]
        if len(comp) <= EXACT_MAX_COMPONENT and budget > 0:
            masks = [sum(1 << local[other] for other in graph[pos]) for pos in comp]
            search = _exact(levels, masks, min(budget, COMPONENT_NODE_BUDGET))
            budget -= search.nodes
            best = search.mask
            if not search.complete:
                greedy = _min_degree_greedy(levels, graph, comp, local)
                best = max(search.mask, greedy, key=lambda mask: _counts(levels, mask))
        else:
            # Too large to search: a greedy that takes priority levels in order and, within a level, the
            # item with the fewest remaining conflicts at that level (oldest first on ties).
            best = _min_degree_greedy(levels, graph, comp, local)
        chosen.extend(pos for k, pos in enumerate(comp) if best >> k & 1)
    return chosen


def _components(graph: Mapping[int, set[int]]) -> list[list[int]]:
    """Connected components of ``graph``, members in no particular order."""
    seen: set[int] = set()
    components: list[list[int]] = []
    for start in graph:
        if start in seen:
            continue
        seen.add(start)
        stack = [start]
        comp: list[int] = []
        while stack:
            node = stack.pop()
            comp.append(node)
            for other in graph[node]:
                if other not in seen:
                    seen.add(other)
                    stack.append(other)
        components.append(comp)
    return components


def _counts(levels: Sequence[int], mask: int) -> Counts:
    counts = [0] * _LEVELS
    for k, level in enumerate(levels):
        if mask >> k & 1:
            counts[level] += 1
    return tuple(counts)


class _Search(NamedTuple):
    mask: int
    complete: bool
    nodes: int


class _BudgetSpent(Exception):
    pass


def _exact(levels: Sequence[int], neighbours: Sequence[int], budget: int) -> _Search:
    """Branch and bound for the lexicographically best independent set of one small component.

    Bit k is item k, and items must come in (priority, age) order. They are visited in that order, "take it"
    tried before "leave it", so the first complete set found is the in-order greedy one, and a later set
    replaces the best only when its counts are strictly better: among optimal sets, the one that takes the
    earliest items wins (the oldest-first tie-break). The bound is the current counts plus every still-free
    item.
    """
    level_masks = [0] * _LEVELS
    for r, level in enumerate(levels):
        level_masks[level] |= 1 << r
    full = (1 << len(levels)) - 1
    best_mask = 0
    best_counts: Counts = (-1,) * _LEVELS
    nodes = 0

    def visit(start: int, chosen: int, blocked: int, counts: Counts) -> None:
        nonlocal best_mask, best_counts, nodes
        nodes += 1
        if nodes > budget:
            raise _BudgetSpent
        free = full & ~blocked & ~((1 << start) - 1)
        if not free:
            if counts > best_counts:
                best_mask, best_counts = chosen, counts
            return
        bound = [c + (free & m).bit_count() for c, m in zip(counts, level_masks, strict=True)]
        if tuple(bound) <= best_counts:
            return
        r = (free & -free).bit_length() - 1
        bit = 1 << r
        level = levels[r]
        # Tighter on the level being decided: disjoint cliques each give at most one item.
        bound[level] = counts[level] + _clique_cover(free & level_masks[level], neighbours)
        if tuple(bound) <= best_counts:
            return
        taken = (*counts[:level], counts[level] + 1, *counts[level + 1:])
        visit(r + 1, chosen | bit, blocked | bit | neighbours[r], taken)
        # Leaving an item out only helps if one of its neighbours could still be taken instead.
        if neighbours[r] & free:
            visit(r + 1, chosen, blocked | bit, counts)

    complete = True
    try:
        visit(0, 0, 0, (0,) * _LEVELS)
    except _BudgetSpent:
        complete = False
    return _Search(mask=best_mask, complete=complete, nodes=min(nodes, budget))


def _clique_cover(free: int, neighbours: Sequence[int]) -> int:
    """Cliques in a greedy partition of the ``free`` items: an upper bound on how many can be taken."""
    cliques = 0
    while free:
        clique = free & -free
        grow = free & neighbours[clique.bit_length() - 1]
        while grow:
            member = grow & -grow
            clique |= member
            grow &= neighbours[member.bit_length() - 1]
        free &= ~clique
        cliques += 1
    return cliques


def _min_degree_greedy(levels: Sequence[int], graph: Mapping[int, set[int]], comp: Sequence[int],
                       local: Mapping[int, int]) -> int:
    """Level by level, repeatedly take the free item with the fewest free neighbours on its own level."""
    free = set(comp)
    chosen = 0
    for level in range(_LEVELS):
        members = [pos for pos in comp if pos in free and levels[local[pos]] == level]
        same_level = set(members)
        degree = {pos: len(graph[pos] & same_level) for pos in members}
        heap = [(degree[pos], local[pos], pos) for pos in members]
        heapq.heapify(heap)
        while heap:
            deg, k, pos = heapq.heappop(heap)
            if pos not in free or deg != degree[pos]:
                continue  # stale entry: taken, blocked, or its degree dropped since it was pushed
            chosen |= 1 << k
            free.discard(pos)
            gone = graph[pos] & free
            free -= gone
            # Set intersections, not a loop over every neighbour: a hot file shared by thousands of items
            # makes a clique, whose first pick would otherwise cost a check per pair (10 s for 3,000 items).
            for removed in gone:
                for other in graph[removed] & free:
                    if levels[local[other]] == level:
                        degree[other] -= 1
                        heapq.heappush(heap, (degree[other], local[other], other))
    return chosen
