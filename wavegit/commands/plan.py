"""``wavegit plan``: what the next wave would take, and why each other todo item is not taken.

Read-only and offline: it reads the tracker at the local head of the tracker branch (no fetch) through the
parse cache, so a warm run costs little more than starting Python.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from wavegit import config as config_mod
from wavegit import plancache
from wavegit.errors import UsageError
from wavegit.repo import discover
from wavegit.schema import gc_paused
from wavegit.select import Plan, select_columns
from wavegit.store import GitStore

# wavegit.cli may skip interpreter teardown after this command (see cli.main): it is read-only,
# its only write, a parse-cache entry, is renamed into place before it prints,
# and it starts no thread and registers no atexit handler.
FAST_EXIT = True


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-items", type=positive_int, metavar="N",
                        help="items the wave may take (default: max_items from the config)")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true",
                        help='print {"selected": [...], "skipped": [{"id", "reason"}], "tracker_sha": ...}')
    output.add_argument("--matrix", action="store_true",
                        help='print {"include": [{"item": ID}, ...]}: a GitHub Actions matrix '
                             "of what the wave would take (read-only; `wavegit claim` claims it)")


def run(args: argparse.Namespace) -> int:
    # A short read-only command that makes no reference cycles. With the collector on, the allocations after
    # loading would make it rescan the 10,000 loaded items, twice (measured: ~5 ms of a warm plan).
    with gc_paused():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    repo = discover(args.directory)
    cache_dir = repo.cache_dir
    config = config_mod.load_config(repo.root, cache_dir)
    store = GitStore(repo, config)
    blob_sha = store.read_blob_sha(fetch=False)
    if blob_sha is None:
        raise UsageError(f"no tracker at {config.tracker_branch}:{config.tracker_path} (run `wavegit init`)")
    # The blob is read only when the parse cache has no entry for it: on a warm run, that is 4 MB of a
    # 10,000-item tracker not copied out of git.
    cols = plancache.load_columns(blob_sha, lambda: store.read_blob(blob_sha), cache_dir,
                                  config.tracker_path, strict=False)
    plan = select_columns(cols, args.max_items or config.max_items, blob_sha)
    if args.matrix:
        sys.stdout.write(json.dumps(matrix(plan.selected)) + "\n")
    elif args.json:
        # dumps, not dump: dump streams through the pure-Python encoder, several times slower here.
        sys.stdout.write(json.dumps(plan.to_json()) + "\n")
    else:
        sys.stdout.write(format_text(plan))
    return 0


def matrix(item_ids: Sequence[str]) -> dict[str, object]:
    """The ``strategy.matrix`` of a wave: ``fromJSON`` of it runs one job per ``matrix.item``. Only
    ``include`` (GitHub types every other matrix key as a list of values, so a scalar there fails the run)."""
    return {"include": [{"item": item_id} for item_id in item_ids]}


def format_text(plan: Plan) -> str:
    """The plan for people: the selected ids, then a table of skipped items and reasons."""
    lines = [f"tracker blob {plan.tracker_sha[:12]}", f"selected ({len(plan.selected)}):"]
    lines.extend(f"  {item_id}" for item_id in plan.selected)
    if not plan.selected:
        lines.append("  (nothing is ready)")
    if plan.skipped:
        width = max(len("ID"), *(len(skip.id) for skip in plan.skipped))
        lines.append(f"skipped ({len(plan.skipped)}):")
        lines.append(f"  {'ID':<{width}}  REASON")
        lines.extend(f"  {skip.id:<{width}}  {skip.reason}" for skip in plan.skipped)
    return "\n".join(lines) + "\n"
