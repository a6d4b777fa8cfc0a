"""``wavegit ls [--status S ...] [--json]``: the tracker's items as a table or a JSON list."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from datetime import datetime, timezone

from wavegit.commands._context import Context
from wavegit.core.terminal import inert
from wavegit.model import lifecycle, tracker
from wavegit.model.columns import claims_of
from wavegit.trackerbranch import claims

_COLUMNS = ("id", "status", "priority", "wave", "pr", "title")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--status", action="extend", nargs="+", choices=lifecycle.STATUSES, metavar="S",
                        help=f"only items with these statuses ({', '.join(lifecycle.STATUSES)})")
    parser.add_argument("--json", action="store_true", help="print a JSON list of item objects")
    parser.add_argument("--fetch", action="store_true", help="fetch the tracker branch from the remote first")


def run(args: argparse.Namespace) -> int:
    # The tracker as the tracker branch has it (what every scheduler sees), not the work-tree copy, which
    # `wavegit add` with a remote does not touch. Non-strict: invalid items are listed with their problems.
    context = Context.open(args)
    store = context.store
    loaded, blob_sha = store.load_head(fetch=args.fetch)
    items = loaded.items
    if args.status:
        items = tuple(item for item in items if item.status in args.status)
    if args.json:
        print(json.dumps([dataclasses.asdict(item) for item in items], indent=2))
    else:
        print(_table(items))
    # On stderr, so the table and the JSON list stay what they are; `validate` reads this same tracker.
    print(f"tracker: {store.source(blob_sha)}", file=sys.stderr)
    now = datetime.now(timezone.utc)
    held = claims.held(context.repo, context.config, claims_of(loaded.items), now, fetched=args.fetch)
    for line in claims.lines(held, now):
        print(line, file=sys.stderr)
    reviewed: dict[str, list[str]] = {}
    for item in loaded.items:
        if item.status == lifecycle.Status.REVIEW and item.wave:
            reviewed.setdefault(item.wave, []).append(item.id)
    for wave, ids in sorted(reviewed.items()):
        print(f"wave {wave} ({', '.join(ids)} in review): its report is `wavegit report {wave}`",
              file=sys.stderr)
    invalid = sum(1 for item in items if item.problems)
    if invalid:
        print(f"{invalid} item(s) have problems; run `wavegit validate` for details", file=sys.stderr)
    return 0


def _table(items: tuple[tracker.Item, ...]) -> str:
    rows = [_COLUMNS, *map(_row, items)]
    widths = [max(map(len, column)) for column in list(zip(*rows, strict=True))[:-1]]
    # The last column (title) is not padded, so no line carries trailing spaces.
    return "\n".join("  ".join([*map(str.ljust, row[:-1], widths), row[-1]]).rstrip() for row in rows)


def _row(item: tracker.Item) -> tuple[str, ...]:
    # An invalid item's fields hold defaults where its values were bad (`todoo` reads as todo): say so
    # rather than show values the file does not have.
    if item.problems:
        return (_cell(item.id), "invalid", _cell(item.priority), _cell(item.wave), _cell(item.pr),
                _cell(item.title))
    # A valid item's id, status, priority and pr are checked words and numbers: nothing to fold or escape.
    pr = "-" if item.pr is None else str(item.pr)
    return (item.id, item.status, item.priority, _cell(item.wave), pr, _cell(item.title))


def _cell(value: object) -> str:
    if value is None or value == "":
        return "-"
    text = str(value)
    # Printable text has no whitespace but the space: most cells need neither folding nor escaping.
    if text.isprintable() and "  " not in text and not text.startswith(" ") and not text.endswith(" "):
        return text
    return inert(" ".join(text.split()))
