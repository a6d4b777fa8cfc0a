"""``wavegit gate-test --pr N | --event --tree DIR --out FILE``: run the tests on a wave PR's merged result.

What runs, and when there is nothing to test: :mod:`wavegit.github.merged_test`; the verdict goes to
``--out`` for ``wavegit gate --verdict``. Exit 0 when the verdict is written (whatever it says), 2 for bad
input.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from wavegit.core.errors import EXIT_OK
from wavegit.core.repo import discover
from wavegit.github import api, gate
from wavegit.github.client import connect
from wavegit.github.merged_test import merged_test
from wavegit.github.store import GitHubStore
from wavegit.github.verdict import write_verdict
from wavegit.model.config import load_config


def add_arguments(parser: argparse.ArgumentParser) -> None:
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--pr", type=int, metavar="N", help="the pull request to test")
    which.add_argument("--event", action="store_true",
                       help="take the PR from the Actions event in $GITHUB_EVENT_PATH")
    parser.add_argument("--tree", type=Path, required=True, metavar="DIR",
                        help="a checkout of the PR's head (its code is only tested, in the sandbox)")
    parser.add_argument("--out", type=Path, required=True, metavar="FILE", help="where the verdict goes")


def run(args: argparse.Namespace) -> int:
    settings = api.require_settings()
    config = load_config(discover(args.directory).root)
    tree = discover(args.tree)
    number = args.pr if args.pr is not None else gate.event_pr_number(os.environ.get("GITHUB_EVENT_PATH"))
    client = connect(settings)
    verdict = merged_test(client, number, config, GitHubStore(client, config), tree)
    write_verdict(args.out, verdict)
    print(f"PR #{number}: {verdict.reason}")
    return EXIT_OK
