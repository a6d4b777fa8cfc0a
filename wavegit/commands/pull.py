"""``wavegit pull``: bring the local tracker branch up to date with the remote's, by fast-forward only, its
checkout's files with it (README, "Where the tracker lives"; refusals are exit 2, nothing changed).
"""

from __future__ import annotations

import argparse

from wavegit.commands._context import Context
from wavegit.core.errors import UsageError
from wavegit.trackerbranch import checkout_sync


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = ("wavegit writes the tracker on the remote; this brings that branch here (`git log "
                     "<tracker_branch>`, `git show <tracker_branch>:.wavegit/tracker.yaml`).")


def run(args: argparse.Namespace) -> int:
    context = Context.open(args)
    store, branch = context.store, context.config.tracker_branch
    if store.remote is None:
        raise UsageError(f"no remote {context.config.remote!r}: the tracker is the local branch {branch} "
                         "already; nothing to pull")
    snapshot = store.read()
    if snapshot.commit is None:
        raise UsageError(f"{store.target} does not exist: run `wavegit init` first")
    moved = checkout_sync.fast_forward(context.repo, branch, snapshot.commit, store.target)
    tracker = store.source(snapshot.blob_sha) if snapshot.blob_sha else f"none on {store.target}"
    if moved is None:
        print(f"{branch} is up to date with {store.target} ({snapshot.commit[:12]}); tracker {tracker}")
    elif moved.old is None:
        print(f"created {branch} at {store.target} ({snapshot.commit[:12]}); tracker {tracker}")
    else:
        files = f", files updated in {moved.worktree}" if moved.worktree is not None else ""
        span = f"{moved.old[:12]}..{moved.new[:12]}"
        print(f"fast-forwarded {branch} {span} to {store.target}{files}; tracker {tracker}")
    return 0
