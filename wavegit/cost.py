"""What a worker's attempt cost: the ``{"usd": N}`` it wrote to ``$WAVEGIT_COST_FILE``, or (preset ``claude``)
the total in Claude Code's JSON result at the end of its log.

The worker wrote both files, so both are read as hostile: a regular file only, never a symlink, a FIFO or a
device (nothing blocks), a few kilobytes at most, and amounts that a report can hold.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from wavegit.jsondecode import reject_constant

COST_FILE_MAX_BYTES = 4096
"""A cost file is ``{"usd": N}``: anything longer is not read."""


@dataclass(frozen=True)
class CostReading:
    """A worker's reported cost, and why it could not be read when it could not."""

    usd: float | None
    note: str | None


# Claude Code's JSON result is one line near the end of the log; how much of the end to scan.
_CLAUDE_SCAN_BYTES = 4 * 1024 * 1024


def cost_reading(cost_file: Path, log_path: Path, preset: str) -> CostReading:
    """The cost from ``{"usd": N}`` in ``cost_file``, else (preset ``claude``) from the log's result.

    A ``note`` says the cost was reported but cannot be read (a bad cost file; a ``claude`` run without a
    result): budgets count such an attempt as over their ceiling. No file from another worker is no note.
    """
    reading = _cost_file_reading(cost_file)
    if reading.usd is None and preset.strip() == "claude":
        claude = _claude_log_cost(log_path)
        if claude is not None:
            return CostReading(claude, reading.note)
        # Claude Code always spends something: a run with no readable result line (killed, timed out,
        # crashed) cost an unknown amount, which a budget must count as over its ceiling.
        return CostReading(None, reading.note or f"claude run: no result line with a readable "
                                                 f"total_cost_usd in {log_path}")
    return reading


def read_cost(cost_file: Path, log_path: Path, preset: str) -> float | None:
    """Just the USD amount of :func:`cost_reading` (None when unknown)."""
    return cost_reading(cost_file, log_path, preset).usd


MAX_ATTEMPT_USD = 1e6
"""The most one attempt may report: sums of larger ones overflow to infinity, which no report can hold."""


def _usd(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        usd = float(value)
    except OverflowError:  # an int too large for a float
        return None
    return usd if 0 <= usd <= MAX_ATTEMPT_USD else None


def _cost_file_reading(cost_file: Path) -> CostReading:
    try:
        text = _read_small_file(cost_file, COST_FILE_MAX_BYTES)
    except FileNotFoundError:
        return CostReading(None, None)
    except (OSError, UnicodeDecodeError) as exc:
        return CostReading(None, f"cost file {cost_file}: unreadable ({exc})")
    try:
        data = json.loads(text, parse_constant=reject_constant)
    except ValueError as exc:
        return CostReading(None, f"cost file {cost_file}: invalid JSON ({exc})")
    if not isinstance(data, dict) or "usd" not in data:
        return CostReading(None, f'cost file {cost_file}: expected {{"usd": N}}')
    usd = _usd(data["usd"])
    if usd is None:
        return CostReading(None, f"cost file {cost_file}: usd must be a non-negative number up to "
                                 f"{MAX_ATTEMPT_USD:g}, got {data['usd']!r}")
    return CostReading(usd, None)


def _read_small_file(path: Path, limit: int) -> str:
    """The text of the regular file ``path`` (a worker wrote it: a symlink, a FIFO or a device is refused
    without blocking, and more than ``limit`` bytes is an error)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        content = handle.read(limit + 1)
    if len(content) > limit:
        raise OSError(errno.EFBIG, f"over {limit} bytes")
    return content.decode("utf-8")


def _claude_log_cost(log_path: Path) -> float | None:
    try:
        with log_path.open("rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - _CLAUDE_SCAN_BYTES))
            text = fh.read().decode("utf-8", errors="replace")
    except OSError:
        return None
    for line in reversed(text.splitlines()):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            data = json.loads(line, parse_constant=reject_constant)
        except ValueError:
            continue
        if isinstance(data, dict) and "total_cost_usd" in data:
            return _usd(data["total_cost_usd"])
    return None
