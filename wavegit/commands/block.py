"""``wavegit block ID --reason TEXT [--force]``: keep an item out of every wave until it is reopened; an item
in review is refused, with the way out for a PR and for none (README, "A stuck item, by hand").
"""

from __future__ import annotations

import argparse

from wavegit.commands._itemop import Op, Outcome, Read, add_item_arguments, reason_of, run_op
from wavegit.model import lifecycle


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_item_arguments(parser, reason="why it waits (kept as its last_error)")
    parser.add_argument("--force", action="store_true", help="replace the reason of an item blocked already")


def run(args: argparse.Namespace) -> int:
    reason = reason_of(args)

    def decide(read: Read) -> Outcome:
        item = read.item(args.id)
        if item.status == lifecycle.Status.REVIEW:
            if item.pr is not None:
                raise lifecycle.NotAllowed(
                    f"{item.id} is in review (PR #{item.pr}): its change may still be merged; close the pull "
                    "request (`wavegit sync` then returns it to todo) and block it after")
            raise lifecycle.NotAllowed(
                f"{item.id} is in review (wave {item.wave}, no pull request): its change may still be "
                f"merged; `wavegit reopen {item.id} --reason ...` returns it to todo, then block it")
        update = lifecycle.block(item, reason, read.at, force=args.force)
        if update is None:
            hint = "" if args.force else " (--force replaces the reason)"
            return Outcome(None, f"{item.id} is already blocked: {item.last_error}{hint}")
        return read.change(item, update)

    return run_op(args, Op("block", args.id, reason), decide)
