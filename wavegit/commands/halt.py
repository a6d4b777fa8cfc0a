"""``wavegit halt --reason TEXT [--force]``: commit ``.wavegit/HALT`` so that no new wave or attempt starts.

Already halted: says by whom and why, and keeps that first notice (exit 0, nothing written) unless
``--force``.
"""

from __future__ import annotations

import argparse

from wavegit.commands._context import Context
from wavegit.commands._write import published
from wavegit.core import git
from wavegit.core.errors import UsageError
from wavegit.trackerbranch import halt


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--reason", required=True, metavar="TEXT",
                        help="why work stops (recorded with who and when in .wavegit/HALT)")
    parser.add_argument("--force", action="store_true", help="replace the notice when already halted")


def run(args: argparse.Namespace) -> int:
    reason = str(args.reason).strip()
    if not reason:
        raise UsageError("--reason must not be empty: say why work stops")
    context = Context.open(args)
    result = halt.halt(context.store, reason=reason, who=git.committer_ident(context.repo.root),
                       force=args.force)
    if result.commit is None:
        current = halt.halt_text(context.store, result.snapshot) or ""
        hint = "" if args.force else "; --force replaces it"
        print(f"already {halt.describe(current)}; the first notice stands{hint}; nothing written")
        return 0
    print(f"halted: {reason} (commit {result.commit[:12]} {published(context.store)})")
    return 0
