"""A wave's timeline: one bar per attempt, from its start to its end, marked by its outcome.

:func:`bars` reads them from a report's attempt records; :func:`gantt` draws them as a Mermaid gantt chart,
which GitHub renders in the PR comment (``report_markdown.to_markdown`` places it under the item table);
``report_html`` draws the same bars as inline SVG.

Mermaid gives ``:``, ``;``, ``#``, ``%%`` and line ends a meaning in a gantt (task data, statement ends,
entity codes, comments), and a line starting with a keyword (``section``, ``title``) changes the chart: so
every report-supplied text in it (ids, titles) is cut down to letters, digits, spaces and ``. _ - ( ) / + =``,
and every task label starts with wavegit's own words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wavegit.model.report import AttemptRecord, ItemReport, WaveReport

VERIFIED = "verified"
TAGS = {"verified": "done", "failed": "crit", "stopped": "active"}
"""Mermaid's task tag for each kind of outcome: done (green-grey), crit (red), active (highlighted)."""
_KILLED = {"wall": "timeout", "idle": "idle timeout", "cancelled": "cancelled"}
_STOPPED = frozenset(_KILLED.values())

_UNSAFE = re.compile(r"[^A-Za-z0-9 ._()/+=-]+")
LABEL_CHARS = 60
"""At most this many characters of an id or title in a section name."""


@dataclass(frozen=True)
class Bar:
    item_id: str
    title: str
    attempt: int
    start: datetime
    end: datetime
    outcome: str
    """``verified``, or why it failed (``report.failure``: ``test exit 1``, ``timeout``, ...)."""

    @property
    def kind(self) -> str:
        """``verified``, ``stopped`` (killed: timeout, idle, cancelled) or ``failed``."""
        if self.outcome == VERIFIED:
            return VERIFIED
        return "stopped" if self.outcome in _STOPPED else "failed"

    @property
    def seconds(self) -> float:
        return max((self.end - self.start).total_seconds(), 0.0)


def failure(killed: str | None, test_exit: int | None, exit_code: int | None, counted: bool = True) -> str:
    """Why an attempt failed, in a few words: ``timeout``, ``test exit N``, ``worker exit N``, ``failed``, or
    ``not counted`` (its worker or test could not launch, or wavegit failed: the item's fault it was not)."""
    if killed:
        return _KILLED.get(killed, killed)
    if test_exit not in (None, 0):
        return f"test exit {test_exit}"
    if exit_code not in (None, 0):
        return f"worker exit {exit_code}"
    return "failed" if counted else "not counted"


def format_seconds(seconds: float) -> str:
    """``42s``, ``3m05s``, ``1h02m``."""
    whole = round(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole // 60 % 60:02d}m"


def parse_timestamp(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _outcome(item: ItemReport, record: AttemptRecord, last: bool) -> str:
    if last and item.verified:
        return VERIFIED
    if record.violated or (last and item.ownership_violations):
        return "violation"
    return failure(record.killed, record.test_exit, record.exit_code, record.counted)


def bars(report: WaveReport) -> list[Bar]:
    """Every attempt of the report, item by item (the report's order), attempts in order."""
    found = []
    for item in report.items:
        for n, record in enumerate(item.attempt_records):
            found.append(Bar(item.id, item.title, record.attempt, parse_timestamp(record.started_at),
                             parse_timestamp(record.finished_at),
                             _outcome(item, record, n == len(item.attempt_records) - 1)))
    return found


def safe(text: str) -> str:
    """``text`` as inert gantt text: on one line, only the characters Mermaid gives no meaning."""
    flat = " ".join(_UNSAFE.sub(" ", text).split())
    return flat if len(flat) <= LABEL_CHARS else flat[:LABEL_CHARS - 3] + "..."


def _section(bar: Bar) -> str:
    name = safe(bar.item_id) or "item"
    title = safe(bar.title)
    return f"    section {name}" + (f" - {title}" if title else "")


def _task(bar: Bar, n: int) -> str:
    # Whole seconds (the records' resolution); a bar is at least one second wide so that it shows.
    start = int(bar.start.timestamp())
    seconds = max(round(bar.seconds), 1)
    return f"    attempt {bar.attempt} {safe(bar.outcome)} :{TAGS[bar.kind]}, a{n}, {start}, {seconds}s"


def gantt(report: WaveReport, max_chars: int) -> tuple[str, int]:
    """The fenced Mermaid gantt of ``report``'s attempts in at most ``max_chars`` characters, and how many
    bars were left out to fit (the first bars are kept); ``""`` when there is no attempt or no room."""
    all_bars = bars(report)
    if not all_bars:
        return "", 0
    head = ["```mermaid", "gantt", f"    title wave {safe(report.wave_id)}", "    dateFormat X",
            "    axisFormat %H:%M:%S", "    todayMarker off"]
    tail = ["```"]
    used = sum(len(line) + 1 for line in head + tail)
    lines: list[str] = []
    section = None
    kept = 0
    for n, bar in enumerate(all_bars):
        chunk = [_task(bar, n)]
        if bar.item_id != section:
            chunk.insert(0, _section(bar))
        size = sum(len(line) + 1 for line in chunk)
        if used + size > max_chars:
            break
        lines += chunk
        used += size
        section = bar.item_id
        kept += 1
    if not kept:
        return "", len(all_bars)
    return "\n".join(head + lines + tail), len(all_bars) - kept
