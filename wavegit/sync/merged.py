"""Whether a wave's work is in the base branch, by ancestry or by content (for ``wavegit sync``).

A commit is in by the first rule that holds (README, "Merges of every kind"): ``ancestry``, ``patch-id``,
``trailer`` (a squash's message names its items and the squash changes every path the commit changed) or
``content``; a merge commit on the branch is in when each of its parents is. An item is merged when all
its commits on a head of its wave (on the remote, or here: a ``--no-push`` wave merged by hand) are; with
no commit of it anywhere, only a squash naming this wave on a commit that changes files the item owns can
tell. wavegit's own tracker commits (subject ``wavegit: ...``) are never taken for a squash.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path

from wavegit.attempts import wavebranch
from wavegit.core import git
from wavegit.core.git import WaveId
from wavegit.ownership.patterns import matches

ANCESTRY, PATCH_ID, TRAILER, CONTENT = "ancestry", "patch-id", "trailer", "content"
_SEP, _END = "\x1f", "\x1e"
_TRAILER_LINE = re.compile(r"^[\s*>-]*(Wavegit-Item|Wavegit-Wave):[ \t]*(\S+)", re.MULTILINE)
_OWN_COMMIT = "wavegit: "


@dataclass(frozen=True)
class Head:
    """A tip of a wave branch and where it was seen."""

    sha: git.CommitSha
    where: str
    """The remote's name, or ``local``."""

    @property
    def local(self) -> bool:
        return self.where == "local"


@dataclass(frozen=True)
class Merged:
    """How a commit, or an item, reached the base branch."""

    rule: str
    commit: git.CommitSha | None
    """The base commit that brought it in (the merge commit, the rebased or squash commit)."""
    reason: str


@dataclass(frozen=True)
class WaveCommit:
    sha: git.CommitSha
    items: tuple[str, ...]
    """Its ``Wavegit-Item`` trailers."""
    waves: tuple[str, ...] = ()
    """Its ``Wavegit-Wave`` trailers."""


def named(message: str, key: str) -> list[str]:
    """The values of ``key:`` lines anywhere in ``message`` (indented or bulleted, as squash messages quote
    them)."""
    return [value for found, value in _TRAILER_LINE.findall(message) if found == key]


