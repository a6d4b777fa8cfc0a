"""The scheduler's lock: which process on which machine schedules a wave, so a killed one is seen at once.

``wavegit run`` writes ``<state dir>/locks/<wave>.json`` before its claim and removes it when it ends, however
it ends short of ``kill -9`` or a power cut; a wave whose record did not land keeps it, since its claims die
with the process all the same. A lock left behind names a scheduler that is gone when its pid no
longer runs, or runs another process (the start time in ``/proc/<pid>/stat`` differs: the pid was reused), or
the machine rebooted since (another boot id). ``wavegit sync`` on that machine then releases the wave's
claims at once, and ``wavegit release`` refuses a wave whose scheduler is still alive here.

The state folder is per clone, so only this machine's schedulers leave locks in it; a lock naming another
host (a clone on a shared file system) says nothing either way, and the lease (``lease_ttl_s``) stands.
"""

import contextlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from wavegit.core.git import WaveId
from wavegit.core.repo import Repo

_PROC = Path("/proc")
_GONE_STATES = ("Z", "X")
_PID_MAX = 2**31 - 1
"""The largest ``pid_t``."""
"""A zombie has ended (only its exit status waits to be read); X is a process being torn down."""


class SchedulerLock(NamedTuple):
    """A scheduler process (a NamedTuple: ``plan`` reads one when items are in flight, and a dataclass
    costs ~1 ms to create)."""

    wave: WaveId
    pid: int
    start_time: str | None
    """Field 22 of ``/proc/<pid>/stat`` (clock ticks after boot); None where there is no ``/proc``."""
    boot_id: str | None
    host: str

    def alive(self) -> bool | None:
        """Whether the scheduler still runs: None when the lock is another machine's (nothing can be told)."""
        if self.host != os.uname().nodename:
            return None
        if self.boot_id is not None and self.boot_id != boot_id():
            return False
        if self.start_time is not None:
            return process_start_time(self.pid) == self.start_time
        return _pid_runs(self.pid)

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host}"


def process_start_time(pid: int) -> str | None:
    """When process ``pid`` started (``/proc/<pid>/stat`` field 22); None when it is gone or has ended."""
    try:
        stat = (_PROC / str(pid) / "stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may itself hold spaces and parentheses.
    fields = stat.rpartition(")")[2].split()
    if len(fields) < 20 or fields[0] in _GONE_STATES:
        return None
    return fields[19]


def boot_id() -> str | None:
    try:
        return (_PROC / "sys" / "kernel" / "random" / "boot_id").read_text(encoding="ascii").strip() or None
    except OSError:
        return None


def _pid_runs(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process: it exists
    return True


def this_process(wave_id: WaveId) -> SchedulerLock:
    pid = os.getpid()
    return SchedulerLock(wave_id, pid, process_start_time(pid), boot_id(), os.uname().nodename)


def write(repo: Repo, lock: SchedulerLock) -> None:
    _write(repo.scheduler_lock(lock.wave), lock._asdict())


def _write(path: Path, record: Mapping[str, object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps(record) + "\n", encoding="utf-8")
    # A rename, so a reader never sees half a lock (a kill between the two leaves only the .tmp file).
    os.replace(partial, path)


def watch(repo: Repo, since: str) -> Path:
    """Note that this process schedules rolling waves here and waits for ready items (``run --continuous
    --watch``), from ``since``: ``wavegit status`` shows it while no wave is in flight. The caller removes
    the file it returns when it stops."""
    path = repo.state_dir / "watching" / f"{os.getpid()}.json"
    _write(path, {**this_process(WaveId(""))._asdict(), "since": since})
    return path


def watchers(repo: Repo) -> list[tuple[SchedulerLock, str]]:
    """The schedulers watching here (:func:`watch`) that still run, each with since when; a file a killed
    one left is ignored."""
    found = []
    for path in sorted((repo.state_dir / "watching").glob("*.json")):
        with contextlib.suppress(OSError, ValueError):
            data = json.loads(path.read_text(encoding="utf-8"))
            lock = from_record(data)
            if lock is not None and lock.alive() is not False:
                found.append((lock, str(data.get("since", "?"))))
    return found


def read(repo: Repo, wave_id: WaveId) -> SchedulerLock | None:
    """The wave's lock on this clone; None when there is none, or it cannot be read (the lease stands)."""
    return _load(repo.scheduler_lock(wave_id))


def _load(path: Path) -> SchedulerLock | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    lock = from_record(data)
    return lock if lock is not None and lock.wave == path.stem else None


def from_record(data: object) -> SchedulerLock | None:
    """The lock a JSON object describes (a lock file's, or the process an event log names); None if none."""
    if not isinstance(data, dict):
        return None
    try:
        lock = SchedulerLock(WaveId(str(data["wave"])), int(data["pid"]), _text(data.get("start_time")),
                             _text(data.get("boot_id")), str(data["host"]))
    except (ValueError, KeyError, TypeError):
        return None
    # A process id (a heartbeat ref is anyone's to push): os.kill of one past a C int raised OverflowError,
    # and of 0 or -1 asks about a whole process group or every process, which always answers "alive".
    return lock if 0 < lock.pid <= _PID_MAX else None


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def remove(repo: Repo, wave_id: WaveId) -> None:
    repo.scheduler_lock(wave_id).unlink(missing_ok=True)


def dead_waves(repo: Repo) -> dict[WaveId, str]:
    """The waves whose scheduler on this machine is gone, each with who it was (``pid N on HOST``)."""
    folder = repo.locks_dir
    if not folder.is_dir():
        return {}
    found: dict[WaveId, str] = {}
    for path in sorted(folder.glob("*.json")):
        lock = _load(path)
        if lock is not None and lock.alive() is False:
            found[lock.wave] = lock.describe()
    return found


def forget(repo: Repo, waves: Mapping[WaveId, str]) -> None:
    """Remove the locks of ``waves`` once their claims are released."""
    for wave_id in waves:
        remove(repo, wave_id)
