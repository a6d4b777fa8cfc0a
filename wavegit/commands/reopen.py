"""``wavegit reopen ID --reason TEXT``: send an item back to ``todo`` with its attempts reset.

For a ``failed``, ``blocked``, ``done`` or ``review`` item (or a ``todo`` one with attempts counted). The
reason becomes its ``last_error``, which the next worker is told. One compare-and-swap commit with a
``Wavegit-Op: reopen ID`` trailer; an item ``todo`` with no attempt counted is exit 0, nothing written.
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
