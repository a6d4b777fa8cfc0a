"""``wavegit init [--push] [--force] [--github]``: commit the tracker and the config (and the issue form).

Both files land in one compare-and-swap commit on the tracker branch (created when the repository has
no commits yet). An existing tracker is kept unless ``--force``; an existing config is kept unless
``--force`` too. The config written is the one init ran with (``WAVEGIT_*`` overrides included), so
``WAVEGIT_TRACKER_BRANCH=x wavegit init`` commits a config naming branch ``x``. ``--github`` adds the issue
form ``wavegit intake`` reads (``.github/ISSUE_TEMPLATE/wavegit-item.yml``), kept too when it exists unless
``--force``.
"""

from __future__ import annotations

import argparse

from wavegit import intake, tracker
from wavegit.commands._write import add_write_arguments, landed, open_target
from wavegit.config import CONFIG_PATH, initial_config_text
from wavegit.errors import UsageError
from wavegit.store import Change, Snapshot, mutate


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--force", action="store_true",
                        help="replace an existing tracker and config with fresh ones (history keeps the old)")
    parser.add_argument("--github", action="store_true",
                        help=f"also write the issue form `wavegit intake` reads ({intake.FORM_PATH})")
    add_write_arguments(parser)


def run(args: argparse.Namespace) -> int:
    target = open_target(args)
    store, tracker_path = target.store, target.config.tracker_path
    written: list[str] = []

    def apply(snapshot: Snapshot) -> Change | None:
        if snapshot.commit is None and store.remote and store.local_head() is not None:
            # A root commit on the remote would leave the local history unrelated to it.
            branch = target.config.tracker_branch
            raise UsageError(f"{store.remote} has no branch {branch} yet but this clone does: "
                             f"push it first (git push -u {store.remote} {branch}), then run wavegit init")
        if snapshot.text is not None and not args.force:
            raise UsageError(f"{tracker_path} already exists on {store.target}; "
                             "use --force to replace it (its items would be dropped)")
        files: dict[str, str | None] = {}
        if args.force or store.read_file(snapshot, CONFIG_PATH) is None:
            # The configuration init ran with, WAVEGIT_* overrides included: the branch it wrote to, the
            # remote it pushed to are what later commands must find in the file.
            files[CONFIG_PATH] = initial_config_text(target.config)
        if args.github and (args.force or store.read_file(snapshot, intake.FORM_PATH) is None):
            files[intake.FORM_PATH] = intake.form_text(target.config.intake_label)
        fresh = tracker.initial_text()
        written[:] = [tracker_path, *files]
        if snapshot.text == fresh and all(store.read_file(snapshot, p) == t for p, t in files.items()):
            return None
        return Change(fresh, files)

    result = mutate(store, apply, message="wavegit: init", deadline_s=args.deadline)
    if result.commit is None:
        print(f"already initialized: {tracker_path} on {store.target} is a fresh tracker")
        return 0
    hint = " (git pull to get it here)" if store.remote else ""
    print(f"initialized {' and '.join(written)}: {landed(result, store)}{hint}")
    return 0
