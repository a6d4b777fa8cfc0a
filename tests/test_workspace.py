"""wavegit.attempts.workspace: attempt trees with a git directory of their own, clean test checkouts,
removal."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers.repos import RemoteRepo, git
from wavegit.attempts import workspace
from wavegit.core.git import GitError
from wavegit.core.repo import discover


def _tree(remote: RemoteRepo, name: str = "t", branch: str | None = "wavegit/items/w-1/X") -> Path:
    path = remote.base / "trees" / name
    workspace.create(workspace.objects_dir(remote.clone), path, start=git(remote.clone, "rev-parse", "HEAD"),
                     branch=branch)
    return path


def test_a_tree_is_a_repository_of_its_own_borrowing_the_schedulers_objects(remote_repo: RemoteRepo) -> None:
    path = _tree(remote_repo)
    assert (path / "README.md").read_text() == "hello\n"
    assert git(path, "rev-parse", "--absolute-git-dir") == str(path / ".git")
    assert git(path, "rev-parse", "--git-common-dir") == ".git"
    alternates = (path / ".git" / "objects" / "info" / "alternates").read_text().strip()
    assert Path(alternates) == (remote_repo.clone / ".git" / "objects").resolve()
    # No object copied, no hook (not even a sample), nothing registered in the scheduler's repository.
    assert git(path, "count-objects").startswith("0 objects")
    assert not (path / ".git" / "hooks").exists()
    assert git(remote_repo.clone, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert git(path, "status", "--porcelain") == ""


def test_what_a_worker_writes_in_its_git_dir_stays_there(remote_repo: RemoteRepo) -> None:
    path = _tree(remote_repo)
    main = git(remote_repo.clone, "rev-parse", "main")
    git(path, "config", "core.hooksPath", "/tmp/evil")
    git(path, "commit", "-q", "--allow-empty", "-m", "worker's own")
    git(path, "update-ref", "refs/heads/main", "HEAD")
    (path / ".git" / "hooks").mkdir()
    (path / ".git" / "hooks" / "reference-transaction").write_text("#!/bin/sh\nexit 1\n")
    (path / ".git" / "hooks" / "reference-transaction").chmod(0o755)
    assert git(remote_repo.clone, "rev-parse", "main") == main
    assert "evil" not in git(remote_repo.clone, "config", "--list", "--local")
    assert not (remote_repo.clone / ".git" / "hooks" / "reference-transaction").exists()
    git(remote_repo.clone, "update-ref", "refs/heads/unhindered", main)  # no hook of the tree's ran


def test_a_tree_without_a_branch_is_on_a_scratch_branch(remote_repo: RemoteRepo) -> None:
    path = _tree(remote_repo, branch=None)
    assert git(path, "symbolic-ref", "HEAD") == "refs/heads/wavegit-attempt"


def test_a_tree_replaces_what_a_killed_wave_left_at_its_path(remote_repo: RemoteRepo) -> None:
    path = remote_repo.base / "trees" / "t"
    (path / "junk").mkdir(parents=True)
    (path / "junk" / "left.txt").write_text("left\n")
    _tree(remote_repo)
    assert not (path / "junk").exists() and (path / "README.md").exists()


def test_a_test_checkout_holds_exactly_the_commit(remote_repo: RemoteRepo) -> None:
    clone = remote_repo.clone
    (clone / ".gitignore").write_text("*.pyc\n")
    git(clone, "add", ".gitignore")
    git(clone, "commit", "-q", "-m", "ignore")
    attempt = _tree(remote_repo)
    (attempt / "pytest.pyc").write_text("a cheat\n")
    (attempt / "untracked.txt").write_text("left over\n")
    commit = git(clone, "rev-parse", "HEAD")
    checkout = workspace.test_checkout(workspace.objects_dir(clone), commit, remote_repo.base / "checkout")
    assert sorted(os.listdir(checkout)) == [".git", ".gitignore", "README.md"]
    assert git(checkout, "rev-parse", "HEAD") == commit and git(checkout, "status", "--porcelain") == ""


def test_remove_takes_trees_a_worker_locked_up_and_never_follows_symlinks(remote_repo: RemoteRepo,
                                                                          tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep\n")
    path = _tree(remote_repo)
    os.symlink(outside, path / "link")
    (path / "ro" / "deeper").mkdir(parents=True)
    (path / "ro" / "deeper" / "f.txt").write_text("f\n")
    (path / "ro" / "deeper").chmod(0o500)
    (path / "ro").chmod(0)
    workspace.remove(path)
    assert not os.path.lexists(path) and (outside / "keep.txt").read_text() == "keep\n"
    workspace.remove(path)  # already gone: nothing to do


def test_remove_takes_trees_nested_deeper_than_recursion_and_path_names_go(remote_repo: RemoteRepo) -> None:
    path = _tree(remote_repo)
    here = os.getcwd()
    os.chdir(path)
    try:
        for level in range(1500):
            name = "d" * 200 if level % 10 == 0 else "d"
            os.mkdir(name)
            os.chdir(name)
            Path("f.txt").write_text("f\n")
    finally:
        os.chdir(here)
    workspace.remove(path)
    assert not os.path.lexists(path)


def test_a_waves_cleanup_removes_its_trees_whatever_their_state(remote_repo: RemoteRepo) -> None:
    wave = remote_repo.base / "trees"
    first, second = _tree(remote_repo, "A-1"), _tree(remote_repo, "B-1")
    (second / "locked").mkdir()
    (second / "locked").chmod(0)
    workspace.remove(wave)
    assert not first.exists() and not second.exists() and not wave.exists()


def test_without_its_git_dir_a_tree_finds_no_repository_even_in_a_cache_kept_in_git(
        remote_repo: RemoteRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The trees lie in the user's cache, outside every git directory; a HOME kept in git holds that cache.
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    git(dotfiles, "init", "-q")
    monkeypatch.setenv("XDG_CACHE_HOME", str(dotfiles / ".cache"))
    clone = remote_repo.clone
    path = discover(clone).worktrees_dir / "w-20260101-000000-0000" / "A-1"
    assert path.is_relative_to(dotfiles / ".cache") and ".git" not in path.parts
    workspace.create(workspace.objects_dir(clone), path, start=git(clone, "rev-parse", "HEAD"))
    shutil.rmtree(path / ".git")
    found = subprocess.run(["git", "rev-parse", "--git-dir"], cwd=path, capture_output=True, text=True,
                           check=False)
    assert found.returncode == 128 and "not a git repository" in found.stderr
    # Without the fence git would have found the repository the cache is in.
    (path.parent / ".git").unlink()
    assert git(path, "rev-parse", "--show-toplevel") == str(dotfiles)


def _git_dir_listing(tree: Path) -> list[tuple[str, bytes | None]]:
    git_dir = tree / ".git"
    listing: list[tuple[str, bytes | None]] = []
    for folder, subdirs, names in os.walk(git_dir):
        subdirs.sort()
        here = Path(folder)
        listing += [(str(here.relative_to(git_dir) / d), None) for d in subdirs]
        listing += [(str(here.relative_to(git_dir) / n), (here / n).read_bytes()) for n in sorted(names)]
    return listing


def test_a_tree_from_the_skeleton_is_the_repository_git_init_would_make_its_branch_packed(
        remote_repo: RemoteRepo) -> None:
    clone, head = remote_repo.clone, git(remote_repo.clone, "rev-parse", "HEAD")
    skeleton = workspace.Skeleton.capture(remote_repo.base / "trees" / "_skeleton")
    assert skeleton is not None
    branch = "wavegit/items/w-1/X"
    by_init = _tree(remote_repo, "by-init", branch)
    by_skeleton = remote_repo.base / "trees" / "by-skeleton"
    workspace.create(workspace.objects_dir(clone), by_skeleton, start=head, branch=branch, skeleton=skeleton)
    # The same files, byte for byte, but the index (it holds the checkout's own stat data) and the branch
    # (in packed-refs: one file, where its loose ref is a file and a folder per part of its name); the same
    # directories, but those git makes when it first writes there.
    made_when_needed = {"index", "objects/pack", "refs/tags", "refs/heads"}
    assert ([entry for entry in _git_dir_listing(by_skeleton) if entry[0] not in ("index", "packed-refs")]
            == [entry for entry in _git_dir_listing(by_init)
                if entry[0] not in made_when_needed and not entry[0].startswith("refs/heads/")])
    assert not (by_skeleton / ".git" / "refs" / "heads").exists()
    listed = git(by_skeleton, "for-each-ref", "--format=%(refname) %(objectname)")
    assert listed == f"refs/heads/{branch} {head}"
    git(by_skeleton, "tag", "mine")
    assert git(by_skeleton, "rev-parse", "mine") == head
    assert git(by_skeleton, "symbolic-ref", "HEAD") == f"refs/heads/{branch}"
    assert git(by_skeleton, "rev-parse", "HEAD") == head and git(by_skeleton, "status", "--porcelain") == ""
    # No reflog: a fresh tree has nothing to log (the worker's own commits are logged as usual).
    assert not (by_skeleton / ".git" / "logs").exists()
    git(by_skeleton, "commit", "-q", "--allow-empty", "-m", "the worker's own")
    assert git(by_skeleton, "rev-parse", f"refs/heads/{branch}~1") == head


def test_a_branch_name_git_would_judge_is_left_to_git_init(remote_repo: RemoteRepo) -> None:
    skeleton = workspace.Skeleton.capture(remote_repo.base / "trees" / "_skeleton")
    assert skeleton is not None
    path = remote_repo.base / "trees" / "odd"
    path.mkdir(parents=True)
    head = git(remote_repo.clone, "rev-parse", "HEAD")
    assert not skeleton.write(path, "wavegit/items/w-1/X..lock", head) and not (path / ".git").exists()
    assert not skeleton.write(path, "wavegit/items/w-1/X", "HEAD") and not (path / ".git").exists()
    with pytest.raises(GitError):
        workspace.create(workspace.objects_dir(remote_repo.clone), path, start="HEAD",
                         branch="wavegit/items/w-1/a..b", skeleton=skeleton)


def test_a_tree_moved_to_the_trash_is_gone_at_once_and_emptied_later_without_following_links(
        tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep\n")
    tree = tmp_path / "state" / "worktrees" / "w" / "A-1"
    (tree / "deep" / "er").mkdir(parents=True)
    (tree / "deep" / "er" / "f.txt").write_text("x\n")
    (tree / "link").symlink_to(outside)
    trash = tmp_path / "state" / "trash"
    workspace.move_to_trash(tree, trash)
    workspace.move_to_trash(tmp_path / "state" / "never-made", trash)
    assert not tree.exists() and len(list(trash.iterdir())) == 1
    workspace.empty_trash(trash)
    assert list(trash.iterdir()) == [] and (outside / "keep.txt").read_text() == "keep\n"
