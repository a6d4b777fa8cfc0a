"""The configuration a wave obeys: the file committed on its base branch (fetched), never the checkout's
working copy; the base branch must exist where the config says (its remote, else here)."""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from wavegit.core import git
from wavegit.core.errors import UsageError
from wavegit.model.config import CONFIG_PATH, ENV_PREFIX, Config, config_from, load_config
from wavegit.model.hookconfig import read_file
from wavegit.model.workerprogram import value_position

if TYPE_CHECKING:
    from wavegit.core.repo import Repo

CONFIG_SOURCE_VAR = "WAVEGIT_CONFIG_SOURCE"
"""``checkout``: a wave obeys the checkout's (maybe uncommitted) config file instead of the committed one."""


IGNORED_WORKING_COPY = " (the checkout's differing working copy was ignored)"
"""The end of a ``Governing.source`` whose checkout holds a config that differs from the one obeyed."""


@dataclass(frozen=True)
class Governing:
    """The configuration a wave obeys and where it was read (the report's ``config_source``)."""

    config: Config
    source: str


def load_governing(repo: Repo, cache_dir: Path | None = None,
                   environ: Mapping[str, str] | None = None) -> Governing:
    """The config a wave obeys: the file committed on the base branch, never the checkout's working copy.

    A worker can edit files in the user's checkout (unsandboxed, or through a careless ``rw_paths``), so a
    wave obeys what was committed: where to look (remote, base branch) comes from the checkout's HEAD
    commit, the config itself from ``<remote>/<base_branch>`` (fetched), where config changes are reviewed
    and merged like any other (with the tracker on its own branch, nobody has to copy them there).
    ``WAVEGIT_CONFIG_SOURCE=checkout`` in wavegit's own environment opts into the checkout's working file
    (trying an uncommitted change).

    The working file is still checked: an invalid one is refused (ValidationError), so a wave never runs
    while the file the user sees is broken; one that differs is named in the source as ignored.
    """
    env = os.environ if environ is None else environ
    choice = env.get(CONFIG_SOURCE_VAR, "committed").strip() or "committed"
    if choice not in ("committed", "checkout"):
        raise UsageError(f"environment variable {CONFIG_SOURCE_VAR}={choice!r}: "
                         "expected committed or checkout")
    working = load_config(repo.root, cache_dir, env)
    if choice == "checkout":
        require_base(repo, working, _base_ref(repo, working), read_file(repo.root), env)
        return Governing(working, f"checkout:{CONFIG_PATH}")
    head_text = repo.show_file("HEAD", CONFIG_PATH)
    bootstrap = config_from(head_text, cache_dir, env)
    ref, where = repo.branch_ref(bootstrap.remote, bootstrap.base_branch)
    text = repo.show_file(ref, CONFIG_PATH)
    if text is None:  # no config committed there, or no such branch (no git process more when it is found)
        require_base(repo, bootstrap, ref, head_text, env)
    governing = config_from(text, cache_dir, env)
    if (governing.remote, governing.base_branch) != (bootstrap.remote, bootstrap.base_branch):
        require_base(repo, governing, _base_ref(repo, governing), text, env)
    source = f"{where}:{CONFIG_PATH}" if text is not None else f"defaults (no {CONFIG_PATH} on {where})"
    if working != governing:
        source += IGNORED_WORKING_COPY
    return Governing(governing, source)


def _base_ref(repo: Repo, config: Config) -> str:
    """The ref of ``config``'s base branch as its remote has it (fetched now), else the local branch."""
    return repo.branch_ref(config.remote, config.base_branch)[0]


def require_base(repo: Repo, config: Config, ref: str, text: str | None, environ: Mapping[str, str]) -> None:
    """UsageError (at its ``path:line:col``) when ``ref``, the base branch that ``text`` (a config file) or a
    variable names, does not exist: a wave would claim, then stop fetching it, and the config it obeys is
    the one committed there (without it, the defaults: another tracker branch, another worker)."""
    variable = f"{ENV_PREFIX}BASE_BRANCH"
    if (text is None and variable not in environ) or git.resolve_commit(repo.root, ref) is not None:
        return
    prefix = ref.removesuffix(config.base_branch)
    # The branches a base could be: not waves' own, nor the remote's HEAD.
    names = (found.removeprefix(prefix) for found in git.for_each_ref(repo.root, prefix))
    branches = sorted(name for name in names if name != "HEAD" and not name.startswith("wavegit/"))
    near = difflib.get_close_matches(config.base_branch, branches, n=1)
    known = (f"did you mean {near[0]!r}?" if near
             else f"it has {', '.join(branches[:6]) + (', ...' if len(branches) > 6 else '') or 'none'}")
    owner = f"on {config.remote}" if ref.startswith("refs/remotes/") else "here"
    fix = (f"set {variable} to" if variable in environ
           else "set base_branch in the config (then commit and push it) to")
    raise UsageError(f"{_where(text or '', variable, environ)}: base_branch {config.base_branch!r}: "
                     f"no such branch {owner} ({known}); waves branch from it and obey the config committed "
                     f"there: {fix} the branch your work lands on")


def _where(text: str, variable: str, environ: Mapping[str, str]) -> str:
    """Where base_branch is set: its variable, else ``path:line:col`` of its value in ``text``."""
    if variable in environ:
        return f"environment variable {variable}"
    found = value_position(text, ("base_branch",)) if text else None
    if found is None:
        return f"{CONFIG_PATH} (base_branch not set: the default, main)"
    return f"{CONFIG_PATH}:{found[0]}:{found[1]}"
