"""``wavegit reopen ID --reason TEXT``: send an item back to ``todo`` with its attempts reset, the reason as
its ``last_error`` (README, "A stuck item, by hand").
"""

from __future__ import annotations

import argparse

from wavegit.commands._itemop import Op, Outcome, Read, add_item_arguments, reason_of, run_op
from wavegit.model import lifecycle


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_item_arguments(parser, reason="why it needs another try (kept as its last_error; the next worker "
                                      "is told)")


def run(args: argparse.Namespace) -> int:
    reason = reason_of(args)

    def decide(read: Read) -> Outcome:
        item = read.item(args.id)
        update = lifecycle.reopen_by_hand(item, reason, read.at)
        if update is None:
            return Outcome(None, f"{item.id} is already todo with no attempt counted")
        attempts = f" (attempts {item.attempts} -> 0)" if item.attempts else ""
        return read.change(item, update, attempts)

    return run_op(args, Op("reopen", args.id, reason), decide)
