"""``wavegit resume``: remove ``.wavegit/HALT`` so that waves may start again."""

from __future__ import annotations

import argparse

from wavegit import halt
from wavegit.commands._context import Context


def add_arguments(parser: argparse.ArgumentParser) -> None:
    del parser  # no options


def run(args: argparse.Namespace) -> int:
    result = halt.resume(Context.open(args).store)
    print(f"resumed (commit {result.commit[:12]})" if result.commit else "not halted; nothing to do")
    return 0
