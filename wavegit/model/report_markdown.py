"""The wave report as the PR comment the merge gate reads: its Markdown, and the report read back from it.

The Markdown starts with a hidden marker line, renders every report-supplied string HTML-escaped
(so no text from a worker can open or close a comment, a tag or a link), and embeds the report JSON
in one hidden HTML comment whose ``--`` sequences are escaped as ``-\\u002d``. It always fits GitHub's
comment limit: when the whole JSON does not, the embedded copy is shortened (lists cut, long strings
clipped, at worst items left out), and its ``omitted`` field counts what is missing; the whole report
is the JSON file ``wavegit run`` writes, which the comment names.
"""

from __future__ import annotations

import dataclasses
import html
import re

from wavegit.model import timeline
from wavegit.model.report import (
    ItemReport,
    Omitted,
    ReportError,
    SkippedItem,
    WaveReport,
)

MARKER = "<!-- wavegit:report v1 -->"
JSON_OPEN = "<!-- wavegit:report-json"
JSON_CLOSE = "-->"
DEFAULT_MAX_CHARS = 65000
# Room kept for the truncation notes, whose final wording depends on what was dropped.
_NOTES_RESERVE = 400


_MD_ACTIVE = re.compile(r"[\\`*_\[\]|#!~()<>&\"'{}]")


def _text(value: object) -> str:
    """Report-supplied text as inert Markdown on one line."""
    flat = " ".join(str(value).split())
    return _MD_ACTIVE.sub(lambda m: f"&#{ord(m.group())};", flat)


def _code(value: object) -> str:
    return f"<code>{_text(value)}</code>"


def quote(value: object) -> str:
    """``value`` (worker- or tracker-supplied) as inert inline code, at most ``SHOWN_TEXT`` characters of it:
    for any comment wavegit posts (a reply quoting a file name cannot carry a marker or a tag)."""
    return _code(_clipped(str(value)))


def _money(usd: float | None) -> str:
    return "—" if usd is None else f"${usd:.2f}"


def _maybe(value: int | None) -> str:
    return "—" if value is None else str(value)


def _embedded(report: WaveReport) -> str:
    # JSON never contains "--" outside strings, and inside strings "-\u002d" decodes to "--":
    # after this, nothing in the block can end the comment early (neither "-->" nor "--!>").
    body = report.to_json(indent=None).replace("--", "-\\u002d")
    return f"{JSON_OPEN}\n{body}\n{JSON_CLOSE}"


def _slim(report: WaveReport) -> WaveReport:
    items = [dataclasses.replace(item, log_tail="", attempt_records=[]) for item in report.items]
    return dataclasses.replace(report, items=items)


FULL_REPORT = "<git dir>/wavegit/reports/{wave}.json"
"""Where ``wavegit run`` keeps the whole report (the action's ``report-path`` output)."""
_NOTE_ROOM = 600
"""Room kept for the note saying what a shortened copy leaves out."""
_CAPS = (50, 10, 3, 1)
"""Entries kept per list in the successive shortened copies of a report."""


