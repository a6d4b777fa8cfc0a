"""``wavegit run [--max-items N] [--json] [--no-push]``: claim a wave, run it, record, report.

Exit 0 when the wave succeeded, 1 when some work failed, 2 on bad input, 3 when halted or over budget,
4 when a compare-and-swap race was lost for good. ``--json`` prints the report JSON (and nothing else) on
stdout; otherwise the progress goes to stderr and a short summary to stdout. With GITHUB_TOKEN and
GITHUB_REPOSITORY set, the pushed wave gets its pull request and report comment (``wavegit.github.publish``).
"""

from __future__ import annotations

import argparse
import signal
from pathlib import Path
from types import FrameType

from wavegit.commands._context import Context
from wavegit.engine.pipeline import WaveOptions, run_wave
from wavegit.errors import UsageError
from wavegit.github import publish
from wavegit.progress import Progress
from wavegit.report import WaveReport


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-items", type=int, metavar="N",
                        help="take at most N items (default: max_items of the config)")
    parser.add_argument("--json", action="store_true", help="print the report JSON on stdout")
    parser.add_argument("--no-push", action="store_true", help="keep the wave branch in this repository")


def _terminate(signum: int, frame: FrameType | None) -> None:
    del signum, frame
    # Like Ctrl-C: the wave cancels its workers and removes its worktrees on the way out.
    raise KeyboardInterrupt


def summary(report: WaveReport) -> str:
    """The wave for the terminal: outcome, one line per item (with its attempt number, as the progress
    lines and the tracker count it), a failed wave test's log and output tail, the notes."""
    outcome = "success" if report.success else "not a success"
    if not report.items:
        count = len(report.skipped)
        head = f"wave {report.wave_id}: nothing selected ({count} item{'' if count == 1 else 's'} skipped)"
        return "\n".join([head, *(f"  {skip.id}: {skip.reason}" for skip in report.skipped)])
    lines = [f"wave {report.wave_id}: {outcome}: {report.verified_count} of {len(report.items)} verified"
             + (f", branch {report.branch}" if report.branch else "")]
    if report.tracker_source:
        lines.append(f"  tracker: {report.tracker_source}")
    lines += [f"  {item.id}: {item.status}" + (f" ({item.error})" if item.error else "")
              + (f" [attempt {item.attempt_records[-1].attempt}]" if item.attempt_records else "")
              for item in report.items]
    test = report.wave_test
    if test.command and test.exit_code != 0:
        lines.append(f"  wave test {test.command!r} failed (exit {test.exit_code}); log: {test.log_path}")
        lines += [f"    | {line}" for line in test.log_tail.splitlines()]
    lines += [f"  note: {note}" for note in report.notes]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    if args.max_items is not None and args.max_items < 1:
        raise UsageError(f"--max-items must be at least 1, got {args.max_items}")
    context = Context.governed(args)
    repo, config, store, source = context.repo, context.config, context.store, context.config_source
    delivery = publish.delivery(config, store)
    signal.signal(signal.SIGTERM, _terminate)
    if args.json:
        outcome = run_wave(repo, config, store, max_items=args.max_items, delivery=delivery,
                           options=WaveOptions(push=not args.no_push, config_source=source))
    else:
        with Progress() as progress:
            outcome = run_wave(repo, config, store, max_items=args.max_items, delivery=delivery,
                               options=WaveOptions(push=not args.no_push, events=progress,
                                                  config_source=source))
    if args.json:
        print(outcome.report.to_json())
        return outcome.exit_code
    print(summary(outcome.report))
    markdown = repo.report_file(outcome.report.wave_id, ".md")
    if markdown.is_file():
        print(f"report: {_shown(markdown)}")
    return outcome.exit_code


def _shown(path: Path) -> str:
    """``path`` relative to the working directory when it is below it (as git prints paths)."""
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)
