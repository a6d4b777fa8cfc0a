"""Deleting the branches of settled waves (for ``wavegit sync``), unless ``keep_branches`` is set.

A wave is settled when none of its items is ``in_progress`` or in ``review``; its branches go only when all
their work is in the base branch (README, "Branches"), a remote one only at the tip sync saw, a local one
only when no work tree has it checked out. A kept branch is said once per tip: those told of are remembered
in this clone's ``Repo.kept_branches_file`` (losing it only repeats the note).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from wavegit.attempts import wavebranch
from wavegit.core import git
from wavegit.core.git import WaveId
from wavegit.sync.merged import Head, WaveMerges


@dataclass(frozen=True)
class BranchFate:
    """What sync did (or, on a dry run, would do) with one branch of a settled wave."""

    branch: str
    where: str
    """The remote's name, or ``local``."""
    wave: WaveId
    deleted: bool
    reason: str
    tip: str = ""
    told: bool = False
    """A kept branch an earlier sync already said it keeps, at this tip."""

    def line(self) -> str:
        place = "here" if self.where == "local" else f"on {self.where}"
        if self.deleted:
            return f"delete branch {self.branch} {place} ({self.reason})"
        return f"keep branch {self.branch} {place}: {self.reason}"

    def to_json(self) -> dict[str, object]:
        return {"kind": "branch", "action": "delete" if self.deleted else "keep", "branch": self.branch,
                "where": self.where, "wave": self.wave, "reason": self.reason}


@dataclass(frozen=True)
class Candidate:
    branch: str
    head: Head
    wave: WaveId
    item_branch: bool


class Branches:
    """The wave and item branches sync saw, and the merge rules of each wave."""

    def __init__(self, root: Path, remote: str | None, remote_waves: dict[WaveId, git.CommitSha],
                 remote_items: dict[WaveId, dict[str, git.CommitSha]],
                 local_waves: dict[WaveId, git.CommitSha],
                 merges: Callable[[WaveId], WaveMerges | None]) -> None:
        self.root = root
        self.remote = remote
        self.remote_waves = remote_waves if remote is not None else {}
        self.remote_items = remote_items if remote is not None else {}
        self.local_waves = local_waves
        self.merges = merges

    def candidates(self, settled: Collection[WaveId]) -> Iterator[Candidate]:
        for wave_id in sorted(settled):
            branch = wavebranch.wave_branch(wave_id)
            if self.remote is not None and wave_id in self.remote_waves:
                yield Candidate(branch, Head(self.remote_waves[wave_id], self.remote), wave_id, False)
            for name, sha in sorted(self.remote_items.get(wave_id, {}).items()):
                assert self.remote is not None
                yield Candidate(name, Head(sha, self.remote), wave_id, True)
            if wave_id in self.local_waves:
                yield Candidate(branch, Head(self.local_waves[wave_id], "local"), wave_id, False)

    def waves(self) -> set[WaveId]:
        return set(self.remote_waves) | set(self.remote_items) | set(self.local_waves)


def clean(branches: Branches, in_flight: Collection[WaveId], *, dry_run: bool,
          told_file: Path | None = None) -> list[BranchFate]:
    """Delete (on a dry run: judge) the branches of the waves not ``in_flight``; one fate per branch, a kept
    one marked ``told`` when ``told_file`` lists it (a real run then writes the kept ones there)."""
    fates = _decide(branches, in_flight, dry_run=dry_run)
    if told_file is None:
        return fates
    told = _read_told(told_file)
    fates = [replace(f, told=_key(f) in told) if not f.deleted else f for f in fates]
    if not dry_run:
        _write_told(told_file, sorted(_key(f) for f in fates if not f.deleted))
    return fates


def _key(fate: BranchFate) -> str:
    return f"{fate.where} {fate.branch} {fate.tip}"


def _read_told(path: Path) -> set[str]:
    try:
        told = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    return {key for key in told if isinstance(key, str)} if isinstance(told, list) else set()


def _write_told(path: Path, keys: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    scratch.write_text(json.dumps(keys), encoding="utf-8")
    scratch.replace(path)


def _decide(branches: Branches, in_flight: Collection[WaveId], *, dry_run: bool) -> list[BranchFate]:
    checked_out = {wt.branch: wt.path for wt in git.worktrees(branches.root) if wt.branch}
    judged: list[tuple[Candidate, BranchFate]] = []
    for candidate in branches.candidates(branches.waves() - set(in_flight)):
        merges = branches.merges(candidate.wave)
        if merges is None:
            continue
        fate = _judge(merges, candidate)
        at = checked_out.get(f"refs/heads/{candidate.branch}") if candidate.head.local else None
        if fate.deleted and at is not None:
            fate = _kept(fate, f"checked out at {at}")
        judged.append((candidate, fate))
    if dry_run:
        return [fate for _, fate in judged]
    leases = {f"refs/heads/{c.branch}": c.head.sha for c, fate in judged if fate.deleted and not c.head.local}
    refused = git.delete_refs(branches.root, leases, remote=branches.remote) if branches.remote else {}
    done = []
    for candidate, fate in judged:
        ref = f"refs/heads/{candidate.branch}"
        if fate.deleted and ref in refused and not candidate.head.local:
            fate = _kept(fate, f"{fate.where} refused to delete it: {refused[ref]}")
        elif fate.deleted and candidate.head.local and git.delete_refs(branches.root,
                                                                       {ref: candidate.head.sha}):
            fate = _kept(fate, "it moved while sync ran")
        done.append(fate)
    return done


def _kept(fate: BranchFate, reason: str) -> BranchFate:
    return replace(fate, deleted=False, reason=reason)


def _judge(merges: WaveMerges, candidate: Candidate) -> BranchFate:
    base = merges.base_branch
    tip = candidate.head.sha
    commits = merges.beyond_base(tip)
    on_wave = _wave_patch_ids(merges) if candidate.item_branch else set()
    found = [merges.commit_merged(c, tip) for c in commits]
    left = [c for c, merged in zip(commits, found, strict=True)
            if merged is None and not (on_wave and merges.patch_id(c.sha, tip) in on_wave)]
    where = candidate.head.where
    if left:
        shas = ", ".join(c.sha[:12] for c in left[:3]) + (", ..." if len(left) > 3 else "")
        noun = "commit" if len(left) == 1 else "commits"
        reason = f"{len(left)} {noun} not in {base} ({shas}); wavegit never deletes unmerged work"
        return BranchFate(candidate.branch, where, candidate.wave, False, reason, tip)
    rules = sorted({merged.rule for merged in found if merged is not None})
    if not commits:
        reason = f"merged into {base}"
    elif None in found:
        reason = f"its commits are in {base} or on {wavebranch.wave_branch(candidate.wave)}"
    else:
        reason = f"its changes are in {base}: {', '.join(rules)}"
    return BranchFate(candidate.branch, where, candidate.wave, True, reason, tip)


def _wave_patch_ids(merges: WaveMerges) -> set[str]:
    return {patch_id for head in merges.heads for c in merges.wave_commits(head.sha)
            if (patch_id := merges.patch_id(c.sha, head.sha)) is not None}
