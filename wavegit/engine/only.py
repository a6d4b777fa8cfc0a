"""``wavegit run --only ID...``: a wave of exactly these items, or none.

The claim plans with :func:`planner` instead of the whole backlog's plan: the planner
(``wavegit.model.select``) sees every other ``todo`` item as not ready, so it picks among the named items
only, with the usual rules: ready (``todo``, valid, dependencies done), disjoint from every item in flight and
from each other. Unless it picks every named item, nothing is claimed: bad input (exit 2), one line per item
it would not take (unknown, not ready and why, or which item it overlaps). It runs in the claim's
compare-and-swap, so a replayed claim checks the ids again on the tracker it writes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from wavegit.core import schema
from wavegit.core.errors import UsageError
from wavegit.model import tracker
from wavegit.model.lifecycle import Status
from wavegit.model.select import Plan, select

Planner = Callable[[tracker.Tracker, int, str], Plan]

_HIDDEN = ("not named by --only",)
"""The problem that keeps another todo item out of the plan (its dependants still see it as todo)."""


def planner(only: tuple[str, ...]) -> Planner:
    """The claim's planner for ``run --only`` with ``only`` (ids, no duplicates)."""

    def plan(loaded: tracker.Tracker, max_items: int, tracker_sha: str) -> Plan:
        by_id = {item.id: item for item in loaded.items}
        wanted = set(only)
        narrowed = tracker.Tracker(loaded.version, tuple(
            item if item.id in wanted or item.status != Status.TODO.value else replace(item, problems=_HIDDEN)
            for item in loaded.items))
        chosen = select(narrowed, max(max_items, len(only)), tracker_sha)
        reasons = {skip.id: skip.reason for skip in chosen.skipped}
        problems = [f"--only {item_id}: {_problem(by_id.get(item_id), reasons.get(item_id))}"
                    + (_did_you_mean(item_id, by_id) if item_id not in by_id else "")
                    for item_id in only if item_id not in chosen.selected]
        if problems:
            count = f"{len(problems)} problem{'' if len(problems) == 1 else 's'}"
            raise UsageError("\n".join([f"--only: {count}; nothing was claimed", *problems]))
        return Plan(chosen.selected, (), chosen.tracker_sha)

    return plan


def _did_you_mean(item_id: str, by_id: dict[str, tracker.Item]) -> str:
    """``; did you mean 'X'?`` for an unknown id close to a ``todo`` item's, else nothing."""
    guess = schema.nearest(item_id, tuple(i for i, item in by_id.items() if item.status == Status.TODO.value))
    return f"; did you mean '{guess}'?" if guess else ""


def _problem(item: tracker.Item | None, reason: str | None) -> str:
    """Why the planner did not take a named item: it does not exist, is not ``todo``, or ``reason``."""
    if item is None:
        return "no such item in the tracker"
    if item.status != Status.TODO.value or reason is None:
        return f"not ready (status {item.status})"
    if reason.startswith("in flight: "):
        return f"overlaps {reason.removeprefix('in flight: ')}, which is in flight"
    if reason.startswith("overlaps "):
        return f"{reason} (also named by --only; run them in separate waves)"
    return f"not ready ({reason})"
