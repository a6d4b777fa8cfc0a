"""``wavegit ls [--status S ...] [--json]``: the tracker's items as a table or a JSON list."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from wavegit import tracker
from wavegit.commands._workfile import read_tracker_text
from wavegit.config import load_config
from wavegit.repo import discover

_COLUMNS = ("id", "status", "priority", "wave", "pr", "title")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--status", action="extend", nargs="+", choices=tracker.STATUSES, metavar="S",
                        help=f"only items with these statuses ({', '.join(tracker.STATUSES)})")
    parser.add_argument("--json", action="store_true", help="print a JSON list of item objects")


def run(args: argparse.Namespace) -> int:
    repo = discover(args.directory)
    cache = repo.state_dir / "cache"
    config = load_config(repo.root, cache)
    source = read_tracker_text(repo.root / config.tracker_path, config.tracker_path)
    # Non-strict: list every item even when some are invalid (those carry their problems).
    items = tracker.load_cached(source.text, source.blob_sha, cache, source.display_path, strict=False).items
    if args.status:
        items = tuple(item for item in items if item.status in args.status)
    if args.json:
        print(json.dumps([dataclasses.asdict(item) for item in items], indent=2))
    else:
        print(_table(items))
    invalid = sum(1 for item in items if item.problems)
    if invalid:
        print(f"{invalid} item(s) have problems; run `wavegit validate` for details", file=sys.stderr)
    return 0


def _table(items: tuple[tracker.Item, ...]) -> str:
    rows = [_COLUMNS] + [tuple(_cell(getattr(item, name)) for name in _COLUMNS) for item in items]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS) - 1)]
    # The last column (title) is not padded, so no line carries trailing spaces.
    return "\n".join("  ".join([*(cell.ljust(w) for cell, w in zip(row[:-1], widths, strict=True)), row[-1]])
                     .rstrip() for row in rows)


def _cell(value: object) -> str:
    return "-" if value is None or value == "" else " ".join(str(value).split())
