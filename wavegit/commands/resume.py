"""``wavegit resume``: remove ``.wavegit/HALT`` so that waves may start again."""

from __future__ import annotations

import argparse

from wavegit import halt
from wavegit.config import load_config
from wavegit.repo import discover
from wavegit.store import GitStore


def add_arguments(parser: argparse.ArgumentParser) -> None:
    del parser  # no options


def run(args: argparse.Namespace) -> int:
    repo = discover(args.directory)
    result = halt.resume(GitStore(repo, load_config(repo.root)))
    print(f"resumed (commit {result.commit[:12]})" if result.commit else "not halted; nothing to do")
    return 0
