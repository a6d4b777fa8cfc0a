"""Hostile workers against how their processes start (the keyring filter, dying with the scheduler, the
attempt's limits), each a real ``wavegit run`` on a temporary repository with a bare origin, the worker
``tests/hostile_workers/env_limits.py``."""

from __future__ import annotations

import ctypes
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.repos import REPO_ROOT, wavegit
from tests.helpers.wave import check, item, make_wave_repo, origin_item
from tests.test_hostile_env import MODES, tagged, wait_until
from tests.test_hostile_limits import (
    HOSTILE,
    WORKER,
    by_id,
    committed,
    limits_repo,
    machine_pids,
    needs_bwrap,
    needs_cgroup,
    run_json,
    run_json_in_cgroup,
)

__all__ = ["machine_pids"]  # a fixture of test_hostile_limits, used here too

pytestmark = pytest.mark.slow


@pytest.mark.xfail(strict=True, reason=(
    "an unsandboxed worker writes the scheduler's .git/config, and wavegit's own git (fetch, push: "
    "unfiltered, after the attempt) runs the transport programs it names; the hole of a remote.origin.url "
    "of the worker's choosing (docs/security.md)"))
def test_an_unsandboxed_worker_cannot_reach_the_keyring_through_the_schedulers_git(tmp_path: Path) -> None:
    """docs/security.md: under `none` the keyring filter holds. A worker that cannot call keyctl itself plants
    `remote.origin.uploadpack`/`receivepack` in the scheduler's repository: the wave's own push runs them."""
    libc = ctypes.CDLL(None, use_errno=True)
    add_key, keyctl = {"x86_64": (248, 250), "aarch64": (217, 219)}[os.uname().machine]
    description, secret = f"wavegit-atk-{os.getpid()}-{tmp_path.name}", b"keyring-secret-through-git"
    serial = libc.syscall(add_key, b"user", description.encode(), secret, len(secret), -4)  # @u
    assert serial > 0, os.strerror(ctypes.get_errno())
    loot = tmp_path / "loot.txt"
    try:
        remote = limits_repo(tmp_path, "none", ("A", [f"keyring {description}",
                                                      f"plant-git-config {description} {loot}"], None))
        code, rep, err = run_json(remote)
        assert code == 0 and by_id(rep)["A"]["status"] == "review", (rep, err)
        read = loot.read_text() if loot.exists() else ""
        assert secret.decode() not in read, read
    finally:
        libc.syscall(keyctl, 3, serial)  # KEYCTL_REVOKE


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("how", [("run",), ("run", "--continuous")])
def test_item_tests_and_the_wave_test_cannot_read_the_kernel_keyring(tmp_path: Path, mode: str,
                                                                     how: tuple[str, ...]) -> None:
    """A worker may rewrite what its item's test runs; item tests and the wave test start from other threads
    and paths than the worker does (a rolling wave's too), and the keyring filter must hold for each (their
    failing output is what the report shows)."""
    libc = ctypes.CDLL(None, use_errno=True)
    add_key, keyctl = {"x86_64": (248, 250), "aarch64": (217, 219)}[os.uname().machine]
    description, secret = f"wavegit-atk-{os.getpid()}-{tmp_path.name}", b"keyring-secret-of-the-tests"
    serial = libc.syscall(add_key, b"user", description.encode(), secret, len(secret), -4)  # @u
    assert serial > 0, os.strerror(ctypes.get_errno())
    dump = shlex.join([sys.executable, str(HOSTILE / "keyring_dump.py"), description, "-"])
    try:
        remote = make_wave_repo(tmp_path, [item("A", ["limits"], ["src/a.txt"], check("src/a.txt")),
                                           item("B", ["limits"], ["src/b.txt"], dump)],
                                worker=WORKER, sandbox={"mode": mode}, attempts=1, max_items=2, concurrency=2,
                                wave_test=dump)
        result = wavegit(remote.clone, *how, "--json")
        assert origin_item(remote, "A").status == "review" and origin_item(remote, "B").status != "review"
        shown = result.stdout + result.stderr
        assert secret.decode() not in shown
        assert shown.count("keyring: Operation not permitted") >= 2, shown
    finally:
        libc.syscall(keyctl, 3, serial)  # KEYCTL_REVOKE


