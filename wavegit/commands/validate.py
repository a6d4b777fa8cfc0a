"""``wavegit validate [--file PATH]``: check the config and the tracker; one ``path:line:col`` line per
problem (exit 2), or ``ok: N items`` (exit 0). Nothing is ever written.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from wavegit import tracker
from wavegit.commands._workfile import read_tracker_text
from wavegit.config import Config, load_config, protected_of
from wavegit.errors import Problem, UsageError, ValidationError
from wavegit.repo import Repo, discover


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--file", metavar="PATH",
                        help="validate this tracker file instead of the repository's (works outside a repo)")


def run(args: argparse.Namespace) -> int:
    repo = _repo(args)
    problems: list[Problem] = []
    config = Config()
    if repo is not None:
        try:
            config = load_config(repo.root, repo.cache_dir)
        except ValidationError as exc:
            problems.extend(exc.problems)
    missing = "create it with `wavegit init`"
    if args.file is not None:
        file, shown = Path(args.directory) / args.file, str(args.file)
        missing = f"check the path given to --file; it is read from {Path(args.directory).resolve()}"
    elif repo is not None:
        file, shown = repo.root / config.tracker_path, config.tracker_path
    else:
        raise UsageError("not inside a git work tree; use --file PATH to validate a tracker file")
    cache = repo.cache_dir if repo is not None else None
    count = 0
    try:
        source = read_tracker_text(file, shown, missing)
        count = len(tracker.load_cached(source.text, source.blob_sha, cache, shown,
                                        protected=protected_of(config)).items)
    except ValidationError as exc:
        problems.extend(exc.problems)
    if problems:
        raise ValidationError(problems)
    print(f"ok: {count} items")
    return 0


def _repo(args: argparse.Namespace) -> Repo | None:
    """The repository, or None when only ``--file`` is to be checked outside one."""
    try:
        return discover(args.directory)
    except UsageError:
        if args.file is None:
            raise
        return None
