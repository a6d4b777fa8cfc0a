"""``wavegit reopen ID --reason TEXT``: back to todo with attempts reset, the reason for the next worker."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.itemops import last_ops
from tests.helpers.reliability import wavegit_in_process as wavegit_here
from tests.helpers.repos import git, wavegit
from tests.helpers.sync import entry, make_tracker_repo, origin_head, origin_item


def test_reopen_resets_the_attempts_of_a_failed_item_so_the_next_plan_takes_it(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("A", "failed", attempts=4, wave="w-20260101-000001-ab01",
                                                last_error="test exit 1")])
    result = wavegit(remote.clone, "reopen", "A", "--reason", "the flaky fixture is fixed")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("A: failed -> todo (attempts 4 -> 0): commit ")
    item = origin_item(remote, "A")
    assert (item.status, item.attempts, item.wave) == ("todo", 0, None)
    assert item.last_error == "the flaky fixture is fixed"
    assert last_ops(remote)[0] == "reopen A"
    assert "the flaky fixture is fixed" in git(remote.origin, "log", "-1", "--format=%B", "main")
    plan = wavegit_here(remote.clone, "plan", "--json")
    assert json.loads(plan.stdout)["selected"] == ["A"]


def test_reopen_twice_is_exit_0_with_no_second_commit(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("A", "blocked", last_error="waiting")])
    assert wavegit_here(remote.clone, "reopen", "A", "--reason", "unblocked").returncode == 0
    head = origin_head(remote)
    again = wavegit_here(remote.clone, "reopen", "A", "--reason", "unblocked")
    assert (again.returncode, again.stdout.strip()) == (
        0, "A is already todo with no attempt counted; nothing written")
    assert origin_head(remote) == head


def test_an_empty_reason_is_exit_2_and_writes_nothing(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("A", "failed", attempts=2)])
    head = origin_head(remote)
    result = wavegit_here(remote.clone, "reopen", "A", "--reason", "  ")
    assert result.returncode == 2 and "--reason must not be empty" in result.stderr
    assert origin_head(remote) == head
