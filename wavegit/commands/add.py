"""``wavegit add ID --prompt TEXT --owns PATTERN... --test CMD``: append an item to the tracker.

The item is appended to the tracker at the tracker branch's head (the remote's when there is one) in one
compare-and-swap commit; a race with another writer re-reads and re-applies, so concurrent adds all land.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from wavegit.attempts import agents
from wavegit.commands._itemop import check_protected, estimate_seconds
from wavegit.commands._prompt import add_prompt_arguments, prompt_from
from wavegit.commands._write import add_write_arguments, landed, open_target
from wavegit.core.errors import Problem, UsageError, ValidationError
from wavegit.core.parsecache import blob_sha
from wavegit.model import tracker
from wavegit.model.config import protected_of
from wavegit.model.report import utc_timestamp
from wavegit.ownership.patterns import PatternError, normalize
from wavegit.ownership.protected import DEFAULT_PROTECTED
from wavegit.trackerbranch.missing import no_tracker
from wavegit.trackerbranch.mutation import mutate
from wavegit.trackerbranch.store import Change, Snapshot, check_tracker_text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", metavar="ID", help="unique item id: letters, digits, . _ -")
    add_prompt_arguments(parser, required=True)
    parser.add_argument("--owns", nargs="+", required=True, metavar="PATTERN",
                        help="files, directories (dir/) or globs the item may change")
    parser.add_argument("--test", required=True, metavar="CMD",
                        help="command run in the item's worktree; exit 0 = verified")
    parser.add_argument("--title", default="", metavar="T", help="a short title")
    parser.add_argument("--priority", default="P2", choices=tracker.PRIORITIES, help="default %(default)s")
    parser.add_argument("--depends-on", nargs="+", default=[], metavar="ID",
                        help="items that must be done before this one is ready")
    parser.add_argument("--worker", metavar="NAME", help="the worker profile (config `workers`) that runs it")
    parser.add_argument("--estimate-s", type=estimate_seconds, metavar="SECONDS",
                        help="how long its worker is expected to run; `run --continuous` starts the longest "
                        "first")
    add_write_arguments(parser)


def run(args: argparse.Namespace) -> int:
    prompt = prompt_from(args)
    assert prompt is not None  # argparse requires --prompt or --prompt-file
    item = tracker.Item(id=args.id, prompt=prompt, owns=_owns(args.owns), test=args.test,
                        title=args.title, priority=args.priority, depends_on=tuple(args.depends_on),
                        created_at=utc_timestamp(), worker=args.worker, estimate_s=args.estimate_s)
    target = open_target(args)
    agents.check_option(target.config, item.worker)
    check_protected(item.owns, protected_of(target.config) or DEFAULT_PROTECTED)
    store, tracker_path = target.store, target.config.tracker_path

    def apply(snapshot: Snapshot) -> Change:
        if snapshot.text is None or snapshot.blob_sha is None:
            raise no_tracker(store.repo.root, f"{store.target}:{tracker_path}")
        current = tracker.load_cached(snapshot.text, snapshot.blob_sha, store.cache_dir, tracker_path,
                                      protected=protected_of(target.config))
        if current.get(item.id) is not None:
            raise UsageError(f"item {item.id} already exists in {tracker_path} on {store.target}")
        new_text = tracker.append_items(snapshot.text, [item], current)
        _check_new_item(snapshot.text, new_text, tracker_path, store.cache_dir)
        return Change(new_text)

    result = mutate(store, apply, message=f"wavegit: add {item.id}", deadline_s=args.deadline)
    print(f"added {item.id}: {landed(result, store)}")
    return 0


# The option each item key written by `add` comes from, to name it in an error.
_OPTION_OF_KEY = {"id": "ID", "title": "--title", "prompt": "--prompt", "owns": "--owns", "test": "--test",
                  "priority": "--priority", "depends_on": "--depends-on", "worker": "--worker",
                  "estimate_s": "--estimate-s"}


def _check_new_item(old_text: str, new_text: str, path: str, cache_dir: Path) -> None:
    """Validate the tracker with the item appended. A problem in the appended lines is the command line's
    (its lines exist in no file anyone wrote): it names the option at fault instead of a line number."""
    try:
        check_tracker_text(new_text, path, blob_sha(new_text), cache_dir)
    except ValidationError as exc:
        old_lines, new_lines = old_text.splitlines(), new_text.splitlines()
        first_new = next((n for n, (a, b) in enumerate(zip(old_lines, new_lines, strict=False)) if a != b),
                         min(len(old_lines), len(new_lines))) + 1
        if any(problem.line < first_new for problem in exc.problems):
            raise
        raise UsageError("; ".join(_option_problem(problem, new_lines[first_new - 1:problem.line])
                                   for problem in exc.problems)) from None


def _option_problem(problem: Problem, lines: list[str]) -> str:
    """``problem`` named by its option: the key of its line, or of the nearest line above with one (a value
    may span lines)."""
    for line in reversed(lines):
        key = line.strip().removeprefix("- ").partition(":")[0]
        if key in _OPTION_OF_KEY:
            # "'owns': pattern ..." and "'test' cannot be split ..." both name the key the option stands for.
            message = problem.message.removeprefix(f"{key!r}: ").removeprefix(f"{key!r} ")
            return f"{_OPTION_OF_KEY[key]}: {message}"
    return f"the new item: {problem.message}"


def _owns(patterns: list[str]) -> tuple[str, ...]:
    normalized = []
    for pattern in patterns:
        try:
            normalized.append(normalize(pattern))
        except PatternError as exc:
            raise UsageError(f"--owns: {exc}") from exc  # the message names the pattern
    return tuple(normalized)
