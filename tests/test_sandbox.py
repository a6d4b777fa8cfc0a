"""wavegit.attempts.sandbox: the bwrap command line, the mode decision, its config, and real sandboxed
processes."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from tests.helpers.repos import make_remote_repo, wavegit
from wavegit.attempts import sandbox
from wavegit.attempts.runner import Confinement, new_marker, run_process
from wavegit.core.errors import UsageError
from wavegit.core.repo import discover
from wavegit.model.config import SandboxConfig, parse_config_text

BWRAP = shutil.which(sandbox.BWRAP)
PROBLEM = sandbox.probe(BWRAP) if BWRAP else "bwrap is not installed"
needs_bwrap = pytest.mark.skipif(PROBLEM is not None, reason=f"bwrap cannot run: {PROBLEM}")


def layout(tmp_path: Path, **extra: object) -> sandbox.Layout:
    checkout = tmp_path / "checkout"
    tree = checkout / ".git" / "wavegit" / "worktrees" / "w" / "A-1"
    private = checkout / ".git" / "wavegit" / "sandbox" / "w" / "A-1"
    for path in (tree, private):
        path.mkdir(parents=True)
    return sandbox.Layout(tree=tree, private=private, hidden=(checkout / ".git", checkout), **extra)  # type: ignore[arg-type]


def test_bwrap_argv_hides_parents_before_showing_the_tree_and_private_dir(tmp_path: Path) -> None:
    shown = layout(tmp_path)
    argv = sandbox.bwrap_argv("bwrap", shown, ["worker", "--flag"])
    assert argv[:10] == ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid",
                         "--die-with-parent"]
    assert "--unshare-net" not in argv and "--new-session" not in argv
    checkout = tmp_path / "checkout"
    order = [argv.index(str(p)) for p in (checkout, shown.private, shown.tree)]
    assert order == sorted(order)
    # The git directory within the hidden checkout is hidden with it: no mount of its own for bwrap to make.
    assert str(checkout / ".git") not in argv
    assert argv[argv.index(str(checkout)) - 1] == "--tmpfs"
    assert argv[argv.index(str(shown.tree)) - 1] == str(shown.tree) or "--bind" in argv
    assert argv[-5:] == ["--chdir", str(shown.tree), "--", "worker", "--flag"]


def test_a_hidden_folder_reached_through_a_link_out_of_hidden_home_keeps_a_tmpfs_of_its_own(
        tmp_path: Path) -> None:
    # A token's folder in HOME that a dotfiles manager links elsewhere: HOME's tmpfs does not cover where it
    # really lies, so it must not be dropped as lying within HOME, and its tmpfs goes there (bwrap makes a
    # name through a link inside HOME's empty tmpfs as a new directory of that tmpfs).
    home, dotfiles = tmp_path / "home", tmp_path / "opt" / "dotfiles" / "wavegit"
    dotfiles.mkdir(parents=True)
    (home / ".config").mkdir(parents=True)
    (home / ".config" / "wavegit").symlink_to(dotfiles)
    (home / ".cache" / "wavegit").mkdir(parents=True)
    linked, within = home / ".config" / "wavegit", home / ".cache" / "wavegit"
    shown = replace(layout(tmp_path), hidden=(home, linked, within))
    argv = sandbox.bwrap_argv("bwrap", shown, ["worker"])
    tmpfs = [argv[n + 1] for n, arg in enumerate(argv) if arg == "--tmpfs"]
    assert tmpfs == [str(home), str(dotfiles)]
    assert [argv[n + 1] for n, arg in enumerate(argv) if arg == "--remount-ro"] == tmpfs


def test_bwrap_argv_without_network_unshares_it(tmp_path: Path) -> None:
    assert "--unshare-net" in sandbox.bwrap_argv("bwrap", layout(tmp_path, network=False), ["w"])


def test_mode_none_never_probes_and_auto_without_bwrap_warns_once(tmp_path: Path) -> None:
    assert sandbox.decide(SandboxConfig(mode="none"), {"PATH": str(tmp_path)}) == sandbox.Decision(None)
    decision = sandbox.decide(SandboxConfig(), {"PATH": str(tmp_path)})
    assert decision.mode == "none" and decision.warning is not None and "unsandboxed" in decision.warning


def test_explicit_bwrap_or_auto_in_github_actions_without_bwrap_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="bwrap was asked for"):
        sandbox.decide(SandboxConfig(mode="bwrap"), {"PATH": str(tmp_path)})
    with pytest.raises(UsageError, match="sandbox: none"):
        sandbox.decide(SandboxConfig(), {"PATH": str(tmp_path), "GITHUB_ACTIONS": "true"})
    explicit = sandbox.decide(SandboxConfig(mode="none"), {"PATH": str(tmp_path), "GITHUB_ACTIONS": "true"})
    assert explicit == sandbox.Decision(None)


def test_sandbox_config_takes_a_mode_alone_or_a_mapping() -> None:
    assert parse_config_text("sandbox: none\n") == {"sandbox": {"mode": "none"}}
    mapping = parse_config_text("sandbox: {mode: bwrap, network: false, ro_paths: [/opt], rw_paths: [/c]}\n")
    expected = {"mode": "bwrap", "network": False, "ro_paths": ("/opt",), "rw_paths": ("/c",)}
    assert mapping == {"sandbox": expected}


def validate(tmp_path: Path, config_text: str) -> tuple[int, str]:
    remote = make_remote_repo(tmp_path)
    folder = remote.clone / ".wavegit"
    folder.mkdir()
    (folder / "tracker.yaml").write_text("version: 1\nitems: []\n")
    (folder / "config.yaml").write_text(config_text)
    result = wavegit(remote.clone, "validate", "--worktree")
    return result.returncode, result.stderr


@pytest.mark.parametrize("listed", ["GITHUB_ENV", "GITHUB_PATH", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY",
                                    "ACTIONS_RUNTIME_TOKEN", "GITHUB_TOKEN"])
def test_listing_a_workflow_variable_or_the_token_in_worker_env_is_bad_input(tmp_path: Path,
                                                                             listed: str) -> None:
    code, stderr = validate(tmp_path, f"worker_env: [ANTHROPIC_API_KEY, {listed}]\n")
    assert code == 2 and stderr.startswith(".wavegit/config.yaml:1:")
    assert listed in stderr and "Traceback" not in stderr


def test_a_bad_sandbox_mode_is_bad_input_with_its_position(tmp_path: Path) -> None:
    code, stderr = validate(tmp_path, "worker: x\nsandbox: bwarp\n")
    assert code == 2 and ".wavegit/config.yaml:2:10:" in stderr and "bwrap" in stderr


@needs_bwrap
def test_a_sandboxed_process_writes_its_tree_only_and_sees_no_outside_process(tmp_path: Path) -> None:
    remote = make_remote_repo(tmp_path)
    repo = discover(remote.clone)
    tree = repo.state_dir / "worktrees" / "w" / "A-1"
    private = repo.state_dir / "sandbox" / "w" / "A-1"
    tree.mkdir(parents=True)
    sandbox.private_dirs(private)
    outside = tmp_path / "outside.txt"
    script = textwrap.dedent(f"""\
        import os, pathlib
        pathlib.Path('in.txt').write_text('ok')
        for p in [{str(outside)!r}, {str(remote.clone / "x.txt")!r}]:
            try:
                pathlib.Path(p).write_text('x'); print('wrote', p)
            except OSError as e:
                print('refused', p)
        print('checkout', sorted(os.listdir({str(remote.clone)!r})))
        print('pids', sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))
        """)
    shown = sandbox.attempt_layout(repo, SandboxConfig(), tree, private, (), {})
    assert BWRAP is not None
    result = run_process([sys.executable, "-c", script], cwd=tree, env={"PATH": "/usr/bin:/bin"},
                         stdin_text="", log_path=tmp_path / "log", timeout_s=30, idle_timeout_s=30,
                         confine=Confinement(BWRAP, shown, new_marker()))
    log = result.log_path.read_text()
    assert result.exit_code == 0, log
    assert (tree / "in.txt").read_text() == "ok"
    assert not outside.exists() and not (remote.clone / "x.txt").exists()
    assert f"refused {outside}" in log and f"refused {remote.clone / 'x.txt'}" in log
    # The checkout is an empty directory but for the mount points leading to the tree.
    assert "checkout ['.git']" in log
    pids = eval(log.split("pids ", 1)[1].splitlines()[0])
    assert max(pids) < 10


@needs_bwrap
def test_a_missing_worker_under_bwrap_is_a_launch_failure_not_an_exit_1(tmp_path: Path) -> None:
    assert BWRAP is not None
    shown = layout(tmp_path)
    result = run_process(["no-such-worker-anywhere"], cwd=shown.tree, env={"PATH": "/usr/bin"}, stdin_text="",
                         log_path=tmp_path / "log", timeout_s=5, idle_timeout_s=5,
                         confine=Confinement(BWRAP, shown, new_marker()))
    assert result.launch_error is not None
    assert "cannot launch 'no-such-worker-anywhere'" in result.launch_error


@needs_bwrap
def test_a_signal_inside_bwrap_reads_as_the_signal(tmp_path: Path) -> None:
    assert BWRAP is not None
    shown = layout(tmp_path)
    result = run_process([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"],
                         cwd=shown.tree, env={"PATH": "/usr/bin"}, stdin_text="", log_path=tmp_path / "log",
                         timeout_s=10, idle_timeout_s=10, confine=Confinement(BWRAP, shown, new_marker()))
    assert result.exit_code == -9 and result.describe() == "killed by SIGKILL"


@needs_bwrap
def test_a_program_in_a_hidden_directory_starts_shown_alone_its_neighbours_stay_hidden(
        tmp_path: Path) -> None:
    # Its install prefix would be the checkout itself: only the program is shown.
    assert BWRAP is not None
    shown = layout(tmp_path)
    checkout = tmp_path / "checkout"
    (checkout / ".env").write_text("SECRET=in-the-checkout\n")
    program = checkout / "bin" / "agent"
    program.parent.mkdir()
    program.write_text(f"#!/bin/sh\ncat {checkout / '.env'} && exit 3\nls {checkout / 'bin'}\n")
    program.chmod(0o755)
    result = run_process([str(program)], cwd=shown.tree, env={"PATH": "/usr/bin:/bin"}, stdin_text="",
                         log_path=tmp_path / "log", timeout_s=5, idle_timeout_s=5,
                         confine=Confinement(BWRAP, shown, new_marker()))
    log = result.log_path.read_text()
    assert result.ok and "in-the-checkout" not in log and log.rstrip().endswith("agent"), log


def test_bwrap_argv_binds_readonly_paths_only_inside_hidden_directories(tmp_path: Path) -> None:
    objects = tmp_path / "checkout" / ".git" / "objects"
    objects.mkdir(parents=True)
    argv = sandbox.bwrap_argv("bwrap", layout(tmp_path, readonly=(Path(os.devnull), objects)), ["w"])
    bound = [argv[i + 1] for i, arg in enumerate(argv) if arg == "--ro-bind"]
    assert bound == ["/", str(objects)]


@needs_bwrap
def test_a_test_whose_prompt_file_is_dev_null_can_still_open_dev_null(tmp_path: Path) -> None:
    assert BWRAP is not None
    shown = sandbox.Layout(*_parts(layout(tmp_path)), readonly=(Path(os.devnull),))
    result = run_process([sys.executable, "-c", "open('/dev/null', 'w').write('x')"],
                         cwd=shown.tree, env={"PATH": "/usr/bin"}, stdin_text="", log_path=tmp_path / "log",
                         timeout_s=10, idle_timeout_s=10, confine=Confinement(BWRAP, shown, new_marker()))
    assert result.ok, result.log_path.read_text()


def _parts(shown: sandbox.Layout) -> tuple[Path, Path, tuple[Path, ...]]:
    return shown.tree, shown.private, shown.hidden


def _hidden_toolchain(tmp_path: Path) -> Path:
    """A python inside the hidden checkout, as pyenv or uv put one under the hidden HOME."""
    real = tmp_path / "checkout" / "pythons" / "3.11" / "bin" / "python3"
    real.parent.mkdir(parents=True)
    real.write_text("#!/bin/sh\nexit 0\n")
    real.chmod(0o755)
    return real


def test_a_symlink_into_a_hidden_toolchain_shows_that_toolchains_prefix(tmp_path: Path) -> None:
    shown = layout(tmp_path)
    real = _hidden_toolchain(tmp_path)
    venv_python = tmp_path / "venv" / "bin" / "python"
    venv_python.parent.mkdir(parents=True)
    venv_python.symlink_to(real)
    assert sandbox.with_toolchain(shown, venv_python, None).readonly == (real.parent.parent,)


def test_a_scripts_hidden_interpreter_shows_its_prefix_also_through_env(tmp_path: Path) -> None:
    shown = layout(tmp_path)
    real = _hidden_toolchain(tmp_path)
    script = tmp_path / "venv" / "bin" / "pytest"
    script.parent.mkdir(parents=True)
    for first_line in (f"#!{real} -u", "#!/usr/bin/env -S python3 -u"):
        script.write_text(f"{first_line}\nimport pytest\n")
        found = sandbox.with_toolchain(shown, script, f"{real.parent}:/usr/bin")
        assert found.readonly == (real.parent.parent,)
    script.write_text("#!/bin/sh\nexit 0\n")
    assert sandbox.with_toolchain(shown, script, f"{real.parent}:/usr/bin") == shown


def _executable(path: Path, text: str | None = None, *, link: Path | str | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if link is not None:
        path.symlink_to(link)
    else:
        path.write_text(text or "")
        path.chmod(0o755)
    return path


@needs_bwrap
@pytest.mark.parametrize("manager", ["nvm", "uv"])
def test_an_agent_cli_installed_under_the_hidden_home_starts_and_homes_secrets_stay_hidden(
        tmp_path: Path, manager: str) -> None:
    # nvm: ~/.nvm/versions/node/V/bin/agent -> ../lib/node_modules/agent/cli.js, `#!/usr/bin/env node`.
    # uv: ~/.local/bin/agent -> ~/.local/share/uv/tools/agent/bin/agent, whose `#!` python links into
    # ~/.local/share/uv/python/cpython-V. (Their interpreters here are /bin/sh under another name.)
    assert BWRAP is not None
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY of the user\n")
    keyring = home / ".local" / "share" / "keyrings" / "login.keyring"
    keyring.parent.mkdir(parents=True)
    keyring.write_text("KEYRING of the user\n")
    body = (f"cat {home / '.ssh' / 'id_ed25519'} {keyring}\necho listing\n"
            f"ls -A {home} {home / '.local' / 'share'}\necho started\n")
    if manager == "nvm":
        prefix = home / ".nvm" / "versions" / "node" / "v20.0.0"
        _executable(prefix / "bin" / "node", link="/bin/sh")
        _executable(prefix / "lib" / "node_modules" / "agent" / "cli.js", "#!/usr/bin/env node\n" + body)
        program = _executable(prefix / "bin" / "agent", link="../lib/node_modules/agent/cli.js")
        path = f"{prefix / 'bin'}:/usr/bin:/bin"
    else:
        share = home / ".local" / "share" / "uv"
        python = _executable(share / "python" / "cpython-3.12" / "bin" / "python3.12", link="/bin/sh")
        tool = share / "tools" / "agent" / "bin"
        _executable(tool / "python", link=python)
        _executable(tool / "agent", f"#!{tool / 'python'}\n" + body)
        program = _executable(home / ".local" / "bin" / "agent", link=tool / "agent")
        path = f"{program.parent}:/usr/bin:/bin"
    shown = sandbox.Layout(*_parts(layout(tmp_path)))
    shown = sandbox.Layout(shown.tree, shown.private, (*shown.hidden, home))
    result = run_process(["agent"], cwd=shown.tree, env={"PATH": path}, stdin_text="",
                         log_path=tmp_path / "log", timeout_s=5, idle_timeout_s=5,
                         confine=Confinement(BWRAP, shown, new_marker()))
    log = result.log_path.read_text()
    assert result.ok and log.rstrip().endswith("started"), log
    assert "PRIVATE KEY" not in log and "KEYRING" not in log, log
    listed = log.split("listing")[1].split("started")[0]
    assert ".ssh" not in listed and "keyrings" not in listed, log


@needs_bwrap
def test_a_bwrap_without_the_newer_namespaces_runs_without_them_and_says_so(tmp_path: Path) -> None:
    old = tmp_path / "bwrap"
    # bubblewrap before 0.8 knows no --disable-userns.
    old.write_text(f"""#!/bin/sh