class WaveMerges:
    """The rules for one wave against the base branch at ``base``. Every lookup is cached by commit, and
    those per commit (patch ids, changed paths) are made for all of a branch's commits in one git call."""

    def __init__(self, root: Path, base: str, base_branch: str, wave_id: WaveId,
                 heads: Sequence[Head]) -> None:
        self.root = root
        self.base = base
        self.base_branch = base_branch
        self.wave_id = wave_id
        self.heads = list(heads)
        self.on_head = cache(self._on_head)
        self.beyond_base = cache(self._beyond_base)
        self._beyond_shas = cache(lambda head: frozenset(c.sha for c in self.beyond_base(head)))
        self.commit_merged = cache(self._commit_merged)
        self.same_files = cache(self._same_files_at)
        self._patch_ids: dict[git.CommitSha, str | None] = {}
        self._paths: dict[git.CommitSha, tuple[str, ...]] = {}
        self._parents: dict[git.CommitSha, tuple[git.CommitSha, ...]] = {}

    # -- the base branch's new commits ------------------------------------------------------------------

    @cached_property
    def base_patch_ids(self) -> dict[str, git.CommitSha]:
        """Patch id -> the oldest of the base branch's commits that no head of the wave reaches with it.

        Only base commits touching the paths the wave's branches change can carry one of their patches, so
        only those are read (an old abandoned branch would otherwise cost a ``log -p`` of all main since)."""
        if not self.heads:
            return {}
        mine = [c.sha for head in self.heads for c in self.beyond_base(head.sha)]
        changed = self.paths(mine)
        paths = sorted({path for sha in mine for path in changed[sha]})
        revs = [self.base, *[f"^{head.sha}" for head in self.heads]]
        found: dict[str, git.CommitSha] = {}
        for commit, patch_id in git.patch_ids(self.root, revs=revs, paths=paths).items():
            found[patch_id] = commit  # newest first: the oldest wins
        return found

    @cached_property
    def squashed(self) -> dict[str, git.CommitSha]:
        """Item id -> the oldest new base commit whose message names it for this wave.

        Without a head of the wave (its branch deleted after a squash merge) there is no telling new
        commits from old, so the whole base branch is searched and the message must name this wave."""
        wave_line = f"{wavebranch.TRAILER_WAVE}: {self.wave_id}"
        revs = [self.base, *[f"^{head.sha}" for head in self.heads]]
        grep = f"{wavebranch.TRAILER_ITEM}:" if self.heads else wave_line
        listing = git.log(self.root, revs, f"%H{_SEP}%B{_END}", grep=grep)
        found: dict[str, git.CommitSha] = {}
        for record in listing.split(_END):
            sha, _, message = record.strip("\n").partition(_SEP)
            if not sha or message.startswith(_OWN_COMMIT):
                continue
            waves = named(message, wavebranch.TRAILER_WAVE)
            if (waves or not self.heads) and self.wave_id not in waves:
                continue
            for item_id in named(message, wavebranch.TRAILER_ITEM):
                found[item_id] = git.CommitSha(sha)
        return found

    # -- the wave's own commits -------------------------------------------------------------------------

    def _log(self, revs: Sequence[str], grep: str | None = None) -> list[WaveCommit]:
        """The commits ``revs`` list, oldest first, with their trailers."""
        fmt = (f"%H{_SEP}%(trailers:key={wavebranch.TRAILER_WAVE},valueonly,separator=%x20){_SEP}"
               f"%(trailers:key={wavebranch.TRAILER_ITEM},valueonly,separator=%x20)")
        listing = git.log(self.root, revs, fmt, grep=grep, reverse=True)
        return [WaveCommit(git.CommitSha(sha), tuple(items.split()), tuple(waves.split()))
                for sha, waves, items in (line.split(_SEP) for line in git.lines(listing))]

    def _on_head(self, head: str) -> list[WaveCommit]:
        """The commits of this wave on ``head`` (its ``Wavegit-Wave`` trailer), in base or not, oldest first:
        a walk of the whole history, so only asked for when those beyond base do not tell."""
        found = self._log([head], grep=f"{wavebranch.TRAILER_WAVE}: {self.wave_id}")
        return [c for c in found if self.wave_id in c.waves]

    def _beyond_base(self, head: str) -> list[WaveCommit]:
        """Every commit of ``head`` the base branch does not reach, oldest first."""
        return self._log([head, f"^{self.base}"])

    def wave_commits(self, head: str) -> list[WaveCommit]:
        """This wave's commits on ``head`` that the base branch does not reach, oldest first."""
        return [c for c in self.beyond_base(head) if self.wave_id in c.waves]

    def paths(self, commits: Sequence[git.CommitSha]) -> dict[git.CommitSha, tuple[str, ...]]:
        """Commit -> the paths it changed (none for a merge), looked up together with its parents."""
        missing = [sha for sha in dict.fromkeys(commits) if sha not in self._paths]
        if missing:
            for sha, own in zip(missing, git.changes_of_commits(self.root, missing), strict=True):
                self._paths[sha] = tuple(change.path for change in own.changes)
                self._parents[sha] = tuple(own.parents)
        return self._paths

    def parents(self, commit: git.CommitSha, head: str) -> tuple[git.CommitSha, ...]:
        """``commit``'s parents (looked up with those of every commit of ``head`` beyond base)."""
        self.paths([commit, *[c.sha for c in self.beyond_base(head)]])
        return self._parents[commit]

    def patch_id(self, commit: git.CommitSha, head: str) -> str | None:
        if commit not in self._patch_ids:
            batch = [*dict.fromkeys(sha for sha in [commit, *[c.sha for c in self.beyond_base(head)]]
                                    if sha not in self._patch_ids)]
            found = git.patch_ids(self.root, batch)
            self._patch_ids.update({sha: found.get(sha) for sha in batch})
        return self._patch_ids[commit]

    def merge_commit(self, commit: git.CommitSha) -> git.CommitSha:
        """The base commit that brought ``commit`` (reachable from base) in: a merge commit, or itself."""
        chain = git.rev_list(self.root, [f"{commit}..{self.base}"], first_parent_only=True,
                                ancestry_path=True)
        if not chain:
            return commit
        oldest = chain[-1]
        return commit if git.first_parent(self.root, oldest) == commit else oldest

    def _commit_merged(self, commit: WaveCommit, head: str) -> Merged | None:
        """Whether ``commit`` (of a branch whose tip is ``head``) is in the base branch, by which rule."""
        short = commit.sha[:12]
        if commit.sha not in self._beyond_shas(head):  # the base branch reaches it
            via = self.merge_commit(commit.sha)
            return Merged(ANCESTRY, via, f"commit {short} is in {self.base_branch}")
        parents = self.parents(commit.sha, head)
        if len(parents) > 1:
            return self._merge_merged(commit, parents, head)
        patch_id = self.patch_id(commit.sha, head)
        if patch_id is not None and patch_id in self.base_patch_ids:
            via = self.base_patch_ids[patch_id]
            return Merged(PATCH_ID, via, f"commit {short} is {self.base_branch}'s {via[:12]} (same patch id)")
        if commit.items and all(item_id in self.squashed for item_id in commit.items) \
                and self._brings_paths(commit):
            return self._squash(commit.items[-1])
        paths = list(self.paths([commit.sha])[commit.sha])
        if paths and all(self.same_files(head).get(path, False) for path in paths):
            return Merged(CONTENT, git.last_change(self.root, self.base, paths),
                          f"its files on {self.base_branch} equal the wave head's")
        return None

    def _brings_paths(self, commit: WaveCommit) -> bool:
        """Whether the base commits whose messages name ``commit``'s items change every path it changed: a
        message is anyone's to write (GitHub's squash message quotes a PR's commit messages), so naming an
        item is not bringing it."""
        squashes = sorted({self.squashed[item_id] for item_id in commit.items})
        changed = self.paths([commit.sha, *squashes])
        return set(changed[commit.sha]) <= {path for sha in squashes for path in changed[sha]}

    def _merge_merged(self, commit: WaveCommit, parents: Sequence[git.CommitSha], head: str) -> Merged | None:
        """A merge on the branch (base merged into it, GitHub's "update branch") adds nothing of its own
        that counts: it is in when each parent is."""
        beyond = {c.sha: c for c in self.beyond_base(head)}
        found = [self.commit_merged(beyond[p], head) if p in beyond else
                 Merged(ANCESTRY, p, "") for p in parents]
        if not all(found):
            return None
        rule = next((m.rule for m in reversed(found) if m is not None and m.rule != ANCESTRY), ANCESTRY)
        return Merged(rule, None, f"merge {commit.sha[:12]} joins commits that are in {self.base_branch}")

    def _same_files_at(self, head: str) -> dict[str, bool]:
        """Path -> whether base has the blob (or the absence) ``head`` has, with its mode, for every path a
        commit of ``head`` judged here changed (one ``diff-tree``: comparing blob ids alone, an item that only
        made a file executable was "merged" by a base that never was)."""
        shas = [c.sha for c in self.beyond_base(head)]
        changed = self.paths(shas)
        differ = set(git.changed_paths(self.root, self.base, head))
        return {path: path not in differ for sha in shas for path in changed[sha]}

    # -- an item ----------------------------------------------------------------------------------------

    def branch_label(self, head: Head) -> str:
        branch = wavebranch.wave_branch(self.wave_id)
        return f"local branch {branch}" if head.local and len(self.heads) > 1 else branch

    def has_item(self, item_id: str) -> bool:
        return any(item_id in commit.items for head in self.heads
                   for commit in [*self.wave_commits(head.sha), *self._older(head.sha, item_id)])

    def _older(self, head: str, item_id: str) -> list[WaveCommit]:
        """The item's commits of this wave on ``head`` that base reaches, when none is beyond it."""
        if any(item_id in c.items for c in self.wave_commits(head)):
            return []
        return [c for c in self.on_head(head) if item_id in c.items]

    def item(self, item_id: str, owns: Sequence[str] = ()) -> Merged | None:
        """Whether the item's changes are in the base branch, by which rule; None while they are not.
        ``owns``: the item's ownership patterns, which a message naming it must touch when no commit of
        it is left to compare with."""
        for head in self.heads:
            if not self.beyond_base(head.sha):
                return Merged(ANCESTRY, self.merge_commit(head.sha),
                              f"{self.branch_label(head)} is merged into {self.base_branch}")
        seen = False
        for head in self.heads:
            commits = [c for c in self.wave_commits(head.sha) if item_id in c.items] \
                or self._older(head.sha, item_id)
            seen = seen or bool(commits)
            found = [self.commit_merged(c, head.sha) for c in commits]
            if found and all(found):
                last = found[-1]
                assert last is not None
                return Merged(last.rule, last.commit, f"{last.reason} ({self.branch_label(head)})")
        if not seen and item_id in self.squashed and self._touches(self.squashed[item_id], owns):
            return self._squash(item_id)
        return None

    def _touches(self, commit: git.CommitSha, owns: Sequence[str]) -> bool:
        """Whether ``commit`` changes a path the patterns ``owns`` match: a message naming an item (anyone's
        to write) counts only on a commit that changes the item's files."""
        return any(matches(pattern, path) for path in self.paths([commit])[commit] for pattern in owns)

    def _squash(self, item_id: str) -> Merged:
        via = self.squashed[item_id]
        return Merged(TRAILER, via, f"{self.base_branch}'s {via[:12]} carries its Wavegit-Item trailer")
