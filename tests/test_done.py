"""``wavegit done ID [--merge-sha SHA]``: one CAS commit with its op trailer, idempotent, validated."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.helpers.itemops import changed_files, last_ops
from tests.helpers.reliability import wavegit_in_process as wavegit_here
from tests.helpers.repos import REPO_ROOT, git, wavegit
from tests.helpers.sync import (
    claimed,
    entry,
    make_tracker_repo,
    origin_head,
    origin_item,
    origin_tracker,
    tracker_text,
)
from wavegit.model import tracker

WAVE = "w-20260101-000001-ab01"


def test_done_marks_a_review_item_done_in_one_commit_with_its_op_trailer(tmp_path: Path) -> None:
    review = entry("A", "review", wave=WAVE, pr=3, claimed_at="2026-01-01T00:00:00Z")
    remote = make_tracker_repo(tmp_path, [review, entry("B")])
    head = origin_head(remote)
    result = wavegit(remote.clone, "done", "A", "--merge-sha", head[:9].upper())
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"A: review -> done (merge_sha {head}): commit ")
    item = origin_item(remote, "A")
    assert (item.status, item.merge_sha, item.wave, item.pr) == ("done", head, WAVE, 3)
    assert item.claimed_at is None
    assert last_ops(remote)[0] == "done A" and changed_files(remote) == ".wavegit/tracker.yaml"
    assert origin_head(remote) != head and origin_item(remote, "B").status == "todo"


def test_done_twice_is_exit_0_with_no_second_commit_and_says_so(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("A", "failed", attempts=4)])
    assert wavegit_here(remote.clone, "done", "A").returncode == 0
    head = origin_head(remote)
    again = wavegit_here(remote.clone, "done", "A")
    assert (again.returncode, again.stdout.strip()) == (0, "A is already done; nothing written")
    assert origin_head(remote) == head


def test_an_unknown_id_is_exit_2_with_the_nearest_id_never_itself_and_nothing_written(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("AUTH-1"), entry("BILL-7")])
    head = origin_head(remote)
    result = wavegit_here(remote.clone, "done", "auth-1")
    assert result.returncode == 2
    assert result.stderr.strip() == ("wavegit done: no item auth-1 in .wavegit/tracker.yaml on origin/main; "
                                     "did you mean 'AUTH-1'?")
    far = wavegit_here(remote.clone, "done", "ZZZ")
    assert far.returncode == 2 and "did you mean" not in far.stderr
    assert origin_head(remote) == head


def test_done_refuses_an_item_in_progress_naming_release(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [claimed("A", WAVE)])
    head = origin_head(remote)
    result = wavegit_here(remote.clone, "done", "A")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"`wavegit release --wave {WAVE}`" in result.stderr
    assert result.stderr.strip().endswith("nothing written")
    assert origin_head(remote) == head


def test_a_merge_sha_that_is_not_hexadecimal_is_exit_2_naming_the_option(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("A", "review", wave=WAVE)])
    head = origin_head(remote)
    result = wavegit_here(remote.clone, "done", "A", "--merge-sha", "main")
    assert result.returncode == 2 and "--merge-sha 'main': must be a hexadecimal commit SHA" in result.stderr
    assert origin_head(remote) == head


def test_racing_commands_from_four_clones_each_land_once_and_a_lost_race_re_decides(tmp_path: Path) -> None:
    items = [entry("A", "review", wave=WAVE), entry("B"), entry("C", "failed", attempts=4), entry("D")]
    remote = make_tracker_repo(tmp_path, items)
    # A slow remote widens the window between read and publish, so the writers really do collide.
    hook = remote.origin / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\nsleep 0.1\n")
    hook.chmod(0o755)
    head = origin_head(remote)
    jobs = [["done", "A"], ["done", "A"], ["block", "B", "--reason", "later"],
            ["reopen", "C", "--reason", "go"], ["edit", "D", "--priority", "P0"]]
    clones = [remote.new_clone(f"c{n}") for n in range(len(jobs))]
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    procs = [subprocess.Popen([sys.executable, "-m", "wavegit", *args], cwd=clone, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for clone, args in zip(clones, jobs, strict=True)]
    outcomes = [(proc.wait(timeout=120), *proc.communicate()) for proc in procs]
    assert [code for code, _, _ in outcomes] == [0] * len(jobs), outcomes
    # Exactly one `done A` landed; the other lost the race (or came after) and wrote nothing.
    done_a = sorted(out.strip() for _, out, _ in outcomes[:2])
    assert done_a[0] == "A is already done; nothing written" and done_a[1].startswith("A: review -> done: ")
    assert git(remote.origin, "rev-list", "--count", f"{head}..main") == "4"
    ops = git(remote.origin, "log", "--format=%(trailers:key=Wavegit-Op,valueonly)", f"{head}..main")
    assert sorted(op for op in ops.splitlines() if " " in op) == ["block B", "done A", "edit D", "reopen C"]
    loaded = origin_tracker(remote)  # strict: valid after every write
    assert [(i.id, i.status) for i in loaded.items] == [("A", "done"), ("B", "blocked"), ("C", "todo"),
                                                       ("D", "todo")]


def test_without_a_remote_done_commits_to_the_local_branch_and_keeps_the_checkout_clean(
        tmp_path: Path) -> None:
    local = tmp_path / "local"
    local.mkdir()
    git(local, "init", "-q", "-b", "main")
    (local / ".wavegit").mkdir()
    (local / ".wavegit" / "tracker.yaml").write_text(tracker_text([entry("A", "review", wave=WAVE)]))
    git(local, "add", "-A")
    git(local, "commit", "-q", "-m", "tracker")
    result = wavegit_here(local, "done", "A")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("A: review -> done: commit ") and " on main" in result.stdout
    assert git(local, "status", "--porcelain") == ""
    assert tracker.loads((local / ".wavegit" / "tracker.yaml").read_text()).items[0].status == "done"


def test_done_refuses_a_merge_sha_that_names_no_commit_and_writes_nothing(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("A", "review", wave=WAVE, pr=3)])
    head = origin_head(remote)
    result = wavegit_here(remote.clone, "done", "A", "--merge-sha", "abc1234")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == ("wavegit done: --merge-sha abc1234: no such commit in this repository "
                                     "(fetch it first, or check the SHA); nothing written")
    assert origin_head(remote) == head and origin_item(remote, "A").status == "review"


def test_done_refuses_a_merge_sha_that_is_not_on_the_base_branch_and_writes_nothing(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("A", "review", wave=WAVE, pr=3)])
    git(remote.clone, "checkout", "-q", "-b", "feature")
    (remote.clone / "feature.txt").write_text("not merged\n")
    git(remote.clone, "add", "feature.txt")
    git(remote.clone, "commit", "-q", "-m", "not on main")
    side = git(remote.clone, "rev-parse", "HEAD")
    head = origin_head(remote)
    result = wavegit_here(remote.clone, "done", "A", "--merge-sha", side)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"--merge-sha {side}: commit {side[:12]} is not on origin/main (the base branch)" in result.stderr
    assert origin_head(remote) == head and origin_item(remote, "A").status == "review"
