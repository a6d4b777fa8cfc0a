"""wavegit.workspaces: worktrees made ahead of their attempts and removed behind them, on real repos."""

from __future__ import annotations

import threading
import time

import pytest

from tests.helpers.repos import RemoteRepo, git
from wavegit import worktree
from wavegit.git import GitError
from wavegit.workspaces import Spec, Workspaces

BRANCH = "wavegit/items/w-20260101-000000-0000/X"


def _listed(remote: RemoteRepo) -> list[str]:
    return [line.removeprefix("worktree ") for line in
            git(remote.clone, "worktree", "list", "--porcelain").splitlines() if line.startswith("worktree ")]


def test_a_prepared_worktree_is_the_one_taken_checked_out_on_its_branch_reset_to_the_start(
        remote_repo: RemoteRepo) -> None:
    base = git(remote_repo.clone, "rev-parse", "HEAD")
    git(remote_repo.clone, "commit", "-q", "--allow-empty", "-m", "elsewhere")
    worktree.set_branches(remote_repo.clone, [BRANCH], git(remote_repo.clone, "rev-parse", "HEAD"))
    spaces = Workspaces(remote_repo.clone, threading.Lock())
    spec = Spec(remote_repo.base / "wt" / "X-1", BRANCH, base)
    spaces.prepare(spec)
    deadline = time.monotonic() + 10
    while not (spec.path / "README.md").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    (spec.path / "marker.txt").write_text("made ahead\n")
    spaces.take(spec)
    spaces.close()
    # Taken as it was made (not made again), on the item branch at the start commit.
    assert (spec.path / "marker.txt").read_text() == "made ahead\n"
    assert git(spec.path, "symbolic-ref", "HEAD") == f"refs/heads/{BRANCH}"
    assert git(spec.path, "rev-parse", "HEAD") == base == git(remote_repo.clone, "rev-parse", BRANCH)


def test_a_retry_on_the_same_branch_waits_for_the_previous_worktree_to_go(remote_repo: RemoteRepo) -> None:
    base = git(remote_repo.clone, "rev-parse", "HEAD")
    spaces = Workspaces(remote_repo.clone, threading.Lock())
    first = Spec(remote_repo.base / "wt" / "X-1", BRANCH, base)
    second = Spec(remote_repo.base / "wt" / "X-2", BRANCH, base)
    worktree.set_branches(remote_repo.clone, [BRANCH], base)
    spaces.take(first)
    spaces.release(first)
    # git refuses a second worktree on a branch another one still has: this works only after the removal.
    spaces.take(second)
    spaces.close()
    assert not first.path.exists() and (second.path / "README.md").exists()
    assert str(first.path) not in _listed(remote_repo)


def test_a_failed_preparation_is_raised_by_take(remote_repo: RemoteRepo) -> None:
    spaces = Workspaces(remote_repo.clone, threading.Lock())
    spec = Spec(remote_repo.base / "wt" / "X-1", BRANCH, "0" * 40)
    spaces.prepare(spec)  # its branch does not even exist
    with pytest.raises(GitError):
        spaces.take(spec)
    spaces.close()


def test_close_drops_preparations_not_begun_and_waits_for_the_rest(remote_repo: RemoteRepo) -> None:
    base = git(remote_repo.clone, "rev-parse", "HEAD")
    lock = threading.Lock()
    spaces = Workspaces(remote_repo.clone, lock)
    specs = [Spec(remote_repo.base / "wt" / f"I{n}-1", f"wavegit/items/w-20260101-000000-0000/I{n}", base)
             for n in range(12)]
    worktree.set_branches(remote_repo.clone, [spec.branch for spec in specs], base)
    with lock:
        # Held: no registration can begin until close() has dropped the queued ones.
        for spec in specs:
            spaces.prepare(spec)
        closing = threading.Thread(target=spaces.close)
        closing.start()
        time.sleep(1.0)  # ample time for close() to cancel the queue before the lock is free
    closing.join(timeout=30)
    assert not closing.is_alive()
    made = [spec for spec in specs if str(spec.path) in _listed(remote_repo)]
    # At most the ones already running when close() came (one per background thread) were made.
    assert len(made) <= 2
    time.sleep(0.2)
    assert [spec for spec in specs if str(spec.path) in _listed(remote_repo)] == made
