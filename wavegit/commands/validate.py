"""``wavegit validate [--worktree | --file PATH] [--fetch] [--json]``: check the config and the tracker;
one ``path:line:col`` line per problem (exit 2), or ``ok: N items in <tracker>`` (exit 0). Nothing is ever
written.

By default the tracker checked is the one ``plan``, ``ls``, ``run``, ``sync`` and the hook read: the tracker
branch's head (``<remote>/<tracker_branch>`` as last fetched), so its line numbers are that file's.
``--worktree`` checks the file in your work tree (before you commit it), ``--file`` any file.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from wavegit.commands._profiles import unknown_profiles
from wavegit.core.errors import EXIT_BAD_INPUT, EXIT_OK, Problem, UsageError, ValidationError
from wavegit.core.parsecache import blob_sha, blob_sha_of_bytes
from wavegit.core.repo import Repo, discover
from wavegit.core.smallfile import read_bounded, read_small_file
from wavegit.model import plancache, tracker
from wavegit.model.config import Config, load_config, protected_of
from wavegit.trackerbranch.missing import no_tracker
from wavegit.trackerbranch.store import GitStore


def add_arguments(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--worktree", action="store_true",
                       help="validate the tracker file in the work tree instead of the tracker branch's")
    where.add_argument("--file", metavar="PATH",
                       help="validate this tracker file instead of the repository's (works outside a repo)")
    parser.add_argument("--fetch", action="store_true", help="fetch the tracker branch from the remote first")
    parser.add_argument("--json", action="store_true",
                        help='print {"ok", "items", "tracker": {"ref", "path", "blob"}, "problems": [...]}')


def run(args: argparse.Namespace) -> int:
    repo = _repo(args)
    problems: list[Problem] = []
    config = Config()
    if repo is not None:
        try:
            config = load_config(repo.root, repo.cache_dir)
        except ValidationError as exc:
            problems.extend(exc.problems)
    checked: Checked | None = None
    count = 0
    # The tracker's own problems (not the config's, nor a profile it lacks): a fetch may bring them fixed.
    tracker_invalid = False
    try:
        checked = _read(args, repo, config)
        # The text is read only on a parse-cache miss, or to locate a profile the config lacks.
        # Strict, as a wave reads it; the planning columns (ids, workers) are all a valid tracker needs here.
        cols = plancache.load_columns(checked.blob_sha, checked.read_text, repo.cache_dir if repo else None,
                                      checked.display_path, protected=protected_of(config))
        count = len(cols.ids)
        if repo is not None:  # outside a repository there is no config to name profiles
            problems.extend(unknown_profiles(checked.read_text, checked.display_path, config,
                                             list(zip(cols.ids, cols.workers, strict=True))))
    except ValidationError as exc:
        # Every problem at once: an item naming no profile is one too, though others make the file invalid.
        found = list(exc.problems)
        tracker_invalid = bool(found)
        if repo is not None and checked is not None:
            found.extend(_unknown_profiles_of_invalid(checked, config))
        problems.extend(sorted(found, key=lambda problem: (problem.line, problem.col)))
    except UsageError:
        if not problems:
            raise
        # No tracker to check: the config's problems are still worth reporting, and are the exit 2.
    if repo is not None and not problems:
        GitStore(repo, config).require_base_branch()  # as plan and run refuse it
    if args.json:
        tracker_json = None if checked is None else {
            "ref": checked.ref, "path": checked.display_path, "blob": checked.blob_sha}
        print(json.dumps({"ok": not problems, "items": count, "tracker": tracker_json,
                          "problems": [{"path": p.path, "line": p.line, "col": p.col, "message": p.message,
                                        "item": p.item_id, "hint": p.hint} for p in problems]}, indent=2))
        return EXIT_BAD_INPUT if problems else EXIT_OK
    if problems:
        fetchable = tracker_invalid and checked is not None and not args.fetch
        raise ValidationError(problems, checked.as_fetched_hint if fetchable and checked else "")
    assert checked is not None
    print(f"ok: {count} items" + (f" in {checked.shown}" if checked.shown else ""))
    return 0


def _unknown_profiles_of_invalid(checked: Checked, config: Config) -> list[Problem]:
    """The items of an invalid tracker naming no profile of ``config``, as far as a lenient load reads them
    (none when it is no YAML at all)."""
    try:
        loaded = tracker.load_blob(checked.blob_sha, checked.read_text, None, checked.display_path,
                                   strict=False, protected=protected_of(config))
    except ValidationError:
        return []
    return unknown_profiles(checked.read_text, checked.display_path, config,
                            [(item.id, item.worker) for item in loaded.items])


@dataclass(frozen=True)
class Checked:
    """The tracker checked and where it came from."""

    blob_sha: str
    read_text: Callable[[], str]
    display_path: str
    ref: str | None
    """The tracker branch it was read from (``origin/main``); None: a file."""
    shown: str
    """Where, for the ``ok`` line (empty for ``--file``: the path given is where)."""
    as_fetched_hint: str = ""
    """Read from the remote's tracker branch as last fetched: what to say after a problem of it."""


