"""``wavegit sync [--dry-run] [--json]``: reconcile in-flight waves with their branches, PRs and leases.

One line per change on stdout, then one per branch kept for holding work not in the base branch
(``--json``: the list of both as JSON). Exit 0; 1 when the tracker
commit landed but a pull request's report comment could not be updated; 2 on bad input; 4 when the
compare-and-swap race was lost for good. GitHub is consulted when GITHUB_TOKEN and GITHUB_REPOSITORY
are set.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime, timezone

from wavegit.commands._context import Context
from wavegit.commands._write import published
from wavegit.core.errors import EXIT_OK, EXIT_WORK_FAILED
from wavegit.github import api
from wavegit.github.client import connect
from wavegit.model import report_markdown
from wavegit.model.columns import claims_of
from wavegit.sync import reconcile as sync
from wavegit.trackerbranch import claims


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dry-run", action="store_true", help="show what would change; write nothing")
    parser.add_argument("--json", action="store_true", help="print the list of changes as JSON")


def run(args: argparse.Namespace) -> int:
    context = Context.open(args)
    settings = api.settings_from_env()
    pulls = api.SyncPullRequests(connect(settings), report_markdown.MARKER) if settings is not None else None
    result = sync.sync(context.repo, context.config, context.store, pulls=pulls, dry_run=args.dry_run)
    if args.json:
        json.dump(result.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        prefix = "would " if args.dry_run else ""
        moves = {change.line() for change in result.items}
        lines = result.lines()
        for line in lines:
            print(f"{prefix}{'move ' if args.dry_run and line in moves else ''}{line}")
        if not lines:
            print("in sync: nothing to change")
        elif result.commit:
            print(f"tracker commit {result.commit[:12]} {published(context.store)}")
        for note in result.notes():
            print(note)
        moved = {change.id for change in result.items}
        loaded = context.store.load_head()[0]
        now = datetime.now(timezone.utc)
        held = claims.held(context.repo, context.config,
                             claims_of(i for i in loaded.items if i.id not in moved), now, fetched=True)
        for line in claims.lines(held, now):
            print(line)
    for error in result.errors:
        print(f"wavegit sync: {error}", file=sys.stderr)
    return EXIT_WORK_FAILED if result.errors else EXIT_OK
