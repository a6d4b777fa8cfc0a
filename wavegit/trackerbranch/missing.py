"""The one message of every command that finds no tracker where its config says the tracker lives."""

import os
from pathlib import Path

from wavegit.core import git
from wavegit.core.errors import UsageError, ValidationError
from wavegit.model.config import CONFIG_PATH, TRACKER_PATH, load_config
from wavegit.model.workerprogram import where_set


def no_tracker(root: Path, where: str, also: str = "") -> UsageError:
    """The error of a command that found no tracker at ``where``. A checkout without the config is most
    likely a teammate's clone from before ``wavegit init``: `git pull` brings the config that says where the
    tracker lives, while init would refuse (or, forced, replace the tracker). A config naming a remote this
    repository lacks looks for a local tracker branch: the fix is that name, not a second tracker."""
    unknown = _unknown_remote(root, where)
    if unknown:
        return UsageError(f"{unknown}{also}")
    fix = _moved_tracker(root) or "run `wavegit init`"
    if not (root / CONFIG_PATH).is_file():
        fix = (f"no {CONFIG_PATH} in this checkout: if someone ran `wavegit init` already, `git pull` brings "
               "it and it says where the tracker is; else run `wavegit init`")
    return UsageError(f"no tracker at {where} ({fix}{also})")


def _moved_tracker(root: Path) -> str:
    """The fix when the config moved the tracker (a typo in ``tracker_path`` most likely, which init would
    answer with a second, empty tracker at the typo); "" when it keeps the default path."""
    try:
        path = load_config(root).tracker_path
    except (UsageError, ValidationError):
        return ""
    if path == TRACKER_PATH:
        return ""
    where = where_set(root, ("tracker_path",), os.environ) or CONFIG_PATH
    return (f"{where}: tracker_path is {path!r}, not the default {TRACKER_PATH}: fix it if the tracker is "
            "elsewhere, else run `wavegit init`")


def _unknown_remote(root: Path, tracker: str) -> str:
    """The error when the config's ``remote`` is not a remote of a repository that has others; "" else."""
    try:
        remote = load_config(root).remote
    except (UsageError, ValidationError):  # the command that loaded it first has said so
        return ""
    remotes = git.remotes(root)
    if not remotes or remote in remotes:
        return ""
    where = where_set(root, ("remote",), os.environ) or CONFIG_PATH
    key = where if not where.startswith(CONFIG_PATH) else "`remote`"
    return (f"{where}: remote {remote!r} is not a remote of this repository (it has {', '.join(remotes)}), "
            f"so no tracker was found at {tracker}: fix {key}")