def _compact(report: WaveReport, cap: int, keep_items: int | None = None) -> WaveReport:
    """A copy of ``report`` with every list cut to ``cap`` entries (a non-empty one keeps at least one),
    long strings clipped, no log tails or attempt records, and only the first ``keep_items`` items."""
    limit = max(80, cap * 10)
    omitted = Omitted(full_report=FULL_REPORT.format(wave=report.wave_id))

    def clip(value: str) -> str:
        if len(value) <= limit:
            return value
        omitted.clipped_strings += 1
        return value[:limit - 1] + "…"

    def clip_optional(value: str | None) -> str | None:
        return None if value is None else clip(value)

    def cut(values: list[str], item_id: str, counts: dict[str, int]) -> list[str]:
        if len(values) > cap:
            counts[item_id] = len(values) - cap
        return [clip(value) for value in values[:cap]]

    items = [dataclasses.replace(
        item, files_changed=cut(item.files_changed, item.id, omitted.files_changed),
        ownership_violations=cut(item.ownership_violations, item.id, omitted.ownership_violations),
        title=clip(item.title), error=clip_optional(item.error), log_tail="",
        attempt_records=[])
        for item in report.items[:keep_items]]
    skipped = [SkippedItem(id=s.id, reason=clip(s.reason)) for s in report.skipped[:cap]]
    notes = [clip(note) for note in report.notes[:cap]]
    omitted.items = len(report.items) - len(items)
    omitted.skipped = len(report.skipped) - len(skipped)
    omitted.notes = len(report.notes) - len(notes)
    return dataclasses.replace(
        report, items=items, skipped=skipped, notes=notes, config_source=clip(report.config_source),
        wave_test=dataclasses.replace(report.wave_test, command=clip(report.wave_test.command)),
        error=clip_optional(report.error), halt_reason=clip_optional(report.halt_reason),
        ceiling_reason=clip_optional(report.ceiling_reason), omitted=omitted)


def _shortened(report: WaveReport, room: int) -> tuple[str, WaveReport]:
    """The embedded block of the fullest copy of ``report`` that fits in ``room`` characters, and that copy.

    The whole report first, then without log tails and attempt records, then shorter and shorter lists,
    and at last fewer items (the most that fit): :class:`ReportError` only when not even the wave's own
    fields fit."""
    whole = _embedded(report)
    if len(whole) <= room:
        return whole, report
    room -= _NOTE_ROOM
    for copy in (_slim(report), *(_compact(report, cap) for cap in _CAPS)):
        block = _embedded(copy)
        if len(block) <= room:
            return block, copy
    fits, left = -1, len(report.items)
    while fits < left:
        middle = (fits + left + 1) // 2
        if len(_embedded(_compact(report, 1, middle))) <= room:
            fits = middle
        else:
            left = middle - 1
    if fits < 0:
        raise ReportError(f"$: the report JSON does not fit in {room} characters even without its items")
    copy = _compact(report, 1, fits)
    return _embedded(copy), copy


def _omitted_note(omitted: Omitted) -> str:
    parts = [f"{count} {what}" for count, what in (
        (omitted.items, "items"), (omitted.skipped, "skipped items"), (omitted.notes, "notes"),
        (sum(omitted.files_changed.values()), "changed paths"),
        (sum(omitted.ownership_violations.values()), "violating paths"),
        (omitted.clipped_strings, "long texts clipped")) if count]
    left_out = f" (left out: {', '.join(parts)})" if parts else ""
    return (f"The embedded report JSON is shortened to fit GitHub's size limit{left_out}; the whole "
            f"report is {_code(omitted.full_report)} where the wave ran (the action's "
            f"{_code('report-path')}).")


SHOWN_NOTES = 20
"""Notes shown in a comment's summary (each at most ``SHOWN_TEXT`` characters); the rest are counted."""
SHOWN_TEXT = 500


def _clipped(value: str) -> str:
    return value if len(value) <= SHOWN_TEXT else value[:SHOWN_TEXT - 1] + "…"


def facts(report: WaveReport) -> list[str]:
    """The wave in a few facts (counts, head, branch, PR, cost), inert in Markdown and in HTML alike."""
    failed = len(report.items) - report.verified_count
    found = [f"{report.verified_count} of {len(report.items)} items verified", f"{failed} failed",
             f"{len(report.skipped)} skipped", f"head {_code((report.head_sha or 'none')[:12])}"]
    if report.branch:
        found.append(f"branch {_code(report.branch)}")
    if report.pr is not None:
        found.append(f"PR #{report.pr}")
    if report.total_cost is not None:
        found.append(f"cost {_money(report.total_cost)}")
    return found


