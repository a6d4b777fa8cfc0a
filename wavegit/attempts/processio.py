"""A running process's input and output, for :func:`wavegit.attempts.runner.run_process`.

The prompt is fed to its stdin without blocking, its output read into the log (and handed line by line to a
watcher), and, on Linux, its exit seen through a pidfd; one selector waits on all of them, so the loop wakes
for output and exit at once and needs no reader thread.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import time
from collections.abc import Callable
from typing import IO

from wavegit.attempts import logcap

_CHUNK = 65536
LINE_MAX_BYTES = 1024 * 1024
"""The longest output line handed to a ``run_process`` ``on_line`` watcher."""


def _exit_fd(pid: int) -> int | None:
    """A descriptor that becomes readable when ``pid`` exits (Linux pidfd), or None where there is none."""
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:
        return None
    try:
        fd: int = pidfd_open(pid)
    except OSError:
        return None
    return fd


class _StdinFeeder:
    """Writes the prompt without blocking; a worker that never reads it cannot deadlock us."""

    def __init__(self, stream: IO[bytes], text: str | None) -> None:
        self.fd = stream.fileno()
        self._stream = stream
        self._pending = memoryview((text or "").encode("utf-8"))
        os.set_blocking(self.fd, False)

    def write_some(self) -> bool:
        """Write what the pipe takes now; True when finished (all written or the reader is gone)."""
        try:
            written = os.write(self.fd, self._pending[:_CHUNK])
        except BlockingIOError:
            return False
        except (BrokenPipeError, OSError):
            return True
        self._pending = self._pending[written:]
        return not self._pending

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._stream.close()


class Watch:
    """The input and output of one running process, pumped by its supervisor's loop."""

    def __init__(self, pid: int, stdin: IO[bytes], stdout: IO[bytes], log: logcap.CappedLog,
                 stdin_text: str | None, on_line: Callable[[bytes], None] | None = None) -> None:
        self.stdout = stdout
        self.log = log
        self.on_line = on_line
        self.partial = b""
        """The unfinished last line so far, for ``on_line`` (dropped when over LINE_MAX_BYTES)."""
        self.out_fd = stdout.fileno()
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.out_fd, selectors.EVENT_READ)
        self.feeder: _StdinFeeder | None = _StdinFeeder(stdin, stdin_text)
        self.selector.register(self.feeder.fd, selectors.EVENT_WRITE)
        self.exit_fd = _exit_fd(pid)
        if self.exit_fd is not None:
            self.selector.register(self.exit_fd, selectors.EVENT_READ)
        self.eof = False
        self.last_output = time.monotonic()

    def pump(self, timeout: float) -> None:
        for key, _ in self.selector.select(timeout):
            if key.fd == self.out_fd:
                self._read()
            elif key.fd == self.exit_fd:
                # Readable for good once the leader exited: it has woken the loop, stop watching it.
                self._close_exit_fd()
            elif self.feeder is not None and self.feeder.write_some():
                self._close_stdin()

    def _read(self) -> None:
        try:
            data = os.read(self.out_fd, _CHUNK)
        except OSError:
            data = b""
        if not data:
            self.eof = True
            self.selector.unregister(self.out_fd)
            return
        self.log.write(data)
        self.last_output = time.monotonic()
        if self.on_line is not None:
            self._lines(data)

    def _lines(self, data: bytes) -> None:
        assert self.on_line is not None
        *lines, rest = (self.partial + data).split(b"\n")
        # A worker that never ends a line cannot make wavegit hold its output: an over-long line is skipped.
        self.partial = rest if len(rest) <= LINE_MAX_BYTES else b""
        for line in lines:
            self.on_line(line)

    def _close_stdin(self) -> None:
        if self.feeder is not None:
            self.selector.unregister(self.feeder.fd)
            self.feeder.close()
            self.feeder = None

    def _close_exit_fd(self) -> None:
        if self.exit_fd is not None:
            self.selector.unregister(self.exit_fd)
            os.close(self.exit_fd)
            self.exit_fd = None

    def close(self) -> None:
        self._close_stdin()
        self._close_exit_fd()
        self.selector.close()
        self.stdout.close()