def _read(args: argparse.Namespace, repo: Repo | None, config: Config) -> Checked:
    """The tracker text to check and where it came from."""
    if args.file is not None:
        missing = f"check the path given to --file; it is read from {Path(args.directory).resolve()}"
        return _from_file(Path(args.directory) / args.file, str(args.file), missing, "")
    if repo is None:
        raise UsageError("not inside a git work tree; use --file PATH to validate a tracker file")
    if args.worktree:
        return _from_file(repo.root / config.tracker_path, config.tracker_path, _worktree_hint(config),
                          f"the work tree's {config.tracker_path}", _read_checkout)
    store = GitStore(repo, config)
    blob_sha = store.read_blob_sha(fetch=args.fetch)
    if blob_sha is None:
        raise no_tracker(repo.root, f"{store.target}:{config.tracker_path}",
                         "; `wavegit validate --worktree` checks the file in your work tree")
    _note_worktree_copy(repo, config, store, blob_sha)
    return Checked(blob_sha, lambda: store.read_blob(blob_sha), config.tracker_path, store.target,
                   store.source(blob_sha), store.as_fetched_hint())


_CHECKOUT_TRACKER_MAX_BYTES = 256 << 20
"""Far past any tracker (10,000 items are 4.4 MB): the bound of reading one a commit may have made a symlink
to ``/dev/zero``."""


def _read_checkout(file: Path) -> bytes:
    """The checkout's tracker file: a regular file only (``core.smallfile``), never a device or a FIFO."""
    return read_small_file(file, _CHECKOUT_TRACKER_MAX_BYTES)


def _read_named(file: Path) -> bytes:
    """``--file``: any file the user names (``/dev/stdin`` too), within the checkout's bound."""
    return read_bounded(file, _CHECKOUT_TRACKER_MAX_BYTES)


def _from_file(file: Path, display_path: str, missing_hint: str, shown: str,
               read: Callable[[Path], bytes] = _read_named) -> Checked:
    """The tracker file ``file`` (the work tree's, or ``--file``: any file the user names, ``/dev/stdin``
    too) as ``read`` reads it; a missing file or undecodable bytes are clear errors (exit 2)."""
    try:
        data = read(file)
    except FileNotFoundError:
        raise UsageError(f"{display_path}: no such file ({missing_hint})") from None
    except OSError as exc:
        raise UsageError(f"{display_path}: cannot read: {exc.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = data[:exc.start]
        line, col = before.count(b"\n") + 1, len(before) - (before.rfind(b"\n") + 1) + 1
        raise ValidationError([Problem(display_path, line, col, "not valid UTF-8 text", None,
                                       "save the file as UTF-8")]) from None
    return Checked(blob_sha(text), lambda: text, display_path, None, shown)


def _worktree_hint(config: Config) -> str:
    """What to do when the work tree has no tracker: init, or, once the tracker has a branch of its own (as
    init makes it), check that branch's or a copy."""
    if config.tracker_branch == config.base_branch:
        return "create it with `wavegit init`"
    branch = config.tracker_branch
    return (f"the tracker lives on branch {branch}, not in this checkout: `wavegit validate` checks that "
            "branch's, `wavegit validate --file PATH` a copy; items change with `wavegit add` and "
            "`wavegit edit`")


def _note_worktree_copy(repo: Repo, config: Config, store: GitStore, blob_sha: str) -> None:
    """Say so when the work tree holds another version of the tracker than the one checked."""
    try:
        local = _read_checkout(repo.root / config.tracker_path)
    except OSError:
        return
    if blob_sha_of_bytes(local) != blob_sha:
        print(f"note: checked the tracker at {store.target}; your work tree's {config.tracker_path} differs "
              "(`wavegit validate --worktree` checks it)", file=sys.stderr)


def _repo(args: argparse.Namespace) -> Repo | None:
    """The repository, or None when only ``--file`` is to be checked outside one."""
    try:
        return discover(args.directory)
    except UsageError:
        if args.file is None:
            raise
        return None
