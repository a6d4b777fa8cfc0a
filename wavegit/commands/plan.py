"""``wavegit plan``: what the next wave would take, and why each other todo item is not taken.

Read-only and offline: it reads the tracker at the local head of the tracker branch (no fetch) through the
parse cache, so a warm run costs little more than starting Python. It exits as ``wavegit run`` would now:
3 when halted or over the day's budget, 2 when an item is invalid (``run`` refuses such a tracker), else 0,
and says why the next wave would not start.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import NamedTuple

from wavegit.core import git
from wavegit.core.errors import EXIT_BAD_INPUT, EXIT_HALTED, EXIT_OK, BudgetExceededError, ValidationError
from wavegit.core.repo import discover
from wavegit.model import config as config_mod
from wavegit.model import workerprogram
from wavegit.model.columns import Columns
from wavegit.model.select import Plan, select_columns
from wavegit.trackerbranch.store import GitStore

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
                        help='print {"selected": [...], "skipped": [{"id", "reason"}], "tracker_sha": ..., '
                             '"tracker": {"ref", "path", "blob"}, "would_start": ..., "reason": ..., '
                             '"exit_code": ...}')
    output.add_argument("--matrix", action="store_true",
                        help='print {"include": [{"item": ID}, ...]}: a GitHub Actions matrix '
                             "of what the wave would take (read-only; `wavegit claim` claims it)")


def run(args: argparse.Namespace) -> int:
    repo = discover(args.directory)
    cache_dir = repo.cache_dir
    config = config_mod.load_config(repo.root, cache_dir)
    store = GitStore(repo, config)
    # One git process for the tracker's blob and the HALT file's: a halt costs nothing to notice.
    blobs = store.read_blob_shas([config.tracker_path, config_mod.HALT_PATH], fetch=False)
    blob_sha = blobs.get(config.tracker_path)
    if blob_sha is None:
        from wavegit.trackerbranch.missing import no_tracker  # only on this error: plan's imports are few

        raise no_tracker(repo.root, f"{store.target}:{config.tracker_path}")
    store.require_base_branch()  # run refuses a missing one before anything else it checks
    # The blob is read only when the parse cache has no entry for it: on a warm run, that is 4 MB of a
    # 10,000-item tracker not copied out of git.
    try:
        cols = store.planning_columns(blob_sha)
    except ValidationError as exc:
        raise ValidationError(exc.problems, store.as_fetched_hint()) from None
    plan = select_columns(cols, args.max_items or config.max_items, blob_sha)
    refusal = refused(store, blobs.get(config_mod.HALT_PATH), cols, blob_sha)
    held_text, held_json = _held(store, cols) if cols.claims else ([], [])
    if args.matrix:
        sys.stdout.write(json.dumps(matrix(plan.selected)) + "\n")
    elif args.json:
        answer = plan.to_json_text(
            tracker={"ref": store.target, "path": config.tracker_path, "blob": blob_sha},
            would_start=refusal is None and bool(plan.selected),
            reason=refusal.reason if refusal else (None if plan.selected else "nothing is ready"),
            exit_code=refusal.exit_code if refusal else EXIT_OK,
            held=held_json)
        sys.stdout.write(answer + "\n")
    else:
        sys.stdout.write(format_text(plan, store.source(blob_sha), refusal))
        sys.stdout.writelines(f"{line}\n" for line in held_text)
    # A warning, not run's exit 2: plan also runs where workers do not (the Action's planning job).
    missing = workerprogram.unfound(repo.root, config, _workers(cols, plan.selected), os.environ)
    if missing is not None:
        sys.stderr.write(f"{missing}\n")
    return refusal.exit_code if refusal else EXIT_OK


def _workers(cols: Columns, selected: Sequence[str]) -> list[str | None]:
    """The profiles the selected items name (None: config ``worker``), as ``run`` checks them; with nothing
    selected, config ``worker``."""
    if not selected or not any(cols.workers):
        return [None]
    chosen = set(selected)
    return [worker for item_id, worker in zip(cols.ids, cols.workers, strict=True) if item_id in chosen]


def _held(store: GitStore, cols: Columns) -> tuple[list[str], list[dict[str, object]]]:
    """The waves holding claims whose scheduler does not run in this clone, as lines and as JSON (only a
    tracker with items in flight imports what reads them)."""
    from wavegit.trackerbranch import claims

    now = datetime.now(timezone.utc)
    held = claims.held(store.repo, store.config, cols.claims, now, fetched=False)
    return claims.lines(held, now), [wave.to_json(now) for wave in held]


# Why ``wavegit run`` would not start a wave now, and the exit code it would give. The functional form: this
# module postpones annotations, and a class body's string annotations would make ``typing`` compile them on
# every warm plan (ARCHITECTURE.md, speed rules).
Refusal = NamedTuple("Refusal", [("reason", str), ("exit_code", int)])  # noqa: UP014 (see above)


def refused(store: GitStore, halt_blob: git.BlobSha | None, cols: Columns,
            tracker_blob: git.BlobSha) -> Refusal | None:
    """What ``run``'s claim would refuse, checked in its order: HALT, the day's budget, invalid items, items
    naming no worker profile."""
    if halt_blob is not None:
        from wavegit.trackerbranch import (
            halt,  # a halted repository is rare: the common plan does not import it
        )

        return Refusal(halt.describe(store.read_blob(halt_blob)), EXIT_HALTED)
    if store.config.budget.day_usd > 0:
        from wavegit.trackerbranch import budget  # only with a day ceiling set: it reads the day's history

        try:
            head = git.resolve_commit(store.repo.root, store.read_ref)
            budget.check_day(store.config.budget, store.repo.root, head)
        except BudgetExceededError as exc:
            return Refusal(str(exc), EXIT_HALTED)
    if any(cols.problems):
        bad = [item_id for item_id, problems in zip(cols.ids, cols.problems, strict=True) if problems]
        return Refusal(f"the tracker has {len(bad)} invalid item(s) ({', '.join(bad[:5])}"
                       f"{', ...' if len(bad) > 5 else ''}): `wavegit validate` lists the problems; "
                       "`run` refuses the whole tracker until they are fixed"
                       + (f"; {hint}" if (hint := store.as_fetched_hint()) else ""), EXIT_BAD_INPUT)
    # Most items name no profile: `any` over the column's Nones runs in C.
    return _unknown_profiles(store, cols, tracker_blob) if any(cols.workers) else None


def _unknown_profiles(store: GitStore, cols: Columns, tracker_blob: git.BlobSha) -> Refusal | None:
    from wavegit.commands._profiles import unknown_profiles  # rare: only items naming a profile reach here

    problems = unknown_profiles(lambda: store.read_blob(tracker_blob), store.config.tracker_path,
                                store.config, list(zip(cols.ids, cols.workers, strict=True)))
    if not problems:
        return None
    # The first, located, and a count: not one line of every problem (2,000 items, 20 naming a typo).
    more = f" (and {len(problems) - 1} more: `wavegit validate` lists them)" if len(problems) > 1 else ""
    return Refusal(f"{problems[0]}{more}", EXIT_BAD_INPUT)


def matrix(item_ids: Sequence[str]) -> dict[str, object]:
    """The ``strategy.matrix`` of a wave: ``fromJSON`` of it runs one job per ``matrix.item``. Only
    ``include`` (GitHub types every other matrix key as a list of values, so a scalar there fails the run)."""
    return {"include": [{"item": item_id} for item_id in item_ids]}


def format_text(plan: Plan, source: str, refusal: Refusal | None = None) -> str:
    """The plan for people: which tracker, whether the wave would start, the selected ids, then a table of
    skipped items and reasons."""
    lines = [f"tracker {source}"]
    if refusal is not None:
        lines.append(f"the next wave will not start (`wavegit run` would exit {refusal.exit_code}): "
                     f"{refusal.reason}")
    lines.append(f"selected ({len(plan.selected)})" + (", once it can start:" if refusal else ":"))
    lines.extend(f"  {item_id}" for item_id in plan.selected)
    if not plan.selected:
        lines.append("  (nothing is ready)")
    if plan.skipped:
        width = max(len("ID"), *(len(skip.id) for skip in plan.skipped))
        lines.append(f"skipped ({len(plan.skipped)}):")
        lines.append(f"  {'ID':<{width}}  REASON")
        lines.extend(f"  {skip.id:<{width}}  {skip.reason}" for skip in plan.skipped)
    return "\n".join(lines) + "\n"