def _summary(report: WaveReport) -> list[str]:
    outcome = "✅ success" if report.success else "❌ failed"
    lines = [f"### wavegit wave {_code(report.wave_id)}: {outcome}", "", " · ".join(facts(report))]
    extra = []
    if report.wave_test.command:
        code = report.wave_test.exit_code
        result = "passed" if code == 0 else f"failed (exit {_maybe(code)})"
        extra.append(f"Wave test {_code(_clipped(report.wave_test.command))}: {result}.")
    if report.halted:
        extra.append("Halted: no new attempts were started.")
    if report.budget.exceeded:
        # The ceiling the wave reached, as the run said it: a day's ceiling read "wave spent $0.07 of $0.00".
        spend = report.budget
        reached = (_text(report.ceiling_reason) if report.ceiling_reason else
                   f"wave spent {_money(spend.wave_spent_usd)} of {_money(spend.wave_usd_limit)}")
        extra.append(f"Over budget: {reached}; no new attempts were started.")
    if not report.tracker_updated:
        extra.append("The tracker update did not land.")
    # Notes may carry a worker's words (a cost file's value): a zero-width space after each ``@`` keeps
    # GitHub from making an @mention (a notification) of ``@team`` in them.
    extra.extend(_text(_clipped(note)).replace("@", "@&#8203;") for note in report.notes[:SHOWN_NOTES])
    if len(report.notes) > SHOWN_NOTES:
        extra.append(f"_{len(report.notes) - SHOWN_NOTES} more notes not shown._")
    return [*lines, *(["", *extra] if extra else [])]


_COLUMNS = ("item", "status", "verified", "reason", "attempts", "test exit", "duration", "files", "cost",
            "ownership violations")
_TABLE_HEAD = ["| " + " | ".join(_COLUMNS) + " |", "|" + "---|" * len(_COLUMNS)]


def reason(item: ItemReport) -> str:
    """Why an item did not land, in a few words: ``not started``, ``timeout``, ``violation``, ``no change``,
    ``test exit N``, ``worker exit N``, ``not counted``; ``—`` when it was verified and delivered."""
    last = item.attempt_records[-1] if item.attempt_records else None
    if item.verified:
        return "not delivered" if item.error else "—"
    if item.attempts == 0:
        return "not started"
    if item.ownership_violations:
        return "violation"
    if not item.files_changed and item.exit_code == 0 and item.test_exit is None:
        return "no change"  # the worker exited 0 and changed nothing, so there was nothing to test
    killed, counted = (last.killed, last.counted) if last is not None else (None, True)
    return timeline.failure(killed, item.test_exit, item.exit_code, counted)


def attempts_cell(item: ItemReport) -> str:
    """How many attempts this wave gave the item; with their numbers, counted across waves as the tracker's
    ``attempts`` counts them, when earlier waves had some (``2 (#3-4)``)."""
    records = item.attempt_records
    if not records or records[0].attempt == 1:
        return str(item.attempts)
    first, last = records[0].attempt, records[-1].attempt
    return f"{item.attempts} (#{first}{f'-{last}' if last != first else ''})"


def _row(item: ItemReport) -> str:
    # File names are the worker's: in code, where GitHub links no @mention (a ping) and no URL.
    violations = _code(", ".join(item.ownership_violations)) if item.ownership_violations else "—"
    cells = [_code(item.id), _text(item.status), "yes" if item.verified else "no", _text(reason(item)),
             attempts_cell(item), _maybe(item.test_exit), f"{item.duration_s:.1f}s",
             str(len(item.files_changed)), _money(item.cost), violations]
    return "| " + " | ".join(cells) + " |"


def _details(item: ItemReport) -> str:
    # <pre> is an HTML block that ends only at </pre>, which html.escape makes impossible to forge.
    return (f"<details><summary>{_text(item.id)}: log tail</summary>\n\n"
            f"<pre>{html.escape(item.log_tail)}</pre>\n\n</details>")


