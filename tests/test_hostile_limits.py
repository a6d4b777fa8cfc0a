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
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.repos import REPO_ROOT, RemoteRepo, git, wavegit
from tests.helpers.wave import check, item, make_wave_repo, origin_item
from tests.test_hostile_env import BWRAP_PROBLEM, MODES

HOSTILE = Path(__file__).resolve().parent / "hostile_workers"
WORKER = shlex.join([sys.executable, str(HOSTILE / "env_act.py")])
NET_TEST = [sys.executable, str(HOSTILE / "net_test.py")]
MiB = 1 << 20

needs_bwrap = pytest.mark.skipif(BWRAP_PROBLEM is not None, reason=f"bwrap cannot run: {BWRAP_PROBLEM}")
UNSHARE = shutil.which("unshare")
needs_mounts = pytest.mark.skipif(os.geteuid() != 0 or UNSHARE is None,
                                  reason="a small disk needs root and unshare (util-linux)")
PIDS_CGROUP = Path("/sys/fs/cgroup/pids")
needs_cgroup = pytest.mark.skipif(os.geteuid() != 0 or not os.access(PIDS_CGROUP, os.W_OK),
                                  reason=f"needs root and a writable cgroup v1 pids hierarchy at {PIDS_CGROUP}")


def limits_repo(tmp_path: Path, mode: str, *items: tuple[str, list[str], str | None], **sandbox: Any) -> RemoteRepo:
    """A wave repo whose items are (id, actions, test or None: src/<id>.txt holds ``ok``), all running at once;
    item X owns src/x.txt."""
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
                      stop: Path | None = None) -> tuple[int, dict[str, Any], str]:
    """``wavegit run --json`` with the clone's state directory on a tmpfs of ``size`` bytes; its logs and
    reports are copied to ``keep`` before the tmpfs goes. With ``stop``: that file is then made (a worker's
    daemon waits for it) and ``wavegit sync`` runs on the same tmpfs, its output in ``keep/sync``."""
    state = remote.clone / ".git" / "wavegit"
    state.mkdir(exist_ok=True)
    then = ("" if stop is None else
            f'touch {shlex.quote(str(stop))}; sleep 0.5; "$@" sync >"$KEEP/sync" 2>&1; ')
    script = ('mount -t tmpfs -o "size=$1" wavegit-small-disk "$2" || exit 99; shift 3; "$@" run --json; '
              f'code=$?; {then}cp -r "$0/logs" "$0/reports" "$KEEP" 2>/dev/null; exit $code')
    argv = [str(UNSHARE), "-m", "sh", "-c", script, str(state), str(size), str(state), "--",
            sys.executable, "-m", "wavegit"]
    env = {**os.environ, "KEEP": str(keep),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    keep.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(argv, cwd=remote.clone, capture_output=True, text=True, env=env, timeout=300,
                          check=False)
    assert done.returncode != 99, done.stderr
    assert done.stdout.strip(), done.stderr
    return done.returncode, json.loads(done.stdout), done.stderr


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
def test_a_disk_kept_full_through_the_record_is_a_clear_error_and_the_next_sync_settles_the_claims(
        tmp_path: Path) -> None:
    # Unsandboxed and without a cgroup (which would end it with its attempt), a daemon the sweep cannot
    # recognise keeps wavegit's state directory full from the first worker to the report: every log, tree,
    # temporary index, event and report write there fails.
    stop = tmp_path / "stop"
    remote = limits_repo(tmp_path, "none", ("A", [f"hold-full ../../.. {stop}"], None), ("B", ["sleep 1"], None),
                         pids=0, memory_bytes=0)
    code, rep, err = run_on_small_disk(remote, 16 * MiB, tmp_path / "kept", stop)
    assert code == 1 and "Traceback" not in err, err
    assert "Out of diskspace" in rep["error"] or "No space left on device" in rep["error"], rep["error"]
    assert any("the report could not be written" in note for note in rep["notes"]), rep["notes"]
    # Once the disk has room again, the next sync (on the same state folder) releases what was claimed.
    assert "Traceback" not in (tmp_path / "kept" / "sync").read_text()
    for item_id in ("A", "B"):
        assert origin_item(remote, item_id).status != "in_progress", (tmp_path / "kept" / "sync").read_text()
    assert origin_item(remote, "A").attempts == 1
