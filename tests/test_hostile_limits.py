"""Hostile workers against the limits of their attempt (issue 21): the disk, processes, memory, System V IPC,
the kernel keyring and the loopback, each attack a real ``wavegit run`` on a temporary repository with a bare
origin, the worker ``tests/hostile_workers/env_limits.py``. What exhausts a resource is charged to the
attempt that did it, never to wavegit or a sibling.

A small disk is a tmpfs mounted over the clone's ``.git/wavegit`` in a mount namespace of the run's own
(``unshare -m``, as root); cgroup tests need a writable pids or memory cgroup. Both skip, with the reason,
where the machine has neither.
"""

from __future__ import annotations

import ctypes
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers.repos import REPO_ROOT, RemoteRepo, git, wavegit
from tests.helpers.wave import check, item, make_wave_repo, origin_item, write_and_push
from tests.test_hostile_env import BWRAP_PROBLEM, MODES

# A whole-flow suite (real waves, the test GitHub server): `.ci/run` runs it after the README's command.
pytestmark = pytest.mark.slow

HOSTILE = Path(__file__).resolve().parent / "hostile_workers"
WORKER = shlex.join([sys.executable, str(HOSTILE / "env_act.py")])
NET_CHECK = [sys.executable, str(HOSTILE / "netcheck.py")]
MiB = 1 << 20

needs_bwrap = pytest.mark.skipif(BWRAP_PROBLEM is not None, reason=f"bwrap cannot run: {BWRAP_PROBLEM}")
UNSHARE = shutil.which("unshare")
needs_mounts = pytest.mark.skipif(os.geteuid() != 0 or UNSHARE is None,
                                  reason="a small disk needs root and unshare (util-linux)")
PIDS_CGROUP = Path("/sys/fs/cgroup/pids")
needs_cgroup = pytest.mark.skipif(os.geteuid() != 0 or not os.access(PIDS_CGROUP, os.W_OK),
                                  reason=f"needs root and a writable v1 pids cgroup ({PIDS_CGROUP})")


def limits_repo(tmp_path: Path, mode: str, *items: tuple[str, list[str], str | None],
                **sandbox: Any) -> RemoteRepo:
    """A wave repo whose items are (id, actions, test or None: src/<id>.txt holds ``ok``), all running at
    once; item X owns src/x.txt."""
    entries = [item(item_id, ["limits", *actions], [f"src/{item_id.lower()}.txt"],
                    test or check(f"src/{item_id.lower()}.txt"), priority=f"P{n}")
               for n, (item_id, actions, test) in enumerate(items)]
    return make_wave_repo(tmp_path, entries, worker=WORKER, sandbox={"mode": mode, **sandbox}, attempts=1,
                          max_items=len(items), concurrency=len(items), timeout_s=60, idle_timeout_s=30)


def run_json(remote: RemoteRepo, env: dict[str, str] | None = None) -> tuple[int, dict[str, Any], str]:
    result = wavegit(remote.clone, "run", "--json", env=env)
    assert result.stdout.strip(), result.stderr
    return result.returncode, json.loads(result.stdout), result.stderr


