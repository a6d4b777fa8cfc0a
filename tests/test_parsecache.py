"""wavegit.core.parsecache: content-addressed entries, and a folder that stays within its budget."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from wavegit.core import parsecache
from wavegit.model import tracker


def test_the_cache_keeps_the_newest_entries_within_its_budget_and_drops_the_oldest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Every claim and record is a new tracker blob: a trial's 2,100-item tracker left 142 parses (117 MB)
    # under .git/wavegit/cache after 15 minutes of waves, and nothing ever removed them.
    cache = tmp_path / "cache"
    entries = [cache / f"tracker-{n:040x}-s-00000000.marshal" for n in range(10)]
    parsecache.write(entries[0], "fmt", "x" * 1000)
    size = entries[0].stat().st_size
    monkeypatch.setattr(parsecache, "BUDGET_BYTES", 4 * size)
    for age, entry in enumerate(entries):
        parsecache.write(entry, "fmt", "x" * 1000)
        os.utime(entry, (age, age))  # written in this order, whatever the clock's resolution
    assert sorted(cache.iterdir()) == entries[-4:]
    assert [parsecache.read(entry, "fmt") for entry in entries[-4:]] == ["x" * 1000] * 4
    assert parsecache.read(entries[0], "fmt") is None  # removed: the caller parses again


def test_a_tracker_whose_entry_was_removed_is_parsed_again_the_same(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    texts = [tracker.append_items(tracker.initial_text(), [
        tracker.Item(id=f"A-{n}", prompt=f"revision {version}", owns=(f"src/a{n}.py",), test="true")
        for n in range(20)]) for version in range(3)]
    monkeypatch.setattr(parsecache, "BUDGET_BYTES", 1)  # each write removes every other entry
    for text in texts:
        tracker.load_cached(text, parsecache.blob_sha(text), tmp_path)
    assert len(list(tmp_path.iterdir())) == 1
    assert tracker.load_cached(texts[0], parsecache.blob_sha(texts[0]), tmp_path) == tracker.loads(texts[0])
