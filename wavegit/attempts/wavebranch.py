"""Branch names, item commits and their combination into the wave branch; on git.

Branch naming (the pre-push hook imports these builders, so they live in one place):

- the wave branch is ``wavegit/<wave-id>``;
- an item's branch is ``wavegit/items/<wave-id>/<item-id>``. It is not ``wavegit/<wave-id>/<item-id>``
  because git cannot hold a ref and a directory of refs with the same name.

Everything here works with plumbing in the given directory; nothing touches the user's index or work tree.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from wavegit.core import fastimport, git
from wavegit.core.errors import UsageError
from wavegit.core.git import Branch, Change, CommitChanges, GitError, WaveId

BRANCH_PREFIX = "wavegit/"
ITEM_BRANCH_PREFIX = "wavegit/items/"
WAVE_ID_RE = re.compile(r"^w-\d{8}-\d{6}-[0-9a-f]{4}$")
TRAILER_ITEM = "Wavegit-Item"
TRAILER_WAVE = "Wavegit-Wave"
TRAILER_PROMPT = "Wavegit-Prompt-Sha256"
TRAILER_WORKER = "Wavegit-Worker"


_ISSUED: set[str] = set()
"""The wave ids this process made: a rolling scheduler opens several waves a second, and two of 50 random
suffixes in one second are alike about once in fifty."""


def new_wave_id(now: datetime | None = None) -> WaveId:
    """``w-YYYYMMDD-HHMMSS-xxxx`` in UTC: sortable by start time, unique by its random suffix (never one this
    process made before)."""
    moment = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    while True:
        wave_id = f"w-{moment:%Y%m%d-%H%M%S}-{os.urandom(2).hex()}"
        if wave_id not in _ISSUED:
            _ISSUED.add(wave_id)
            return WaveId(wave_id)


def wave_id_of(text: str) -> WaveId | None:
    """``text`` (an argument, a file's or a branch's name) as a wave id; None when it is not one."""
    return WaveId(text) if WAVE_ID_RE.match(text) else None


def wave_option(text: str) -> WaveId:
    """``--wave``'s value, parsed; UsageError when it is no wave id."""
    wave_id = wave_id_of(text)
    if wave_id is None:
        raise UsageError(f"--wave {text!r}: not a wave id (w-YYYYMMDD-HHMMSS-xxxx, as printed by "
                         "`wavegit claim`)")
    return wave_id


def wave_branch(wave_id: WaveId) -> Branch:
    return Branch(f"{BRANCH_PREFIX}{wave_id}")


def item_branch(wave_id: WaveId, item_id: str) -> Branch:
    return Branch(f"{ITEM_BRANCH_PREFIX}{wave_id}/{item_id}")


def parse_wave_branch(branch: str) -> WaveId | None:
    """The wave id of a wave branch name (``refs/heads/`` optional), or None."""
    name = branch.removeprefix("refs/heads/")
    return wave_id_of(name.removeprefix(BRANCH_PREFIX)) if name.startswith(BRANCH_PREFIX) else None


def parse_item_branch(branch: str) -> tuple[WaveId, str] | None:
    """``(wave_id, item_id)`` of an item branch name (``refs/heads/`` optional), or None."""
    name = branch.removeprefix("refs/heads/")
    if not name.startswith(ITEM_BRANCH_PREFIX):
        return None
    text, _, item_id = name.removeprefix(ITEM_BRANCH_PREFIX).partition("/")
    wave_id = wave_id_of(text)
    return (wave_id, item_id) if wave_id is not None and item_id else None


@dataclass(frozen=True)
class Trailers:
    item_id: str
    wave_id: WaveId
    prompt_sha256: str
    worker: str = ""
    """What ran it: the profile, preset and model (``deep (claude, opus)``)."""

    def render(self) -> str:
        # The config names profiles: one line whatever it holds.
        worker = f"{TRAILER_WORKER}: {' '.join(self.worker.split())}\n" if self.worker.strip() else ""
        return (f"{TRAILER_ITEM}: {self.item_id}\n{TRAILER_WAVE}: {self.wave_id}\n"
                f"{TRAILER_PROMPT}: {self.prompt_sha256}\n{worker}")


def item_message(title: str, trailers: Trailers) -> str:
    """The commit message of a verified item: a subject naming the item, then the trailers."""
    # git refuses a NUL byte in a message: an imported title with one would fail every attempt, uncounted.
    lines = title.replace("\0", "").strip().splitlines()
    first_line = lines[0] if lines else ""
    subject = f"{trailers.item_id}: {first_line}" if first_line else trailers.item_id
    return f"{subject}\n\n{trailers.render()}"


def set_branch(repo_root: Path, branch: str, commit: str) -> None:
    git.update_ref(repo_root, f"refs/heads/{branch}", git.CommitSha(commit))


def delete_branch(repo_root: Path, branch: str) -> None:
    """Delete a local branch if it exists."""
    delete_branches(repo_root, [branch])


def delete_branches(repo_root: Path, branches: Sequence[str]) -> None:
    """Delete local branches (one git call), ignoring any that do not exist."""
    git.delete_refs(repo_root, {f"refs/heads/{branch}": None for branch in branches})


