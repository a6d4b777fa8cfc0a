"""The one message of every command that finds no tracker where its config says the tracker lives."""

from pathlib import Path

from wavegit.core.errors import UsageError
from wavegit.model.config import CONFIG_PATH


def no_tracker(root: Path, where: str, also: str = "") -> UsageError:
    """The error of a command that found no tracker at ``where``. A checkout without the config is most
    likely a teammate's clone from before ``wavegit init``: `git pull` brings the config that says where the
    tracker lives, while init would refuse (or, forced, replace the tracker)."""
    fix = "run `wavegit init`"
    if not (root / CONFIG_PATH).is_file():
        fix = (f"no {CONFIG_PATH} in this checkout: if someone ran `wavegit init` already, `git pull` brings "
               "it and it says where the tracker is; else run `wavegit init`")
    return UsageError(f"no tracker at {where} ({fix}{also})")