@pytest.mark.parametrize("mode", [
    pytest.param("bwrap", marks=needs_bwrap),
    pytest.param("none", marks=pytest.mark.xfail(strict=True, reason=(
        "unsandboxed, the worker may write the cgroup file system wavegit made its cgroup in (root, or a "
        "cgroup delegated to the user): it moves itself into wavegit's own cgroup, out of its limits")))])
@needs_cgroup
def test_a_worker_cannot_leave_its_attempts_cgroup_to_fork_past_its_pids_ceiling(
        tmp_path: Path, mode: str, machine_pids: Path) -> None:
    """docs/security.md: `sandbox.pids` holds in both modes where wavegit may make a cgroup."""
    remote = limits_repo(tmp_path, mode, ("A", ["cgroup-escape", "forkbomb 120 3"], None), pids=40)
    rep = run_json_in_cgroup(remote, machine_pids)
    found = committed(remote, rep, "src/a.txt").splitlines()[1:]
    forked = next(line for line in found if line.startswith("forked "))
    assert int(forked.split()[1]) < 40, found


@pytest.mark.parametrize("mode", MODES)
def test_kill_9_of_the_scheduler_ends_an_item_test_it_was_running(tmp_path: Path, mode: str) -> None:
    """An item test (which its worker may have rewritten) is started as the worker is, from an item thread:
    it dies with the scheduler too, and does not go on to write the checkout or the log."""
    tag = f"atk-test-{os.getpid()}-{mode}"
    forever = shlex.join([sys.executable, "-c", "import time\nwhile True: time.sleep(0.05)", tag])
    remote = limits_repo(tmp_path, mode, ("A", [], forever))
    proc = subprocess.Popen([sys.executable, "-m", "wavegit", "run"], cwd=remote.clone,
                            env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # The test itself running, not a launcher of it (the cgroup's `sh`, bwrap) that has not yet set
        # its parent-death signal: a kill in that window of milliseconds is docs/security.md's residual.
        wait_until(lambda: [pid for pid in tagged(tag) if _program(pid) == sys.executable], "the item test",
                   60)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        wait_until(lambda: tagged(tag) == [], "the item test to die with its scheduler")
    finally:
        for pid in tagged(tag):
            os.kill(pid, signal.SIGKILL)


def _program(pid: int) -> str | None:
    """The program ``pid`` was started as (its first argument), or None once it is gone."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0", 1)[0].decode()
    except OSError:
        return None



@needs_bwrap
def test_attack_workers_that_exit_at_once_cannot_have_a_siblings_tree_made_again_under_it(
        tmp_path: Path) -> None:
    # Four at once: three workers exit at once (a profile whose command is `true`) and give their slots back
    # while the fourth's sandbox is still being built. The next batch's first attempts take those slots and
    # make their own trees, before the launches their preparation waited for (cf0dce2); that fourth launch
    # then made those trees again in the background, under their workers: a sibling failed on its vanished
    # tree (`No such file or directory: 'src'`, its worker's failure, counted), or its git failed there.
    quick = [item(f"Q{n}", ["limits"], [f"src/q{n}.txt"], test="false", worker="quick") for n in range(3)]
    innocent = [item(f"I{n}", ["limits", "sleep 1"], [f"src/i{n}.txt"]) for n in range(3, 12)]
    for wave in range(3):  # a race: three waves, three chances
        remote = make_wave_repo(tmp_path / f"wave-{wave}", [*quick, *innocent], worker=WORKER,
                                sandbox="bwrap", attempts=1, max_items=12, concurrency=4, timeout_s=60,
                                idle_timeout_s=30, workers={"quick": {"command": "true"}})
        _, rep, err = run_json(remote)
        lost = {entry["id"]: entry["error"] for entry in rep["items"]
                if entry["id"].startswith("I") and not entry["verified"]}
        assert not lost, (wave, lost, err)