def item_branches(repo_root: Path, wave_id: WaveId) -> list[Branch]:
    refs = git.for_each_ref(repo_root, f"refs/heads/{ITEM_BRANCH_PREFIX}{wave_id}/")
    return [Branch(ref.removeprefix("refs/heads/")) for ref in refs]


class CombineConflict(GitError):
    """Two item commits could not be combined (should not happen: their owned paths are disjoint)."""


def combine(repo_root: Path, start: str, commits: Sequence[tuple[str, str]], *,
            branch: str | None = None, idents: tuple[str, str] | None = None,
            known: Mapping[str, CommitChanges] | None = None) -> str:
    """Replay each ``(item commit, its message)`` (parent = the wave's base) on top of ``start`` in order.

    Each replayed commit keeps its item's message (and so its trailers); the final commit is returned and,
    when ``branch`` is given, that branch is set to it. When every item commit sits directly on ``start``
    and no two change the same path (or a file and a directory holding it), each replay is its item's
    own change applied as is, so one ``git fast-import`` writes the whole chain, as ``idents`` (author,
    committer, dated) when given, else as git would record them here now. Otherwise every commit is merged
    with ``git merge-tree --write-tree`` (git >= 2.38; merge base: the item commit's parent). ``known``:
    commits whose parents and changes are known already (their read-backs wrote them): git is asked only
    when one is not.
    """
    if not commits:
        head = start
    else:
        changes = _own_changes(repo_root, start, [commit for commit, _ in commits], known or {})
        if changes is not None and _disjoint(changes):
            return _fast_import(repo_root, start, [message for _, message in commits], changes, branch,
                                idents or git.idents(repo_root))
        head = _merge_chain(repo_root, start, commits)
    if branch is not None:
        set_branch(repo_root, branch, head)
    return head


def _merge_chain(repo_root: Path, start: str, commits: Sequence[tuple[str, str]]) -> str:
    head = start
    for commit, message in commits:
        try:
            tree = git.merge_tree(repo_root, head, commit)
        except GitError as error:
            raise CombineConflict(error.command[1:], error.returncode, error.stderr) from error
        head = git.commit_tree(repo_root, tree, [git.CommitSha(head)], message)
    return head


def _own_changes(repo_root: Path, start: str, commits: Sequence[str],
                 known: Mapping[str, CommitChanges]) -> list[list[Change]] | None:
    """Each commit's changes against its parent (``known``, else one ``diff-tree``); None unless every
    parent is ``start``."""
    found = ([known[commit] for commit in commits] if all(commit in known for commit in commits)
             else git.changes_of_commits(repo_root, [git.CommitSha(commit) for commit in commits]))
    if len(found) != len(commits) or any(own.parents != [start] for own in found):
        return None
    return [own.changes for own in found]


def _disjoint(changes: Sequence[Sequence[Change]]) -> bool:
    """Whether no path is changed by two commits, nor is a file in one and a directory in another."""
    owner: dict[str, int] = {}
    for n, own in enumerate(changes):
        if any(owner.setdefault(change.path, n) != n for change in own):
            return False
    for n, own in enumerate(changes):
        for change in own:
            parts = change.path.split("/")
            if any(owner.get("/".join(parts[:depth]), n) != n for depth in range(1, len(parts))):
                return False
    return True


def _fast_import(repo_root: Path, start: str, messages: Sequence[str], changes: Sequence[Sequence[Change]],
                 branch: str | None, idents: tuple[str, str]) -> str:
    """The replay chain written by one ``git fast-import``; its last commit (``branch`` set to it)."""
    author, committer = idents
    # Without a branch the chain is built on a scratch ref that the closing `reset` (no `from`) drops.
    ref = f"refs/heads/{branch}" if branch else f"refs/wavegit-combine/{os.urandom(8).hex()}"
    stream = ["feature done\n"]
    for n, (message, own) in enumerate(zip(messages, changes, strict=True), start=1):
        stream.append(f"commit {ref}\nmark :{n}\nauthor {author}\ncommitter {committer}\n"
                      f"{fastimport.data(message)}")
        if n == 1:
            stream.append(f"from {start}\n")
        # Deletions first: a file may replace a deleted directory of the same name, or the reverse.
        stream += [f"D {fastimport.quote(c.path)}\n" for c in own if c.deleted]
        stream += [f"M {c.mode} {c.sha} {fastimport.quote(c.path)}\n" for c in own if not c.deleted]
        stream.append("\n")
    if not branch:
        stream.append(f"reset {ref}\n\n")
    stream.append(f"get-mark :{len(messages)}\ndone\n")
    # One pack per wave, as a fetch of as many objects leaves one: the chain's commits and trees are
    # written at the wave's end, its last step before the push.
    return git.fast_import(repo_root, "".join(stream), force=True, keep_pack=True)


def fetch_branch(repo_root: Path, remote: str, branch: str) -> str:
    """Fetch ``branch`` from ``remote`` into its remote-tracking ref; the commit it points at."""
    tracking = f"refs/remotes/{remote}/{branch}"
    git.fetch(repo_root, remote, [f"+refs/heads/{branch}:{tracking}"])
    return git.commit_of(repo_root, tracking)
