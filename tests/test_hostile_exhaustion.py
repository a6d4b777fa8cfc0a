"""Hostile workers that exhaust what their attempt shares with its siblings, attacked again (issue 21): the
disk the attempt trees share, held full while a sibling finishes. Each attack is a real ``wavegit run`` on a
temporary repository with a bare origin, the worker ``tests/hostile_workers/env_limits.py``, on a small
disk (``tests/test_hostile_limits.py``: a tmpfs in a mount namespace of the run's own, as root)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.wave import item, make_wave_repo, origin_item, write_and_push
from tests.test_hostile_limits import (
    WORKER,
    MiB,
    by_id,
    committed,
    limits_repo,
    needs_bwrap,
    needs_mounts,
    run_json,
    run_on_small_disk,
)

# A whole-flow suite (real waves): `.ci/run` runs it after the README's command.
pytestmark = pytest.mark.slow


@needs_bwrap
@needs_mounts
def test_a_worker_holding_the_shared_disk_full_costs_its_innocent_sibling_nothing(tmp_path: Path) -> None:
    # A fills the disk through an ignored file in its tree and keeps it full while B, which only writes the
    # file it owns, finishes: B's work is read back and checked out while the disk is full.
    remote = limits_repo(tmp_path, "bwrap", ("A", [f"fill-quiet . {64 * MiB}", "sleep 8"], None),
                         ("B", ["sleep 1"], None))
    write_and_push(remote.clone, {".gitignore": "filler\n"}, "ignore filler")
    _, rep, err = run_on_small_disk(remote, 32 * MiB, tmp_path / "kept")
    found = by_id(rep)
    b = origin_item(remote, "B")
    # The sibling is verified, or at worst not charged for what A did; A, whose tree holds the disk, pays.
    assert found["B"]["verified"] or (b.attempts == 0 and b.status == "todo"), (found["B"], b, err)
    assert origin_item(remote, "A").attempts == 1, (found["A"], err)


@needs_bwrap
@needs_mounts
def test_a_worker_filling_the_disk_through_its_private_directory_costs_its_sibling_nothing(
        tmp_path: Path) -> None:
    # HOME and TMPDIR are sized tmpfs, but the private directory they lie in (the cost file's) is on the disk
    # of the attempt trees, writable and unsized: A filled it there, with a tree no bigger than B's, and held
    # it full while B finished.
    remote = limits_repo(tmp_path, "bwrap", ("A", [f"fill-quiet PRIVATE {64 * MiB}", "sleep 8"], None),
                         ("B", ["sleep 1"], None))
    _, rep, err = run_on_small_disk(remote, 32 * MiB, tmp_path / "kept")
    found = by_id(rep)
    b = origin_item(remote, "B")
    assert found["B"]["verified"] or (b.attempts == 0 and b.status == "todo"), (found["B"], b, err)
    assert origin_item(remote, "A").attempts == 1, (found["A"], err)


@needs_bwrap
def test_dev_shm_and_dev_are_no_unsized_tmpfs_in_the_sandbox(tmp_path: Path) -> None:
    # HOME and TMPDIR are tmpfs of sandbox.tmp_bytes, but bubblewrap's own /dev (and its /dev/shm) is a
    # tmpfs of half the machine's memory: a worker filled 64 MB of RAM there past an 8 MB tmp_bytes (without
    # a memory cgroup, nothing would have stopped it short of the machine's OOM killer).
    remote = limits_repo(tmp_path, "bwrap", ("A", [f"fill-quiet /dev/shm {64 * MiB}",
                                                   f"fill-quiet /dev {MiB}"], None),
                         tmp_bytes=8 * MiB)
    code, rep, err = run_json(remote)
    assert code == 0 and by_id(rep)["A"]["verified"], (rep, err)
    landed = committed(remote, rep, "src/a.txt")
    assert "filled" not in landed, landed


@needs_bwrap
@needs_mounts
@pytest.mark.parametrize(("owns", "actions"), [
    (["src/a.txt", *(f"src/b{n}.txt" for n in range(4)), "src/z.link"],
     [f"hardlinks {12 * MiB}", "longlink src/z.link"]),
    (["src/a.txt", "src/.gitattributes", "src/id.txt", "src/z.link"],
     [f"ident src/id.txt {4 * MiB}", "longlink src/z.link"]),
], ids=["hard-links", "ident"])
def test_attack_a_commit_whose_checkout_outgrows_the_disk_has_its_attempt_counted(
        tmp_path: Path, owns: list[str], actions: list[str]) -> None:
    # A 32 MiB disk; A's tree holds 12 or 4 MiB, but its commit's checkout needs 60 or 47: five hard links
    # to one file, or `$Id$` that git's `ident` attribute expands 12-fold. The checkout ran out, again once
    # A's tree was gone (a long symlink, last, says so as ENOSPC), and the attempt was wavegit's failure,
    # counted against no item: back to todo with no attempt used, its agent ran again in every later wave,
    # never reaching max_attempts (`run --continuous`: again and again in one run).
    remote = make_wave_repo(tmp_path, [item("A", ["limits", *actions], owns)], worker=WORKER,
                            sandbox="bwrap", attempts=1, timeout_s=60, idle_timeout_s=30)
    _, rep, err = run_on_small_disk(remote, 32 * MiB, tmp_path / "kept")
    a = origin_item(remote, "A")
    assert not by_id(rep)["A"]["verified"]
    assert a.attempts == 1, (by_id(rep)["A"]["error"], a, err)
    assert "cannot be checked out" in by_id(rep)["A"]["error"]


@needs_bwrap
@needs_mounts
@pytest.mark.parametrize("continuous", [False, True], ids=["wave", "continuous"])
def test_attack_an_item_test_that_fills_the_disk_and_fails_has_its_attempt_counted(
        tmp_path: Path, continuous: bool) -> None:
    # The item's test runs the worker's code: it fills the disk from its checkout, in small files, and fails.
    # A failed attempt on a full disk is excused when the disk is not full by the attempt's doing, and the
    # test's checkout (`A-1.test`) was neither the attempt's own nor a sibling's: not counted, so A was run
    # again in every later wave, never reaching max_attempts; `run --continuous` claimed it again and again,
    # a new wave each time, and never ended.
    fill = "i=0; while head -c 4096 /dev/zero > f$i 2>/dev/null; do i=$((i+1)); done; exit 1"
    remote = make_wave_repo(tmp_path, [item("A", ["limits"], ["src/a.txt"], test=f"sh -c '{fill}'")],
                            worker=WORKER, sandbox="bwrap", attempts=1, max_attempts=2, timeout_s=60,
                            idle_timeout_s=30)
    _, rep, err = run_on_small_disk(remote, 32 * MiB, tmp_path / "kept", None,
                                    *(["--continuous"] if continuous else []))
    a = origin_item(remote, "A")
    assert not by_id(rep)["A"]["verified"]
    assert (a.attempts, a.status) == ((2, "failed") if continuous else (1, "todo")), (by_id(rep)["A"], a, err)


@needs_bwrap
@needs_mounts
@pytest.mark.parametrize("continuous", [False, True], ids=["wave", "continuous"])
def test_attack_a_worker_that_fills_the_disk_with_links_to_folders_has_its_attempt_counted(
        tmp_path: Path, continuous: bool) -> None:
    # Symlinks to a folder (`l0 -> ././.../.`, a page of the tmpfs each) fill the disk from A's tree, and A
    # fails: what its tree holds was counted over its files only, and a link to a folder is no file there, so
    # the full disk was "not by this attempt's tree" and excused it: A back to todo with no attempt used, run
    # again in every later wave; `run --continuous` claimed it again and again and never ended.
    remote = make_wave_repo(tmp_path, [item("A", ["limits", "dirlinks links"], ["src/a.txt"])],
                            worker=WORKER, sandbox="bwrap", attempts=1, max_attempts=2, timeout_s=60,
                            idle_timeout_s=30)
    write_and_push(remote.clone, {".gitignore": "links/\n"}, "ignore links")
    _, rep, err = run_on_small_disk(remote, 32 * MiB, tmp_path / "kept", None,
                                    *(["--continuous"] if continuous else []))
    a = origin_item(remote, "A")
    assert not by_id(rep)["A"]["verified"]
    assert (a.attempts, a.status) == ((2, "failed") if continuous else (1, "todo")), (by_id(rep)["A"], a, err)


@needs_bwrap
@needs_mounts
def test_attack_a_tree_left_for_the_waves_cleanup_excuses_no_later_attempt_that_fills_the_disk(
        tmp_path: Path) -> None:
    # A finished attempt's tree waits for the wave's cleanup while the disk has room: A leaves 20 MiB of
    # ignored files in its tree and is verified; B, after it, fills the rest of the disk and fails. A full
    # disk "not by this attempt's tree" (A's is bigger) excused B: back to todo with no attempt used, run
    # again in every later wave.
    entries = [item("A", ["limits", f"fill-quiet . {20 * MiB}"], ["src/a.txt"], test="true", priority="P0"),
               item("B", ["limits", f"fill . {64 * MiB}"], ["src/b.txt"], test="true", priority="P1")]
    remote = make_wave_repo(tmp_path, entries, worker=WORKER, sandbox="bwrap", attempts=1, max_attempts=2,
                            concurrency=1, timeout_s=60, idle_timeout_s=30)
    write_and_push(remote.clone, {".gitignore": "filler\n"}, "ignore filler")
    _, rep, err = run_on_small_disk(remote, 32 * MiB, tmp_path / "kept")
    found = by_id(rep)
    assert found["A"]["verified"], (found["A"], err)
    b = origin_item(remote, "B")
    assert not found["B"]["verified"]
    assert (b.attempts, b.status) == (1, "todo"), (found["B"], b, err)


@needs_bwrap
@needs_mounts
def test_attack_what_a_finished_worker_left_on_the_disk_does_not_hold_it_full_for_the_next_batch(
        tmp_path: Path) -> None:
    # One worker at a time: A fills the disk through its private directory (the cost file's, on the disk
    # of the attempt trees) and exits. What a finished attempt leaves waited for the wave's cleanup (two
    # batches' worth), the full disk included: B, started after A, found no room for its one owned file
    # and was lost to the wave (not counted, but not verified either), though A was long over.
    entries = [item("A", ["limits", f"fill-quiet PRIVATE {64 * MiB}"], ["src/a.txt"], priority="P0"),
               item("B", ["limits", "sleep 3"], ["src/b.txt"], priority="P1")]
    remote = make_wave_repo(tmp_path, entries, worker=WORKER, sandbox="bwrap", attempts=1, max_items=2,
                            concurrency=1, timeout_s=60, idle_timeout_s=30)
    _, rep, err = run_on_small_disk(remote, 32 * MiB, tmp_path / "kept")
    found = by_id(rep)
    assert found["B"]["verified"], (found["B"]["error"], found["A"]["error"], err)


@needs_bwrap
@needs_mounts
def test_attack_a_retry_that_fills_the_disk_is_not_excused_by_what_its_own_first_attempt_left(
        tmp_path: Path) -> None:
    # A's first attempt leaves 16 MiB of ignored files in its tree and fails its test (counted); its tree
    # waits for the wave's cleanup, the disk still more than a fifth free. Its retry fills the rest and
    # fails: the disk was full "not by this attempt's tree" since another attempt's tree held more, its own
    # first one: not counted, so each wave charged A one attempt of the two its agent ran.
    filler = item("A", ["limits", f"fill . {16 * MiB}"], ["src/a.txt"], test="false")
    remote = make_wave_repo(tmp_path, [filler], worker=WORKER, sandbox="bwrap", attempts=2, max_attempts=4,
                            timeout_s=60, idle_timeout_s=30)
    write_and_push(remote.clone, {".gitignore": "filler\n"}, "ignore filler")
    _, rep, err = run_on_small_disk(remote, 32 * MiB, tmp_path / "kept")
    a = origin_item(remote, "A")
    assert not by_id(rep)["A"]["verified"]
    assert a.attempts == 2, (by_id(rep)["A"]["error"], a, err)
