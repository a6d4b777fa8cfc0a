"""Injected faults during real waves, each with the outcome docs/reliability.md documents.

Push rejected by the remote's hook, the remote moved away mid-wave, a full disk in a worktree, a worker
killed by a signal, git lock files left behind. In every case: no verified item's work is lost (it is on
a pushed wave branch, or on the local wave branch when the push could not happen), the tracker is valid at
every commit, and ``git fsck`` is clean. (kill -9 of the scheduler itself is tests/test_crash.py.)
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from tests.helpers.reliability import (
    WORKERS,
    fsck,
    items_by_wave_branch,
    one_clear_line,
    tracker_history_problems,
    worker_command,
)
from tests.helpers.repos import RemoteRepo, git, wavegit
from tests.helpers.wave import branches, item, make_wave_repo, origin_item, run, worktrees
from wavegit.engine.outcome import WaveOutcome

pytestmark = pytest.mark.slow  # injected git and GitHub faults with retries and lock waits

REJECT_WAVE_BRANCHES = """#!/bin/sh
while read old new ref; do
  case "$ref" in refs/heads/wavegit/*) echo "policy: no wave branches here" >&2; exit 1;; esac
done
"""
REJECT_RECORDS = """#!/bin/sh
while read old new ref; do
  if [ "$ref" = refs/heads/main ] && git log -1 --format=%s "$new" | grep -q '^wavegit: record'; then
    echo "policy: records are frozen" >&2; exit 1
  fi
done
"""


def install_hook(remote: RemoteRepo, script: str) -> Path:
    hook = remote.origin / "hooks" / "pre-receive"
    hook.write_text(script)
    hook.chmod(0o755)
    return hook


def two_items() -> list[dict[str, object]]:
    return [item(i, [f"write src/{i.lower()}.txt ok"], [f"src/{i.lower()}.txt"]) for i in "AB"]


def assert_intact(remote: RemoteRepo) -> None:
    """The invariants every fault must keep: a valid tracker at every commit, no corruption."""
    assert tracker_history_problems(remote.origin) == []
    fsck(remote.origin)
    fsck(remote.clone)


def local_wave_work(remote: RemoteRepo, outcome: WaveOutcome) -> dict[str, str]:
    """Item -> its file's content on the clone's local wave branch (the work kept after a failed push)."""
    branch = f"wavegit/{outcome.report.wave_id}"
    ids = items_by_wave_branch(remote.clone, "origin/main").get(outcome.report.wave_id, [])
    return {i: git(remote.clone, "show", f"{branch}:src/{i.lower()}.txt") for i in ids}


def once(tmp_path: Path) -> str:
    """The scripted worker's ``run`` prefix that runs a command only in the first wave."""
    return f"{sys.executable} {WORKERS / 'once.py'} {tmp_path / 'once.marker'}"


def notes(outcome: WaveOutcome) -> str:
    return "\n".join(outcome.report.notes)


# -- push rejected ----------------------------------------------------------------------------------------

def test_rejected_wave_branch_push_releases_the_items_and_keeps_their_work_on_the_local_branch(
        tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, two_items())
    install_hook(remote, REJECT_WAVE_BRANCHES)
    outcome = run(remote.clone)
    assert outcome.exit_code == 1 and not outcome.report.success
    assert "the wave stopped" in notes(outcome) and "failed to push" in notes(outcome)
    assert branches(remote.origin) == []
    for item_id in ("A", "B"):
        recorded = origin_item(remote, item_id)
        assert (recorded.status, recorded.wave, recorded.attempts) == ("todo", None, 1)
        assert "could not be built or pushed" in (recorded.last_error or "")
    assert local_wave_work(remote, outcome) == {"A": "ok", "B": "ok"}
    assert worktrees(remote.clone) == [str(remote.clone)]
    assert_intact(remote)


def test_rejected_wave_branch_push_says_what_the_remote_said(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, two_items()[:1])
    install_hook(remote, REJECT_WAVE_BRANCHES)
    assert "policy: no wave branches here" in notes(run(remote.clone))


def test_rejected_record_push_leaves_a_valid_claim_that_sync_recovers_from_the_pushed_branch(
        tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, two_items(), lease_ttl_s=3600)
    hook = install_hook(remote, REJECT_RECORDS)
    outcome = run(remote.clone)
    assert outcome.exit_code == 1 and not outcome.report.tracker_updated
    assert "the tracker update did not land" in notes(outcome) and "records are frozen" in notes(outcome)
    wave = outcome.report.wave_id
    assert sorted(items_by_wave_branch(remote.origin)[wave]) == ["A", "B"]
    assert {origin_item(remote, i).status for i in "AB"} == {"in_progress"}
    hook.unlink()
    # After the lease, sync finds the finished items on the pushed wave branch.
    synced = wavegit(remote.clone, "sync", env={"WAVEGIT_LEASE_TTL_S": "0.001"})
    assert synced.returncode == 0, synced.stderr
    assert {(origin_item(remote, i).status, origin_item(remote, i).wave) for i in "AB"} == {("review", wave)}
    assert_intact(remote)


# -- remote unreachable -----------------------------------------------------------------------------------

def test_remote_moved_away_mid_wave_keeps_the_work_locally_and_sync_releases_the_claim_later(
        tmp_path: Path) -> None:
    gone = tmp_path / "origin.gone"
    remote = make_wave_repo(tmp_path, [
        item("A", [f"run {once(tmp_path)} mv {tmp_path / 'origin.git'} {gone}", "write src/a.txt ok"],
             ["src/a.txt"]),
        item("B", ["sleep 0.5", "write src/b.txt ok"], ["src/b.txt"]),
        # Unsandboxed: the worker stands in for the fault, moving the remote away.
    ], attempts=1, lease_ttl_s=3600, sandbox="none")
    outcome = run(remote.clone)
    assert outcome.exit_code == 1 and not outcome.report.tracker_updated
    assert "the wave stopped" in notes(outcome) and "the tracker update did not land" in notes(outcome)
    assert local_wave_work(remote, outcome) == {"A": "ok", "B": "ok"}
    gone.rename(remote.origin)
    # The remote still has the claim only: valid, items in flight, no wave branch.
    assert {origin_item(remote, i).status for i in "AB"} == {"in_progress"}
    assert branches(remote.origin) == []
    synced = wavegit(remote.clone, "sync", env={"WAVEGIT_LEASE_TTL_S": "0.001"})
    assert synced.returncode == 0, synced.stderr
    assert {(origin_item(remote, i).status, origin_item(remote, i).attempts) for i in "AB"} == {("todo", 1)}
    # sync prunes item branches, never the wave branch holding the verified work.
    assert local_wave_work(remote, outcome) == {"A": "ok", "B": "ok"}
    again = run(remote.clone)
    assert again.exit_code == 0, notes(again)
    assert_intact(remote)


# -- disk full in a worktree ------------------------------------------------------------------------------

def test_disk_full_in_a_worktree_fails_the_attempt_with_efbig_and_commits_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["fill"], ["src/a.txt"])], worker=worker_command("fill"))
    monkeypatch.delenv("FILL_RETRY_SMALL", raising=False)
    outcome = run(remote.clone)
    (rep,) = outcome.report.items
    assert outcome.exit_code == 1 and (rep.verified, rep.attempts, rep.exit_code) == (False, 2, 1)
    assert "File too large" in rep.log_tail
    recorded = origin_item(remote, "A")
    assert (recorded.status, recorded.attempts) == ("todo", 2)
    assert recorded.last_error == "worker exited 1: fill: src/a.txt: File too large (EFBIG=True)"
    assert branches(remote.origin) == [] and branches(remote.clone, "wavegit/items/") == []
    assert worktrees(remote.clone) == [str(remote.clone)]
    assert_intact(remote)


def test_disk_full_then_a_retry_that_fits_is_verified_and_told_why_the_first_failed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["fill"], ["src/a.txt"])], worker=worker_command("fill"),
                            worker_env=["FILL_RETRY_SMALL"])
    monkeypatch.setenv("FILL_RETRY_SMALL", "1")
    outcome = run(remote.clone)
    (rep,) = outcome.report.items
    assert outcome.exit_code == 0 and (rep.verified, rep.attempts) == (True, 2)
    logs = remote.clone / ".git" / "wavegit" / "logs" / outcome.report.wave_id
    assert "File too large" in (logs / "A-2.feedback").read_text()
    assert git(remote.origin, "show", f"wavegit/{outcome.report.wave_id}:src/a.txt") == "ok"
    assert origin_item(remote, "A").status == "review"
    assert_intact(remote)


# -- worker killed by a signal ----------------------------------------------------------------------------

def test_a_worker_killed_by_a_signal_is_retried_and_never_costs_the_other_items_their_work(
        tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [
        item("A", ["write src/a.txt ok", "no-feedback crash"], ["src/a.txt"]),
        item("B", ["write src/b.txt ok", "crash"], ["src/b.txt"]),
        item("C", ["write src/c.txt ok"], ["src/c.txt"]),
    ])
    outcome = run(remote.clone)
    by_id = {i.id: i for i in outcome.report.items}
    assert outcome.exit_code == 1
    assert (by_id["A"].verified, by_id["A"].attempts) == (True, 2)
    killed = (by_id["B"].verified, by_id["B"].exit_code, by_id["B"].error)
    assert killed == (False, -9, "worker killed by SIGKILL")
    assert by_id["C"].verified
    assert sorted(items_by_wave_branch(remote.origin)[outcome.report.wave_id]) == ["A", "C"]
    assert [origin_item(remote, i).status for i in "ABC"] == ["review", "todo", "review"]
    assert origin_item(remote, "B").last_error == "worker killed by SIGKILL"
    assert_intact(remote)


# -- git lock files left behind ---------------------------------------------------------------------------

def test_index_lock_left_in_an_attempt_tree_changes_nothing_and_the_attempt_counts(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["lock"], ["src/a.txt"])], worker=worker_command("lock"))
    outcome = run(remote.clone)
    (rep,) = outcome.report.items
    # The tree is read as content, not through its own (locked) index: the work is verified, and counted.
    assert outcome.exit_code == 0 and rep.verified, notes(outcome)
    assert (origin_item(remote, "A").status, origin_item(remote, "A").attempts) == ("review", 1)
    assert worktrees(remote.clone) == [str(remote.clone)]
    assert_intact(remote)


def test_a_stale_index_lock_in_the_users_checkout_does_not_stop_a_wave_and_is_left_alone(
        tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, two_items())
    lock = remote.clone / ".git" / "index.lock"
    lock.write_text("")
    outcome = run(remote.clone)
    assert outcome.exit_code == 0, notes(outcome)
    assert lock.exists()
    lock.unlink()
    assert_intact(remote)


def test_a_ref_lock_left_on_the_remote_makes_a_write_give_up_with_exit_4_and_write_nothing(
        tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, two_items())
    before = git(remote.origin, "rev-parse", "main")
    (remote.origin / "refs" / "heads" / "main.lock").write_text("")
    result = wavegit(remote.clone, "add", "N-1", "--prompt", "p", "--owns", "src/n.txt", "--test", "true",
                     "--push", "--deadline", "2")
    assert result.returncode == 4
    assert "lost the compare-and-swap race" in one_clear_line(result.stderr)
    assert git(remote.origin, "rev-parse", "main") == before
    (remote.origin / "refs" / "heads" / "main.lock").unlink()
    assert_intact(remote)


def test_a_ref_lock_on_the_remote_that_clears_during_the_record_is_retried_and_the_record_lands(
        tmp_path: Path) -> None:
    lock = tmp_path / "origin.git" / "refs" / "heads" / "main.lock"
    # Unsandboxed: the worker stands in for the fault, locking a ref on the remote.
    remote = make_wave_repo(tmp_path, [item("A", [f"run touch {lock}", "write src/a.txt ok"], ["src/a.txt"])],
                            attempts=1, sandbox="none")
    cleared = threading.Event()

    def clear_later() -> None:
        deadline = time.monotonic() + 30
        while not lock.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(1.5)
        lock.unlink(missing_ok=True)
        cleared.set()

    remover = threading.Thread(target=clear_later)
    remover.start()
    outcome = run(remote.clone)
    remover.join()
    assert cleared.is_set()
    assert outcome.exit_code == 0, notes(outcome)
    assert origin_item(remote, "A").status == "review"
    assert_intact(remote)

