"""Hostile workers against the sandbox, the allowlisted environment, the token's custody, the governing
config and the attempt's lifetime (issue 10, items 2-5): each attack a real ``wavegit run`` on a temporary
repository with a bare origin, the worker a real script from ``tests/hostile_workers``.

Every attack runs twice: under ``bwrap`` (skipped, with the reason, where bwrap cannot run) the promise holds
outright; under ``sandbox: none`` the test asserts exactly the residual risks docs/security.md lists.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.helpers.repos import REPO_ROOT, RemoteRepo, git, state_files, wavegit
from tests.helpers.wave import check, item, make_wave_repo
from wavegit.attempts import limits, logcap, sandbox

# A whole-flow suite (real waves, the test GitHub server): `.ci/run` runs it after the README's command.
pytestmark = pytest.mark.slow

HOSTILE = Path(__file__).resolve().parent / "hostile_workers"
WORKER = shlex.join([sys.executable, str(HOSTILE / "env_act.py")])
# Each test process its own values: an unsandboxed worker reads every process's environment on the machine,
# and a parallel test's `wavegit run` holds the same names (CI found this file's own token in one, once).
_OURS = f"{os.getpid():08d}"
SECRETS = {"GITHUB_TOKEN": f"ghp_hostileEnvToken{_OURS}000000000000",
           "WAVEGIT_APP_PRIVATE_KEY": f"-----BEGIN PRIVATE KEY-----\nhostile{_OURS}\n-----END PRIVATE KEY"
                                      "-----",
           "MY_API_KEY": f"my-api-key-hostile-{_OURS}",
           "AWS_SECRET_ACCESS_KEY": f"aws-secret-hostile-{_OURS}"}


def digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def _bwrap_problem() -> str | None:
    found = shutil.which(sandbox.BWRAP)
    return sandbox.probe(found) if found else "bwrap is not installed"


BWRAP_PROBLEM = _bwrap_problem()
MODES = [pytest.param("bwrap", marks=pytest.mark.skipif(BWRAP_PROBLEM is not None,
                                                        reason=f"bwrap cannot run: {BWRAP_PROBLEM}")),
         "none"]


def hostile_repo(tmp_path: Path, mode: str, *items: tuple[str, str, list[str]]) -> RemoteRepo:
    """A wave repo whose items are (id, attack prompt, extra prompt lines); item X owns src/x.txt."""
    entries = [item(item_id, [attack, *extra], [f"src/{item_id.lower()}.txt"],
                    check(f"src/{item_id.lower()}.txt"), priority=f"P{n}")
               for n, (item_id, attack, extra) in enumerate(items)]
    return make_wave_repo(tmp_path, entries, worker=WORKER, sandbox=mode, attempts=1, max_items=1,
                          concurrency=1)


def run_json(remote: RemoteRepo, env: dict[str, str] | None = None) -> tuple[dict[str, object], str]:
    result = wavegit(remote.clone, "run", "--json", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout), result.stdout + result.stderr


def committed(remote: RemoteRepo, rep: dict[str, object], path: str) -> str:
    return git(remote.origin, "show", f"wavegit/{rep['wave_id']}:{path}")


def everything_written(remote: RemoteRepo, output: str) -> str:
    """Every commit (with its diff) of origin and clone, every file in wavegit's state, the CLI output."""
    history = [git(repo, "log", "--all", "-p", "--format=%H%n%B") for repo in (remote.origin, remote.clone)]
    files = [p.read_text(errors="replace") for p in state_files(remote.clone)]
    return "\n".join([*history, *files, output])


def _cgroups_work() -> bool:
    """Whether wavegit can give a process a pids cgroup of its own here (then nothing the process starts
    outlives it, a daemon in a clean environment included)."""
    probe = limits.Cgroup.make(f"wavegit-probe-{os.getpid()}", limits.Limits(pids=1))
    if probe is None:
        return False
    probe.remove()
    return True


