"""wavegit.core.git: the one wrapper that runs git."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers.repos import RemoteRepo, git
from wavegit.core import git as wgit
from wavegit.core.errors import EXIT_WORK_FAILED


def test_out_returns_stdout_without_the_trailing_newline(remote_repo: RemoteRepo) -> None:
    assert wgit.out(["rev-parse", "--abbrev-ref", "HEAD"], cwd=remote_repo.clone) == "main"


def test_run_without_check_reports_the_exit_code_instead_of_raising(remote_repo: RemoteRepo) -> None:
    result = wgit.run(["rev-parse", "--verify", "-q", "no-such-ref"], cwd=remote_repo.clone, check=False)
    assert result.returncode == 1
    assert result.stdout == ""


def test_input_is_fed_on_stdin(remote_repo: RemoteRepo) -> None:
    sha = wgit.out(["hash-object", "-w", "--stdin"], cwd=remote_repo.clone, input="hello\n")
    assert wgit.out(["cat-file", "blob", sha], cwd=remote_repo.clone) == "hello"


def test_a_failure_carries_the_command_exit_code_and_stderr(remote_repo: RemoteRepo) -> None:
    with pytest.raises(wgit.GitError) as caught:
        wgit.run(["cat-file", "-p", "0" * 40], cwd=remote_repo.clone)
    error = caught.value
    assert error.command == ["git", "cat-file", "-p", "0" * 40]
    assert error.returncode != 0
    assert "fatal:" in error.stderr
    assert error.exit_code == EXIT_WORK_FAILED
    assert str(error).startswith(f"`git cat-file -p {'0' * 40}` exited {error.returncode}: fatal:")


def test_a_rejected_push_says_what_the_remote_said_not_just_that_it_failed(remote_repo: RemoteRepo) -> None:
    hook = remote_repo.origin / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'policy: pushes are frozen today' >&2\nexit 1\n")
    hook.chmod(0o755)
    (remote_repo.clone / "new.txt").write_text("x\n")
    git(remote_repo.clone, "add", "new.txt")
    git(remote_repo.clone, "commit", "-q", "-m", "new")
    with pytest.raises(wgit.GitError) as caught:
        wgit.run(["push", "origin", "main"], cwd=remote_repo.clone)
    message = str(caught.value)
    assert "\n" not in message
    assert "remote: policy: pushes are frozen today" in message
    assert "pre-receive hook declined" in message


def test_the_explanation_falls_back_to_the_last_line_when_git_gives_no_prefixed_line() -> None:
    error = wgit.GitError(["x"], 3, "first\nsecond\n\n")
    assert str(error) == "`git x` exited 3: second"
    assert str(wgit.GitError(["x"], 3, "")) == "`git x` exited 3: no output"


def test_repository_locating_variables_from_a_calling_hook_are_ignored(
        remote_repo: RemoteRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = tmp_path / "other"
    git(tmp_path, "init", "-q", str(other))
    # Inside a hook git exports GIT_DIR and friends; wavegit must still act on the directory it names.
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(other / ".git" / "index"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    top = wgit.out(["rev-parse", "--show-toplevel"], cwd=remote_repo.clone)
    assert Path(top) == remote_repo.clone


def test_clean_env_keeps_identity_and_adds_extras_but_drops_locating_variables(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_DIR", "/elsewhere")
    monkeypatch.setenv("GIT_QUARANTINE_PATH", "/q")
    env = wgit.clean_env({"GIT_INDEX_FILE": "/tmp/idx"})
    assert "GIT_DIR" not in env and "GIT_QUARANTINE_PATH" not in env
    assert env["GIT_AUTHOR_NAME"] == "Wave Tester"
    assert env["GIT_INDEX_FILE"] == "/tmp/idx"
    assert env["GIT_TERMINAL_PROMPT"] == "0"
    assert wgit.without_repo_vars({"GIT_DIR": "x", "PATH": "/bin"}) == {"PATH": "/bin"}


def test_an_environment_already_clean_and_never_prompting_is_inherited_as_it_is(
        remote_repo: RemoteRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    # No copy of the environment is built and encoded for each git call when there is nothing to remove.
    monkeypatch.setenv("GIT_TERMINAL_PROMPT", "0")
    monkeypatch.delenv("GIT_DIR", raising=False)
    assert wgit.clean_env() is None
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Inherited Name")
    assert wgit.out(["var", "GIT_AUTHOR_IDENT"], cwd=remote_repo.clone).startswith("Inherited Name <")
    # A locating variable, or one to add, and the copy is made again.
    assert wgit.clean_env({"GIT_INDEX_FILE": "/tmp/idx"}) is not None
    monkeypatch.setenv("GIT_DIR", "/elsewhere")
    assert wgit.clean_env() == {k: v for k, v in os.environ.items() if k != "GIT_DIR"}


def test_a_missing_git_binary_is_a_git_error_not_a_traceback(
        remote_repo: RemoteRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(wgit.GitError) as caught:
        wgit.run(["status"], cwd=remote_repo.clone)
    assert caught.value.returncode == 127
    assert "cannot run git" in str(caught.value)


def _marker_hook(hooks: Path, name: str, marker: Path) -> None:
    hooks.mkdir(parents=True, exist_ok=True)
    (hooks / name).write_text(f"#!/bin/sh\necho {name} >> '{marker}'\n")
    (hooks / name).chmod(0o755)


def test_no_hook_runs_inside_wavegits_git_calls(remote_repo: RemoteRepo, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    clone = remote_repo.clone
    for name in ("reference-transaction", "pre-push", "post-checkout"):
        _marker_hook(clone / ".git" / "hooks", name, marker)
    head = git(clone, "rev-parse", "HEAD")
    wgit.run(["update-ref", "refs/heads/other", head], cwd=clone)
    wgit.run(["push", "-q", "origin", "other"], cwd=clone)
    wgit.run(["checkout", "-q", "other"], cwd=clone)
    assert not marker.exists()
    # The same commands run by plain git do run them: the hooks are real.
    git(clone, "update-ref", "refs/heads/another", head)
    assert marker.read_text().splitlines() == ["reference-transaction"] * 2


def test_a_configured_hooks_path_is_overridden_but_still_reported_by_git_config(remote_repo: RemoteRepo,
                                                                                tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    _marker_hook(tmp_path / "hooks", "reference-transaction", marker)
    git(remote_repo.clone, "config", "core.hooksPath", str(tmp_path / "hooks"))
    wgit.run(["update-ref", "refs/heads/other", "HEAD"], cwd=remote_repo.clone)
    assert not marker.exists()
    assert wgit.out(["config", "--get", "core.hooksPath"], cwd=remote_repo.clone) == str(tmp_path / "hooks")


def test_a_configured_fsmonitor_is_never_started(remote_repo: RemoteRepo, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    monitor = tmp_path / "monitor.sh"
    monitor.write_text(f"#!/bin/sh\necho monitor >> '{marker}'\n")
    monitor.chmod(0o755)
    git(remote_repo.clone, "config", "core.fsmonitor", str(monitor))
    wgit.run(["status", "--porcelain"], cwd=remote_repo.clone)
    assert not marker.exists()
    git(remote_repo.clone, "status", "--porcelain")
    assert marker.exists()


def test_the_hooks_path_is_dev_null_below_which_nothing_can_be_planted() -> None:
    assert wgit.no_hooks_dir() == os.devnull
    with pytest.raises(NotADirectoryError):
        (Path(wgit.no_hooks_dir()) / "pre-push").write_text("#!/bin/sh\n")


def test_every_change_listing_shows_a_gitlink_that_gitmodules_says_to_ignore(remote_repo: RemoteRepo) -> None:
    # `ignore = all` hid the bump from diff-tree too: collect's ownership check and the wave's replay of
    # its items' commits would have missed it.
    clone = remote_repo.clone
    (clone / ".gitmodules").write_text('[submodule "lib"]\n\tpath = lib\n\turl = ../l.git\n\tignore = all\n')
    git(clone, "add", ".gitmodules")
    git(clone, "update-index", "--add", "--cacheinfo", f"160000,{'a' * 40},lib")
    git(clone, "commit", "-q", "-m", "add lib")
    base = wgit.CommitSha(git(clone, "rev-parse", "HEAD"))
    git(clone, "update-index", "--cacheinfo", f"160000,{'b' * 40},lib")
    git(clone, "commit", "-q", "-m", "bump lib")
    bump = wgit.CommitSha(git(clone, "rev-parse", "HEAD"))
    assert wgit.changed_paths(clone, base, bump) == ["lib"]
    assert [change.path for change in wgit.own_changes(clone, bump)] == ["lib"]
    [own] = wgit.changes_of_commits(clone, [bump])
    assert [change.path for change in own.changes] == ["lib"]
    assert wgit.patch_ids(clone, [bump])
