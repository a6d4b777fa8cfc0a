"""The planning cache: a tracker blob's planning columns, ready for ``select``, stored by its blob SHA.

``plan`` is a hot path: a warm run unmarshals the columns, the folded index keys of the owned patterns and
the in-flight lookup tables, and never builds an ``Item`` nor imports ``tracker`` or yaml.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from wavegit import __version__
from wavegit.core import parsecache
from wavegit.model.columns import Columns, row_columns
from wavegit.model.select import in_flight_lookup
from wavegit.ownership.index import index_keys

if TYPE_CHECKING:
    from wavegit.model.tracker import Protected, Row

TRACKER_FORMAT = f"wavegit-tracker-cache-12-{__version__}"
"""``tracker.CACHE_FORMAT``, which the columns are derived from, spelled out so that a warm plan need not
import ``tracker``; a test checks that the two agree."""
# Bump the number when the fields of Columns change.
COLUMNS_FORMAT = f"wavegit-columns-4-{TRACKER_FORMAT}"


def load_columns(blob_sha: str, read_text: Callable[[], str], cache_dir: Path | None,
                 path: str = ".wavegit/tracker.yaml", *, strict: bool = True,
                 protected: Protected = None) -> Columns:
    """``row_columns(tracker.load_rows(...))`` with a parse cache of its own, for commands that only plan.

    A 10,000-item tracker's columns unmarshal in a tenth of the time of its items: no prompts, titles or
    tests, no per-item dicts, and each repeated string (a shared path, a status) stored once and
    unmarshalled as one object. A tracker that fails validation is not cached here (``load_blob`` caches
    the failure).
    """
    if cache_dir is None:
        return row_columns(_load_rows(blob_sha, read_text, cache_dir, path, strict, protected))
    entry = (cache_dir
             / f"columns-{blob_sha}-{'s' if strict else 'l'}-{parsecache.path_key(path, protected)}.marshal")
    cached = parsecache.read(entry, COLUMNS_FORMAT)
    if isinstance(cached, tuple):
        return Columns(*cached)
    # The collector stays paused until the rows are freed: resumed while they live, its next passes scanned
    # them all (cold plan CPU +15% at 10,000 items).
    with parsecache.gc_paused():
        found = row_columns(_load_rows(blob_sha, read_text, cache_dir, path, strict, protected))
        patterns = tuple(dict.fromkeys(pattern for owned in found.owns for pattern in owned))
        found = _shared(found._replace(patterns=patterns, keys=index_keys(patterns)))
        found = found._replace(in_flight=in_flight_lookup(found).tables())
        parsecache.write(entry, COLUMNS_FORMAT, tuple(found))
    return found


def _load_rows(blob_sha: str, read_text: Callable[[], str], cache_dir: Path | None, path: str,
               strict: bool, protected: Protected) -> tuple[Row, ...]:
    """``tracker.load_rows``, imported only on a miss of the planning cache: a warm plan needs no items."""
    from wavegit.model import tracker

    return tracker.load_rows(blob_sha, read_text, cache_dir, path, strict=strict, protected=protected)


def _shared(found: Columns) -> Columns:
    """``found`` with equal strings and string tuples as one object each: marshal writes an object it has
    already written as a back-reference, so each is unmarshalled once."""
    strs: dict[str, str] = {}
    lists: dict[tuple[str, ...], tuple[str, ...]] = {}

    def share(values: tuple[str, ...]) -> tuple[str, ...]:
        shared = tuple(map(strs.setdefault, values, values))
        return lists.setdefault(shared, shared)

    return found._replace(
        ids=share(found.ids), statuses=share(found.statuses), priorities=share(found.priorities),
        depends_on=tuple(map(share, found.depends_on)), owns=tuple(map(share, found.owns)),
        problems=tuple(map(share, found.problems)), patterns=share(found.patterns),
        waves=tuple(strs.setdefault(w, w) if w else w for w in found.waves),
        keys=tuple((strs.setdefault(home, home), lit, is_dir) for home, lit, is_dir in found.keys))
