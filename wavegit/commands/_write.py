"""What the commands that write the tracker (``init``, ``add``) share: ``--push``, ``--deadline`` and
opening the store.

With the configured remote present, every write goes to the remote's tracker branch: the push with a
lease *is* the compare-and-swap, so there is no "local only" write that could fork the tracker.
``--push`` says so explicitly and is accepted for scripts; without that remote it is an error
(exit 2, nothing written) rather than a silent local commit.
"""

from __future__ import annotations

import argparse
import math

from wavegit.commands._context import Context
from wavegit.core.errors import UsageError
from wavegit.trackerbranch.mutation import MutationResult
from wavegit.trackerbranch.store import GitStore

PUSH_HELP = ("publish to the remote's tracker branch; this is what happens anyway when the remote exists "
             "(the push is the compare-and-swap), and an error (exit 2) when it does not")
LOCAL_NOTE = ("Without the remote, the commit goes on the local tracker branch; if that branch is checked "
              "out and the changed files are clean there, they are updated too so `git status` stays clean "
              "(besides `wavegit pull` and init's fast-forward of a clean base branch, the only time wavegit "
              "writes to your checkout).")
DEADLINE_HELP = "give up after this many seconds of lost compare-and-swap races (exit 4); default %(default)s"


def add_write_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = LOCAL_NOTE
    parser.add_argument("--push", action="store_true", help=PUSH_HELP)
    parser.add_argument("--deadline", type=float, default=120.0, metavar="SECONDS", help=DEADLINE_HELP)


def open_target(args: argparse.Namespace) -> Context:
    """The command's context; checks ``--push`` and ``--deadline``."""
    if not math.isfinite(args.deadline) or args.deadline <= 0:
        raise UsageError(f"--deadline must be a positive number of seconds, not {args.deadline:g}")
    context = Context.open(args)
    if args.push and context.store.remote is None:
        raise UsageError(f"--push: this repository has no remote {context.config.remote!r}; "
                         "drop --push to commit to the local branch, or add the remote")
    return context


def landed(result: MutationResult, store: GitStore) -> str:
    """Where a write landed, for the one-line summary (mentions retries when there were any)."""
    assert result.commit is not None
    retries = f" after {result.attempts} attempts" if result.attempts > 1 else ""
    return f"commit {result.commit[:12]} {published(store)}{retries}"


def published(store: GitStore) -> str:
    """``published to origin/wavegit-tracker``, or ``on main`` for a local-only commit: where a tracker commit
    went, which with the tracker on its own branch is not the branch checked out."""
    return f"published to {store.target}" if store.remote else f"on {store.target}"
