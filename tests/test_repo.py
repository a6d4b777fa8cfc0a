"""wavegit.core.repo: finding the repository and wavegit's state directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.repos import RemoteRepo, git
from wavegit.core.errors import UsageError
from wavegit.core.repo import discover


def test_discover_from_a_subdirectory_finds_the_top_and_git_dirs(remote_repo: RemoteRepo) -> None:
    sub = remote_repo.clone / "a" / "b"
    sub.mkdir(parents=True)
    repo = discover(sub)
    assert repo.root == remote_repo.clone
    assert repo.git_dir == remote_repo.clone / ".git"
    assert repo.common_dir == remote_repo.clone / ".git"
    assert repo.state_dir == remote_repo.clone / ".git" / "wavegit"


def test_a_linked_worktree_shares_the_common_dir_and_state(remote_repo: RemoteRepo, tmp_path: Path) -> None:
    linked = tmp_path / "linked"
    git(remote_repo.clone, "worktree", "add", "-q", "-b", "side", str(linked))
    repo = discover(linked)
    assert repo.root == linked
    assert repo.git_dir != repo.common_dir
    assert repo.common_dir == remote_repo.clone / ".git"
    assert repo.state_dir == discover(remote_repo.clone).state_dir


def test_remotes_are_listed(remote_repo: RemoteRepo) -> None:
    repo = discover(remote_repo.clone)
    assert repo.remotes() == ["origin"]
    assert repo.has_remote("origin") and not repo.has_remote("upstream")


def test_remotes_are_asked_again_once_the_config_changed(remote_repo: RemoteRepo) -> None:
    # Asked once per state of the config in a process; a remote added or removed since is seen at once.
    repo = discover(remote_repo.clone)
    assert repo.remotes() == ["origin"]
    git(remote_repo.clone, "remote", "add", "upstream", str(remote_repo.origin))
    assert repo.remotes() == ["origin", "upstream"]
    git(remote_repo.clone, "remote", "remove", "origin")
    assert repo.remotes() == ["upstream"] and not repo.has_remote("origin")


def test_outside_a_repository_is_a_usage_error_that_says_what_to_do(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(UsageError, match=r"not inside a git work tree \(run `git init` first\)"):
        discover(plain)


def test_a_missing_directory_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such directory"):
        discover(tmp_path / "nope")
