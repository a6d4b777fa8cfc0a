"""``wavegit drop ID [--force]``: remove an item from the tracker (README, "A stuck item, by hand": its
dependents, review and ``--force``).
"""

from __future__ import annotations

import argparse

from wavegit.commands._itemop import Op, Outcome, Read, add_item_arguments, run_op
from wavegit.core import yamledit
from wavegit.model import lifecycle, tracker


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_item_arguments(parser)
    parser.add_argument("--force", action="store_true",
                        help="drop it even when other items depend on it (removing it from their "
                             "depends_on) or it is in review")


def run(args: argparse.Namespace) -> int:
    op = Op("drop", args.id)

    def decide(read: Read) -> Outcome:
        if read.loaded.get(args.id) is None:
            earlier = read.earlier(op)
            if earlier is not None:
                return Outcome(None, f"{args.id} was dropped already by commit {earlier[:12]}")
        item = read.item(args.id)
        lifecycle.check_droppable(item, force=args.force)
        dependents = [other for other in read.loaded.items if item.id in other.depends_on]
        names = ", ".join(other.id for other in dependents)
        if dependents and not args.force:
            raise lifecycle.NotAllowed(f"{names} depend{'s' if len(dependents) == 1 else ''} on {item.id}: "
                                       f"drop them first, or --force (which removes {item.id} from their "
                                       "depends_on)")
        text = tracker.set_items_fields(read.text, {
            other.id: {"depends_on": [dep for dep in other.depends_on if dep != item.id] or None}
            for other in dependents})
        note = f" (and from the depends_on of {names})" if dependents else ""
        return Outcome(yamledit.remove_item(text, item.id), f"dropped {item.id} ({item.status}){note}")

    return run_op(args, op, decide)
