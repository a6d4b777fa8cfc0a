"""Attack: make ``wavegit run --json``'s stdout something else than its report, by writing into the
standard output and error of the processes above the worker (``/proc/PID/fd/1``, ``/proc/PID/fd/2``): its
parent, and each ancestor further up that is wavegit. Then it does its item's work (``src/a.txt``)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

JUNK = "HIJACKED: not the report\n"


def _parent(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("PPid:"):
            return int(line.split()[1])
    return 0


def ancestors() -> list[int]:
    found, pid = [], os.getppid()
    while pid > 1:
        found.append(pid)
        pid = _parent(pid)
        with contextlib.suppress(OSError):
            if b"wavegit" not in Path(f"/proc/{pid}/cmdline").read_bytes():
                break
    return found


hit = 0
for pid in ancestors():
    for fd in (1, 2):
        with contextlib.suppress(OSError), open(f"/proc/{pid}/fd/{fd}", "w") as stream:
            stream.write(JUNK)
            hit += 1
Path("src").mkdir(exist_ok=True)
Path("src/a.txt").write_text(f"ok\nhijacked {hit} streams\n")
