"""``wavegit status [WAVE] [--all] [--json]``: the live state of waves run from this repository.

Read from the waves' event logs (``<git dir>/wavegit/events/<wave>.jsonl``, written as each wave runs): by
default the waves that have not finished, newest first, each item with its latest state and attempt; with
WAVE, that wave; with ``--all``, every logged wave. A wave whose scheduler was killed never logs its end: it
shows as not finished until ``wavegit sync`` deals with its claims.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from wavegit.engine import eventlog
from wavegit.errors import UsageError
from wavegit.repo import discover


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("wave", nargs="?", metavar="WAVE", help="one wave (default: those not finished)")
    parser.add_argument("--all", action="store_true", help="every logged wave, finished ones too")
    parser.add_argument("--json", action="store_true", help="print the states as JSON")


def run(args: argparse.Namespace) -> int:
    repo = discover(args.directory)
    logs = sorted(repo.events_dir.glob("*.jsonl"), reverse=True) if repo.events_dir.is_dir() else []
    if args.wave:
        logs = [log for log in logs if log.stem == args.wave]
        if not logs:
            raise UsageError(f"{args.wave}: no event log of that wave in {repo.events_dir}")
    waves = [eventlog.read(log) for log in logs]
    if not (args.wave or args.all):
        waves = [wave for wave in waves if wave.finished is None]
    if args.json:
        print(json.dumps([asdict(wave) for wave in waves]))
        return 0
    if not waves:
        print("no wave is running" + ("" if args.all else " (--all lists finished ones)"))
        return 0
    for wave in waves:
        print(_describe(wave))
    return 0


def _describe(wave: eventlog.WaveState) -> str:
    if wave.finished is None:
        head = f"wave {wave.wave_id}: running since {wave.started_at}"
    else:
        end = wave.finished
        verdict = "succeeded" if end.get("success") else "failed"
        head = f"wave {wave.wave_id}: {verdict}, exit {end.get('exit_code')} at {end.get('at')}"
    width = max((len(item_id) for item_id in wave.items), default=2)
    lines = [head]
    for item_id, state in wave.items.items():
        attempt = f"attempt {state.attempt}" if state.attempt else ""
        lines.append(f"  {item_id:<{width}}  {state.state:<11}  {attempt:<10}  {state.detail}".rstrip())
    return "\n".join(lines)
