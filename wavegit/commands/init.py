"""``wavegit init [--push] [--force] [--github] [--tracker-branch NAME]``: commit the tracker and the config.

Where the tracker goes, and the config naming it on the base branch, is README's "Where the tracker lives".
Both land in one compare-and-swap commit on the tracker branch (created when the repository has no commits
yet); an existing tracker, config or (``--github``) issue form ``.github/ISSUE_TEMPLATE/wavegit-item.yml``
is kept unless ``--force``. The config written is the one init ran with (``WAVEGIT_*`` overrides included).
"""

from __future__ import annotations

import argparse
import os

from wavegit.commands._context import Context
from wavegit.commands._write import add_write_arguments, landed, open_target
from wavegit.core import git
from wavegit.core.errors import UsageError
from wavegit.github import intake
from wavegit.model import tracker
from wavegit.model.config import CONFIG_PATH, ENV_PREFIX, Config, initial_config_text, parse_config_text
from wavegit.trackerbranch import checkout_sync
from wavegit.trackerbranch.store import Change, GitStore, MutationResult, RemoteError, Snapshot, mutate

OWN_BRANCH = "wavegit-tracker"
"""The tracker's branch when the repository has a remote and nothing else names one."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--force", action="store_true",
                        help="replace an existing tracker and config with fresh ones (history keeps the old)")
    parser.add_argument("--github", action="store_true",
                        help=f"also write the issue form `wavegit intake` reads ({intake.FORM_PATH})")
    parser.add_argument("--tracker-branch", metavar="NAME",
                        help=f"the branch tracker commits go to; default {OWN_BRANCH} with a remote "
                        "(created from the base branch), the base branch without one; the base branch's name "
                        "keeps the tracker there")
    add_write_arguments(parser)


def run(args: argparse.Namespace) -> int:
    target = open_target(args)
    base_store = GitStore(target.repo, target.config._replace(tracker_branch=target.config.base_branch))
    base = base_store.read() if base_store.remote else None
    branch, why = _tracker_branch(args, target, base_store, base)
    config = target.config._replace(tracker_branch=branch)
    store = GitStore(target.repo, config)
    base_head = base.commit if base is not None and branch != config.base_branch else None
    if base is not None and base_head is None and branch != config.base_branch:
        raise UsageError(f"{base_store.target} does not exist yet, and the tracker branch {branch} starts "
                         f"from it: push a first commit to {config.base_branch}, then run wavegit init")
    lines: list[str] = []
    if base_head is not None:
        # Refused before the base branch gets its config commit: a refusal writes nothing.
        behind = (base is not None and base_store.read_file(base, CONFIG_PATH) is not None
                  and not (target.repo.root / CONFIG_PATH).exists())
        _refuse_existing(args, store, store.read(), behind=behind)
        lines.append(_config_on_base(args, base_store, config))
        lines.append(_created(store, base_store))
    result, written = _init_tracker(args, store, config, github=args.github and base_head is None)
    if result.commit is None:
        lines.append(f"already initialized: {config.tracker_path} on {store.target} is a fresh tracker")
    else:
        hint = " (git pull to get it here)" if store.remote and base_head is None else ""
        lines.append(f"initialized {' and '.join(written)}: {landed(result, store)}{why}{hint}")
    if base_head is not None:
        lines.append(_checkout_follows(target, base_store, base_head))
    print("\n".join(line for line in lines if line))
    return 0


def _refuse_existing(args: argparse.Namespace, store: GitStore, snapshot: Snapshot, *,
                     behind: bool = False) -> None:
    """``behind``: the base branch has the config and this checkout has not (a clone from before someone
    else's init), so it needs a pull, not init."""
    if snapshot.text is not None and not args.force:
        fix = f"`git pull` brings its config ({CONFIG_PATH}) into this checkout; " if behind else ""
        raise UsageError(f"{store.config.tracker_path} already exists on {store.target}: {fix}"
                         "--force replaces it (its items would be dropped)")


def _tracker_branch(args: argparse.Namespace, target: Context, base_store: GitStore,
                    base: Snapshot | None) -> tuple[str, str]:
    """The tracker's branch, and a note for the summary when it shares the base branch for want of a
    remote."""
    config = target.config
    if args.tracker_branch is not None:
        name = str(args.tracker_branch)
        if not git.is_valid_ref_name(target.repo.root, f"refs/heads/{name}") or name.startswith("-"):
            raise UsageError(f"--tracker-branch {name!r}: not a valid branch name")
        return name, ""
    if f"{ENV_PREFIX}TRACKER_BRANCH" in os.environ:
        return config.tracker_branch, ""
    checkout = target.repo.root / CONFIG_PATH
    committed = base_store.read_file(base, CONFIG_PATH) if base is not None else None
    for text in (checkout.read_text(encoding="utf-8") if checkout.is_file() else None, committed):
        if text is None:
            continue
        named = parse_config_text(text).get("tracker_branch")
        if named is not None or not args.force:
            return str(named or Config().tracker_branch), ""
    if base_store.remote is None:
        note = f"no remote {config.remote!r}: the tracker shares {config.tracker_branch}"
        return config.tracker_branch, f" ({note}; with a remote, init puts it on {OWN_BRANCH})"
    if base is None or base.commit is None:
        return config.base_branch, (f" ({base_store.target} does not exist yet: the tracker shares it; "
                                    f"--tracker-branch {OWN_BRANCH} after a first push moves it)")
    return OWN_BRANCH, ""


def _config_on_base(args: argparse.Namespace, base_store: GitStore, config: Config) -> str:
    """Commit the config (and the issue form) on the base branch, where every checkout reads it."""

    def apply(snapshot: Snapshot) -> Change | None:
        files: dict[str, str | None] = {}
        if args.force or base_store.read_file(snapshot, CONFIG_PATH) is None:
            files[CONFIG_PATH] = initial_config_text(config)
        if args.github and (args.force or base_store.read_file(snapshot, intake.FORM_PATH) is None):
            files[intake.FORM_PATH] = intake.form_text(config.intake_label)
        if all(base_store.read_file(snapshot, p) == t for p, t in files.items()):
            return None
        return Change(None, files)

    message = f"wavegit: init (the tracker lives on {config.tracker_branch})"
    result = mutate(base_store, apply, message=message, deadline_s=args.deadline)
    if result.commit is None:
        return ""
    return f"config (tracker_branch: {config.tracker_branch}): {landed(result, base_store)}"


def _created(store: GitStore, base_store: GitStore) -> str:
    """Create the tracker branch on the remote from the base branch's head, unless it exists."""
    assert store.remote is not None
    if store.read().commit is not None:
        return ""
    start = base_store.read().commit
    assert start is not None
    pushed = git.push_with_lease(store.repo.root, store.remote, start, store.branch_ref, None)
    if not pushed.ok and store.read().commit is None:
        raise RemoteError(f"cannot create {store.target}", pushed.error())
    return f"created {store.target} from {base_store.target} ({start[:12]})" if pushed.ok else ""


def _init_tracker(args: argparse.Namespace, store: GitStore, config: Config, *,
                  github: bool) -> tuple[MutationResult, list[str]]:
    written: list[str] = []
    tracker_path = config.tracker_path

    def apply(snapshot: Snapshot) -> Change | None:
        if snapshot.commit is None and store.remote and store.local_head() is not None:
            # A root commit on the remote would leave the local history unrelated to it.
            raise UsageError(f"{store.remote} has no branch {config.tracker_branch} yet but this clone does: "
                             f"push it first (git push -u {store.remote} {config.tracker_branch}), then run "
                             "wavegit init")
        _refuse_existing(args, store, snapshot)
        files: dict[str, str | None] = {}
        if args.force or store.read_file(snapshot, CONFIG_PATH) is None:
            # The configuration init ran with, WAVEGIT_* overrides included: the branch it wrote to, the
            # remote it pushed to are what later commands must find in the file.
            files[CONFIG_PATH] = initial_config_text(config)
        if github and (args.force or store.read_file(snapshot, intake.FORM_PATH) is None):
            files[intake.FORM_PATH] = intake.form_text(config.intake_label)
        fresh = tracker.initial_text()
        written[:] = [tracker_path, *files]
        if snapshot.text == fresh and all(store.read_file(snapshot, p) == t for p, t in files.items()):
            return None
        return Change(fresh, files)

    return mutate(store, apply, message="wavegit: init", deadline_s=args.deadline), written


def _checkout_follows(target: Context, base_store: GitStore, before: str) -> str:
    """Fast-forward the local base branch to the config commit when it was level with the remote's."""
    after = base_store.read(fetch=False).commit
    local = git.resolve_commit(target.repo.root, base_store.branch_ref)
    branch = target.config.base_branch
    later = f"git pull here (and in every clone) so that wavegit finds the tracker through {CONFIG_PATH}"
    if after is None or after == local:
        return ""
    if local != before:
        return f"{branch} here is not at {base_store.target}: {later}"
    try:
        moved = checkout_sync.fast_forward(target.repo, branch, after, base_store.target)
    except UsageError:
        return f"{branch} here has uncommitted changes, so it was left as it is: {later}"
    where = f" in {moved.worktree}" if moved is not None and moved.worktree is not None else ""
    return f"fast-forwarded {branch}{where} to {base_store.target} ({after[:12]}); other clones: git pull"
