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


_NO_PRIVATE = (Path("/nonexistent/private"), Path("/nonexistent/privates"))
"""An attempt without a private directory, and no private directories at all."""


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
    assert not limits.excused_by_full_disk(filler, tmp_path, *_NO_PRIVATE)


@pytest.mark.usefixtures("full_disk")
def test_a_bigger_attempt_tree_of_any_wave_excuses_a_smaller_one(tmp_path: Path) -> None:
    small = _fill(tmp_path / "w1" / "B-1", 16 << 10)
    _fill(tmp_path / "w2" / "C-2", 256 << 10)
    assert limits.excused_by_full_disk(small, tmp_path, *_NO_PRIVATE)


@pytest.mark.usefixtures("full_disk")
def test_a_disk_held_outside_every_tree_excuses_every_attempt(tmp_path: Path) -> None:
    # What fills it (a daemon's file in wavegit's state folder, another program) is no attempt's tree: a tree
    # a few bytes bigger than its sibling's is not charged for it.
    trees = [_fill(tmp_path / "w1" / name, size) for name, size in (("A-1", 48 << 10), ("B-1", 16 << 10))]
    assert all(limits.excused_by_full_disk(tree, tmp_path, *_NO_PRIVATE) for tree in trees)


def test_a_disk_with_room_excuses_no_failure(tmp_path: Path) -> None:
    small = _fill(tmp_path / "w1" / "B-1", 16 << 10)
    _fill(tmp_path / "w2" / "C-2", 256 << 10)
    assert not limits.excused_by_full_disk(small, tmp_path, *_NO_PRIVATE)


@pytest.mark.usefixtures("full_disk")
def test_a_private_directory_filled_is_its_attempts_share_of_the_disk(tmp_path: Path) -> None:
    # HOME and TMPDIR are sized tmpfs, but the folder they lie in (the cost file's) is on the trees' disk:
    # filled there, with no tree bigger than a sibling's, the filler was excused as much as the sibling.
    trees, privates = tmp_path / "worktrees", tmp_path / "sandbox"
    a, b = (_fill(trees / "w1" / name, 16 << 10) for name in ("A-1", "B-1"))
    a_private = _fill(privates / "w1" / "A-1", limits.FULL_BYTES * 2)
    b_private = _fill(privates / "w1" / "B-1", 4 << 10)
    assert not limits.excused_by_full_disk(a, trees, a_private, privates)
    assert limits.excused_by_full_disk(b, trees, b_private, privates)


@pytest.mark.usefixtures("full_disk")
def test_what_its_item_left_in_another_waves_folder_is_the_attempts_own_share(tmp_path: Path) -> None:
    # `run --continuous`: A, not counted in wave w1 (whose folders wait for its cleanup while its other items
    # run), is claimed again into w2 and fills the rest of the disk there; its own w1 tree, bigger than its
    # w2 share, excused it as "another attempt's". Its own, it is no sibling's share either: a retry of a big
    # tree is not charged for a disk something else filled (its first tree is not added to it).
    _fill(tmp_path / "w1" / "A-1", limits.FULL_BYTES * 3)
    _fill(tmp_path / "w1" / "B-1", 16 << 10)
    retry = _fill(tmp_path / "w2" / "A-1", limits.FULL_BYTES + (64 << 10))
    assert not limits.excused_by_full_disk(retry, tmp_path, *_NO_PRIVATE)
    # Another item whose id ends like an attempt number (`A-1`, tree `A-1-1`) is no attempt of A's.
    other = _fill(tmp_path / "w2" / "A-1-1", 16 << 10)
    assert limits.excused_by_full_disk(other, tmp_path, *_NO_PRIVATE)
