"""``wavegit claim [--max-items N]``: claim a wave for scale-out; print its GitHub Actions matrix.

Prints ``{"wave": W, "matrix": {"include": [{"item": ID}, ...]}}`` (``"wave": ""`` when nothing is ready)
once the claim is committed and the wave branch pushed at its base (:mod:`wavegit.github.scaleout`; at most
256 items). Exit 0; 2 bad input; 3 halted or over the day budget; 4 lost the compare-and-swap race.
"""

from __future__ import annotations

import argparse
import json
import sys

from wavegit.commands._context import Context
from wavegit.commands.plan import matrix, positive_int
from wavegit.github import scaleout


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-items", type=positive_int, metavar="N",
                        help=f"items the wave may take (default: max_items from the config; at most "
                             f"{scaleout.MAX_MATRIX_JOBS}, GitHub's limit of jobs per matrix)")


def run(args: argparse.Namespace) -> int:
    context = Context.open(args)
    asked = args.max_items or context.config.max_items
    if asked > scaleout.MAX_MATRIX_JOBS:
        print(f"wavegit: claiming at most {scaleout.MAX_MATRIX_JOBS} of the {asked} items asked for "
              "(GitHub runs at most that many jobs per matrix)", file=sys.stderr)
    claimed = scaleout.claim_wave(context.repo, context.config, context.store, max_items=asked)
    print(json.dumps({"wave": claimed.wave_id, "matrix": matrix(claimed.item_ids)}))
    return 0
