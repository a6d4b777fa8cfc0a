"""``wavegit claim [--max-items N]``: claim a wave for scale-out; print its GitHub Actions matrix.

Prints ``{"include": [{"item": ID}, ...], "wave": W}`` on stdout (``"wave": ""`` and no items when nothing
is ready) after the claim commit and after pushing the wave branch at its base, where every ``wavegit work``
starts. Exit 0; 2 bad input; 3 halted or over the day budget; 4 lost the compare-and-swap race.
"""

from __future__ import annotations

import argparse
import json

from wavegit import scaleout
from wavegit.commands._context import Context
from wavegit.commands.plan import matrix, positive_int


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-items", type=positive_int, metavar="N",
                        help="items the wave may take (default: max_items from the config)")


def run(args: argparse.Namespace) -> int:
    context = Context.open(args)
    claimed = scaleout.claim_wave(context.repo, context.config, context.store,
                                  max_items=args.max_items or context.config.max_items)
    print(json.dumps(matrix(claimed.wave_id, claimed.item_ids)))
    return 0
