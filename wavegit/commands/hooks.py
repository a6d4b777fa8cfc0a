"""``wavegit hooks install|uninstall [--hooks-dir DIR]``: manage wavegit's git hooks."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from wavegit.core.errors import EXIT_OK
from wavegit.core.repo import discover
from wavegit.hook import install


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    install = actions.add_parser(
        "install", help="install the pre-push hook (keeps and chains an existing one)",
        description="Write the pre-push hook into the repository's common git dir (shared by all worktrees). "
        "An existing pre-push hook is kept as pre-push.wavegit-chained and runs first. Running it again "
        "refreshes the hook. Refuses when core.hooksPath is set, unless --hooks-dir says where to install.")
    uninstall = actions.add_parser(
        "uninstall", help="remove the pre-push hook and restore the one it replaced",
        description="Remove wavegit's pre-push hook and put back the hook it chained, if any.")
    for sub in (install, uninstall):
        sub.add_argument("--hooks-dir", metavar="DIR", help="the hooks directory to use")
    fetching = install.add_mutually_exclusive_group()
    fetching.add_argument("--fetch", action="store_const", const=True, dest="fetch",
                          help="the hook fetches the tracker branch first when its copy is older than "
                          "hook.max_age_s (the default)")
    fetching.add_argument("--no-fetch", action="store_const", const=False, dest="fetch",
                          help="the hook never fetches: it checks against the last fetched copy "
                          "(reinstalling without either keeps the installed hook's choice)")


def run(args: argparse.Namespace) -> int:
    repo = discover(args.directory)
    explicit = Path(args.directory, args.hooks_dir) if args.hooks_dir else None
    # Uninstalling from the default place must work even when core.hooksPath is set.
    directory = install.hooks_dir(repo, explicit, refuse_hooks_path=args.action == "install")
    if args.action == "install":
        installed = install.install(directory, sys.executable, fetch=args.fetch)
        chained = f"; runs {installed.chained} first" if installed.chained else ""
        verb = "refreshed" if installed.refreshed else "installed"
        fetching = ("fetches a tracker branch older than hook.max_age_s" if installed.fetches
                    else "never fetches")
        print(f"{verb} {installed.hook} (it {fetching}){chained}")
        return EXIT_OK
    removed = install.uninstall(directory)
    done = [f"removed wavegit's hook from {directory}"] if removed.removed else []
    if removed.restored:
        done.append(f"restored the previous hook at {removed.restored}")
    print(removed.note or "; ".join(done))
    return EXIT_OK
