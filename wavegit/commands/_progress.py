"""The live progress view of a wave.

On a terminal: a compact status table (item, state, attempt, elapsed, detail) redrawn in place
with plain ANSI cursor moves, refreshed every second so elapsed times tick. Anywhere else (CI
logs, pipes): one plain line per event, e.g. ``AUTH-12 attempt 1 started`` and
``AUTH-12 verified in 3.2s (attempt 1)``. Workers report from several threads, so every method
takes one lock and writes whole lines.

Output is best effort: when the stream fails (``wavegit run 2>&1 | head -2`` closes the pipe, a full
disk, a closed terminal) the view goes quiet for the rest of the wave and the wave goes on; a progress
line is never worth a wave left half-recorded.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import TextIO

from wavegit.core.terminal import inert, raw

# States after which an item's clock stops.
FINAL_STATES = frozenset({"verified", "failed", "killed", "cancelled", "skipped", "not started", "error"})
STARTED = "started"
QUEUED = "queued"

_UP_LINES = "\x1b[{}F"  # cursor to the start of the line N lines up
_CLEAR_LINE = "\x1b[2K"
_CLEAR_BELOW = "\x1b[J"


def format_elapsed(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m{secs:02d}s"


@dataclass
class _Row:
    state: str = QUEUED
    attempt: int | None = None
    detail: str = ""
    started: float | None = None
    stopped: float | None = None

    def elapsed(self, now: float) -> float | None:
        if self.started is None:
            return None
        return (self.stopped if self.stopped is not None else now) - self.started


def _is_live(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and os.environ.get("TERM", "") != "dumb"


class Progress:
    """Progress of one wave; use as a context manager so the live view stops cleanly."""

    def __init__(self, stream: TextIO | None = None, *, live: bool | None = None,
                 clock: Callable[[], float] = time.monotonic, refresh_s: float = 1.0) -> None:
        self._stream = stream if stream is not None else raw(sys.stderr)
        self.live = _is_live(self._stream) if live is None else live
        self._clock = clock
        self._refresh_s = refresh_s
        self._rows: dict[str, _Row] = {}
        self._lock = threading.Lock()
        self._drawn = 0
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self.output_error: str | None = None
        """Why output stopped (the stream failed), or None while it works."""

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def event(self, item_id: str, state: str, detail: str = "", *, attempt: int | None = None) -> None:
        """Record that ``item_id`` reached ``state``.

        ``started``, or any active state while the item's clock is stopped, starts its clock; a
        final state (``verified``, ``failed``, ...) stops it.
        """
        with self._lock:
            now = self._clock()
            # Queued again (a later wave of `run --continuous`): a new row, not the last wave's attempt.
            row = self._rows[item_id] = _Row() if state == QUEUED else self._rows.get(item_id, _Row())
            row.state, row.detail = state, inert(detail)
            if attempt is not None:
                row.attempt = attempt
            running = row.started is not None and row.stopped is None
            if state == STARTED or (not running and state not in FINAL_STATES and state != QUEUED):
                row.started, row.stopped = now, None
            elif state in FINAL_STATES and running:
                row.stopped = now
            if self.live:
                self._redraw(now)
                self._start_ticker()
            else:
                self._write(self._line(item_id, row, now) + "\n")

    def note(self, text: str) -> None:
        """A free-form line (e.g. "claimed 4 items"), printed above the live table."""
        text = inert(text)
        with self._lock:
            if self.live:
                self._erase()
                self._write(text + "\n")
                self._redraw(self._clock())
            else:
                self._write(text + "\n")

    def close(self) -> None:
        """Stop refreshing; the final table (or the plain lines) stay on screen."""
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        with self._lock:
            if self.live and self._rows:
                self._redraw(self._clock())

    def _line(self, item_id: str, row: _Row, now: float) -> str:
        detail = f": {row.detail}" if row.detail else ""
        elapsed = row.elapsed(now)
        if row.state in FINAL_STATES and elapsed is not None:
            attempt = f" (attempt {row.attempt})" if row.attempt is not None else ""
            return f"{item_id} {row.state} in {format_elapsed(elapsed)}{attempt}{detail}"
        attempt = f" attempt {row.attempt}" if row.attempt is not None else ""
        return f"{item_id}{attempt} {row.state}{detail}"

    def _table(self, now: float) -> list[str]:
        cells = [("item", "state", "attempt", "elapsed", "detail")]
        for item_id, row in self._rows.items():
            elapsed = row.elapsed(now)
            cells.append((item_id, row.state, "" if row.attempt is None else str(row.attempt),
                          "" if elapsed is None else format_elapsed(elapsed), row.detail))
        widths = [max(len(cell[i]) for cell in cells) for i in range(4)]
        width = shutil.get_terminal_size().columns - 1
        # Cropped to the terminal so no line wraps: the redraw counts on one screen line per row.
        lines = []
        for cell in cells:
            padded = [c.ljust(w) for c, w in zip(cell[:4], widths, strict=True)]
            lines.append("  ".join([*padded, cell[4]]).rstrip()[:width])
        return lines

    def _erase(self) -> None:
        if self._drawn:
            self._write(_UP_LINES.format(self._drawn) + _CLEAR_BELOW)
            self._drawn = 0

    def _redraw(self, now: float) -> None:
        lines = self._table(now)
        out = [_UP_LINES.format(self._drawn)] if self._drawn else []
        out += [f"{_CLEAR_LINE}{line}\n" for line in lines]
        out.append(_CLEAR_BELOW)
        self._write("".join(out))
        self._drawn = len(lines)

    def _start_ticker(self) -> None:
        if self._ticker is None and not self._stop.is_set():
            self._ticker = threading.Thread(target=self._tick, name="wavegit-progress", daemon=True)
            self._ticker.start()

    def _tick(self) -> None:
        while not self._stop.wait(self._refresh_s):
            with self._lock:
                self._redraw(self._clock())

    def _write(self, text: str) -> None:
        if self.output_error is not None:
            return
        try:
            self._stream.write(text)
            self._stream.flush()
        except (OSError, ValueError) as exc:
            # OSError: EPIPE, ENOSPC, EIO; ValueError: the stream was closed under us.
            self.output_error = f"{type(exc).__name__}: {exc}"
