"""Locating the repository wavegit works on, and the layout of wavegit's private state in its git directory.

Every path inside the state folder is named here, so no other module spells out ``state_dir / "..."``.
"""

import contextlib
import os
from pathlib import Path
from typing import NamedTuple

from wavegit.core import git
from wavegit.core.errors import UsageError
from wavegit.core.git import GitError, WaveId

_REMOTES: dict[tuple[Path, int, int, int], list[str]] = {}
"""``Repo.remotes`` by git directory and its config file's state (git rewrites the file to change it)."""


# A NamedTuple, annotations not postponed: see wavegit.core.git.GitResult.
class Repo(NamedTuple):
    root: Path
    """Top of the work tree."""
    git_dir: Path
    """This work tree's git directory (differs from ``common_dir`` inside a linked worktree)."""
    common_dir: Path
    """The repository's shared git directory: refs, objects, hooks."""

    @property
    def state_dir(self) -> Path:
        """wavegit's private state (parse cache, logs, reports, worktrees), shared by all worktrees."""
        return self.common_dir / "wavegit"

    @property
    def cache_dir(self) -> Path:
        """The content-addressed parse and planning caches (``wavegit.core.parsecache``)."""
        return self.state_dir / "cache"

    @property
    def trees_dir(self) -> Path:
        """Where this repository's waves make their attempt trees, their private HOMEs and their trash:
        outside every git directory (an agent refuses to edit files below a ``.git`` folder), in the user's
        cache (``$XDG_CACHE_HOME``, else ``~/.cache``), one folder per repository, named by its git
        directory."""
        cache = Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache").expanduser()
        if not cache.is_absolute():
            cache = Path("~/.cache").expanduser()
        import hashlib  # only where trees are made: OpenSSL's import was 2-3 ms of every warm hook and plan

        digest = hashlib.sha256(os.fsencode(self.common_dir.absolute())).hexdigest()[:12]
        return cache / "wavegit" / f"{self.root.name}-{digest}"

    @property
    def worktrees_dir(self) -> Path:
        """Every wave's item worktrees, one folder per wave."""
        return self.trees_dir / "worktrees"

    @property
    def reports_dir(self) -> Path:
        return self.state_dir / "reports"

    def wave_worktrees(self, wave_id: WaveId) -> Path:
        return self.worktrees_dir / wave_id

    def wave_sandbox(self, wave_id: WaveId) -> Path:
        """The private HOME and TMPDIR folders of a wave's sandboxed processes."""
        return self.trees_dir / "sandbox" / wave_id

    @property
    def trash_dir(self) -> Path:
        """A finished wave's trees and private folders, moved here at once and removed after wavegit returned
        (``wavegit.attempts.reaper``)."""
        return self.trees_dir / "trash"

    def scheduler_lock(self, wave_id: WaveId) -> Path:
        """The lock file ``wavegit run`` keeps while it schedules the wave (``wavegit.core.wavelock``)."""
        return self.locks_dir / f"{wave_id}.json"

    @property
    def locks_dir(self) -> Path:
        return self.state_dir / "locks"

    def wave_logs(self, wave_id: WaveId) -> Path:
        """The logs of a wave's workers and tests."""
        return self.state_dir / "logs" / wave_id

    @property
    def events_dir(self) -> Path:
        """Each wave's event log, ``<wave>.jsonl``, written as the wave runs (``wavegit status`` reads it)."""
        return self.state_dir / "events"

    @property
    def kept_branches_file(self) -> Path:
        """The branches ``sync`` keeps and has said so, to say it once (``wavegit.sync.branches``)."""
        return self.state_dir / "kept-branches.json"

    def report_file(self, wave_id: WaveId, suffix: str) -> Path:
        """The wave report written as ``<wave>.json`` or ``<wave>.md`` (``suffix`` with its dot)."""
        return self.reports_dir / f"{wave_id}{suffix}"

    def fetch_stamp(self, tracking_ref: str) -> Path:
        """Touched when the pre-push hook last fetched ``tracking_ref`` (``refs/remotes/<remote>/<branch>``):
        git rewrites the ref's own file only when a fetch moves it."""
        return self.state_dir / "fetched" / tracking_ref

    def remotes(self) -> list[str]:
        """The remotes' names, asked of git once per state of the repository's config in a process: a wave
        asked four times (a git process each)."""
        try:
            config = os.stat(self.common_dir / "config")
        except OSError:
            return git.remotes(self.root)
        key = (self.common_dir, config.st_mtime_ns, config.st_size, config.st_ino)
        if key not in _REMOTES:
            _REMOTES[key] = git.remotes(self.root)
        return list(_REMOTES[key])

    def has_remote(self, name: str) -> bool:
        return name in self.remotes()

    def show_file(self, ref: str, path: str) -> str | None:
        """``path`` as committed at ``ref``; None when either is not there."""
        found = git.read_blob_at(self.root, f"{ref}:{path}")
        return None if found is None else found[1]

    def branch_ref(self, remote: str, branch: str) -> tuple[str, str]:
        """The ref holding ``branch`` as ``remote`` has it (fetched now), or the local branch when there is no
        such remote; and its display name (``origin/main``)."""
        if not self.has_remote(remote):
            return f"refs/heads/{branch}", branch
        ref = f"refs/remotes/{remote}/{branch}"
        with contextlib.suppress(GitError):  # unreachable: the last fetched copy
            git.fetch(self.root, remote, [f"+refs/heads/{branch}:{ref}"])
        return ref, f"{remote}/{branch}"


def discover(start: str | Path = ".") -> Repo:
    """The repository containing ``start``; a clear error when there is none."""
    start_path = Path(start)
    if not start_path.is_dir():
        raise UsageError(f"{start}: no such directory")
    found = git.locate(start_path)
    if found is None:
        raise UsageError(f"{start_path.resolve()}: not inside a git work tree (run `git init` first)")
    return Repo(root=found.root, git_dir=found.git_dir, common_dir=found.common_dir)
