"""`wavegit hooks install|uninstall`: where the hook goes, chaining a foreign hook, idempotency, quoting."""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers.hook import ItemSpec, commit, hook_env, install_hook, publish_tracker, push
from tests.helpers.reliability import wavegit_in_process as wavegit_here
from tests.helpers.repos import REPO_ROOT, RemoteRepo, git, make_remote_repo, wavegit
from wavegit.hook import install

WAVE = "w-20260101-000000-0001"
FOREIGN_HOOK = """#!/bin/sh
# someone else's hook: records what it was given
printf '%s\\n' "$*" >> "{log}.args"
cat >> "{log}.stdin"
exit {code}
"""


@pytest.fixture
def remote(tmp_path: Path) -> RemoteRepo:
    """Origin with one in-flight item owning src/auth/, fetched by the clone; no hook installed yet."""
    repo = make_remote_repo(tmp_path, {"README.md": "hi\n", "src/auth/a.py": "a = 1\n"})
    publish_tracker(repo, [ItemSpec("AUTH-1", ["src/auth/"], wave=WAVE)])
    return repo


def hooks(repo: Path) -> Path:
    return repo / ".git" / "hooks"


def write_foreign_hook(repo: Path, log: Path, code: int = 0) -> str:
    text = FOREIGN_HOOK.format(log=log, code=code)
    target = hooks(repo) / "pre-push"
    target.write_text(text)
    target.chmod(0o755)
    return text


def is_executable(path: Path) -> bool:
    return bool(path.stat().st_mode & stat.S_IXUSR)


def test_install_writes_an_executable_hook_running_this_python(remote: RemoteRepo) -> None:
    result = wavegit(remote.clone, "hooks", "install")
    assert result.returncode == 0, result.stderr
    hook = hooks(remote.clone) / "pre-push"
    fetching = "(it fetches a tracker branch older than hook.max_age_s)"
    assert result.stdout.strip() == f"installed {hook} {fetching}"
    assert is_executable(hook)
    text = hook.read_text()
    assert install.MARKER in text
    assert f"python={shlex.quote(sys.executable)}\n" in text
    commit(remote.clone, {"src/auth/a.py": "a = 2\n"})
    assert push(remote.clone, "origin", "main").returncode == 1


def test_installing_twice_refreshes_in_place_and_chains_nothing(remote: RemoteRepo) -> None:
    install_hook(remote.clone)
    first = (hooks(remote.clone) / "pre-push").read_text()
    again = wavegit_here(remote.clone, "hooks", "install")
    assert again.returncode == 0
    assert again.stdout.startswith("refreshed ")
    assert (hooks(remote.clone) / "pre-push").read_text() == first
    assert not (hooks(remote.clone) / install.CHAINED_NAME).exists()


def test_install_from_a_linked_worktree_goes_into_the_common_dir(remote: RemoteRepo) -> None:
    worktree = remote.base / "linked"
    git(remote.clone, "worktree", "add", "-q", "-b", "side", str(worktree), "main")
    install_hook(worktree)
    assert (hooks(remote.clone) / "pre-push").is_file()
    assert not (remote.clone / ".git" / "worktrees" / "linked" / "hooks").exists()
    commit(worktree, {"src/auth/a.py": "a = 3\n"})
    result = push(worktree, "origin", "side:main")
    assert result.returncode == 1
    assert "src/auth/a.py: owned by AUTH-1" in result.stderr


def test_an_existing_hook_is_chained_and_gets_the_same_arguments_and_stdin(remote: RemoteRepo) -> None:
    log = remote.base / "foreign"
    original = write_foreign_hook(remote.clone, log)
    result = wavegit_here(remote.clone, "hooks", "install")
    assert result.returncode == 0
    chained = hooks(remote.clone) / install.CHAINED_NAME
    assert f"runs {chained} first" in result.stdout
    assert chained.read_text() == original and is_executable(chained)

    old = git(remote.clone, "rev-parse", "HEAD")
    new = commit(remote.clone, {"README.md": "fine\n"})
    assert push(remote.clone, "origin", "main").returncode == 0
    assert Path(f"{log}.args").read_text() == f"origin {remote.origin}\n"
    assert Path(f"{log}.stdin").read_text() == f"refs/heads/main {new} refs/heads/main {old}\n"

    commit(remote.clone, {"src/auth/a.py": "a = 4\n"})
    refused = push(remote.clone, "origin", "main")
    assert refused.returncode == 1 and "owned by AUTH-1" in refused.stderr
    assert len(Path(f"{log}.args").read_text().splitlines()) == 2  # the chained hook ran again first


def test_a_failing_chained_hook_stops_the_push_before_wavegit_runs(remote: RemoteRepo) -> None:
    write_foreign_hook(remote.clone, remote.base / "foreign", code=3)
    install_hook(remote.clone)
    commit(remote.clone, {"src/auth/a.py": "a = 5\n"})
    result = push(remote.clone, "origin", "main")
    assert result.returncode != 0
    assert "wavegit" not in result.stderr


