"""``wavegit report [WAVE] [--json | --markdown]``: show the last wave's report (or WAVE's) in the terminal.

Reports are the files ``wavegit run`` writes under ``<git dir>/wavegit/reports/`` (its last line names the
path). The text view is ``run``'s summary plus, for each item that did not land, why (the report table's
reason) and its last attempt's log; ``--json`` prints the report JSON, ``--markdown`` the PR comment.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from wavegit import report, worktree
from wavegit.commands.run import summary
from wavegit.errors import UsageError
from wavegit.repo import Repo, discover


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("wave", nargs="?", metavar="WAVE",
                        help="the wave id (or its branch wavegit/WAVE); default: the last report written")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print the report JSON")
    output.add_argument("--markdown", action="store_true", help="print the report as its PR comment")


def run(args: argparse.Namespace) -> int:
    repo = discover(args.directory)
    path = report_path(repo, args.wave)
    try:
        rep = report.WaveReport.from_json(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, report.ReportError) as exc:
        raise UsageError(f"{path}: cannot read the report: {exc}") from exc
    if args.json:
        print(rep.to_json())
    elif args.markdown:
        sys.stdout.write(report.to_markdown(rep))
    else:
        print(text(rep))
        print(f"report: {path}")
    return 0


def report_path(repo: Repo, wave: str | None) -> Path:
    """The JSON report of ``wave`` (an id or its branch name), or the newest one; UsageError when none."""
    if wave is not None:
        wave_id = worktree.parse_wave_branch(wave) or wave
        if not worktree.WAVE_ID_RE.match(wave_id):
            raise UsageError(f"WAVE {wave!r}: not a wave id (like w-20260101-120000-ab12) nor its branch")
        path = repo.report_file(wave_id, ".json")
        if not path.is_file():
            raise UsageError(f"no report for wave {wave_id!r} in {repo.reports_dir} "
                             "(`wavegit report` shows the last one)")
        return path
    found = sorted(repo.reports_dir.glob("*.json"), key=lambda p: (p.stat().st_mtime, p.name)) \
        if repo.reports_dir.is_dir() else []
    if not found:
        raise UsageError(f"no wave report in {repo.reports_dir} yet (`wavegit run` writes one per wave)")
    return found[-1]


def text(rep: report.WaveReport) -> str:
    """``run``'s summary, then each item that did not land: the reason and its last attempt's log."""
    lines = [summary(rep)]
    missed = [item for item in rep.items if report.reason(item) != "—"]
    if missed:
        width = max(len(item.id) for item in missed)
        lines.append("why not:")
        for item in missed:
            log = item.attempt_records[-1].log_path if item.attempt_records else ""
            lines.append(f"  {item.id:<{width}}  {report.reason(item)}" + (f"; log: {log}" if log else ""))
    return "\n".join(lines)
