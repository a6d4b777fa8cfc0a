"""The checks ``wavegit run`` makes inside its claim, before anything is written: what would otherwise fail
only after the claim commit, with claim and record commits and a branch to show for it.

They run in the claim's ``apply`` on the snapshot it edits, after the HALT and budget checks (``plan`` makes
the same first three checks, in the same order, to exit as ``run`` would): the tracker is valid (its
problems located in the file on the tracker branch, not in the claim's edit of it), every item's ``worker``
names a profile of the config, the worker of every selected item resolves to an executable (and a preset's
credentials reach it), ``wave_test`` and every selected item's ``test`` split into words, every selected
id makes a valid branch name, and the folder of the attempt trees can be made. Any failure is bad input
(exit 2) and nothing is claimed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from wavegit.attempts import agents, runner, wavebranch
from wavegit.core.errors import UsageError
from wavegit.core.git import WaveId
from wavegit.core.repo import Repo
from wavegit.model import tracker, workerprogram
from wavegit.model.config import CONFIG_PATH, Config, protected_of
from wavegit.model.select import Plan
from wavegit.trackerbranch.missing import no_tracker
from wavegit.trackerbranch.store import Snapshot

Check = Callable[[Snapshot, Plan], None]


def claim_checks(repo: Repo, config: Config, wave_id: WaveId, *, sandboxed: bool = False) -> Check:
    """The check a claim of ``wave_id`` runs on its snapshot and plan (its workers ``sandboxed`` or not)."""

    def check(snapshot: Snapshot, plan: Plan) -> None:
        loaded = check_tracker(repo, config, snapshot)
        check_profiles(config, snapshot, loaded)
        selected = set(plan.selected)
        items = [item for item in loaded.items if item.id in selected]
        check_worker(config, workers=[item.worker for item in items] or [None], sandboxed=sandboxed,
                     root=repo.root)
        check_items(items, wave_id)
        check_trees(repo)

    return check


def check_trees(repo: Repo) -> None:
    """UsageError unless the folder of the attempt trees can be made: otherwise every item of the claim went
    back to `todo` with a bare OS error (``[Errno 2] No such file or directory: '/proc/nope'``)."""
    try:
        repo.worktrees_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        where = "XDG_CACHE_HOME" if os.environ.get("XDG_CACHE_HOME") else "HOME"
        why = exc.strerror or str(exc)
        raise UsageError(f"the attempt trees' folder {repo.trees_dir} cannot be made ({why}): set {where} "
                         "to a writable folder; nothing was claimed") from exc


def check_tracker(repo: Repo, config: Config, snapshot: Snapshot) -> tracker.Tracker:
    """The tracker at ``snapshot``; ValidationError with the lines of that blob when an item is invalid."""
    if snapshot.text is None or snapshot.blob_sha is None:
        raise no_tracker(repo.root, f"{config.tracker_path} on {config.tracker_branch}")
    # The claim has just loaded it leniently (a cache hit); a strict load, which raises, only when needed.
    text, blob, cache, path = snapshot.text, snapshot.blob_sha, repo.cache_dir, config.tracker_path
    # The protected paths of this config (its allow_protected included), as the claim judged them.
    protected = protected_of(config)
    loaded = tracker.load_cached(text, blob, cache, path, strict=False, protected=protected)
    if any(item.problems for item in loaded.items):
        tracker.load_cached(text, blob, cache, path, strict=True, protected=protected)
    return loaded


def check_profiles(config: Config, snapshot: Snapshot, loaded: tracker.Tracker) -> None:
    """ValidationError locating each item whose ``worker`` names no profile of ``config``."""
    assert snapshot.text is not None  # check_tracker has refused a missing tracker
    agents.check_profiles(snapshot.text, config.tracker_path, config,
                          [(item.id, item.worker) for item in loaded.items])


def check_worker(config: Config, environ: Mapping[str, str] | None = None,
                 workers: Sequence[str | None] = (None,), *, sandboxed: bool = False,
                 root: Path | None = None) -> None:
    """UsageError unless the worker of each profile in ``workers`` (None: config ``worker``) parses and its
    program is found (a bare name on ``PATH``, an absolute path executable), a preset's credentials
    variable is set and listed in ``worker_env``, and, run as root outside the sandbox, its CLI would not
    refuse to start. A relative path is left to the launch: it is relative to the item's tree. With the
    repository's ``root``, a program not found is said at the config key's ``path:line:col`` (as ``plan``
    warns of it)."""
    env = environ if environ is not None else os.environ
    if config.wave_test.strip():
        _argv("wave_test", config.wave_test, runner.command_argv)
    for name in dict.fromkeys(workers):
        agent = agents.resolve(config, name)
        what = f"worker {config.worker!r}" if name is None else f"worker profile {name!r}"
        fix = (f"set `worker` in {CONFIG_PATH} (or WAVEGIT_WORKER)" if name is None
               else f"change `workers.{name}` in {CONFIG_PATH}")
        try:
            argv = agent.argv(sandboxed)
        except UsageError as exc:
            raise UsageError(f"worker: {exc}; nothing was claimed") from exc
        npm = agent.preset.npm if agent.preset is not None else ("", "")
        install = f"install it (`npm install -g {npm[0]}@{npm[1]}`)" if npm[0] else "install it"
        if not workerprogram.program_found(argv[0], env):
            keys = workerprogram.configured(config, name)
            where = workerprogram.where_set(root, keys[0], env) if root is not None and keys else None
            raise UsageError(f"{f'{where}: ' if where else ''}{what}: {argv[0]!r} is not "
                             f"{workerprogram.found_as(argv[0])}; "
                             f"{install}, or {fix}; nothing was claimed")
        missing = agents.missing_credentials(agent, config, env)
        if missing is None and not sandboxed and os.geteuid() == 0:
            missing = agents.root_refusal(agent, argv)
        if missing is not None:
            raise UsageError(f"{what}: {missing}; nothing was claimed")


def check_items(items: list[tracker.Item], wave_id: WaveId) -> None:
    """UsageError naming the first selected item whose test does not parse or whose id is no branch name."""
    for item in items:
        _argv(f"item {item.id}: test", item.test, runner.command_argv)
        # The tracker's id rule is git's ref-name rule for one component (no git process per item).
        problem = tracker.id_problem(item.id)
        if problem is not None:
            branch = wavebranch.item_branch(wave_id, item.id)
            raise UsageError(f"item {item.id}: its id cannot name the git branch {branch}: {problem}; "
                             "rename it; nothing was claimed")


def _argv(what: str, command: str, split: Callable[[str], list[str]]) -> list[str]:
    try:
        return split(command)
    except UsageError as exc:
        raise UsageError(f"{what}: {exc}; nothing was claimed") from exc
