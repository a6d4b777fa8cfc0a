"""``wavegit halt --reason TEXT``: commit ``.wavegit/HALT`` so that no new wave or attempt starts."""

from __future__ import annotations

import argparse

from wavegit import halt
from wavegit.commands._context import Context
from wavegit.errors import UsageError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--reason", required=True, metavar="TEXT",
                        help="why work stops (recorded with who and when in .wavegit/HALT)")


def run(args: argparse.Namespace) -> int:
    reason = str(args.reason).strip()
    if not reason:
        raise UsageError("--reason must not be empty: say why work stops")
    context = Context.open(args)
    result = halt.halt(context.store, reason=reason, who=halt.current_user(context.repo.root))
    where = f"commit {result.commit[:12]}" if result.commit else "already halted with this reason"
    print(f"halted: {reason} ({where})")
    return 0
