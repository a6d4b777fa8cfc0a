"""``wavegit work --wave W --item ID``: run one claimed item of a scaled-out wave; push its result branch
(:mod:`wavegit.github.scaleout`). Exit 0 when verified, 1 when not (the result is pushed either way), 2 when
the item is not claimed by that wave or the wave branch is missing, 3 over the day budget.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from wavegit.attempts import wavebranch
from wavegit.commands._context import Context
from wavegit.core.errors import EXIT_OK, EXIT_WORK_FAILED
from wavegit.github import scaleout


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--wave", required=True, metavar="W", help="the wave id printed by `wavegit claim`")
    parser.add_argument("--item", required=True, metavar="ID", help="the claimed item to run")
    parser.add_argument("--bundle", type=Path, metavar="PATH",
                        help="write the result branch to this git bundle instead of pushing it")


def run(args: argparse.Namespace) -> int:
    wave_id = wavebranch.wave_option(args.wave)
    context = Context.governed(args)
    item_run = scaleout.work(context.repo, context.config, context.store, wave_id, args.item,
                             bundle=args.bundle)
    where = f"wrote {args.bundle}" if args.bundle else "pushed"
    pushed = f"{where} {wavebranch.item_branch(wave_id, args.item)}"
    if item_run.verified:
        print(f"{args.item}: verified; {pushed}")
        return EXIT_OK
    print(f"{args.item}: not verified ({item_run.error}); {pushed}")
    return EXIT_WORK_FAILED
