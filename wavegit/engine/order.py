"""Which ready items a ``run --continuous`` scheduler claims and starts first: within a priority, the longest
chain of expected work first (README: "Rolling waves").

A scheduler cannot know how long a worker will run; an item may say what its author expects (``estimate_s``).
An item's chain is its own estimate plus the longest chain of the items that depend on it, so an item others
wait for goes before an equally long one nobody waits for, and the longest items do not start last, when they
would leave the other slots idle at the end. An item without an estimate counts as the median of those with
one (as nothing, when none has one: plan order then decides, oldest first, as ``select`` orders).
"""

from __future__ import annotations

from collections.abc import Mapping

from wavegit.model import tracker
from wavegit.model.columns import PRIORITIES
from wavegit.model.select import Plan, Skip, select

POOL = 64
"""How many ready items (the first in ``select``'s order) the reordering looks at, so that a plan over a
backlog of thousands costs what a wave's does."""
MAX_ITEMS = "max items"
"""The skip reason of an item left for a later claim (as ``select`` says it)."""


Rank = tuple[int, float]
"""An item's sort key: its priority's rank (P0 first), then its chain, negated (the longest first)."""


def ranks(loaded: tracker.Tracker) -> dict[str, Rank]:
    chains = chain_estimates(loaded)
    return {item.id: (PRIORITIES.index(item.priority) if item.priority in PRIORITIES else len(PRIORITIES),
                      -chains[item.id]) for item in loaded.items}


def longest_first(loaded: tracker.Tracker, count: int, tracker_sha: str,
                  ranked: Mapping[str, Rank] | None = None) -> Plan:
    """``select``'s plan of at most ``count`` items, taken from its first ``max(count, POOL)`` by priority,
    then the longest chain first, then plan order (``ranked``: :func:`ranks` of ``loaded``)."""
    plan = select(loaded, max(count, POOL), tracker_sha)
    ranked = ranks(loaded) if ranked is None else ranked
    position = {item_id: n for n, item_id in enumerate(plan.selected)}
    ordered = sorted(plan.selected, key=lambda item_id: (ranked[item_id], position[item_id]))
    taken, left = tuple(ordered[:count]), ordered[count:]
    if not left:
        return plan._replace(selected=taken)
    index = {item.id: item.index for item in loaded.items}
    skipped = sorted((*plan.skipped, *(Skip(item_id, MAX_ITEMS) for item_id in left)),
                     key=lambda skip: index[skip.id])
    return Plan(taken, tuple(skipped), plan.tracker_sha)


def chain_estimates(loaded: tracker.Tracker) -> Mapping[str, float]:
    """Item id -> its estimate plus the longest chain of estimates of the items that depend on it, directly
    or not (``depends_on`` has no cycle in a valid tracker; one in an invalid one ends the chain)."""
    known = [item.estimate_s for item in loaded.items if item.estimate_s is not None]
    unknown = _median(known)
    own = {item.id: unknown if item.estimate_s is None else item.estimate_s for item in loaded.items}
    dependents: dict[str, list[str]] = {}
    for item in loaded.items:
        for dep in item.depends_on:
            dependents.setdefault(dep, []).append(item.id)
    chains: dict[str, float] = {}
    for start in own:  # depth first, without recursion: a chain may be thousands of items long
        stack, on_path = [(start, False)], set()
        while stack:
            item_id, expanded = stack.pop()
            if item_id in chains:
                continue
            after = dependents.get(item_id, ())
            if expanded:
                on_path.discard(item_id)
                chains[item_id] = own[item_id] + max((chains.get(other, 0.0) for other in after), default=0.0)
                continue
            on_path.add(item_id)
            stack.append((item_id, True))
            stack += [(other, False) for other in after if other not in chains and other not in on_path]
    return chains


def _median(values: list[float]) -> float:
    """The middle value (the mean of the two middle ones for an even count); 0.0 for none. Not
    ``statistics.median``: importing ``statistics`` (``fractions``, ``decimal``) cost every `run` 4 ms."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    if not ordered:
        return 0.0
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
