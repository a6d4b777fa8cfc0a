"""A wave report as one self-contained HTML page (``wavegit report --html``).

No script, no stylesheet, font or image from elsewhere, no link at all: the page opens the same offline. Its
timeline is inline SVG, one bar per attempt (:func:`wavegit.model.timeline.bars`), coloured by outcome with a
tooltip. Every report-supplied string (ids, titles, errors, notes, log tails, paths) is HTML-escaped,
quotes included, so no text from a worker or a tracker can open a tag, an attribute or a comment.
"""

from __future__ import annotations

import html

from wavegit.model import timeline
from wavegit.model.report import ItemReport, WaveReport
from wavegit.model.report_markdown import attempts_cell, facts, reason

WIDTH = 960
"""The timeline's width in pixels; the labels take ``LABEL_WIDTH`` of it."""
LABEL_WIDTH = 220
ROW = 22
COLOURS = {"verified": "#2da44e", "failed": "#cf222e", "stopped": "#bf8700"}

_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em; color: #1f2328; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #d0d7de; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
code, pre { font-family: ui-monospace, monospace; }
pre { background: #f6f8fa; padding: 8px; overflow-x: auto; white-space: pre-wrap; }
.ok { color: #1a7f37; } .bad { color: #cf222e; }
code.id { white-space: nowrap; }
.legend span { display: inline-block; width: 12px; height: 12px; margin: 0 4px 0 12px; }
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _svg(report: WaveReport) -> str:
    bars = timeline.bars(report)
    if not bars:
        return "<p>No attempt ran.</p>"
    origin = min(bar.start for bar in bars)
    span = max(max((bar.end - origin).total_seconds() for bar in bars), 1.0)
    scale = (WIDTH - LABEL_WIDTH - 10) / span
    height = ROW * len(bars) + 24
    parts = [f'<svg width="{WIDTH}" height="{height}" '
             f'role="img" aria-label="wave timeline">']
    for row, bar in enumerate(bars):
        y = row * ROW
        x = LABEL_WIDTH + (bar.start - origin).total_seconds() * scale
        width = max(bar.seconds * scale, 2.0)
        tip = (f"{bar.item_id} attempt {bar.attempt}: {bar.outcome}, "
               f"{timeline.format_seconds(bar.seconds)} from {bar.start:%H:%M:%S}")
        parts.append(f'<text x="0" y="{y + 15}" font-size="12">{_e(bar.item_id)} #{bar.attempt}</text>')
        parts.append(f'<rect x="{x:.1f}" y="{y + 3}" width="{width:.1f}" height="{ROW - 6}" rx="3" '
                     f'fill="{COLOURS[bar.kind]}"><title>{_e(tip)}</title></rect>')
    axis_y = ROW * len(bars) + 16
    parts.append(f'<text x="{LABEL_WIDTH}" y="{axis_y}" font-size="11">{origin:%H:%M:%S}</text>')
    parts.append(f'<text x="{WIDTH - 10}" y="{axis_y}" font-size="11" text-anchor="end">'
                 f'+{timeline.format_seconds(span)}</text>')
    parts.append("</svg>")
    legend = "".join(f'<span style="background:{colour}"></span>{_e(kind)}'
                     for kind, colour in COLOURS.items())
    return "\n".join(parts) + f'\n<p class="legend">{legend}</p>'


def _row(item: ItemReport) -> str:
    cost = "—" if item.cost is None else f"${item.cost:.2f}"
    verified = '<span class="ok">yes</span>' if item.verified else '<span class="bad">no</span>'
    cells = [f'<code class="id">{_e(item.id)}</code>', _e(item.title), _e(item.status), verified,
             _e(reason(item)), _e(attempts_cell(item)), f"{item.duration_s:.1f}s",
             str(len(item.files_changed)), cost, _e(", ".join(item.ownership_violations) or "—"),
             _e(item.error or "")]
    return "<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>"


_HEAD = ("item", "title", "status", "verified", "reason", "attempts", "duration", "files", "cost",
         "ownership violations", "error")


def to_html(report: WaveReport) -> str:
    """The page: summary, timeline, item table, reasons (halt, ceiling, error), notes, skipped items, the
    wave test's and items' log tails."""
    outcome = ('<span class="ok">success</span>' if report.success
               else '<span class="bad">failed</span>')  # as the PR comment says it
    body = [f"<h1>wavegit wave <code>{_e(report.wave_id)}</code>: {outcome}</h1>",
            "<p>" + " · ".join([*facts(report), f"phase {_e(report.phase)}", f"exit {report.exit_code}",
                                f"started {_e(report.started_at)}",
                                f"finished {_e(report.finished_at or '—')}"]) + "</p>"]
    stops = [(label, value) for label, value in (("error", report.error), ("halted", report.halt_reason),
                                                 ("over budget", report.ceiling_reason)) if value]
    body += [f"<p><strong>{label}:</strong> {_e(value)}</p>" for label, value in stops]
    body += ["<h2>Timeline</h2>", _svg(report)]
    if report.items:
        head = "".join(f"<th>{_e(name)}</th>" for name in _HEAD)
        body += ["<h2>Items</h2>", f"<table><tr>{head}</tr>", *map(_row, report.items), "</table>"]
    test = report.wave_test
    if test.command:
        result = "passed" if test.exit_code == 0 else f"failed (exit {test.exit_code})"
        body.append(f"<p>Wave test <code>{_e(test.command)}</code>: {_e(result)}</p>")
        if test.log_tail:
            body.append(f"<pre>{_e(test.log_tail)}</pre>")
    if report.notes:
        body += ["<h2>Notes</h2>", "<ul>", *(f"<li>{_e(note)}</li>" for note in report.notes), "</ul>"]
    if report.skipped:
        body += ["<h2>Skipped</h2>", "<ul>",
                 *(f"<li><code>{_e(s.id)}</code>: {_e(s.reason)}</li>" for s in report.skipped), "</ul>"]
    for item in report.items:
        if item.log_tail:
            body.append(f"<details><summary>{_e(item.id)}: log tail</summary><pre>{_e(item.log_tail)}</pre>"
                        "</details>")
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>wavegit wave {_e(report.wave_id)}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n"
            + "\n".join(body) + "\n</body>\n</html>\n")
