"""wavegit.core.parsecache: content-addressed entries, and a folder keeping only the newest of each kind."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from wavegit.core import parsecache
from wavegit.model import tracker


def test_the_cache_keeps_the_newest_entries_of_each_kind_and_drops_the_oldest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Every claim and record is a new tracker blob: a trial's 2,100-item tracker left 142 parses (117 MB)
    # under .git/wavegit/cache after 15 minutes of waves, and nothing ever removed them.
    monkeypatch.setattr(parsecache, "KEEP", 4)
    cache = tmp_path / "cache"
    config = cache / "config-0.marshal"
    parsecache.write(config, "fmt", "another kind")
    os.utime(config, (0, 0))  # older than every tracker entry, and kept: it is of its own kind
    entries = [cache / f"tracker-{n:040x}-s-00000000.marshal" for n in range(10)]
    for age, entry in enumerate(entries, start=1):
        parsecache.write(entry, "fmt", f"parse {age}")
        os.utime(entry, (age, age))  # written in this order, whatever the clock's resolution
    assert sorted(cache.iterdir()) == sorted([config, *entries[-4:]])
    assert [parsecache.read(entry, "fmt") for entry in entries[-4:]] == [f"parse {n}" for n in range(7, 11)]
    assert parsecache.read(entries[0], "fmt") is None  # removed: the caller parses again


def test_a_tracker_whose_entry_was_removed_is_parsed_again_the_same(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    texts = [tracker.append_items(tracker.initial_text(), [
        tracker.Item(id=f"A-{n}", prompt=f"revision {version}", owns=(f"src/a{n}.py",), test="true")
        for n in range(20)]) for version in range(3)]
    monkeypatch.setattr(parsecache, "KEEP", 1)  # each write removes every other entry of its kind
    for text in texts:
        tracker.load_cached(text, parsecache.blob_sha(text), tmp_path)
    assert len(list(tmp_path.iterdir())) == 1
    assert tracker.load_cached(texts[0], parsecache.blob_sha(texts[0]), tmp_path) == tracker.loads(texts[0])
