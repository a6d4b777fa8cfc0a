"""wavegit.attempts.limits.excused_by_full_disk: on a full disk, which attempt's failure the disk excuses."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from wavegit.attempts import limits


def _fill(folder: Path, size: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "data").write_bytes(os.urandom(size))
    return folder


@pytest.fixture
def full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel's answer for a disk with no room left (the trees' real disk is not filled by the test)."""
    real = os.statvfs(".")
    empty = os.statvfs_result((real.f_bsize, real.f_frsize, real.f_blocks, 0, 0, real.f_files, real.f_ffree,
                               real.f_favail, real.f_flag, real.f_namemax))
    monkeypatch.setattr(limits.os, "statvfs", lambda path: empty)


@pytest.mark.usefixtures("full_disk")
def test_the_waves_object_store_skeleton_and_test_checkouts_excuse_no_attempt(tmp_path: Path) -> None:
    # The object store (a pack of all the base reaches) outweighs the tree of the worker that filled the disk:
    # counted as "another tree", it excused that worker too, and no failure on a full disk was ever charged.
    wave = tmp_path / "w1"
    filler = _fill(wave / "A-1", limits.FULL_BYTES + (64 << 10))
    _fill(wave / "_objects", limits.FULL_BYTES * 2)
    _fill(wave / "_skeleton", 256 << 10)
    _fill(wave / "A-1.test", 256 << 10)
    _fill(wave / "B-1", 64 << 10)
    assert not limits.excused_by_full_disk(filler, tmp_path)


@pytest.mark.usefixtures("full_disk")
def test_a_bigger_attempt_tree_of_any_wave_excuses_a_smaller_one(tmp_path: Path) -> None:
    small = _fill(tmp_path / "w1" / "B-1", 16 << 10)
    _fill(tmp_path / "w2" / "C-2", 256 << 10)
    assert limits.excused_by_full_disk(small, tmp_path)


@pytest.mark.usefixtures("full_disk")
def test_a_disk_held_outside_every_tree_excuses_every_attempt(tmp_path: Path) -> None:
    # What fills it (a daemon's file in wavegit's state folder, another program) is no attempt's tree: a tree
    # a few bytes bigger than its sibling's is not charged for it.
    trees = [_fill(tmp_path / "w1" / name, size) for name, size in (("A-1", 48 << 10), ("B-1", 16 << 10))]
    assert all(limits.excused_by_full_disk(tree, tmp_path) for tree in trees)


def test_a_disk_with_room_excuses_no_failure(tmp_path: Path) -> None:
    small = _fill(tmp_path / "w1" / "B-1", 16 << 10)
    _fill(tmp_path / "w2" / "C-2", 256 << 10)
    assert not limits.excused_by_full_disk(small, tmp_path)
