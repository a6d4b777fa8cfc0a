"""What the read commands take of a tracker: its columns (``Columns``) and the priority levels in order.

Apart from ``tracker`` so that a warm ``plan``, which loads the columns from the planning cache
(``plancache``), never imports the item model and its dataclasses (ARCHITECTURE.md, hot paths).
"""

from collections.abc import Callable, Iterable, Sequence
from operator import attrgetter, itemgetter
from typing import TYPE_CHECKING, Any, NamedTuple

from wavegit.ownership.index import FirstOverlapTables

if TYPE_CHECKING:
    from wavegit.model.tracker import Item, Row, Tracker

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
    return _claims((item.id, item.status, item.wave, item.claimed_at) for item in items)


_Claim = tuple[str, str, str | None]


def _claims(items: Iterable[tuple[str, str, str | None, str | None]]) -> tuple[_Claim, ...]:
    return tuple((item_id, wave, claimed_at) for item_id, status, wave, claimed_at in items
                 if status == "in_progress" and wave)


def columns(tracker: "Tracker") -> Columns:
    """The planning columns of ``tracker``."""
    return _columns(tracker.items, attrgetter)


def row_columns(rows: "Sequence[Row]") -> Columns:
    """The planning columns of a tracker's items from their rows (``tracker.load_rows``): no ``Item``."""
    return _columns(rows, itemgetter)


def _columns(records: "Sequence[Item] | Sequence[Row]", getter: Callable[[str], Callable[[Any], Any]]
             ) -> Columns:
    """Each column one C-level pass over ``records``, reading a field with ``getter(name)``."""
    ids, statuses, priorities, depends_on, owns, indexes, problems, workers, waves, claimed, prs, titles = (
        tuple(map(getter(name), records)) for name in (
            "id", "status", "priority", "depends_on", "owns", "index", "problems", "worker", "wave",
            "claimed_at", "pr", "title"))
    return Columns(ids, statuses, priorities, depends_on, owns, indexes, problems, workers=workers,
                   claims=_claims(zip(ids, statuses, waves, claimed, strict=True)), waves=waves, prs=prs,
                   titles=titles)
