"""``wavegit hook pre-push REMOTE URL``: git's pre-push hook entry point (the rules: wavegit.hook.prepush)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from wavegit.core.errors import EXIT_OK, EXIT_WORK_FAILED, UsageError
from wavegit.hook import pushed

if TYPE_CHECKING:  # argparse only for `--help` and the unusual: `quick` parses what git passes
    import argparse

    from wavegit.core.repo import Repo

# wavegit.cli may skip interpreter teardown after this command (see cli.main): it is read-only, its only
# writes, parse-cache entries, are renamed into place and its threads are joined before it prints, and
# it registers no atexit handler.
FAST_EXIT = True


def add_arguments(parser: argparse.ArgumentParser) -> None:
    hooks = parser.add_subparsers(dest="hook_name", required=True, metavar="HOOK")
    pre_push = hooks.add_parser(
        "pre-push",
        help="refuse a push whose commits touch files owned by work in flight in another wave",
        description="Reads git's pre-push stdin (<local ref> <local oid> <remote ref> <remote oid> per "
        "line) and exits 1, naming each path, item, wave and PR, when the push touches files owned by an "
        "item in_progress or review of another wave (per the tracker at the remote-tracking tracker branch, "
        "fetched first when older than hook.max_age_s) on a branch of hook.refuse_on (by default the base "
        "and tracker branches) or a wave branch; on other branches it warns. "
        "A tracker that cannot be read is a warning and the push proceeds, unless `hook: {strict: true}` "
        "is in .wavegit/config.yaml (or WAVEGIT_HOOK_STRICT=1), which refuses it (exit 2).",
    )
    pre_push.add_argument("remote", nargs="?", help="the remote's name (git passes it)")
    pre_push.add_argument("url", nargs="?", help="the remote's URL (git passes it)")
    fetching = pre_push.add_mutually_exclusive_group()
    fetching.add_argument("--fetch", action="store_const", const=True, dest="fetch",
                          help="always fetch the tracker branch from the remote first (by default only when "
                          "the copy is older than hook.max_age_s)")
    fetching.add_argument("--no-fetch", action="store_const", const=False, dest="fetch",
                          help="never fetch: check against the last fetched copy, however old")
    pre_push.add_argument("--pre-commit", action="store_true",
                          help="take the pushed ref from pre-commit's PRE_COMMIT_* variables, not stdin")


_FETCH_OPTIONS = {"--fetch": True, "--no-fetch": False}


def quick(argv: Sequence[str]) -> Callable[[], int] | None:
    """``pre-push`` with ``argv`` (what follows it) parsed without argparse, as git passes it (``REMOTE URL``
    and the options the installed hook adds); None for anything else (help, a typo: argparse explains)."""
    positional = [arg for arg in argv if not arg.startswith("-")]
    options = [arg for arg in argv if arg.startswith("-")]
    fetch = [_FETCH_OPTIONS[arg] for arg in options if arg in _FETCH_OPTIONS]
    pre_commit = "--pre-commit" in options
    if len(positional) > 2 or len(fetch) > 1 or len(options) != len(fetch) + pre_commit:
        return None
    remote = positional[0] if positional else None
    url = positional[1] if len(positional) > 1 else None
    return lambda: pre_push(".", remote, url, fetch=fetch[0] if fetch else None, pre_commit=pre_commit)


def run(args: argparse.Namespace) -> int:
    return pre_push(args.directory, args.remote, args.url, fetch=args.fetch, pre_commit=args.pre_commit)


def _discover(directory: str) -> Repo:
    from wavegit.core.repo import discover

    return discover(directory)


def pre_push(directory: str, remote: str | None, url: str | None, *, fetch: bool | None,
             pre_commit: bool) -> int:
    """The hook: ``fetch`` True always fetches the tracker branch first, None when it is older than
    hook.max_age_s, False never (see ``prepush.check_push``)."""
    if pre_commit:
        remote, url, updates = pushed.updates_from_pre_commit(os.environ)
    elif remote is None or url is None:
        raise UsageError("pre-push needs REMOTE and URL (git passes them when it runs the hook)")
    else:
        updates = pushed.parse_updates(sys.stdin.buffer.read().decode("utf-8", "surrogateescape"))
    if pushed.only_deletions(updates) and not any(u.remote_ref.startswith("refs/heads/") for u in updates):
        return EXIT_OK  # no branch deleted (the tracker's may not be): no config or tracker needed
    # The usual push (to a named remote, no fetch): `git log` lists the pushed paths while the modules that
    # read the repository, the config and the in-flight items are imported and do so.
    listing = pushed.start_pushed_paths(directory, updates, remote) if remote != url and not fetch else None
    # The repository is found (its `git rev-parse`) in a thread too, while those modules are imported.
    located = pushed.Background(lambda: _discover(directory))
    try:
        from wavegit.hook import prepush

        repo = located.result()
        cfg = prepush.load_settings(repo)
        verdict = prepush.check_push(repo, cfg, remote, url, updates, fetch=fetch, pushed=listing)
    finally:
        located.join()
        if listing is not None:
            listing.join()
    for warning in verdict.warnings:
        print(f"wavegit hook: {warning}", file=sys.stderr)
    for refusal in verdict.refusals:
        print(refusal, file=sys.stderr)
    if verdict.violations or verdict.tolerated:
        from wavegit.hook import messages

        if verdict.tolerated:
            print(f"wavegit hook: {messages.format_tolerated(verdict.tolerated)}", file=sys.stderr)
        if verdict.violations:
            print(messages.format_refusal(verdict.violations, remote if remote != url else cfg.remote),
                  file=sys.stderr)
    return EXIT_WORK_FAILED if verdict.violations or verdict.refusals else EXIT_OK
