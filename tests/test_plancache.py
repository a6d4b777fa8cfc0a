"""The planning cache (wavegit.model.plancache): a tracker blob's planning columns, cold and warm."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.repos import REPO_ROOT
from wavegit.core import parsecache
from wavegit.core.errors import ValidationError
from wavegit.model import plancache, select, tracker
from wavegit.model.columns import columns
from wavegit.ownership.index import index_keys

EXAMPLE = (REPO_ROOT / "examples" / "tracker.yaml").read_text()


def test_load_columns_equals_the_columns_of_the_loaded_tracker_cold_and_warm(tmp_path: Path) -> None:
    sha = parsecache.blob_sha(EXAMPLE)
    reads: list[str] = []

    def read() -> str:
        reads.append(sha)
        return EXAMPLE

    cold = plancache.load_columns(sha, read, tmp_path, strict=False)
    warm = plancache.load_columns(sha, read, tmp_path, strict=False)
    loaded = tracker.loads(EXAMPLE, strict=False)
    assert cold == warm
    assert cold._replace(patterns=(), keys=(), in_flight=()) == columns(loaded)
    owned = tuple(dict.fromkeys(pattern for item in loaded.items for pattern in item.owns))
    assert cold.patterns == owned and cold.keys == index_keys(owned)
    assert cold.in_flight == select.in_flight_lookup(columns(loaded)).tables()
    assert len(reads) == 1, "the warm load read the tracker text again"
    assert warm.ids == tuple(item.id for item in tracker.loads(EXAMPLE).items)


def test_load_columns_of_an_invalid_tracker_raises_every_time(tmp_path: Path) -> None:
    sha = parsecache.blob_sha("items: 3\n")
    for _ in range(2):
        with pytest.raises(ValidationError):
            plancache.load_columns(sha, lambda: "items: 3\n", tmp_path, strict=False)


def test_columns_format_follows_the_tracker_parse_format() -> None:
    # The columns are derived from the tracker's parse: bumping tracker.CACHE_FORMAT must bump them too.
    assert plancache.TRACKER_FORMAT == tracker.CACHE_FORMAT
    assert plancache.TRACKER_FORMAT in plancache.COLUMNS_FORMAT


def test_a_warm_load_imports_neither_the_tracker_nor_dataclasses(tmp_path: Path) -> None:
    sha = parsecache.blob_sha(EXAMPLE)
    plancache.load_columns(sha, lambda: EXAMPLE, tmp_path, strict=False)
    probe = ("import sys; from pathlib import Path; from wavegit.model import plancache; "
             f"cols = plancache.load_columns({sha!r}, str, Path({str(tmp_path)!r}), strict=False); "
             "print(len(cols.ids), 'wavegit.model.tracker' in sys.modules, 'dataclasses' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.split() == [str(len(tracker.loads(EXAMPLE).items)), "False", "False"]
