"""``wavegit report [WAVE] [--json | --markdown | --html] [-o FILE]``: the last wave's report, or WAVE's.

Reports are the files ``wavegit run`` writes under ``<git dir>/wavegit/reports/`` (its last line names the
path). A wave that pushed its branch pushed its report too (``wavegit.engine.shared_report``): WAVE's report
missing here is fetched from the remote, so any clone shows it. The text view is ``run``'s summary plus,
for each item that did not land, why (the report table's
reason) and its last attempt's log; ``--json`` prints the report JSON, ``--markdown`` the PR comment (with
its timeline, a Mermaid gantt), ``--html`` writes one self-contained page (``wavegit.model.report_html``) next
to the JSON report, ``<wave>.html``, and prints its path. ``-o FILE`` writes any of them to FILE instead.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from wavegit.attempts import wavebranch
from wavegit.commands._summary import summary
from wavegit.core.errors import UsageError
from wavegit.core.repo import Repo, discover
from wavegit.core.terminal import inert
from wavegit.engine import shared_report
from wavegit.model import config, report, report_html, report_markdown


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("wave", nargs="?", metavar="WAVE",
                        help="the wave id (or its branch wavegit/WAVE); default: the last report written")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print the report JSON")
    output.add_argument("--markdown", action="store_true", help="print the report as its PR comment")
    output.add_argument("--html", action="store_true",
                        help="write a self-contained HTML page with the wave's timeline (default: next to "
                             "the JSON report) and print its path")
    parser.add_argument("-o", "--output", metavar="FILE", type=Path, help="write the output to FILE")


def run(args: argparse.Namespace) -> int:
    repo = discover(args.directory)
    path = report_path(repo, args.wave)
    try:
        rep = report.WaveReport.from_json(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, report.ReportError) as exc:
        raise UsageError(f"{path}: cannot read the report: {exc}") from exc
    if args.html:
        target = args.output or path.with_suffix(".html")
        _write(target, report_html.to_html(rep))
        print(f"report: {target}")
    elif args.json:
        _emit(args.output, rep.to_json() + "\n")
    elif args.markdown:
        _emit(args.output, report_markdown.to_markdown(rep))
    else:
        _emit(args.output, f"{text(rep)}\nreport: {path}\n")
    return 0


def _emit(target: Path | None, content: str) -> None:
    if target is None:
        sys.stdout.write(content)
    else:
        _write(target, content)


def _write(target: Path, content: str) -> None:
    try:
        target.write_text(content, encoding="utf-8", errors="backslashreplace")
    except OSError as exc:
        raise UsageError(f"-o {target}: cannot write it: {exc.strerror or exc}") from exc


def report_path(repo: Repo, wave: str | None) -> Path:
    """The JSON report of ``wave`` (an id or its branch name), or the newest one; UsageError when none."""
    if wave is not None:
        wave_id = wavebranch.parse_wave_branch(wave) or wavebranch.wave_id_of(wave)
        if wave_id is None:
            raise UsageError(f"WAVE {wave!r}: not a wave id (like w-20260101-120000-ab12) nor its branch")
        path = repo.report_file(wave_id, ".json")
        if path.is_file():
            return path
        configured = config.load_config(repo.root, repo.cache_dir).remote
        remote = configured if repo.has_remote(configured) else None
        fetched = shared_report.fetch(repo, remote, wave_id)
        if fetched is None:
            where = f" nor on {remote} ({shared_report.ref(wave_id)})" if remote else ""
            raise UsageError(f"no report for wave {wave_id!r} in {repo.reports_dir}{where} "
                             "(`wavegit report` shows the last one)")
        return fetched
    found = sorted(repo.reports_dir.glob("*.json"), key=lambda p: (p.stat().st_mtime, p.name)) \
        if repo.reports_dir.is_dir() else []
    if not found:
        raise UsageError(f"no wave report in {repo.reports_dir} yet (`wavegit run` writes one per wave)")
    return found[-1]


def text(rep: report.WaveReport) -> str:
    """``run``'s summary, then each item that did not land: the reason and its last attempt's log."""
    lines = [summary(rep)]
    missed = [item for item in rep.items if report_markdown.reason(item) != "—"]
    if missed:
        width = max(len(item.id) for item in missed)
        lines.append("why not:")
        for item in missed:
            log = item.attempt_records[-1].failure_log() if item.attempt_records else ""
            line = f"  {item.id:<{width}}  {report_markdown.reason(item)}" + (f"; log: {log}" if log else "")
            lines.append(inert(line))
    return "\n".join(lines)
