"""The wave branches and the base branch as sync sees them: fetched from the remote (its whole history in a
shallow clone), their tips, the items with a commit on each, and each wave's merge rules
(:mod:`wavegit.sync.merged`)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from wavegit.attempts import wavebranch
from wavegit.core import git, heartbeat
from wavegit.core.errors import UsageError
from wavegit.core.git import WaveId
from wavegit.core.repo import Repo
from wavegit.model.config import Config
from wavegit.sync import branches as sync_branches
from wavegit.sync import merged as sync_merged

_SEP = "\x1f"


class WaveRefs:
    """The wave branches and the base branch as the remote has them (this repository's, without one)."""

    def __init__(self, repo: Repo, config: Config) -> None:
        self.root = repo.root
        self.base_branch = config.base_branch
        remote = config.remote if repo.has_remote(config.remote) else None
        if remote is not None:
            prefix = f"refs/remotes/{remote}/"
            waves = f"{wavebranch.BRANCH_PREFIX}*"
            _fetch(repo.root, remote, [f"+refs/heads/{waves}:{prefix}{waves}", heartbeat.refspec(remote),
                                       f"+refs/heads/{config.base_branch}:{prefix}{config.base_branch}"],
                   unshallow=git.is_shallow(repo.root))
            self.where = remote
        else:
            if git.is_shallow(repo.root):
                raise UsageError(f"this repository is a shallow clone and has no remote {config.remote!r} to "
                                 "fetch its history from: merges cannot be found in a cut-off history "
                                 "(clone it in full, or set `remote`)")
            prefix = "refs/heads/"
            self.where = "this repository"
        self.remote = remote
        self.base = git.resolve_commit(repo.root, f"{prefix}{config.base_branch}")
        self.tips, self.item_tips = _branches(repo.root, prefix)
        # A `--no-push` wave's branch lives only here; merged by hand, it is found by its local tip.
        self.local_tips = _branches(repo.root, "refs/heads/")[0] if remote is not None else self.tips
        self.items_on = cache(self._items_on)
        self.merges = cache(self._merges)

    def heads(self, wave_id: WaveId) -> list[sync_merged.Head]:
        """The wave branch's tips: on the remote, then (when it differs) in this repository."""
        found = []
        if wave_id in self.tips:
            found.append(sync_merged.Head(self.tips[wave_id], self.where if self.remote else "local"))
        local = self.local_tips.get(wave_id)
        if local is not None and local != self.tips.get(wave_id):
            found.append(sync_merged.Head(local, "local"))
        return found

    def branches(self) -> sync_branches.Branches:
        return sync_branches.Branches(self.root, self.remote, self.tips, self.item_tips, self.local_tips,
                                      self.merges)

    def _merges(self, wave_id: WaveId) -> sync_merged.WaveMerges | None:
        if self.base is None:
            return None
        return sync_merged.WaveMerges(self.root, self.base, self.base_branch, wave_id, self.heads(wave_id))

    def _items_on(self, wave_id: WaveId) -> frozenset[str]:
        """Items with a commit of this wave (``Wavegit-Item`` + ``Wavegit-Wave`` trailers) on its branch."""
        tip = self.tips.get(wave_id)
        if tip is None:
            return frozenset()
        fmt = (f"%(trailers:key={wavebranch.TRAILER_WAVE},valueonly,separator=%x20){_SEP}"
               f"%(trailers:key={wavebranch.TRAILER_ITEM},valueonly,separator=%x20)")
        listing = git.log(self.root, [tip], fmt, grep=f"{wavebranch.TRAILER_WAVE}: {wave_id}")
        found: set[str] = set()
        for line in git.lines(listing):
            waves, _, items = line.partition(_SEP)
            if wave_id in waves.split():
                found.update(items.split())
        return frozenset(found)


def _branches(root: Path, prefix: str) -> tuple[dict[WaveId, git.CommitSha],
                                               dict[WaveId, dict[str, git.CommitSha]]]:
    """Wave id -> its wave branch's tip, and wave id -> {item branch: tip}, of the refs under ``prefix``."""
    waves: dict[WaveId, git.CommitSha] = {}
    items: dict[WaveId, dict[str, git.CommitSha]] = {}
    for ref, sha in git.for_each_ref(root, f"{prefix}{wavebranch.BRANCH_PREFIX}").items():
        name = ref.removeprefix(prefix)
        wave_id = wavebranch.parse_wave_branch(name)
        if wave_id is not None:
            waves[wave_id] = sha
        parsed = wavebranch.parse_item_branch(name)
        if parsed is not None:
            items.setdefault(parsed[0], {})[name] = sha
    return waves, items


def _fetch(root: Path, remote: str, refspecs: list[str], *, unshallow: bool) -> None:
    """Fetch the wave and base branches; in a shallow clone (``fetch-depth: 1``) their whole history too,
    which the merge rules walk (a cut-off base branch would make every merged item look unmerged)."""
    try:
        git.fetch(root, remote, refspecs, prune=True, unshallow=unshallow)
    except git.GitError as exc:
        if git.missing_remote_ref(exc):
            raise UsageError(f"the base branch does not exist on {remote}: {exc.stderr.strip()}") from exc
        if unshallow:
            raise _still_shallow(remote, exc.stderr.strip() or str(exc)) from exc
        raise
    if unshallow and git.is_shallow(root):
        # A remote that is itself shallow answers the fetch and leaves the history cut off.
        raise _still_shallow(remote, f"{remote} has no more history to give")


def _still_shallow(remote: str, why: str) -> UsageError:
    return UsageError(f"this repository is a shallow clone and fetching its whole history from {remote} "
                      f"failed ({why}): merges cannot be found in a cut-off history; clone in full "
                      "(`fetch-depth: 0` in actions/checkout)")
