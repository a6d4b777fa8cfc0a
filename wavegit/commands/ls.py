"""``wavegit ls [--status S ...] [--json]``: the tracker's items as a table or a JSON list."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime, timezone

from wavegit.core.git import BlobSha
from wavegit.core.repo import discover
from wavegit.core.terminal import inert
from wavegit.model import config as config_mod
from wavegit.model import lifecycle
from wavegit.model.columns import Columns
from wavegit.trackerbranch import claims
from wavegit.trackerbranch.store import GitStore

_COLUMNS = ("id", "status", "priority", "wave", "pr", "title")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--status", action="extend", nargs="+", choices=lifecycle.STATUSES, metavar="S",
                        help=f"only items with these statuses ({', '.join(lifecycle.STATUSES)})")
    parser.add_argument("--json", action="store_true", help="print a JSON list of item objects")
    parser.add_argument("--fetch", action="store_true", help="fetch the tracker branch from the remote first")


def run(args: argparse.Namespace) -> int:
    # The tracker as the tracker branch has it (what every scheduler sees), not the work-tree copy, which
    # `wavegit add` with a remote does not touch. Non-strict: invalid items are listed with their problems.
    repo = discover(args.directory)
    config = config_mod.load_config(repo.root, repo.cache_dir)
    store = GitStore(repo, config)
    blob_sha = store.read_blob_sha(fetch=args.fetch)
    if blob_sha is None:
        from wavegit.trackerbranch.missing import no_tracker

        raise no_tracker(repo.root, f"{store.target}:{config.tracker_path}")
    # The table needs only the columns `plan` reads (and titles, waves, PRs): no Item is built for it.
    cols = store.planning_columns(blob_sha)
    shown = [pos for pos, status in enumerate(cols.statuses) if not args.status or status in args.status]
    if args.json:
        print(json.dumps(_items_json(store, blob_sha, shown), indent=2))
    else:
        print(_table(cols, shown))
    # On stderr, so the table and the JSON list stay what they are; `validate` reads this same tracker.
    print(f"tracker: {store.source(blob_sha)}", file=sys.stderr)
    now = datetime.now(timezone.utc)
    for line in claims.lines(claims.held(repo, config, cols.claims, now, fetched=args.fetch), now):
        print(line, file=sys.stderr)
    reviewed: dict[str, list[str]] = {}
    for item_id, status, wave in zip(cols.ids, cols.statuses, cols.waves, strict=True):
        if status == lifecycle.Status.REVIEW and wave:
            reviewed.setdefault(wave, []).append(item_id)
    for wave, ids in sorted(reviewed.items()):
        print(f"wave {wave} ({', '.join(ids)} in review): its report is `wavegit report {wave}`",
              file=sys.stderr)
    invalid = sum(1 for pos in shown if cols.problems[pos])
    if invalid:
        hint = "" if args.fetch else store.as_fetched_hint()
        print(f"{invalid} item(s) have problems; run `wavegit validate` for details"
              + (f"; {hint}" if hint else ""), file=sys.stderr)
    return 0


def _items_json(store: GitStore, blob_sha: BlobSha, shown: list[int]) -> list[dict[str, object]]:
    """Every field of the shown items: only ``--json`` loads the items themselves."""
    import dataclasses

    from wavegit.model import tracker

    loaded = tracker.load_blob(blob_sha, lambda: store.read_blob(blob_sha), store.cache_dir,
                               store.config.tracker_path, strict=False,
                               protected=config_mod.protected_of(store.config))
    return [dataclasses.asdict(loaded.items[pos]) for pos in shown]


def _table(cols: Columns, shown: list[int]) -> str:
    rows = [_COLUMNS, *(_row(cols, pos) for pos in shown)]
    widths = [max(map(len, column)) for column in list(zip(*rows, strict=True))[:-1]]
    # The last column (title) is not padded, so no line carries trailing spaces.
    line = "  ".join(f"{{:<{width}}}" for width in widths) + "  {}"
    return "\n".join(line.format(*row).rstrip() for row in rows)


def _row(cols: Columns, pos: int) -> tuple[str, ...]:
    item_id, status, priority, wave, pr, title = (cols.ids[pos], cols.statuses[pos], cols.priorities[pos],
                                                  cols.waves[pos], cols.prs[pos], cols.titles[pos])
    # An invalid item's fields hold defaults where its values were bad (`todoo` reads as todo): say so
    # rather than show values the file does not have.
    if cols.problems[pos]:
        return (_cell(item_id), "invalid", _cell(priority), _cell(wave), _cell(pr), _cell(title))
    # A valid item's id, status, priority and pr are checked words and numbers: nothing to fold or escape.
    return (item_id, status, priority, _cell(wave), "-" if pr is None else str(pr), _cell(title))


def _cell(value: object) -> str:
    if value is None or value == "":
        return "-"
    text = str(value)
    # Printable text has no whitespace but the space: most cells need neither folding nor escaping.
    if text.isprintable() and "  " not in text and not text.startswith(" ") and not text.endswith(" "):
        return text
    return inert(" ".join(text.split()))
