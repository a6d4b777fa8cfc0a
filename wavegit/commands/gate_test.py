"""``wavegit gate-test --pr N | --event --tree DIR --out FILE``: run the tests on a wave PR's merged result.

For the gate workflow's job that holds no write token: when the PR's head merges the base into the head
its report describes ("Update branch"), the reported items' tests and ``wave_test`` run on that head,
checked out at ``--tree``; the verdict is written to ``--out`` for ``wavegit gate --verdict``. Any other
head gets a verdict saying there was nothing to test. The configuration comes from the checkout at
``-C`` (the base branch), the tracker from the tracker branch through the API. Exit 0 when the verdict is
written (whatever it says), 2 for bad input.
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
