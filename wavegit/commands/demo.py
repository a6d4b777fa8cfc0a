"""``wavegit demo [--keep DIR] [--json]``: a whole wave in a throwaway repository, no network.

Exit 0 when every item behaved as the demo's backlog was built to show (two of its items are meant to
fail), 1 otherwise, 2 for a bad ``--keep``. The repository is deleted afterwards unless ``--keep``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from wavegit.core.errors import EXIT_OK, EXIT_WORK_FAILED, WavegitError
from wavegit.demo import walkthrough


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="build the demo in DIR (new or empty) and keep it afterwards")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON document (plan, report, tracker diff, sync, problems) on stdout")


def run(args: argparse.Namespace) -> int:
    directory = walkthrough.prepare_directory(args.keep)

    def say(text: str) -> None:
        # With --json stdout holds only the JSON document; the narration goes to stderr.
        print(text, file=sys.stderr if args.json else sys.stdout, flush=True)

    try:
        try:
            result = walkthrough.run_demo(directory, say)
        except WavegitError as exc:
            result = walkthrough.DemoResult(directory, problems=[f"the demo stopped: {exc}"])
    finally:
        if args.keep is None:
            shutil.rmtree(directory, ignore_errors=True)
    where = f"kept in {directory}" if args.keep else f"{directory} (deleted; use --keep DIR to keep it)"
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    say(f"== the throwaway repository: {where}")
    for problem in result.problems:
        say(f"not as designed: {problem}")
    say("demo: every item behaved as designed" if result.ok else "demo: FAILED")
    return EXIT_OK if result.ok else EXIT_WORK_FAILED
