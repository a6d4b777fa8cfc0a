"""What the read commands take of a tracker: its columns (``Columns``) and the priority levels in order.

Apart from ``tracker`` so that a warm ``plan``, which loads the columns from the planning cache
(``plancache``), never imports the item model and its dataclasses (ARCHITECTURE.md, hot paths).
"""

from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple

from wavegit.ownership.index import FirstOverlapTables

if TYPE_CHECKING:
    from wavegit.model.tracker import Item, Tracker

PRIORITIES = ("P0", "P1", "P2", "P3")
"""The priority levels, first to last."""


class Columns(NamedTuple):
    """What ``plan``, ``ls``, ``validate`` and ``status`` read of a tracker: one tuple per field, in item
    order (``Tracker.items``)."""

    ids: tuple[str, ...]
    statuses: tuple[str, ...]
    priorities: tuple[str, ...]
    depends_on: tuple[tuple[str, ...], ...]
    owns: tuple[tuple[str, ...], ...]
    indexes: tuple[int, ...]
    problems: tuple[tuple[str, ...], ...]
    patterns: tuple[str, ...] = ()
    """Every distinct owned pattern (in a cached load only; for ``keys``)."""
    keys: tuple[tuple[str, bool, bool], ...] = ()
    """``ownership.index.index_keys(patterns)``: their folded index keys, derived once per tracker blob."""
    in_flight: FirstOverlapTables | tuple[()] = ()
    """The tables of ``select.in_flight_lookup`` (``FirstOverlap.tables()``), in a cached load only."""
    workers: tuple[str | None, ...] = ()
    """Each item's ``worker`` profile (None: the config's default)."""
    claims: tuple[tuple[str, str, str | None], ...] = ()
    """``claims_of(items)``: who holds claims, without an ``Item``."""
    waves: tuple[str | None, ...] = ()
    """Each item's wave, for ``ls``'s table (as are ``prs`` and ``titles``)."""
    prs: tuple[int | None, ...] = ()
    titles: tuple[str, ...] = ()


def claims_of(items: Iterable["Item"]) -> tuple[tuple[str, str, str | None], ...]:
    """(id, wave, claimed_at) of each item ``in_progress`` in a wave."""
    return tuple((item.id, item.wave, item.claimed_at) for item in items
                 if item.status == "in_progress" and item.wave)


def columns(tracker: "Tracker") -> Columns:
    """The planning columns of ``tracker``."""
    items = tracker.items
    return Columns(
        tuple(item.id for item in items), tuple(item.status for item in items),
        tuple(item.priority for item in items), tuple(item.depends_on for item in items),
        tuple(item.owns for item in items), tuple(item.index for item in items),
        tuple(item.problems for item in items), workers=tuple(item.worker for item in items),
        claims=claims_of(items), waves=tuple(item.wave for item in items),
        prs=tuple(item.pr for item in items), titles=tuple(item.title for item in items),
    )