def run_on_small_disk(remote: RemoteRepo, size: int, keep: Path,
                      stop: Path | None = None, *run: str) -> tuple[int, dict[str, Any], str]:
    """``wavegit run --json`` with the clone's state directory, and the attempt trees (``XDG_CACHE_HOME``
    inside it), on a tmpfs of ``size`` bytes; its logs and
    reports are copied to ``keep`` before the tmpfs goes. With ``stop``: that file is then made (a worker's
    daemon waits for it, then removes the ``held`` file it filled the disk with) and, once the disk has room,
    ``wavegit sync`` runs on the same tmpfs, its output in ``keep/sync``. ``run``: more options of ``run``
    (``--continuous``: the last wave's report is returned)."""
    state = remote.clone / ".git" / "wavegit"
    state.mkdir(exist_ok=True)
    then = ("" if stop is None else
            f'touch {shlex.quote(str(stop))}; i=0; while [ -e "$0/held" ] && [ $i -lt 50 ]; do sleep 0.1; '
            'i=$((i+1)); done; rm -f "$0/held"; "$@" sync >"$KEEP/sync" 2>&1; ')
    script = ('mount -t tmpfs -o "size=$1" wavegit-small-disk "$2" || exit 99; shift 3; "$@" run --json '
              f'{shlex.join(run)}; '
              f'code=$?; {then}cp -r "$0/logs" "$0/reports" "$KEEP" 2>/dev/null; exit $code')
    argv = [str(UNSHARE), "-m", "sh", "-c", script, str(state), str(size), str(state), "--",
            sys.executable, "-m", "wavegit"]
    env = {**os.environ, "KEEP": str(keep), "XDG_CACHE_HOME": str(state / "cache"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    keep.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(argv, cwd=remote.clone, capture_output=True, text=True, env=env, timeout=300,
                          check=False)
    assert done.returncode != 99, done.stderr
    assert done.stdout.strip(), done.stderr
    last = done.stdout.strip().splitlines()[-1] if run else done.stdout
    return done.returncode, json.loads(last), done.stderr


def by_id(rep: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["id"]: entry for entry in rep["items"]}


def committed(remote: RemoteRepo, rep: dict[str, Any], path: str) -> str:
    return git(remote.origin, "show", f"wavegit/{rep['wave_id']}:{path}")


@pytest.mark.parametrize("mode", MODES)
@needs_mounts
def test_a_400_mb_log_without_newlines_keeps_its_head_and_tail_and_fills_no_disk(
        tmp_path: Path, mode: str) -> None:
    remote = limits_repo(tmp_path, mode, ("A", [f"flood {400 * MiB}"], None), ("B", [], None))
    code, rep, err = run_on_small_disk(remote, 64 * MiB, tmp_path / "kept")
    found = by_id(rep)
    assert code == 0 and found["A"]["verified"] and found["B"]["verified"], (rep, err)
    log = next((tmp_path / "kept").rglob("A-1.log")).read_bytes()
    assert len(log) < 4 * MiB + 4096
    assert log.startswith(b"HEAD-MARK") and log.endswith(b"TAIL-MARK")
    assert f"bytes of output dropped here (sandbox.log_bytes {4 * MiB})".encode() in log


@needs_mounts
def test_a_disk_kept_full_through_the_record_is_a_clear_error_the_claims_settled_and_no_attempt_charged(
        tmp_path: Path) -> None:
    # Unsandboxed and without a cgroup (which would end it with its attempt), a daemon the sweep cannot
    # recognise keeps wavegit's state directory full from the first worker to the report: every log, tree,
    # event and report write there fails. (It knows where that is: the worst case.)
    stop, state = tmp_path / "stop", tmp_path / "work" / ".git" / "wavegit"
    remote = limits_repo(tmp_path, "none", ("A", [f"hold-full {state} {stop}"], None),
                         ("B", ["sleep 1"], None), pids=0, memory_bytes=0)
    code, rep, err = run_on_small_disk(remote, 16 * MiB, tmp_path / "kept", stop)
    assert code == 1 and "Traceback" not in err, err
    assert "the report could not be written" in rep["error"] and "No space left on device" in rep["error"]
    # The record needs nothing of the state folder: the wave settles its own claims.
    assert rep["tracker_updated"], rep
    assert "Traceback" not in (tmp_path / "kept" / "sync").read_text()
    for item_id in ("A", "B"):
        item = origin_item(remote, item_id)
        # What fills the disk is in no attempt's tree: neither is charged for it (under bwrap the daemon
        # dies with its attempt; unsandboxed, a residual risk in docs/security.md).
        assert (item.status, item.attempts) == ("todo", 0), item
        assert "not counted: the attempt trees' disk is full" in (item.last_error or ""), item


@needs_bwrap
@needs_mounts
def test_filling_its_tmpdir_is_enospc_inside_the_attempt_charged_to_it_and_the_sibling_is_verified(
        tmp_path: Path) -> None:
    remote = limits_repo(tmp_path, "bwrap", ("A", [f"fill TMPDIR {256 * MiB}"], None),
                         ("B", ["sleep 1"], None), tmp_bytes=8 * MiB)
    code, rep, err = run_on_small_disk(remote, 64 * MiB, tmp_path / "kept")
    found = by_id(rep)
    assert found["B"]["verified"] and not found["A"]["verified"], (rep, err)
    assert found["A"]["error"] == "worker exited 1: OSError: [Errno 28] No space left on device"
    assert b"No space left on device" in next((tmp_path / "kept").rglob("A-1.log")).read_bytes()
    # Counted: the item is not retried for free in every wave.
    assert origin_item(remote, "A").attempts == 1 and origin_item(remote, "A").status != "in_progress"
    assert code == 1


@pytest.fixture
def machine_pids(tmp_path: Path) -> Any:
    """A pids cgroup of 1500 processes standing for the machine's limit, for the wave run inside it."""
    own = Path("/proc/self/cgroup").read_text().split(":pids:")[1].split("\n")[0].lstrip("/")
    group = PIDS_CGROUP / own / f"wavegit-test-{tmp_path.name}-{os.getpid()}"
    group.mkdir()
    (group / "pids.max").write_text("1500")
    yield group
    for pid in (group / "cgroup.procs").read_text().split():
        os.kill(int(pid), 9)
    for _ in range(200):
        try:
            group.rmdir()
            break
        except OSError:
            time.sleep(0.01)


def run_json_in_cgroup(remote: RemoteRepo, group: Path) -> dict[str, Any]:
    """``wavegit run --json``'s report, wavegit started in the cgroup ``group``."""
    procs = os.open(group / "cgroup.procs", os.O_WRONLY)
    try:
        done = subprocess.run([sys.executable, "-m", "wavegit", "run", "--json"], cwd=remote.clone,
                              capture_output=True, text=True, timeout=300, check=False,
                              preexec_fn=lambda: os.write(procs, b"0") and None,
                              env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    finally:
        os.close(procs)
    report: dict[str, Any] = json.loads(done.stdout)
    return report


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
@needs_cgroup
def test_a_fork_bomb_exhausts_only_its_own_attempts_processes(tmp_path: Path, mode: str,
                                                              machine_pids: Path) -> None:
    remote = limits_repo(tmp_path, mode, ("A", ["forkbomb 5000 6"], None), ("B", ["sleep 2"], None))
    rep = run_json_in_cgroup(remote, machine_pids)
    found = by_id(rep)
    assert found["B"]["verified"], found["B"]["error"]
    forked = committed(remote, rep, "src/a.txt").splitlines()[1]
    # The bomb hit its own ceiling (sandbox.pids, 1024 by default), well below the machine's.
    assert forked.startswith("forked ") and 900 < int(forked.split()[1]) < 1024, forked


@pytest.mark.parametrize("mode", MODES)
@needs_cgroup
def test_a_memory_hog_is_stopped_at_its_attempts_ceiling_and_charged_to_it(tmp_path: Path,
                                                                           mode: str) -> None:
    remote = limits_repo(tmp_path, mode, ("A", [f"hog {512 * MiB}"], None), ("B", [], None),
                         memory_bytes=128 * MiB)
    _, rep, err = run_json(remote)
    found = by_id(rep)
    assert found["B"]["verified"] and not found["A"]["verified"], (rep, err)
    assert origin_item(remote, "A").attempts == 1


def _shm_remove(key: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    shmid = libc.shmget(key, 0, 0)
    if shmid >= 0:
        libc.shmctl(shmid, 0, None)  # IPC_RMID


@needs_bwrap
def test_system_v_shared_memory_dies_with_its_attempt_and_the_next_wave_cannot_read_it(
        tmp_path: Path) -> None:
    key = 0x5700000 + os.getpid() % 0x10000
    remote = limits_repo(tmp_path, "bwrap", ("A", [f"shm-leave {key}"], None))
    try:
        code, rep, err = run_json(remote)
        assert code == 0 and by_id(rep)["A"]["verified"], (rep, err)
        assert f"{key:>10}" not in Path("/proc/sysvipc/shm").read_text()
        git(remote.clone, "pull", "-q", "origin", "main")
        tracker = remote.clone / ".wavegit" / "tracker.yaml"
        tracker.write_text(tracker.read_text() + yaml.safe_dump(
            [item("B", ["limits", f"shm-read {key}"], ["src/b.txt"], check("src/b.txt"))], sort_keys=False))
        git(remote.clone, "commit", "-qam", "item B")
        git(remote.clone, "push", "-q", "origin", "HEAD:main")
        code, rep, err = run_json(remote)
        assert by_id(rep)["B"]["verified"], (rep, err)
        assert committed(remote, rep, "src/b.txt").splitlines()[1] == "shm: none"
    finally:
        _shm_remove(key)


@pytest.mark.parametrize("mode", MODES)
def test_a_secret_in_the_kernel_keyring_is_out_of_reach(tmp_path: Path, mode: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    add_key, keyctl = {"x86_64": (248, 250), "aarch64": (217, 219)}[os.uname().machine]
    description, secret = f"wavegit-test-{os.getpid()}-{tmp_path.name}", b"keyring-secret-0000"
    serial = libc.syscall(add_key, b"user", description.encode(), secret, len(secret), -4)  # @u
    assert serial > 0, os.strerror(ctypes.get_errno())
    try:
        remote = limits_repo(tmp_path, mode, ("A", [f"keyring {description}"], None))
        code, rep, err = run_json(remote)
        assert code == 0, (rep, err)
        loot = committed(remote, rep, "src/a.txt")
        assert secret.decode() not in loot and "Operation not permitted" in loot, loot
    finally:
        libc.syscall(keyctl, 3, serial)  # KEYCTL_REVOKE


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@needs_bwrap
def test_a_worker_squatting_a_siblings_test_port_cannot_forge_its_verdict(tmp_path: Path) -> None:
    port = free_port()
    serve = shlex.join([*NET_CHECK, "serve", str(port), "src/y.txt"])
    remote = limits_repo(tmp_path, "bwrap", ("X", [f"squat {port} 8"], None),
                         ("Y", [f"wait-port {port}", "content broken"], serve))
    _, rep, err = run_json(remote)
    found = by_id(rep)
    assert found["X"]["verified"] and not found["Y"]["verified"], (rep, err)
    assert "read back b'broken" in next(remote.clone.glob(".git/wavegit/logs/*/Y-1.test.log")).read_text()


@needs_bwrap
def test_item_tests_reach_no_loopback_service_of_the_machine(tmp_path: Path) -> None:
    with socket.socket() as service:
        service.bind(("127.0.0.1", 0))
        service.listen()
        port = service.getsockname()[1]
        unreachable = shlex.join([*NET_CHECK, "unreachable", str(port)])
        remote = limits_repo(tmp_path, "bwrap", ("A", [], unreachable))
        code, rep, err = run_json(remote)
    assert code == 0 and by_id(rep)["A"]["verified"], (rep, err)


NOBODY_RUN = """
import sys
from pathlib import Path
from wavegit.attempts import limits, sandbox
from wavegit.attempts.runner import Confinement, new_marker, run_process

bwrap, worker, tree = sys.argv[1], sys.argv[2], Path(sys.argv[3])
confine = Confinement(bwrap, sandbox.Layout(tree=tree, private=tree, hidden=()), new_marker(),
                      limits.Limits(pids=30))
result = run_process([sys.executable, worker], cwd=tree, env={"PATH": "/usr/bin:/bin", "WAVEGIT_OWNS": "out"},
                     stdin_text="forkbomb 500 3\\n", log_path=tree / "log", timeout_s=30, idle_timeout_s=30,
                     confine=confine)
print(result.describe())
"""


@needs_bwrap
def test_an_ordinary_users_fork_bomb_stops_at_sandbox_pids_without_a_cgroup() -> None:
    # Run as `nobody`, who may make no cgroup: RLIMIT_NPROC inside the sandbox's user namespace counts only
    # the sandbox's processes (root would ignore it).
    setpriv, python = shutil.which("setpriv"), shutil.which("python3", path="/usr/bin:/bin")
    if os.geteuid() != 0 or setpriv is None or python is None:
        pytest.skip("needs root, setpriv and a system python3 to run as nobody")
    # pytest's own temporary folders are root's alone: nobody's tree is a folder of its own in /tmp.
    tree = Path(tempfile.mkdtemp(prefix="wavegit-nobody-"))
    try:
        os.chmod(tree, 0o777)
        as_nobody = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
        done = subprocess.run([*as_nobody, python, "-c", NOBODY_RUN, str(shutil.which("bwrap")),
                               str(HOSTILE / "env_limits.py"), str(tree)],
                              capture_output=True, text=True, timeout=120, check=False,
                              env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO_ROOT), "HOME": str(tree)})
        assert done.stdout.strip() == "exited 0", done.stdout + done.stderr
        forked = (tree / "out").read_text().splitlines()[1]
    finally:
        shutil.rmtree(tree)
    assert forked.startswith("forked ") and 20 < int(forked.split()[1]) < 30, forked


@needs_bwrap
@needs_mounts
def test_a_worker_filling_the_disk_through_ignored_files_in_its_tree_is_judged_on_its_work(
        tmp_path: Path) -> None:
    # Its own test checkout finds the disk full: its tree is removed and the checkout tried again, so the
    # attempt is judged (and counted) as any other, not retried for free as wavegit's own failure.
    remote = limits_repo(tmp_path, "bwrap", ("A", ["write-owned", f"fill-quiet . {64 * MiB}"], None))
    write_and_push(remote.clone, {".gitignore": "filler\n"}, "ignore filler")
    code, rep, err = run_on_small_disk(remote, 32 * MiB, tmp_path / "kept")
    assert code == 0 and by_id(rep)["A"]["verified"], (rep, err)
