"""``wavegit run [--max-items N | --only ID...] [--continuous [--watch]] [--json] [--no-push]``: claim a wave,
run it, record, report; with ``--continuous``, rolling waves (``engine.rolling``) until nothing is ready and
nothing runs (``--watch``: until interrupted), each wave's report as it ends (with ``--json``, one compact
JSON report per line: JSON Lines).

Exit 0 when the wave succeeded, 1 when some work failed, 2 on bad input, 3 when halted or over budget,
4 when a compare-and-swap race was lost for good. The progress goes to stderr and a short summary to stdout;
with ``--json``, stdout gets the report JSON and nothing else, on every exit path, and stderr only what went
wrong: a wave that ended before its claim
(bad config, tracker or preflight, halted, over budget, a lost claim) prints a report with no wave id, its
``phase``, ``error``, ``halt_reason`` or ``ceiling_reason`` and ``exit_code`` (``engine.outcome.stopped``);
the message is on stderr as well. A wave interrupted after its claim (SIGTERM, Ctrl-C) prints its report
and exits 130. ``--only ID...`` runs exactly those items or nothing (``engine.only``).
With GITHUB_TOKEN and GITHUB_REPOSITORY set, the pushed wave gets its pull request and report comment
(``wavegit.github.publish``).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from dataclasses import replace
from pathlib import Path
from types import FrameType

from wavegit.commands._context import Context
from wavegit.commands._progress import Progress
from wavegit.commands._summary import summary
from wavegit.core import interrupts
from wavegit.core.errors import EXIT_INTERRUPTED, UsageError, ValidationError, WavegitError
from wavegit.core.repo import Repo
from wavegit.engine.outcome import WaveOutcome, stopped
from wavegit.engine.pipeline import Delivery, Interrupted, NoDelivery, WaveOptions, run_wave
from wavegit.engine.rolling import RollingOptions, Scheduler
from wavegit.engine.runs import utc_now
from wavegit.model.config import Config
from wavegit.model.lifecycle import one_line
from wavegit.trackerbranch.store import TrackerStore


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-items", type=int, metavar="N",
                        help="take at most N items (default: max_items of the config)")
    parser.add_argument("--only", nargs="+", metavar="ID",
                        help="run exactly these items now (still disjoint, still claimed first), or nothing")
    parser.add_argument("--json", action="store_true",
                        help="print the report JSON on stdout, whatever the exit (no progress lines)")
    parser.add_argument("--no-push", action="store_true", help="keep the wave branch in this repository")
    parser.add_argument("--continuous", action="store_true",
                        help="rolling waves: keep `concurrency` workers busy until nothing is ready and "
                             "nothing runs; each wave is delivered as soon as its last item ends")
    parser.add_argument("--watch", action="store_true",
                        help="with --continuous: keep polling the tracker for new items until interrupted")


def _terminate(signum: int, frame: FrameType | None) -> None:
    del signum, frame
    # Like Ctrl-C: the wave cancels its workers and removes its worktrees on the way out.
    raise KeyboardInterrupt


def _stop_on_signals() -> None:
    """SIGTERM, and SIGINT even when ignored at start, stop the run as Ctrl-C does: a shell without job
    control starts ``wavegit run --watch &`` with SIGINT ignored, and ``kill -INT`` then did nothing; one
    that came while the CLI imported this module is raised now (:func:`.interrupts.take_back`)."""
    signal.signal(signal.SIGTERM, _terminate)
    interrupts.take_back()


def run(args: argparse.Namespace) -> int:
    started = utc_now()
    repo: Repo | None = None
    try:
        # First: reading the config a wave obeys fetches (some 0.3 s); a SIGINT ignored meanwhile was lost.
        _stop_on_signals()
        if args.continuous or args.watch:
            return _continuous(args)
        outcome, repo = _wave(args)
    except WavegitError as exc:
        if not args.json:
            raise
        # Said on stderr as the CLI would, and as a report on stdout for whoever parses it.
        print(exc if isinstance(exc, ValidationError) else f"wavegit run: {exc}", file=sys.stderr)
        outcome = stopped(exc, started)
    except KeyboardInterrupt as exc:
        # Before the wave had claims to settle (after, it raises Interrupted with its report).
        if not args.json:
            raise
        print("wavegit run: interrupted", file=sys.stderr)
        outcome = stopped(exc, started)
    if args.json:
        # --continuous prints JSON Lines: this report, of a run refused before its first claim, is one.
        print(outcome.report.to_json(indent=None if args.continuous else 2))
        return outcome.exit_code
    print(summary(outcome.report))
    markdown = repo.report_file(outcome.report.wave_id, ".md") if repo is not None else None
    if markdown is not None and markdown.is_file():
        print(f"report: {_shown(markdown)}")
    return outcome.exit_code


def _only(args: argparse.Namespace) -> tuple[str, ...]:
    if args.only and args.max_items is not None:
        raise UsageError("--only and --max-items do not mix: --only takes exactly the items it names")
    return tuple(dict.fromkeys(args.only or ()))


def _wave(args: argparse.Namespace) -> tuple[WaveOutcome, Repo]:
    if args.max_items is not None and args.max_items < 1:
        raise UsageError(f"--max-items must be at least 1, got {args.max_items}")
    only = _only(args)
    context = Context.governed(args)
    repo, config, store, source = context.repo, context.config, context.store, context.config_source
    delivery = _delivery(config, store)
    options = WaveOptions(push=not args.no_push, config_source=source, only=only)
    try:
        if args.json:
            # No progress lines: stderr then carries only what went wrong (the Action annotates every line).
            return run_wave(repo, config, store, max_items=len(only) or args.max_items, delivery=delivery,
                            options=options), repo
        with Progress() as progress:
            outcome = run_wave(repo, config, store, max_items=len(only) or args.max_items, delivery=delivery,
                               options=replace(options, events=progress))
        return outcome, repo
    except Interrupted as exc:
        if exc.report is None:
            raise
        # Its claims settled, it was recorded and reported: said as any wave's end is (its summary and report
        # path, or the JSON), as `run --continuous` does; the text output said only "interrupted".
        print("wavegit run: interrupted", file=sys.stderr)
        return WaveOutcome(exc.report, EXIT_INTERRUPTED), repo


def _continuous(args: argparse.Namespace) -> int:
    if not args.continuous:
        raise UsageError("--watch goes with --continuous")
    if args.only:
        raise UsageError("--only and --continuous do not mix: --only runs one wave of exactly those items")
    if args.max_items is not None and args.max_items < 1:
        raise UsageError(f"--max-items must be at least 1, got {args.max_items}")
    context = Context.governed(args)
    repo = context.repo

    def reported(outcome: WaveOutcome) -> None:
        if args.json:
            print(outcome.report.to_json(indent=None), flush=True)
            return
        print(summary(outcome.report))
        markdown = repo.report_file(outcome.report.wave_id, ".md")
        if markdown.is_file():
            print(f"report: {_shown(markdown)}", flush=True)

    options = WaveOptions(push=not args.no_push, config_source=context.config_source)
    rolling = RollingOptions(max_items=args.max_items, watch=args.watch)
    delivery = _delivery(context.config, context.store)
    # Raised before anything was claimed (bad input, halted, over budget): it ends as `wavegit run` does.
    with Progress() as progress:
        scheduler = Scheduler(repo, context.config, context.store, delivery=delivery,
                              options=options if args.json else replace(options, events=progress),
                              rolling=rolling, on_report=reported)
        result = scheduler.run()
    if result.stopped is not None:
        print(f"wavegit run: no new claims: {one_line(str(result.stopped))}", file=sys.stderr)
    return result.exit_code


def _delivery(config: Config, store: TrackerStore) -> Delivery:
    """GitHub's delivery when GitHub is configured (``wavegit.github.publish.delivery``), else none."""
    if not os.environ.get("GITHUB_REPOSITORY"):
        # No GitHub without a repository to publish to (``github.api.settings_from_env``): a wave that
        # stays a branch never imports the GitHub modules (15-50 ms of its start).
        return NoDelivery()
    from wavegit.github import publish

    return publish.delivery(config, store)


def _shown(path: Path) -> str:
    """``path`` relative to the working directory when it is below it (as git prints paths)."""
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)
