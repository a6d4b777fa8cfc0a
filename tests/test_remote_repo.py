"""tests.helpers.repos.make_remote_repo copies a template built once per process: each copy is a repository of
its own, as a fresh ``init``/``clone``/``commit``/``push`` would make it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helpers.repos import git, make_remote_repo


def test_copies_of_one_template_are_separate_repositories(tmp_path: Path) -> None:
    first, second = make_remote_repo(tmp_path / "a"), make_remote_repo(tmp_path / "b")
    assert git(first.clone, "remote", "get-url", "origin") == str(first.origin)
    (first.clone / "README.md").write_text("changed\n")
    git(first.clone, "commit", "-q", "-am", "change")
    git(first.clone, "push", "-q", "origin", "main")
    assert git(first.origin, "rev-parse", "main") == git(first.clone, "rev-parse", "HEAD")
    assert git(second.origin, "rev-parse", "main") == git(second.clone, "rev-parse", "HEAD") != \
        git(first.origin, "rev-parse", "main")
    assert git(second.clone, "status", "--porcelain") == ""


def test_a_copied_clone_is_unmodified_also_to_plumbing_that_does_not_refresh_the_index(
        tmp_path: Path) -> None:
    make_remote_repo(tmp_path / "warm", {"README.md": "r\n", "src/a.py": "a = 1\n"})
    remote = make_remote_repo(tmp_path / "copy", {"README.md": "r\n", "src/a.py": "a = 1\n"})
    diff = subprocess.run(["git", "diff-files", "--name-only"], cwd=remote.clone, capture_output=True,
                          text=True, check=True)
    assert diff.stdout == ""
    assert git(remote.clone, "ls-files") == "README.md\nsrc/a.py"


def test_another_committer_date_makes_another_repository(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    before = make_remote_repo(tmp_path / "a")
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2026-02-03T04:05:06+0000")
    after = make_remote_repo(tmp_path / "b")
    assert git(after.clone, "log", "-1", "--format=%cI") == "2026-02-03T04:05:06+00:00"
    assert git(after.origin, "rev-parse", "main") != git(before.origin, "rev-parse", "main")
