"""A real ``wavegit run`` whose worker hangs, to be killed with SIGKILL (the scheduler lock's tests)."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from tests.helpers.repos import REPO_ROOT, TESTS, RemoteRepo, git
from tests.helpers.sync import entry, make_tracker_repo
from wavegit.core import heartbeat, wavelock

WORKER = shlex.join([sys.executable, str(TESTS / "crash_workers" / "worker.py")])


@dataclass
class Scheduler:
    remote: RemoteRepo
    pid_dir: Path
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start(self) -> subprocess.Popen[bytes]:
        env = {**os.environ, "CRASH_PID_DIR": str(self.pid_dir), "CRASH_SLEEP_S": "120",
               "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
        with (self.remote.base / "run.log").open("ab") as log:
            proc = subprocess.Popen([sys.executable, "-m", "wavegit", "run"], cwd=self.remote.clone, env=env,
                                    stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        self.procs.append(proc)
        wait_for(lambda: any(self.pid_dir.iterdir()), "the worker to start", proc)
        return proc

    def kill_workers(self) -> None:
        for pid_file in self.pid_dir.iterdir():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.killpg(int(pid_file.read_text()), signal.SIGKILL)


@contextlib.contextmanager
def hanging_wave(tmp_path: Path) -> Iterator[Scheduler]:
    """A repo whose item A's worker hangs (B depends on A); every process left is killed on the way out."""
    check = TESTS / "wave_workers" / "check.py"
    first = entry("A", test=shlex.join([sys.executable, str(check), "src/A.txt", "ok"]))
    # A lease of an hour: whatever sync releases here, it releases because of the lock.
    remote = make_tracker_repo(tmp_path, [first, entry("B", depends_on=["A"])], worker=WORKER, attempts=1,
                               timeout_s=300, idle_timeout_s=300, lease_ttl_s=3600, sandbox="none",
                               worker_env=["CRASH_PID_DIR", "CRASH_SLEEP_S"])
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    state = Scheduler(remote, pid_dir)
    try:
        yield state
    finally:
        for proc in state.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        state.kill_workers()


def wait_for(condition: Callable[[], bool], what: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        assert proc.poll() is None, f"the scheduler ended before {what}"
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def kill_with_sigkill(proc: subprocess.Popen[bytes]) -> None:
    # The whole process group, git children included, as a machine losing power would.
    os.killpg(proc.pid, signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL


def forge_foreign_beat(clone: Path, wave: str, age: timedelta) -> None:
    """A heartbeat on origin from a scheduler on another machine, last beating ``age`` ago."""
    scheduler = wavelock.SchedulerLock(wave, 4242, "1", "boot", "elsewhere.example")
    beat = heartbeat.Beat(scheduler, datetime.now(timezone.utc) - age, 30.0)
    empty = git(clone, "mktree", input="")
    commit = git(clone, "commit-tree", empty, "-m", beat.message())
    git(clone, "push", "-q", "-f", "--no-verify", "origin", f"{commit}:{heartbeat.REF_PREFIX}{wave}")
