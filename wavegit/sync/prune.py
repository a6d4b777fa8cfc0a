"""What finished waves leave behind in this clone, found before the tracker is read and removed after sync's
commit: worktree directories under ``<state dir>/worktrees/<wave>`` and item branches
``wavegit/items/<wave>/*``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from wavegit.attempts import wavebranch, workspace
from wavegit.core import git
from wavegit.core.git import WaveId
from wavegit.core.repo import Repo


@dataclass(frozen=True)
class Pruned:
    """A leftover of a finished wave: its worktree directory or one of its item branches."""

    kind: str
    """``worktrees`` or ``branch``."""
    wave: WaveId
    target: str

    def line(self) -> str:
        return f"prune {self.kind} {self.target} (wave {self.wave})"

    def to_json(self) -> dict[str, object]:
        return {"kind": "prune", "what": self.kind, "wave": self.wave, "target": self.target}


@dataclass(frozen=True)
class Leftovers:
    """Worktree directories and item branches per wave, as found before the tracker was read."""

    worktree_dirs: dict[WaveId, Path]
    item_branches: dict[WaveId, list[str]]

    def waves(self) -> set[WaveId]:
        return set(self.worktree_dirs) | set(self.item_branches)


def find_leftovers(repo: Repo) -> Leftovers:
    root = repo.worktrees_dir
    named = ((wavebranch.wave_id_of(p.name), p) for p in sorted(root.iterdir()) if p.is_dir()) \
        if root.is_dir() else ()
    dirs = {wave_id: path for wave_id, path in named if wave_id is not None}
    branches: dict[WaveId, list[str]] = {}
    for ref in git.for_each_ref(repo.root, f"refs/heads/{wavebranch.ITEM_BRANCH_PREFIX}"):
        parsed = wavebranch.parse_item_branch(ref)
        if parsed is not None:
            branches.setdefault(parsed[0], []).append(ref.removeprefix("refs/heads/"))
    return Leftovers(dirs, branches)


def prune(repo: Repo, leftovers: Leftovers, in_flight: set[WaveId], *, dry_run: bool,
          branches: bool = True) -> list[Pruned]:
    """Remove the leftovers of waves not in ``in_flight`` (item branches only with ``branches``); what was
    (or, on a dry run, would be) removed."""
    done: list[Pruned] = []
    for wave_id in sorted(leftovers.waves() - in_flight):
        directory = leftovers.worktree_dirs.get(wave_id)
        if directory is not None:
            if not dry_run:
                workspace.remove(directory)
            done.append(Pruned("worktrees", wave_id, str(directory)))
        for branch in leftovers.item_branches.get(wave_id, []) if branches else []:
            if not dry_run:
                wavebranch.delete_branch(repo.root, branch)
            done.append(Pruned("branch", wave_id, branch))
    if not dry_run:
        # What a reaper that was killed (or never started) left of finished waves.
        workspace.empty_trash(repo.trash_dir)
    return done
