"""``wavegit import FILE --from aesop|jsonl|csv [--dry-run]``: add another tool's backlog to the tracker.

Every item is converted (:mod:`wavegit.model.importers`) and checked first: any problem is exit 2 with
FILE's line, nothing written. Then all are appended, oldest first, in one compare-and-swap commit.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from wavegit.commands._write import add_write_arguments, landed, open_target
from wavegit.core.errors import UsageError
from wavegit.core.smallfile import as_text, read_named
from wavegit.model import importers, tracker
from wavegit.model.config import protected_of
from wavegit.ownership.protected import DEFAULT_PROTECTED
from wavegit.trackerbranch.missing import no_tracker
from wavegit.trackerbranch.mutation import mutate
from wavegit.trackerbranch.store import Change, Snapshot


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="the backlog to import ('-' = stdin)")
    parser.add_argument("--from", dest="source", required=True, choices=importers.SOURCES,
                        help="its format: aesop (JSON: an object with items, or a list), jsonl, csv")
    parser.add_argument("--dry-run", action="store_true", help="show what would be added; write nothing")
    add_write_arguments(parser)


def run(args: argparse.Namespace) -> int:
    name, text = _read(args)
    target = open_target(args)
    store, tracker_path = target.store, target.config.tracker_path
    found: list[importers.Imported] = []

    def apply(snapshot: Snapshot) -> Change:
        if snapshot.text is None or snapshot.blob_sha is None:
            raise no_tracker(store.repo.root, f"{store.target}:{tracker_path}")
        current = tracker.load_cached(snapshot.text, snapshot.blob_sha, store.cache_dir, tracker_path)
        imported = importers.read_backlog(text, name, args.source, {item.id for item in current.items},
                                          protected_of(target.config) or DEFAULT_PROTECTED,
                                          tuple(profile.name for profile in target.config.workers))
        if not imported.items:
            raise UsageError(f"{name}: no items to import")
        found[:] = [imported]
        return Change(tracker.append_items(snapshot.text, imported.items, current))

    if args.dry_run:
        apply(store.read())
        summary = f"would add {{}} to {tracker_path} on {store.target} (dry run: nothing written):"
    else:
        result = mutate(store, apply, message=f"wavegit: import {name} ({args.source})",
                        deadline_s=args.deadline)
        summary = f"imported {{}} from {name}: {landed(result, store)}"
    [imported] = found
    for key in imported.ignored_keys:
        print(f"wavegit: {name}: ignored key {key!r} (wavegit has no place for it)", file=sys.stderr)
    count = len(imported.items)
    print(summary.format(f"{count} item" if count == 1 else f"{count} items"))
    print(_listing(imported.items))
    return 0


_BACKLOG_MAX_BYTES = 256 << 20
"""Far past any backlog (10,000 items are some 4 MB): the bound of reading FILE, which may name
``/dev/zero`` or a huge file by mistake."""


def _read(args: argparse.Namespace) -> tuple[str, str]:
    shown = "<stdin>" if args.file == "-" else args.file
    try:
        # Relative to -C, as git resolves paths.
        return shown, as_text(read_named(args.file, Path(args.directory), _BACKLOG_MAX_BYTES))
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{shown}: cannot read it ({exc})") from None


def _listing(items: list[tracker.Item]) -> str:
    width = max(len(item.id) for item in items)
    return "\n".join(f"  {item.id:<{width}}  {item.priority}  {item.status:<6}  {item.title}{_after(item)}"
                     .rstrip() for item in items)


def _after(item: tracker.Item) -> str:
    """The dependencies, as the ids they became (a slug of the file names the id it was given)."""
    return f"  (after {', '.join(item.depends_on)})" if item.depends_on else ""