@pytest.mark.parametrize("mode", MODES)
def test_secrets_reach_no_worker_commit_log_or_report_and_github_env_is_out_of_reach(
        tmp_path: Path, mode: str) -> None:
    remote = hostile_repo(tmp_path, mode, ("A", "snoop", []))
    github_env = tmp_path / "github_env"
    github_env.write_text("")
    rep, output = run_json(remote, {**SECRETS, "GITHUB_ENV": str(github_env)})
    assert rep["sandbox"] == mode
    loot = committed(remote, rep, "src/a.txt").splitlines()[1:]
    ours = [line for line in loot if line.rpartition("=")[2] in {digest(v) for v in SECRETS.values()}]
    written = everything_written(remote, output)
    for held in ("GITHUB_TOKEN", "WAVEGIT_APP_PRIVATE_KEY"):  # what wavegit holds in memory only
        assert SECRETS[held] not in written, f"{held} leaked"
        assert not any(digest(SECRETS[held]) in line for line in loot), f"the worker found {held}"
    assert github_env.read_text() == "" and "wrote GITHUB_ENV" not in loot
    if mode == "bwrap":
        assert ours == [] and not any(value in written for value in SECRETS.values())
    else:
        # Residual risk of `sandbox: none`: wavegit's own environment, minus the token, is readable.
        expected = {f"{where} {n}={digest(SECRETS[n])}" for n in ("MY_API_KEY", "AWS_SECRET_ACCESS_KEY")
                    for where in ("ppid", "proc")}
        assert set(ours) == expected


@pytest.mark.parametrize("mode", MODES)
def test_writes_into_the_checkout_and_git_dir_and_an_edited_config_change_no_wave(
        tmp_path: Path, mode: str) -> None:
    named = [f"checkout: {tmp_path / 'work'}"]
    remote = hostile_repo(tmp_path, mode, ("A", "escape", named), ("B", "snoop", []))
    config = remote.clone / ".wavegit" / "config.yaml"
    config_before = config.read_text()
    planted = [remote.clone / "PWNED.txt", remote.clone / ".git" / "PWNED.txt",
               remote.clone / ".git" / "hooks" / "pre-push"]
    rep, _ = run_json(remote)
    assert rep["config_source"] == "origin/main:.wavegit/config.yaml"
    assert [i["verified"] for i in rep["items"]] == [True]  # type: ignore[index]
    if mode == "bwrap":
        assert [p for p in planted if p.exists()] == [] and config.read_text() == config_before
    else:
        # Residual risk of `sandbox: none`: the worker writes wherever its user may.
        assert all(p.exists() for p in planted) and config.read_text() != config_before
        planted[2].unlink()
    # The next wave obeys the committed config, not the edited working copy (and says so).
    rep, _ = run_json(remote, SECRETS)
    ignored = " (the checkout's differing working copy was ignored)" if mode == "none" else ""
    assert (rep["config_source"], rep["sandbox"]) == ("origin/main:.wavegit/config.yaml" + ignored, mode)
    loot = committed(remote, rep, "src/b.txt").splitlines()[1:]
    assert not any(line.startswith("env ") for line in loot), loot


