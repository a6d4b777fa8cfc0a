"""Finding what an unsandboxed attempt left running: every process whose initial environment carries the
attempt's marker (``WAVEGIT_ATTEMPT_TOKEN``), a daemon that left the process group with ``setsid`` too.

Only processes started since the attempt's launch can carry its marker, and the kernel hands out process
ids cyclically after the last one it gave: a sweep reads the environment of those alone (:class:`PidMark`),
not of every process on the machine (each read is three system calls; 2,500 processes cost a sweep 35 ms
of CPU, and a wave sweeps once per worker and per test). Where the counter may have gone round since the
launch (as many forks as there are ids), every process is read.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass

from wavegit.attempts.workerenv import ATTEMPT_TOKEN_VAR

_RESERVED_PIDS = 300
"""Ids below this are skipped when the counter wraps (the kernel's RESERVED_PIDS)."""


@dataclass(frozen=True)
class PidMark:
    """Where the pid counter (this PID namespace's last id) and the machine's fork count stood."""

    last_pid: int
    forks: int
    pid_max: int


def mark() -> PidMark | None:
    """The counter now; None where ``/proc`` does not tell it (every process is then read)."""
    try:
        return PidMark(_number("/proc/sys/kernel/ns_last_pid"), _forks(), _number("/proc/sys/kernel/pid_max"))
    except (OSError, ValueError):
        return None


def _number(path: str) -> int:
    with open(path, "rb") as fh:
        return int(fh.read())


def _forks() -> int:
    """Processes created since boot (``/proc/stat``'s ``processes``), in every PID namespace."""
    with open("/proc/stat", "rb") as stat:
        for line in stat:
            if line.startswith(b"processes "):
                return int(line.split()[1])
    raise ValueError("no processes line in /proc/stat")


def _started_since(since: PidMark | None) -> Callable[[int], bool]:
    """Whether a process id may belong to a process started after ``since``."""
    now = mark() if since is not None else None
    if since is None or now is None or now.forks - since.forks >= since.pid_max - _RESERVED_PIDS:
        return lambda pid: True
    first, last = since.last_pid, now.last_pid
    if first <= last:
        return lambda pid: first < pid <= last
    return lambda pid: pid > first or pid <= last  # the counter wrapped once


def sweep(marker: str, since: PidMark | None = None) -> list[int]:
    """SIGKILL every process whose (initial) environment carries ``marker``, started after ``since`` (None:
    whenever); their pids."""
    needle = f"{ATTEMPT_TOKEN_VAR}={marker}\0".encode()
    candidate = _started_since(since)
    own = os.getpid()
    killed = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        if pid == own or not candidate(pid):
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                found = needle in fh.read()
        except OSError:
            continue
        if found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
    return killed
