"""``wavegit block ID --reason TEXT [--force]``: out of every wave, the first reason kept unless forced."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.itemops import last_ops
from tests.helpers.reliability import wavegit_in_process as wavegit_here
from tests.helpers.repos import wavegit
from tests.helpers.sync import entry, make_tracker_repo, origin_head, origin_item


def test_block_keeps_an_item_out_of_the_plan_with_its_reason(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("A"), entry("B")])
    result = wavegit(remote.clone, "block", "A", "--reason", "waiting for the API key")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("A: todo -> blocked: commit ")
    item = origin_item(remote, "A")
    assert (item.status, item.last_error) == ("blocked", "waiting for the API key")
    assert last_ops(remote)[0] == "block A"
    assert json.loads(wavegit_here(remote.clone, "plan", "--json").stdout)["selected"] == ["B"]


def test_blocking_again_keeps_the_first_reason_unless_forced(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("A", "blocked", last_error="first")])
    head = origin_head(remote)
    again = wavegit_here(remote.clone, "block", "A", "--reason", "second")
    assert (again.returncode, again.stdout.strip()) == (
        0, "A is already blocked: first (--force replaces the reason); nothing written")
    assert origin_head(remote) == head
    forced = wavegit_here(remote.clone, "block", "A", "--reason", "second", "--force")
    assert forced.returncode == 0 and origin_item(remote, "A").last_error == "second"


def test_blocking_a_done_item_is_exit_2_pointing_at_reopen(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("A", "done", merge_sha="abc1234")])
    head = origin_head(remote)
    result = wavegit_here(remote.clone, "block", "A", "--reason", "x")
    assert result.returncode == 2 and "wavegit reopen A" in result.stderr
    assert origin_head(remote) == head


def test_a_reason_that_looks_like_an_op_trailer_stays_body_text(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("A")])
    assert wavegit_here(remote.clone, "block", "A", "--reason", "Wavegit-Op: drop B").returncode == 0
    ops = last_ops(remote)
    assert ops[0] == "block A" and len(ops) == 2  # the op, then the store's retry id
    # So no one can make wavegit believe B was dropped.
    unknown = wavegit_here(remote.clone, "done", "B")
    assert unknown.returncode == 2 and "dropped" not in unknown.stderr


def test_blocking_an_item_in_review_is_exit_2_naming_its_pr_and_writes_nothing(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("A", "review", wave="w-20260101-000001-ab01", pr=7)])
    head = origin_head(remote)
    result = wavegit_here(remote.clone, "block", "A", "--reason", "x")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == (
        "wavegit block: A is in review (PR #7): its change may still be merged; close the pull request "
        "(`wavegit sync` then returns it to todo) and block it after; nothing written")
    assert origin_head(remote) == head and origin_item(remote, "A").status == "review"


def test_blocking_an_item_in_review_without_a_pr_says_to_reopen_it_not_to_close_a_pr(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("A", "review", wave="w-20260101-000001-ab01")])
    result = wavegit_here(remote.clone, "block", "A", "--reason", "x")
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "wavegit block: A is in review (wave w-20260101-000001-ab01, no pull request): its change may still "
        "be merged; `wavegit reopen A --reason ...` returns it to todo, then block it; nothing written")
    assert "pull request " not in result.stderr.replace("no pull request", "")
    assert wavegit_here(remote.clone, "reopen", "A", "--reason", "x").returncode == 0
    assert wavegit_here(remote.clone, "block", "A", "--reason", "x").returncode == 0