def tagged(tag: str) -> list[int]:
    """Processes whose command line mentions ``tag``."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if tag.encode() in cmdline:
                pids.append(int(entry))
    return pids


def wait_until(condition: object, what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.mark.parametrize("mode", MODES)
def test_a_setsid_daemon_dies_when_its_attempt_ends(tmp_path: Path, mode: str) -> None:
    tag = f"hostile-daemon-{os.getpid()}-{mode}"
    remote = hostile_repo(tmp_path, mode, ("A", "daemon", [tag]))
    rep, _ = run_json(remote)
    assert [i["verified"] for i in rep["items"]] == [True]  # type: ignore[index]
    assert tagged(tag) == []


@pytest.mark.parametrize("mode", MODES)
def test_kill_9_of_the_scheduler_leaves_no_worker_running(tmp_path: Path, mode: str) -> None:
    tag = f"hostile-kill-{os.getpid()}-{mode}"
    remote = hostile_repo(tmp_path, mode, ("A", "daemon", [tag, "hold"]))
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "wavegit", "run"], cwd=remote.clone, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: len(tagged(tag)) == 2, "the worker's child and daemon")
        workers = [pid for pid in tagged(str(HOSTILE / "env_act.py")) if pid != proc.pid]
        assert workers
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        wait_until(lambda: not any(Path(f"/proc/{pid}").exists() for pid in workers), "the worker to die")
        if mode == "bwrap":
            wait_until(lambda: tagged(tag) == [], "the worker's child and daemon to die")
        else:
            # Residual risk of `sandbox: none`: what the worker started outlives a `kill -9` of wavegit.
            time.sleep(0.5)
            assert len(tagged(tag)) == 2
    finally:
        for pid in tagged(tag):
            os.kill(pid, signal.SIGKILL)


def test_worker_github_token_true_hands_the_token_over_though_wavegit_holds_it_in_memory(
        tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["snoop"], ["src/a.txt"], check("src/a.txt"))],
                            worker=WORKER, sandbox="none", attempts=1, worker_github_token=True)
    rep, _ = run_json(remote, SECRETS)
    loot = committed(remote, rep, "src/a.txt").splitlines()[1:]
    assert f"env GITHUB_TOKEN={digest(SECRETS['GITHUB_TOKEN'])}" in loot
    assert not any(line.startswith("env MY_API_KEY") for line in loot)


SCRIPTED = shlex.join([sys.executable, str(HOSTILE / "hostile.py")])


def scripted_repo(tmp_path: Path, mode: str, *items: tuple[str, list[str]]) -> RemoteRepo:
    """A wave repo running ``hostile.py``: item X does its actions, then writes src/x.txt."""
    owned = {item_id: f"src/{item_id.lower()}.txt" for item_id, _ in items}
    entries = [item(item_id, [*actions, f"write {path} ok"], [path], check(path))
               for item_id, actions in items for path in [owned[item_id]]]
    return make_wave_repo(tmp_path, entries, worker=SCRIPTED, sandbox=mode, attempts=1, concurrency=2)


@pytest.mark.parametrize("mode", MODES)
def test_a_cost_file_that_is_a_fifo_a_device_or_huge_reads_as_no_cost_without_blocking(
        tmp_path: Path, mode: str) -> None:
    # Each once hung wavegit past every timeout (a FIFO no one writes, /dev/zero) or read gigabytes.
    remote = scripted_repo(tmp_path, mode, ("FIFO", ["cost-fifo"]), ("ZERO", ["cost-link /dev/zero"]),
                           ("HUGE", ["cost-sparse 8000000000"]))
    result = wavegit(remote.clone, "run", "--json", timeout=60)
    rep = json.loads(result.stdout)
    assert result.returncode == 0, result.stdout + result.stderr
    assert sorted((i["id"], i["verified"], i["cost"]) for i in rep["items"]) == [  # type: ignore[index]
        ("FIFO", True, None), ("HUGE", True, None), ("ZERO", True, None)]


@pytest.mark.parametrize("mode", MODES)
def test_a_worker_flooding_its_log_without_newlines_gets_a_bounded_tail(tmp_path: Path, mode: str) -> None:
    # The tail for the report and the retry's feedback read the log back to its start, quadratically.
    remote = scripted_repo(tmp_path, mode, ("A", ["flood 67108864", "exit 1"]))
    result = wavegit(remote.clone, "run", "--json", timeout=60)
    rep = json.loads(result.stdout)
    (found,) = rep["items"]
    assert (found["verified"], found["error"]) == (False, "worker exited 1: " + "x" * 197 + "...")
    assert found["log_tail"] == "x" * logcap.LOG_TAIL_MAX_BYTES


@pytest.mark.parametrize("mode", MODES)
def test_a_home_nested_past_the_recursion_limit_is_removed_without_a_crash(tmp_path: Path, mode: str) -> None:
    remote = scripted_repo(tmp_path, mode, ("A", ["deep-home 3000"]))
    rep, _ = run_json(remote)
    assert [i["verified"] for i in rep["items"]] == [True]  # type: ignore[index]
    assert not (remote.clone / ".git" / "wavegit" / "sandbox" / str(rep["wave_id"])).exists()


@pytest.mark.skipif(BWRAP_PROBLEM is not None, reason=f"bwrap cannot run: {BWRAP_PROBLEM}")
def test_a_worker_run_by_root_cannot_unmount_what_hides_the_checkout(tmp_path: Path) -> None:
    # bwrap started by root leaves the sandbox every capability unless told: CAP_SYS_ADMIN unmounted the
    # empty directory over the checkout and its .git, and a hook was planted in the scheduler's repository.
    remote = scripted_repo(tmp_path, "bwrap", ("A", ["unmount PWNED"]))
    rep, _ = run_json(remote)
    assert [i["verified"] for i in rep["items"]] == [True]  # type: ignore[index]
    git_dir = remote.clone / ".git"
    planted = [remote.clone / "PWNED", git_dir / "PWNED", git_dir / "hooks" / "pre-push"]
    assert [p for p in planted if p.exists()] == []


class Listener:
    """A unix socket server recording what every connection sends (an agent the user runs)."""

    def __init__(self, address: str) -> None:
        self.reached: list[bytes] = []
        self._server = socket.socket(socket.AF_UNIX)
        self._server.bind(address)
        self._server.listen(4)
        self._server.settimeout(0.2)
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._serve)

    def _serve(self) -> None:
        while not self._done.is_set():
            try:
                client, _ = self._server.accept()
            except OSError:
                continue
            with client:
                self.reached.append(client.recv(100))

    def __enter__(self) -> Listener:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._done.set()
        self._thread.join()
        self._server.close()


@pytest.mark.parametrize("mode", MODES)
def test_the_users_ssh_agent_socket_is_out_of_reach(tmp_path: Path, mode: str) -> None:
    # A read-only mount does not stop connect(): the sandbox showed the user's ssh-agent (and every other
    # agent socket) to the worker, which could then sign in as the user anywhere.
    agent = tmp_path / "agent" / "ssh.sock"
    agent.parent.mkdir()
    with Listener(str(agent)) as listener:
        remote = scripted_repo(tmp_path, mode, ("A", [f"connect {agent}"]))
        rep, _ = run_json(remote, {"SSH_AUTH_SOCK": str(agent)})
    assert [i["verified"] for i in rep["items"]] == [True]  # type: ignore[index]
    # Residual risk of `sandbox: none`: the worker is the user.
    assert listener.reached == ([] if mode == "bwrap" else [b"reached from the sandbox"])


@pytest.mark.skipif(BWRAP_PROBLEM is not None, reason=f"bwrap cannot run: {BWRAP_PROBLEM}")
@pytest.mark.xfail(strict=True, reason="the sandbox shares the network namespace (agents call their APIs), "
                   "so abstract unix sockets stay reachable unless sandbox.network: false")
def test_an_abstract_unix_socket_is_out_of_reach(tmp_path: Path) -> None:
    name = f"wavegit-hostile-{os.getpid()}-{tmp_path.name}"
    with Listener("\0" + name) as listener:
        remote = scripted_repo(tmp_path, "bwrap", ("A", [f"connect @{name}"]))
        rep, _ = run_json(remote)
    assert [i["verified"] for i in rep["items"]] == [True]  # type: ignore[index]
    assert listener.reached == []


@pytest.mark.parametrize("mode", MODES)
def test_a_forged_cost_is_refused_and_an_overflowing_one_cannot_crash_the_report(
        tmp_path: Path, mode: str) -> None:
    # Two attempts reporting 1e308 each summed to inf, which the report's JSON cannot hold: a traceback
    # and no report. Negative and NaN costs (to dodge the budget) were refused already.
    remote = scripted_repo(tmp_path, mode, ("BIG", ["cost 1e308"]), ("HUGE", ["cost 1e308"]),
                           ("NEG", ["cost -5"]), ("NAN", ["cost nan"]), ("OK", ["cost 0.25"]))
    rep, _ = run_json(remote)
    costs = {i["id"]: (i["verified"], i["cost"]) for i in rep["items"]}  # type: ignore[index]
    assert costs == {"BIG": (True, None), "HUGE": (True, None), "NEG": (True, None), "NAN": (True, None),
                     "OK": (True, 0.25)}
    assert rep["budget"]["wave_spent_usd"] == 0.25  # type: ignore[index]


@pytest.mark.xfail(strict=True, reason="sandbox: none lets a worker rewrite the scheduler's .git/config: "
                   "the next wave fetches its governing config from a remote the worker chose")
def test_an_unsandboxed_worker_cannot_choose_the_config_of_the_next_wave(tmp_path: Path) -> None:
    loot = tmp_path / "loot"
    remote = scripted_repo(tmp_path, "none", ("A", [f"retarget-origin {tmp_path / 'evil.git'}"]))
    evil = tmp_path / "evil-work"
    git(tmp_path, "clone", "-q", str(remote.origin), str(evil))
    config = evil / ".wavegit" / "config.yaml"
    config.write_text(config.read_text() + "worker_github_token: true\n")
    tracker = evil / ".wavegit" / "tracker.yaml"
    tracker.write_text(tracker.read_text().replace("write src/a.txt ok", f"leak-token {loot}"))
    git(evil, "commit", "-qam", "the attacker's config")
    git(tmp_path, "clone", "-q", "--bare", str(evil), str(tmp_path / "evil.git"))
    wavegit(remote.clone, "run", "--json")  # pushes to the worker's remote already
    wavegit(remote.clone, "run", "--json", env=SECRETS)
    assert not loot.exists() or SECRETS["GITHUB_TOKEN"] not in loot.read_text()


@pytest.mark.parametrize("mode", MODES)
def test_a_daemon_in_a_clean_environment_forges_the_test_only_without_the_sandbox(
        tmp_path: Path, mode: str) -> None:
    tag = f"hostile-forge-{os.getpid()}-{mode}"
    # The test reads its file after a pause, so whether the daemon got there first is not a race.
    slow_check = shlex.join(["sh", "-c", f"sleep 0.5 && {check('src/a.txt')}"])
    forger = shlex.join([sys.executable, str(HOSTILE / "forge_checkout.py")])
    remote = make_wave_repo(tmp_path, [item("A", [tag], ["src/a.txt"], slow_check)], sandbox=mode,
                            worker=forger, attempts=1)
    try:
        result = wavegit(remote.clone, "run", "--json")
        rep = json.loads(result.stdout)
        [entry] = rep["items"]
        if mode == "bwrap":
            # The daemon dies with the worker's PID namespace and never saw the checkout: the test fails.
            assert result.returncode == 1 and not entry["verified"] and entry["test_exit"] == 1, rep
            assert tagged(tag) == []
        elif _cgroups_work():
            # Unsandboxed, the attempt's own cgroup holds the daemon too: it dies with the attempt.
            assert result.returncode == 1 and not entry["verified"] and entry["test_exit"] == 1, rep
            assert tagged(tag) == []
        else:
            # docs/security.md: unsandboxed without a writable cgroup, a process that re-executes with a
            # cleaned environment outlives its attempt, and it can change the checkout the test judges: `bad`
            # is verified and committed.
            assert result.returncode == 0 and entry["verified"], rep
            assert committed(remote, rep, "src/a.txt") == "bad"
    finally:
        for pid in tagged(tag):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("mode", MODES)
def test_a_worker_writing_into_wavegits_stdout_cannot_spoil_the_json_report_in_the_sandbox(
        tmp_path: Path, mode: str) -> None:
    remote = hostile_repo(tmp_path, mode, ("A", "hijack", []))
    result = wavegit(remote.clone, "run", "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    if mode == "bwrap":
        # Its own PID namespace: no process above it is wavegit's; stdout is the report and nothing else.
        rep = json.loads(result.stdout)
        assert [i["verified"] for i in rep["items"]] == [True]  # type: ignore[index]
        assert "HIJACKED" not in result.stdout + result.stderr
    else:
        # Residual risk of `sandbox: none`: it writes into wavegit's stdout like any file its user may.
        assert "HIJACKED" in result.stdout


@pytest.mark.parametrize("mode", MODES)
def test_a_report_ref_forged_with_bytes_that_are_not_utf8_is_a_clear_error_in_another_clone(
        tmp_path: Path, mode: str) -> None:
    # Unsandboxed, a worker pushes with its user's rights (docs/security.md): a wave's report ref whose
    # report.json is not UTF-8 made `wavegit report W` in another clone die with a traceback and leave an
    # empty copy behind, read as the report from then on. In the sandbox the origin is read-only.
    wave = "w-20260101-120000-ab12"
    entry = item("A", [f"forge-report {tmp_path / 'origin.git'} {wave}", "write src/a.txt ok"], ["src/a.txt"],
                 check("src/a.txt"))
    worker = shlex.join([sys.executable, str(HOSTILE / "hostile.py")])
    remote = make_wave_repo(tmp_path, [entry], worker=worker, sandbox=mode, attempts=1)
    assert remote.origin == tmp_path / "origin.git"
    run_json(remote)
    forged = git(remote.origin, "for-each-ref", "--format=%(refname)", f"refs/wavegit/reports/{wave}")
    assert bool(forged) == (mode == "none"), forged
    other = tmp_path / "other"
    git(tmp_path, "clone", "--quiet", str(remote.origin), str(other))
    for _ in range(2):
        shown = wavegit(other, "report", wave)
        assert shown.returncode == 2 and "Traceback" not in shown.stderr, shown.stderr
        said = "cannot read the report" if mode == "none" else "no report for wave"
        assert said in shown.stderr, shown.stderr


def stealing_repo(tmp_path: Path, source: Path) -> RemoteRepo:
    """A bwrap wave whose one worker writes what ``source`` shows it into src/loot.txt (``hidden``: none)."""
    steal = [f"steal {source} src/loot.txt", "write src/a.txt ok"]
    entries = [item("A", steal, ["src/a.txt", "src/loot.txt"], check("src/a.txt"))]
    return make_wave_repo(tmp_path, entries, worker=SCRIPTED, sandbox="bwrap", attempts=1)


@pytest.mark.skipif(BWRAP_PROBLEM is not None, reason=f"bwrap cannot run: {BWRAP_PROBLEM}")
def test_a_token_folder_linked_out_of_home_is_hidden_where_it_really_lies(tmp_path: Path) -> None:
    # A dotfiles manager links ~/.config/wavegit elsewhere: bwrap made the token folder's tmpfs at the name
    # in HOME's own empty tmpfs (a new directory there), and the token stayed readable where it really lies.
    home, dotfiles = tmp_path / "home", tmp_path / "dotfiles" / "wavegit"
    dotfiles.mkdir(parents=True)
    (home / ".config").mkdir(parents=True)
    (home / ".config" / "wavegit").symlink_to(dotfiles)
    (dotfiles / "token").write_text(f"ghp_linkedTokenFile{_OURS}\n")
    remote = stealing_repo(tmp_path, dotfiles / "token")
    rep, _ = run_json(remote, {"HOME": str(home), "XDG_CACHE_HOME": "",
                               "WAVEGIT_TOKEN_FILE": str(home / ".config" / "wavegit" / "token")})
    assert committed(remote, rep, "src/loot.txt") == "hidden"


@pytest.mark.skipif(BWRAP_PROBLEM is not None, reason=f"bwrap cannot run: {BWRAP_PROBLEM}")
def test_attempt_trees_in_a_cache_linked_out_of_home_are_hidden_where_they_really_lie(tmp_path: Path) -> None:
    # ~/.cache on a bigger disk: the trees' folder (~/.cache/wavegit) got its tmpfs inside HOME's, and every
    # attempt's tree and private HOME of every repository stayed readable at the disk's path.
    home, disk = tmp_path / "home", tmp_path / "disk" / "cache"
    disk.mkdir(parents=True)
    home.mkdir()
    (home / ".cache").symlink_to(disk)
    remote = stealing_repo(tmp_path, disk / "wavegit")
    rep, _ = run_json(remote, {"HOME": str(home), "XDG_CACHE_HOME": ""})
    assert committed(remote, rep, "src/loot.txt") == "hidden"


@pytest.mark.skipif(BWRAP_PROBLEM is not None, reason=f"bwrap cannot run: {BWRAP_PROBLEM}")
def test_a_token_file_that_is_a_link_is_hidden_where_it_really_lies(tmp_path: Path) -> None:
    # WAVEGIT_TOKEN_FILE naming a link (a secrets manager's file linked into place): the link's folder was
    # hidden, the folder holding the token itself not.
    vault, links = tmp_path / "vault", tmp_path / "links"
    vault.mkdir()
    links.mkdir()
    (vault / "token").write_text(f"ghp_linkedToken{_OURS}\n")
    (links / "token").symlink_to(vault / "token")
    remote = stealing_repo(tmp_path, vault / "token")
    rep, _ = run_json(remote, {"WAVEGIT_TOKEN_FILE": str(links / "token")})
    assert committed(remote, rep, "src/loot.txt") == "hidden"
