"""Attacks on wavegit's read path by what a repository holds or a teammate pushes: a real `git push` through
the installed hook, which must refuse what collides with work in flight, or the real CLI (ls, plan, status,
validate), which must answer without a traceback or a hang."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.helpers.hook import ItemSpec, commit, hook_env, install_hook, publish_tracker, push, remote_oid
from tests.helpers.repos import git, make_remote_repo, wavegit

W1 = "w-20260101-000000-0001"
GITLINK_A, GITLINK_B = "a" * 40, "b" * 40


def refused_with(result: subprocess.CompletedProcess[str], owner: str) -> None:
    assert result.returncode != 0, result.stderr
    assert "push refused" in result.stderr and f"owned by {owner}" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def set_gitlink(repo: Path, path: str, sha: str) -> str:
    """Point the submodule entry ``path`` at ``sha`` and commit it (no submodule checkout needed)."""
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{sha},{path}")
    git(repo, "commit", "-q", "-m", f"bump {path}")
    return git(repo, "rev-parse", "HEAD")


def test_attack_a_submodule_bump_hidden_by_gitmodules_ignore_all_is_refused(tmp_path: Path) -> None:
    # `ignore = all` in a committed .gitmodules (a setting that quiets `git status`) hid a gitlink's change
    # from every git diff and log, plumbing included: the hook saw a push of no path at all.
    gitmodules = '[submodule "lib"]\n\tpath = vendor/lib\n\turl = ../lib.git\n\tignore = all\n'
    remote = make_remote_repo(tmp_path, {"README.md": "hello\n", ".gitmodules": gitmodules})
    set_gitlink(remote.clone, "vendor/lib", GITLINK_A)
    git(remote.clone, "push", "-q", "--no-verify", "origin", "main")
    publish_tracker(remote, [ItemSpec("LIB-1", ["vendor/lib"], wave=W1)])
    install_hook(remote.clone)
    before = remote_oid(remote, "refs/heads/main")
    set_gitlink(remote.clone, "vendor/lib", GITLINK_B)
    refused_with(push(remote.clone, "origin", "main"), "LIB-1")
    assert remote_oid(remote, "refs/heads/main") == before


def test_attack_a_config_whose_allow_protected_is_invalid_still_has_the_push_checked(tmp_path: Path) -> None:
    # The in-flight items were read with the config's protected paths, whose error (a typo in
    # allow_protected, committed on main from the web editor) read as an unreadable tracker: a warning, and
    # the push went through unchecked.
    remote = make_remote_repo(tmp_path, {"README.md": "hello\n", "src/auth/limiter.py": "limit = 1\n"})
    publish_tracker(remote, [ItemSpec("AUTH-1", ["src/auth/"], wave=W1)],
                    {".wavegit/config.yaml": "allow_protected: [src/]\n"})
    install_hook(remote.clone)
    before = remote_oid(remote, "refs/heads/main")
    commit(remote.clone, {"src/auth/limiter.py": "limit = 2\n"})
    refused_with(push(remote.clone, "origin", "main"), "AUTH-1")
    assert remote_oid(remote, "refs/heads/main") == before


def test_attack_a_timeout_too_long_to_wait_on_is_bad_input_not_a_traceback(tmp_path: Path) -> None:
    # 1e29 s passed every check ("a positive finite number") and overflowed poll() in the hook's fetch.
    remote = make_remote_repo(tmp_path, {"README.md": "hello\n", "src/auth/limiter.py": "limit = 1\n"})
    huge = "1" + "0" * 29
    publish_tracker(remote, [ItemSpec("AUTH-1", ["src/auth/"], wave=W1)],
                    {".wavegit/config.yaml": f"hook:\n  max_age_s: 0\n  fetch_timeout_s: {huge}\n"})
    install_hook(remote.clone)
    commit(remote.clone, {"README.md": "hello again\n"})
    result = push(remote.clone, "origin", "main")
    assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr
    assert ".wavegit/config.yaml:3:20: 'fetch_timeout_s' must be at most 1000000000 seconds" in result.stderr
    (remote.clone / ".wavegit/config.yaml").unlink()
    result = push(remote.clone, "origin", "main", env={"WAVEGIT_HOOK_FETCH_TIMEOUT_S": huge})
    assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr
    assert "WAVEGIT_HOOK_FETCH_TIMEOUT_S" in result.stderr and "at most" in result.stderr


@pytest.mark.parametrize("name", ["src/auth/odd[name.py", "src/auth/a\\b.py", "src/auth/tab\there.py",
                                  "src/auth/new\nline.py"])
def test_attack_a_name_that_is_no_pattern_is_refused_in_an_in_flight_directory(tmp_path: Path,
                                                                                name: str) -> None:
    # A name the pattern syntax refuses ('[' unbalanced, a backslash, a control character) was only named
    # in a warning, "not checked", and the push went through: src/auth/ is AUTH-1's whatever its files
    # are called.
    remote = make_remote_repo(tmp_path, {"README.md": "hello\n", "src/auth/limiter.py": "limit = 1\n"})
    publish_tracker(remote, [ItemSpec("AUTH-1", ["src/auth/"], wave=W1)])
    install_hook(remote.clone)
    before = remote_oid(remote, "refs/heads/main")
    commit(remote.clone, {name: "x\n"})
    refused_with(push(remote.clone, "origin", "main"), "AUTH-1")
    assert remote_oid(remote, "refs/heads/main") == before
    # The same name outside what is in flight is pushed without a word.
    git(remote.clone, "reset", "-q", "--hard", "origin/main")
    commit(remote.clone, {name.replace("auth", "free", 1).replace("AUTH", "free"): "x\n"})
    result = push(remote.clone, "origin", "main")
    assert result.returncode == 0 and "wavegit" not in result.stderr, result.stderr


def test_attack_a_number_past_a_floats_range_in_the_tracker_is_an_item_problem_for_every_reader(
        tmp_path: Path) -> None:
    # float(10**400) raises OverflowError, which no reader caught: the hook, ls, plan and validate all ended
    # in a traceback on such an estimate.
    remote = make_remote_repo(tmp_path, {"README.md": "hello\n", "src/auth/limiter.py": "limit = 1\n"})
    publish_tracker(remote, [ItemSpec("AUTH-1", ["src/auth/"], wave=W1, extra={"estimate_s": 10 ** 400})])
    install_hook(remote.clone)
    commit(remote.clone, {"src/auth/limiter.py": "limit = 2\n"})
    refused_with(push(remote.clone, "origin", "main"), "AUTH-1")
    for command in (["ls"], ["plan", "--json"], ["status"]):
        result = wavegit(remote.clone, *command)
        assert result.returncode in (0, 2) and "Traceback" not in result.stderr, (command, result.stderr)
    result = wavegit(remote.clone, "validate")
    assert result.returncode == 2, result.stderr
    assert ".wavegit/tracker.yaml:9:17: item AUTH-1: 'estimate_s' must be a finite number" in result.stderr


def test_attack_one_id_twice_in_the_tracker_lends_no_wave_the_other_items_files(tmp_path: Path) -> None:
    # In-flight items were looked up by id: the second X's wave stood for the first X's paths, so W2's
    # wave branch took W1's file, and main's refusal named the wrong wave.
    w2 = "w-20260101-000000-0002"
    remote = make_remote_repo(tmp_path, {"README.md": "hello\n", "src/a/x.py": "1\n", "src/b/y.py": "1\n"})
    publish_tracker(remote, [ItemSpec("X", ["src/a/"], wave=W1), ItemSpec("X", ["src/b/"], wave=w2)])
    install_hook(remote.clone)
    git(remote.clone, "checkout", "-q", "-b", f"wavegit/{w2}")
    commit(remote.clone, {"src/a/x.py": "2\n"})
    result = push(remote.clone, "origin", f"wavegit/{w2}")
    refused_with(result, "X")
    assert f"src/a/x.py: owned by X (in_progress, wave {W1};" in result.stderr
    assert remote_oid(remote, f"refs/heads/wavegit/{w2}") == ""


def test_attack_a_config_committed_as_a_symlink_to_a_fifo_or_a_device_is_bad_input_not_a_hang(
        tmp_path: Path) -> None:
    # The checkout's config was read as it is: through a symlink to a FIFO every command, the hook
    # included, blocked for good; to /dev/zero, it read until memory ran out.
    remote = make_remote_repo(tmp_path, {"README.md": "hello\n", "src/auth/limiter.py": "limit = 1\n"})
    publish_tracker(remote, [ItemSpec("AUTH-1", ["src/auth/"], wave=W1)])
    install_hook(remote.clone)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (remote.clone / ".wavegit/config.yaml").symlink_to(fifo)
    git(remote.clone, "add", ".wavegit/config.yaml")
    git(remote.clone, "commit", "-q", "-m", "config")
    result = subprocess.run(["git", "push", "origin", "main"], cwd=remote.clone, capture_output=True,
                            text=True, env=hook_env(), timeout=60, check=False)
    assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr
    assert ".wavegit/config.yaml: cannot read: [Errno 22] not a regular file" in result.stderr
    (remote.clone / ".wavegit/config.yaml").unlink()
    (remote.clone / ".wavegit/config.yaml").symlink_to("/dev/zero")
    for command in (["ls"], ["plan"], ["validate"], ["status"]):
        listed = wavegit(remote.clone, *command, timeout=60)
        assert listed.returncode == 2, (command, listed.stderr)
        assert ".wavegit/config.yaml: cannot read: [Errno 22] not a regular file" in listed.stderr


def test_attack_a_tracker_in_the_checkout_that_is_a_symlink_to_a_device_is_not_read(tmp_path: Path) -> None:
    remote = make_remote_repo(tmp_path, {"README.md": "hello\n"})
    publish_tracker(remote, [ItemSpec("A-1", ["src/a/"], status="todo")])
    (remote.clone / ".wavegit/tracker.yaml").unlink()
    (remote.clone / ".wavegit/tracker.yaml").symlink_to("/dev/zero")
    checked = wavegit(remote.clone, "validate", timeout=60)
    assert checked.returncode == 0 and "ok: 1 items" in checked.stdout, checked.stderr
    worktree = wavegit(remote.clone, "validate", "--worktree", timeout=60)
    assert worktree.returncode == 2
    assert ".wavegit/tracker.yaml: cannot read: not a regular file" in worktree.stderr


@pytest.mark.parametrize("forged", [{"every_s": 10 ** 400}, {"every_s": float("nan")},
                                    {"every_s": float("inf")}, {"pid": 10 ** 400}])
def test_attack_a_forged_heartbeat_ref_is_no_heartbeat_to_any_reader(tmp_path: Path,
                                                                      forged: dict[str, object]) -> None:
    # Anyone who can push refs can push refs/wavegit/heartbeat/<W>, and every clone fetches it: a period of
    # 400 digits, NaN or infinity, or a pid past a C int, made plan, ls, status, sync and release of every
    # clone end in a traceback.
    remote = make_remote_repo(tmp_path, {"README.md": "hello\n"})
    publish_tracker(remote, [ItemSpec("A-1", ["src/a/"], wave=W1),
                             ItemSpec("B-1", ["src/b/"], status="todo")])
    record = {"wave": W1, "pid": 1, "host": os.uname().nodename, "at": "2026-01-01T00:00:00+00:00",
              "every_s": 30, **forged}
    message = f"wavegit heartbeat {W1}\n\n{json.dumps(record)}\n"
    tree = git(remote.clone, "rev-parse", "HEAD^{tree}")
    beat = subprocess.run(["git", "commit-tree", tree], cwd=remote.clone, input=message, capture_output=True,
                          text=True, check=True).stdout.strip()
    git(remote.clone, "push", "-q", "--no-verify", "origin", f"{beat}:refs/wavegit/heartbeat/{W1}")
    for command in (["sync", "--dry-run"], ["plan"], ["ls"], ["status"], ["release", "--wave", W1]):
        result = wavegit(remote.clone, *command, timeout=60)
        assert "Traceback" not in result.stderr and result.returncode in (0, 2), (command, result.stderr)


def test_attack_a_unicode_line_separator_in_a_value_leaves_every_later_position_at_the_files_line(
        tmp_path: Path) -> None:
    # YAML ends a line at U+2028, U+2029 and U+0085 too, which a quoted title may hold as they are: every
    # problem after one was reported lines below where an editor, grep -n or git blame shows it.
    text = ("\ufeffversion: 1\nitems:\n  - id: A-1\n    title: \"one\u2028two\u0085three\u2029four\"\n"
            "    prompt: p\n    owns: [src/a/]\n    test: \"true\"\n  - id: A-2\n    prompt: p\n"
            "    owns: [src/b/]\n    test: \"true\"\n    priority: high\n")
    (tmp_path / "tracker.yaml").write_text(text, encoding="utf-8")
    line = text.split("\n").index("    priority: high") + 1
    result = wavegit(tmp_path, "validate", "--file", "tracker.yaml")
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"tracker.yaml:{line}:15: item A-2: 'priority'"), result.stderr
    (tmp_path / "broken.yaml").write_text(text.replace("owns: [src/b/]", "owns: [src/b/"), encoding="utf-8")
    broken = wavegit(tmp_path, "validate", "--file", "broken.yaml")
    assert broken.stderr.startswith(f"broken.yaml:{line - 1}:"), broken.stderr