def _fit(chunks: list[str], budget: int) -> tuple[list[str], int]:
    """The leading chunks that fit in ``budget`` characters (one newline each), and how many did not."""
    taken: list[str] = []
    for chunk in chunks:
        if len(chunk) + 1 > budget:
            break
        taken.append(chunk)
        budget -= len(chunk) + 1
    return taken, len(chunks) - len(taken)


_TIMELINE_NOTE_ROOM = 80
"""Room kept for the note counting the attempts the timeline leaves out."""
_SLIM_NOTE = "The embedded report JSON leaves out log tails and attempt records to fit the size limit."


def to_markdown(report: WaveReport, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """The PR comment: marker, summary, item table, timeline (a Mermaid gantt, :mod:`wavegit.model.timeline`),
    log tails, skipped items, embedded JSON.

    It always fits in ``max_chars``: over it, skipped items are dropped first (a wave over a backlog of
    thousands skips thousands, which said nothing the next ``plan`` does not, and left no room for what went
    wrong), then log tails, then the timeline's bars, then table rows (each with a note counting what is
    left out). The embedded JSON is whole
    when it fits beside the summary; otherwise it is the fullest shortened copy that does
    (:func:`_shortened`), and a note says what it leaves out and where the whole report is.
    """
    head = [MARKER, *_summary(report)]
    fixed = sum(len(line) + 1 for line in head + _TABLE_HEAD) + _NOTES_RESERVE
    embedded, copy = _shortened(report, max_chars - fixed)
    if copy.omitted:
        shortened = _omitted_note(copy.omitted)
        head += ["", shortened]
        fixed += len(shortened) + 2
    elif copy is not report:
        head += ["", _SLIM_NOTE]
        fixed += len(_SLIM_NOTE) + 2
    budget = max_chars - fixed - len(embedded)
    rows, rows_left = _fit([_row(item) for item in report.items], budget)
    budget -= sum(len(row) + 1 for row in rows)
    picture, bars_left = timeline.gantt(report, budget - _TIMELINE_NOTE_ROOM)
    budget -= len(picture) + 2 + (_TIMELINE_NOTE_ROOM if bars_left else 0)
    tails, tails_left = _fit([_details(item) for item in report.items if item.log_tail], budget)
    budget -= sum(len(tail) + 1 for tail in tails)
    skipped, skipped_left = _fit([f"- {_code(s.id)}: {_text(s.reason)}" for s in report.skipped], budget)

    parts = ["\n".join(head)]
    if report.items:
        table = [*_TABLE_HEAD, *rows]
        if rows_left:
            table.append(f"\n_{rows_left} more items not shown (size limit); all are in the JSON._")
        parts.append("\n".join(table))
    if picture or bars_left:
        note = [f"_{bars_left} more attempts not shown in the timeline (size limit)._"] if bars_left else []
        parts.append("\n\n".join([*([picture] if picture else []), *note]))
    if tails or tails_left:
        note = [f"_{tails_left} log tails left out (size limit)._"] if tails_left else []
        parts.append("\n".join([*tails, *note]))
    if report.skipped:
        note = [f"_{skipped_left} more skipped items not shown (size limit)._"] if skipped_left else []
        parts.append("\n".join(["**Skipped**", "", *skipped, *note]))
    parts.append(embedded)
    return "\n\n".join(parts) + "\n"


def parse_markdown(body: str) -> WaveReport:
    """The report embedded in a comment written by :func:`to_markdown`."""
    text = body.replace("\r\n", "\n")
    markers = text.count(MARKER)
    if markers != 1:
        raise ReportError(f"$: expected one report marker line, found {markers}")
    opens = text.count(JSON_OPEN)
    if opens != 1:
        what = "missing" if opens == 0 else f"present {opens} times"
        raise ReportError(f"$: the embedded report JSON block is {what}")
    start = text.index(JSON_OPEN) + len(JSON_OPEN)
    end = text.find(JSON_CLOSE, start)
    if end < 0:
        raise ReportError("$: the embedded report JSON block is not closed")
    return WaveReport.from_json(text[start:end])
