"""``wavegit resume``: remove ``.wavegit/HALT`` so that waves may start again."""

from __future__ import annotations

import argparse

from wavegit.commands._context import Context
from wavegit.commands._write import published
from wavegit.trackerbranch import halt


def add_arguments(parser: argparse.ArgumentParser) -> None:
    del parser  # no options


def run(args: argparse.Namespace) -> int:
    store = Context.open(args).store
    result = halt.resume(store)
    print(f"resumed (commit {result.commit[:12]} {published(store)})" if result.commit else
          "not halted; nothing to do")
    return 0