def test_uninstall_restores_the_replaced_hook_exactly(remote: RemoteRepo) -> None:
    original = write_foreign_hook(remote.clone, remote.base / "foreign")
    install_hook(remote.clone)
    result = wavegit_here(remote.clone, "hooks", "uninstall")
    assert result.returncode == 0
    hook = hooks(remote.clone) / "pre-push"
    assert result.stdout.strip() == (f"removed wavegit's hook from {hooks(remote.clone)}; "
                                     f"restored the previous hook at {hook}")
    assert hook.read_text() == original and is_executable(hook)
    assert not (hooks(remote.clone) / install.CHAINED_NAME).exists()
    again = wavegit_here(remote.clone, "hooks", "uninstall")
    assert again.returncode == 0 and "not installed" in again.stdout
    assert hook.read_text() == original


def test_uninstall_without_a_replaced_hook_removes_ours(remote: RemoteRepo) -> None:
    install_hook(remote.clone)
    result = wavegit_here(remote.clone, "hooks", "uninstall")
    assert result.returncode == 0
    assert result.stdout.strip() == f"removed wavegit's hook from {hooks(remote.clone)}"
    assert not (hooks(remote.clone) / "pre-push").exists()
    commit(remote.clone, {"src/auth/a.py": "a = 6\n"})
    assert push(remote.clone, "origin", "main").returncode == 0


def test_uninstall_puts_back_a_chained_hook_whose_wrapper_was_deleted(remote: RemoteRepo) -> None:
    original = write_foreign_hook(remote.clone, remote.base / "foreign")
    install_hook(remote.clone)
    (hooks(remote.clone) / "pre-push").unlink()
    result = wavegit_here(remote.clone, "hooks", "uninstall")
    assert result.returncode == 0
    assert result.stdout.strip() == f"restored the previous hook at {hooks(remote.clone) / 'pre-push'}"
    assert (hooks(remote.clone) / "pre-push").read_text() == original


def test_a_foreign_hook_next_to_a_leftover_chained_hook_is_refused(remote: RemoteRepo) -> None:
    foreign = write_foreign_hook(remote.clone, remote.base / "foreign")
    leftover = hooks(remote.clone) / install.CHAINED_NAME
    leftover.write_text("#!/bin/sh\nexit 0\n")
    result = wavegit_here(remote.clone, "hooks", "install")
    assert result.returncode == 2
    assert "move one of them away" in result.stderr and "Traceback" not in result.stderr
    assert (hooks(remote.clone) / "pre-push").read_text() == foreign
    assert leftover.read_text() == "#!/bin/sh\nexit 0\n"


def test_core_hooks_path_is_refused_unless_a_hooks_dir_is_given(remote: RemoteRepo) -> None:
    git(remote.clone, "config", "core.hooksPath", ".githooks")
    result = wavegit_here(remote.clone, "hooks", "install")
    assert result.returncode == 2
    assert "core.hooksPath is set (.githooks)" in result.stderr and "--hooks-dir" in result.stderr
    assert not (hooks(remote.clone) / "pre-push").exists()
    assert not (remote.clone / ".githooks").exists()
    install_hook(remote.clone, "--hooks-dir", ".githooks")
    assert install.is_wavegit_hook(remote.clone / ".githooks" / "pre-push")
    commit(remote.clone, {"src/auth/a.py": "a = 7\n"})
    assert push(remote.clone, "origin", "main").returncode == 1
    assert wavegit_here(remote.clone, "hooks", "uninstall", "--hooks-dir", ".githooks").returncode == 0
    assert not (remote.clone / ".githooks" / "pre-push").exists()


def test_a_hooks_dir_git_does_not_run_hooks_from_is_refused_and_not_created(remote: RemoteRepo) -> None:
    # A typo in --hooks-dir used to create that directory, install there and say "installed": no push was
    # ever checked.
    result = wavegit(remote.clone, "hooks", "install", "--hooks-dir", "githooks")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines() == [
        f"wavegit hooks: --hooks-dir githooks: git runs this repository's hooks from {hooks(remote.clone)} "
        "(core.hooksPath is not set), so a hook in githooks would never run: install without --hooks-dir; "
        "nothing written"]
    assert not (remote.clone / "githooks").exists()
    git(remote.clone, "config", "core.hooksPath", ".githooks")
    result = wavegit(remote.clone, "hooks", "install", "--hooks-dir", ".git/hooks")
    assert result.returncode == 2 and "install --hooks-dir .githooks; nothing written" in result.stderr
    assert not (hooks(remote.clone) / "pre-push").exists()
    install_hook(remote.clone, "--hooks-dir", str(remote.clone / ".githooks"))  # the same place, absolute
    assert install.is_wavegit_hook(remote.clone / ".githooks" / "pre-push")


