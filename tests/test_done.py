"""``wavegit done ID [--merge-sha SHA]``: one CAS commit with its op trailer, idempotent, validated."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.itemops import changed_files, last_ops
from tests.helpers.repos import wavegit
from tests.helpers.sync import claimed, entry, make_tracker_repo, origin_head, origin_item

WAVE = "w-20260101-000001-ab01"


def test_done_marks_a_review_item_done_in_one_commit_with_its_op_trailer(tmp_path: Path) -> None:
    review = entry("A", "review", wave=WAVE, pr=3, claimed_at="2026-01-01T00:00:00Z")
    remote = make_tracker_repo(tmp_path, [review, entry("B")])
    head = origin_head(remote)
    result = wavegit(remote.clone, "done", "A", "--merge-sha", "ABC1234")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("A: review -> done (merge_sha abc1234): commit ")
    item = origin_item(remote, "A")
    assert (item.status, item.merge_sha, item.wave, item.pr) == ("done", "abc1234", WAVE, 3)
    assert item.claimed_at is None
    assert last_ops(remote)[0] == "done A" and changed_files(remote) == ".wavegit/tracker.yaml"
    assert origin_head(remote) != head and origin_item(remote, "B").status == "todo"


def test_done_twice_is_exit_0_with_no_second_commit_and_says_so(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("A", "failed", attempts=4)])
    assert wavegit(remote.clone, "done", "A").returncode == 0
    head = origin_head(remote)
    again = wavegit(remote.clone, "done", "A")
    assert (again.returncode, again.stdout.strip()) == (0, "A is already done; nothing written")
    assert origin_head(remote) == head


def test_an_unknown_id_is_exit_2_with_the_nearest_id_never_itself_and_nothing_written(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("AUTH-1"), entry("BILL-7")])
    head = origin_head(remote)
    result = wavegit(remote.clone, "done", "auth-1")
    assert result.returncode == 2
    assert result.stderr.strip() == ("wavegit done: no item auth-1 in .wavegit/tracker.yaml on origin/main; "
                                     "did you mean 'AUTH-1'?")
    far = wavegit(remote.clone, "done", "ZZZ")
    assert far.returncode == 2 and "did you mean" not in far.stderr
    assert origin_head(remote) == head


def test_done_refuses_an_item_in_progress_naming_release(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [claimed("A", WAVE)])
    head = origin_head(remote)
    result = wavegit(remote.clone, "done", "A")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"`wavegit release --wave {WAVE}`" in result.stderr
    assert result.stderr.strip().endswith("nothing written")
    assert origin_head(remote) == head


def test_a_merge_sha_that_is_not_hexadecimal_is_exit_2_naming_the_option(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("A", "review", wave=WAVE)])
    head = origin_head(remote)
    result = wavegit(remote.clone, "done", "A", "--merge-sha", "main")
    assert result.returncode == 2 and "--merge-sha 'main': must be a hexadecimal commit SHA" in result.stderr
    assert origin_head(remote) == head
