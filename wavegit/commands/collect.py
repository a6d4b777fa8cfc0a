"""``wavegit collect --wave W [--json]``: finish a scaled-out wave from its item branches, like the end of
``wavegit run`` (:mod:`wavegit.github.scaleout`), with its exit codes and output (``--json``: the report).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from wavegit.attempts import wavebranch
from wavegit.commands._context import Context
from wavegit.commands._summary import summary
from wavegit.github import publish, scaleout


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--wave", required=True, metavar="W", help="the wave id printed by `wavegit claim`")
    parser.add_argument("--json", action="store_true", help="print the report JSON on stdout")
    parser.add_argument("--bundles", type=Path, metavar="DIR",
                        help="also take each item's result from DIR/wavegit-result-<ITEM>/<ITEM>.bundle "
                        "(written by `work --bundle`, downloaded as the artifact wavegit-result-<ITEM>)")


def run(args: argparse.Namespace) -> int:
    wave_id = wavebranch.wave_option(args.wave)
    context = Context.governed(args)
    delivery = publish.delivery(context.config, context.store)
    outcome = scaleout.collect(context.repo, context.config, context.store, wave_id, delivery=delivery,
                               bundles=args.bundles)
    print(outcome.report.to_json() if args.json else summary(outcome.report))
    return outcome.exit_code