for arg in "$@"; do
  [ "$arg" = --disable-userns ] && {{ echo "bwrap: Unknown option --disable-userns" >&2; exit 1; }}
done
exec {BWRAP} "$@"
""")
    old.chmod(0o755)
    decision = sandbox.decide(SandboxConfig(), {"PATH": str(tmp_path)})
    assert decision.bwrap == str(old) and not decision.hardened
    assert decision.warning is not None and "bubblewrap 0.8" in decision.warning
    layout = sandbox.Layout(tree=tmp_path, private=tmp_path, hidden=(), tmp_bytes=1024, hardened=False)
    argv = sandbox.bwrap_argv(str(old), layout, ["true"])
    assert "--disable-userns" not in argv and "--size" not in argv
    assert sandbox.decide(SandboxConfig(), {"PATH": str(Path(str(BWRAP)).parent)}).hardened


@pytest.mark.parametrize("options", ["-S -u", "-S -iu", "-S --un", "-S -C"])
def test_an_env_line_whose_option_takes_a_homes_program_as_its_argument_shows_nothing_of_its_folder(
        tmp_path: Path, options: str) -> None:
    # `#!/usr/bin/env -S -u HOME/.aws/helper sh steal.sh`: -u takes a name, env runs `sh steal.sh`; the
    # name was read as env's program and the folder of that helper shown (~/.aws/credentials beside it).
    home, tree = tmp_path / "home", tmp_path / "tree"
    (home / ".aws").mkdir(parents=True)
    helper = home / ".aws" / "helper"
    helper.write_text("#!/bin/sh\n")
    helper.chmod(0o755)
    tree.mkdir()
    run = tree / "run"
    run.write_text(f"#!/usr/bin/env {options} {helper} sh steal.sh\n")
    run.chmod(0o755)
    layout = sandbox.Layout(tree=tree, private=tmp_path / "private", hidden=(home,))
    shown = sandbox.with_toolchain(layout, run, "/usr/bin:/bin")
    assert not any(path.is_relative_to(home / ".aws") for path in shown.readonly), shown.readonly


def test_an_untracked_virtualenv_of_the_checkout_named_by_its_absolute_path_shows_its_install_folders(
        tmp_path: Path) -> None:
    # A program of the checkout shows only itself (its folder holds untracked files), but the README's
    # "give an untracked virtualenv's absolute path" needs the virtualenv's pyvenv.cfg and lib beside bin.
    checkout, tree = tmp_path / "checkout", tmp_path / "tree"
    venv = checkout / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "lib").mkdir()
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "bin" / "python").symlink_to(Path(sys.executable).resolve())
    (checkout / ".env").write_text("SECRET=1\n")
    tree.mkdir()
    layout = sandbox.Layout(tree=tree, private=tmp_path / "private", hidden=(checkout,),
                            programs_only=(checkout,))
    shown = sandbox.with_toolchain(layout, venv / "bin" / "python", "/usr/bin:/bin")
    assert {venv / "bin", venv / "lib", venv / "pyvenv.cfg"} <= set(shown.readonly), shown.readonly
    assert not shown.shows(checkout / ".env")


def test_a_ro_paths_link_into_a_bin_beside_tokens_shows_only_the_install_folders_there(
        tmp_path: Path) -> None:
    # A link of sandbox.ro_paths' bin (nothing runs it) to HOME/.config/gh/bin/x showed all of
    # ~/.config/gh, its hosts.yml token included: such a link shows a prefix's install folders only.
    home, tree = tmp_path / "home", tmp_path / "tree"
    gh = home / ".config" / "gh"
    (gh / "bin").mkdir(parents=True)
    (gh / "hosts.yml").write_text("oauth_token: secret\n")
    (gh / "bin" / "x").write_text("#!/bin/sh\n")
    (gh / "bin" / "x").chmod(0o755)
    venv_bin = tmp_path / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "python").symlink_to(gh / "bin" / "x")
    tree.mkdir()
    layout = sandbox.Layout(tree=tree, private=tmp_path / "private", hidden=(home,))
    shown = sandbox.with_toolchain(layout, venv_bin / "python", "/usr/bin:/bin", bins_only=True)
    assert shown.shows(gh / "bin" / "x") and not shown.shows(gh / "hosts.yml"), shown.readonly


@needs_bwrap
@pytest.mark.skipif(not os.access("/dev/shm", os.W_OK), reason="no writable /dev/shm here")
def test_a_checkout_under_dev_shm_is_hidden_and_the_sized_sandbox_still_starts(tmp_path: Path) -> None:
    # The sandbox's own sized /dev/shm once covered the empty directory hiding such a checkout, and bwrap
    # failed to make it read-only: every worker "exited 1" before it ran.
    assert BWRAP is not None
    checkout = Path(tempfile.mkdtemp(prefix="wavegit-test-", dir="/dev/shm"))
    try:
        (checkout / "secret.txt").write_text("x")
        tree, private = tmp_path / "tree", tmp_path / "private"
        tree.mkdir()
        sandbox.private_dirs(private)
        shown = sandbox.Layout(tree=tree, private=private, hidden=(checkout,), tmp_bytes=1 << 20)
        script = f"import os; print(os.listdir({str(checkout)!r})); open('/dev/shm/x', 'w').write('ok')"
        result = run_process([sys.executable, "-c", script], cwd=tree, env={"PATH": "/usr/bin"},
                             stdin_text="", log_path=tmp_path / "log", timeout_s=10, idle_timeout_s=10,
                             confine=Confinement(BWRAP, shown, new_marker()))
        assert result.ok, result.log_path.read_text()
        assert "[]" in result.log_path.read_text()
        assert not (checkout / "x").exists() and not Path("/dev/shm/x").exists()
    finally:
        shutil.rmtree(checkout)


@needs_bwrap
@pytest.mark.parametrize("env_words", [["PYTHONPATH=src"], ["-i", "A=1"], ["-S", "PYTHONPATH=src"]])
def test_a_command_started_through_env_shows_the_hidden_toolchain_of_the_program_env_runs(
        tmp_path: Path, env_words: list[str]) -> None:
    # `test: env PYTHONPATH=src /abs/venv/bin/python -m pytest` (commands never go through a shell, so env
    # sets a variable): the venv's python links into pyenv under the hidden HOME. wavegit followed `env`
    # only, so the test exited 127 ("env: '/abs/venv/bin/python': No such file or directory") and every
    # attempt of every item counted as failed.
    assert BWRAP is not None
    shown = layout(tmp_path)
    real = _hidden_toolchain(tmp_path)
    real.write_text("#!/bin/sh\necho started\n")
    venv_python = _executable(tmp_path / "venv" / "bin" / "python", link=real)
    words = [*env_words[:-1], f"{env_words[-1]} {venv_python}"] if env_words[0] == "-S" else \
        [*env_words, str(venv_python)]
    result = run_process(["env", *words], cwd=shown.tree, env={"PATH": "/usr/bin:/bin"}, stdin_text="",
                         log_path=tmp_path / "log", timeout_s=5, idle_timeout_s=5,
                         confine=Confinement(BWRAP, shown, new_marker()))
    log = result.log_path.read_text()
    assert result.ok and log.rstrip().endswith("started"), log


def test_an_env_option_that_takes_a_word_shows_nothing_of_the_hidden_program_it_names(tmp_path: Path) -> None:
    # `env -u HOME/.aws/helper sh steal.sh` runs sh: the name -u takes is no program to show.
    shown = layout(tmp_path)
    real = _hidden_toolchain(tmp_path)
    found = sandbox.with_command(shown, Path("/usr/bin/env"), ["-u", str(real), "sh", "x.sh"], "/usr/bin",
                                 shown.tree)
    assert not any(path.is_relative_to(real.parent.parent) for path in found.readonly), found.readonly


@pytest.mark.parametrize(("path", "folder"), [
    ("/a/b", "/a"), ("/a/b", "/a/b"), ("/ab", "/a"), ("/a", "/a/b"), ("/a/b", "/"), ("/a/b", ""), ("a/b", ""),
    ("a/b", "a"), ("/a/b", "a"), ("a/b", "/a"), ("/a/./b", "/a/b"), ("/a/../b", "/b")])
def test_a_path_is_within_a_folder_exactly_when_pathlib_says_it_is_relative(path: str, folder: str) -> None:
    # The sandbox's own check (a hundred a launch) must decide as pathlib does: what shows and what hides.
    assert sandbox._within(Path(path), Path(folder)) is Path(path).is_relative_to(Path(folder))
