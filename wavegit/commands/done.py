"""``wavegit done ID [--merge-sha SHA]``: mark an item done by hand (its change is in the base branch).

``--merge-sha`` must name a commit of the base branch (``<remote>/<base_branch>``, fetched, or the local
branch without the remote) and is recorded in full; the rest is README, "A stuck item, by hand".
"""

from __future__ import annotations

import argparse
import re

from wavegit.commands._context import Context
from wavegit.commands._itemop import Op, Outcome, Read, add_item_arguments, run_op
from wavegit.commands._write import open_target
from wavegit.core import git
from wavegit.core.errors import UsageError
from wavegit.model import lifecycle

_SHA_RE = re.compile(r"[0-9a-f]{7,64}\Z")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_item_arguments(parser)
    parser.add_argument("--merge-sha", metavar="SHA", help="the commit that brought the change into the base "
                        "branch (recorded as merge_sha)")


def run(args: argparse.Namespace) -> int:
    merge_sha = None if args.merge_sha is None else str(args.merge_sha).strip().lower()
    if merge_sha is not None and not _SHA_RE.match(merge_sha):
        raise UsageError(f"--merge-sha {args.merge_sha!r}: must be a hexadecimal commit SHA (7 to 64 digits)")
    context = open_target(args)
    if merge_sha is not None:
        merge_sha = _on_base(context, merge_sha)

    def decide(read: Read) -> Outcome:
        item = read.item(args.id)
        update = lifecycle.mark_done(item, merge_sha, read.at)
        if update is None:
            sha = f" (merge_sha {item.merge_sha})" if item.merge_sha else ""
            return Outcome(None, f"{item.id} is already done{sha}")
        return read.change(item, update, f" (merge_sha {merge_sha})" if merge_sha else "")

    return run_op(args, Op("done", args.id), decide, context)


def _on_base(context: Context, sha: str) -> str:
    """The full SHA of the commit ``sha`` names, which must be on the base branch."""
    root, config = context.repo.root, context.config
    ref, where = context.repo.branch_ref(config.remote, config.base_branch)
    commit = git.resolve_commit(root, sha)
    if commit is None:
        raise UsageError(f"--merge-sha {sha}: no such commit in this repository (fetch it first, or check "
                         "the SHA); nothing written")
    if not git.is_ancestor(root, commit, ref):
        raise UsageError(f"--merge-sha {sha}: commit {commit[:12]} is not on {where} (the base branch): give "
                         "the commit that brought the change there; nothing written")
    return commit