def test_the_hook_quotes_a_python_path_with_shell_metacharacters(remote: RemoteRepo) -> None:
    odd = remote.base / "odd $HOME `x` it's" / "python3"
    odd.parent.mkdir()
    odd.symlink_to(sys.executable)
    installed = subprocess.run([str(odd), "-m", "wavegit", "hooks", "install"], cwd=remote.clone,
                               env=hook_env(), capture_output=True, text=True, check=False)
    assert installed.returncode == 0, installed.stderr
    assert f"python={shlex.quote(str(odd))}\n" in (hooks(remote.clone) / "pre-push").read_text()
    commit(remote.clone, {"src/auth/a.py": "a = 8\n"})
    result = push(remote.clone, "origin", "main")
    assert result.returncode == 1 and "owned by AUTH-1" in result.stderr
    odd.unlink()
    gone = push(remote.clone, "origin", "main")
    assert gone.returncode == 1
    assert "(the Python that installed this hook) is gone" in gone.stderr


def test_modules_in_the_repository_named_like_the_hooks_imports_never_run_in_the_hook(
        remote: RemoteRepo) -> None:
    """A hostile file at the repository's root named like a module the hook imports (the standard library's,
    PyYAML, wavegit itself) would run with the pusher's rights if the repository were on the module path."""
    install_hook(remote.clone)
    marker = remote.base / "ran"
    payload = f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n"
    for shadow in ("subprocess.py", "typing.py", "yaml.py", "wavegit/__init__.py"):
        (remote.clone / shadow).parent.mkdir(exist_ok=True)
        (remote.clone / shadow).write_text(payload)
    commit(remote.clone, {"src/auth/a.py": "a = 11\n"})
    result = push(remote.clone, "origin", "main")
    assert result.returncode == 1 and "src/auth/a.py: owned by AUTH-1" in result.stderr
    assert not marker.exists()


def test_the_repository_hook_script_runs_wavegit_from_path(remote: RemoteRepo) -> None:
    bin_dir = remote.base / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "wavegit"
    shim.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m wavegit \"$@\"\n")
    shim.chmod(0o755)
    script = REPO_ROOT / "hooks" / "pre-push"
    assert is_executable(script)
    git(remote.clone, "config", "core.hooksPath", str(script.parent))
    commit(remote.clone, {"src/auth/a.py": "a = 9\n"})
    result = push(remote.clone, "origin", "main", env={"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"})
    assert result.returncode == 1 and "owned by AUTH-1" in result.stderr


def test_pre_commit_manifest_runs_the_hook_from_pre_commits_variables(remote: RemoteRepo) -> None:
    [entry] = yaml.safe_load((REPO_ROOT / ".pre-commit-hooks.yaml").read_text())
    assert entry["stages"] == ["pre-push"] and entry["pass_filenames"] is False
    program, *args = shlex.split(entry["entry"])
    assert program == "wavegit"
    old = git(remote.clone, "rev-parse", "HEAD")
    new = commit(remote.clone, {"src/auth/a.py": "a = 10\n"})
    env = {"PRE_COMMIT_FROM_REF": old, "PRE_COMMIT_TO_REF": new, "PRE_COMMIT_REMOTE_NAME": "origin",
           "PRE_COMMIT_REMOTE_URL": str(remote.origin), "PRE_COMMIT_LOCAL_BRANCH": "refs/heads/main",
           "PRE_COMMIT_REMOTE_BRANCH": "refs/heads/main"}
    result = wavegit(remote.clone, *args, env=env, input="")
    assert result.returncode == 1
    assert "src/auth/a.py: owned by AUTH-1" in result.stderr


def test_a_wavegit_installed_under_a_directory_named_with_an_emoji_runs_in_the_hook(
        remote: RemoteRepo) -> None:
    # The boot line spelled the directories as JSON, whose escapes of a character past U+FFFF Python reads as
    # two lone surrogates: the hook could not import wavegit and refused every push with a traceback.
    tools = remote.base / "tools \U0001f680"
    shutil.copytree(REPO_ROOT / "wavegit", tools / "wavegit")
    boot = f"import sys; sys.path.insert(0, {str(tools)!r}); from wavegit.cli import main; sys.exit(main())"
    installed = subprocess.run([sys.executable, "-c", boot, "hooks", "install"], cwd=remote.clone,
                               env=hook_env(), capture_output=True, text=True, check=False)
    assert installed.returncode == 0, installed.stderr
    commit(remote.clone, {"src/auth/a.py": "a = 12\n"})
    result = push(remote.clone, "origin", "main")
    assert result.returncode == 1 and "src/auth/a.py: owned by AUTH-1" in result.stderr, result.stderr
    git(remote.clone, "reset", "-q", "--hard", "origin/main")
    commit(remote.clone, {"README.md": "free\n"})
    assert push(remote.clone, "origin", "main").returncode == 0
