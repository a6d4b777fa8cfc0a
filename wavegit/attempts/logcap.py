"""A process's log with a size cap: the output is always read (a worker never blocks on a full pipe), but
only its first and last bytes are kept, with a line saying how much was dropped between them; a write the
disk refuses (ENOSPC) stops the writing, never the reading, and is noted at the end if the disk allows;
and a log's last lines, read back within a bound."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import IO

LOG_TAIL_MAX_BYTES = 64 * 1024
"""How much of a log's end a tail reads at most."""
CUT_MARK = "[wavegit: "
"""How the line saying what the cap dropped starts (a preset whose account is a sum has none then)."""


class CappedLog:
    """Writes at most ``cap`` bytes of output to ``fh`` (unbuffered; 0 = no cap): the head as it comes, the
    tail (the last half of the cap) held in memory and written by :meth:`finish`."""

    def __init__(self, fh: IO[bytes], cap: int) -> None:
        self._fh = fh
        self.cap = cap
        self._tail_cap = cap // 2
        self._head_left = cap - self._tail_cap if cap > 0 else -1
        self._tail = bytearray()
        self.dropped = 0
        self.failure: str | None = None
        """Why the log could not be written any further (``No space left on device``), or None."""
        self.lost: str | None = None
        """Why some output is not in the log (the first refused write), even once a later write took."""
        self._unwritten = 0

    def write(self, data: bytes) -> None:
        if self._head_left < 0:
            self._put(data)
            return
        head, rest = data[:self._head_left], data[self._head_left:]
        self._head_left -= len(head)
        self._put(head)
        if rest:
            self._tail += rest
            excess = len(self._tail) - self._tail_cap
            if excess > 0:
                del self._tail[:excess]
                self.dropped += excess

    def finish(self) -> None:
        """Write the kept tail, after a line naming what was dropped (when anything was)."""
        if self.dropped:
            self._put(f"\n{CUT_MARK}{self.dropped} bytes of output dropped here (sandbox.log_bytes "
                      f"{self.cap})]\n".encode())
        self._put(bytes(self._tail))
        self._tail.clear()
        if self.failure is not None:
            # The disk may have room again (the worker's files are gone): say why the log is short.
            self.failure, failed = None, self.failure
            self._put(f"\n[wavegit: {self._unwritten} bytes of output not logged: {failed}]\n".encode())

    def _put(self, data: bytes) -> None:
        if not data:
            return
        if self.failure is not None:
            self._unwritten += len(data)
            return
        view = memoryview(data)
        try:
            while view:
                written = self._fh.write(view)
                if not written:
                    raise OSError(errno.EIO, "the log took no bytes")
                view = view[written:]
        except OSError as exc:
            self.failure = exc.strerror or str(exc)
            self.lost = self.lost or self.failure
            self._unwritten += len(view)


def log_tail(path: Path, n_lines: int) -> str:
    """The last ``n_lines`` lines of a log file, from at most its last ``LOG_TAIL_MAX_BYTES``; "" when there
    is no log. The bound holds against a worker that prints gigabytes without a newline."""
    if n_lines <= 0:
        return ""
    try:
        with path.open("rb") as fh:
            end = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, end - LOG_TAIL_MAX_BYTES))
            data = fh.read(LOG_TAIL_MAX_BYTES)
    except FileNotFoundError:
        return ""
    lines = data.decode("utf-8", errors="replace").splitlines()
    return "\n".join(lines[-n_lines:])
