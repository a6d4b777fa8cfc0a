"""Branch names, item commits and their combination, the cleanup of linked worktrees; on git.

Branch naming (the pre-push hook imports these builders, so they live in one place):

- the wave branch is ``wavegit/<wave-id>``;
- an item's branch is ``wavegit/items/<wave-id>/<item-id>``. It is not ``wavegit/<wave-id>/<item-id>``
  because git cannot hold a ref and a directory of refs with the same name.

Everything here works with plumbing in the given directory; nothing touches the user's index or work tree.
An attempt's tree is no linked worktree (:mod:`wavegit.attempts.workspace`); the worktree functions here
remove linked worktrees that a wavegit before it left under the state dir, and the worktrees half-made by a
kill inside its ``git worktree add``, which make every fetch in the clone fail until removed.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from wavegit.attempts import workspace
from wavegit.core import fastimport, gitops, gitops_merges, gitops_objects, gitops_worktrees
from wavegit.core.git import GitError
from wavegit.core.gitops import Branch, WaveId
from wavegit.core.gitops_merges import Change
from wavegit.core.repo import Repo

BRANCH_PREFIX = "wavegit/"
ITEM_BRANCH_PREFIX = "wavegit/items/"
WAVE_ID_RE = re.compile(r"^w-\d{8}-\d{6}-[0-9a-f]{4}$")
TRAILER_ITEM = "Wavegit-Item"
TRAILER_WAVE = "Wavegit-Wave"
TRAILER_PROMPT = "Wavegit-Prompt-Sha256"
TRAILER_WORKER = "Wavegit-Worker"


def new_wave_id(now: datetime | None = None) -> WaveId:
    """``w-YYYYMMDD-HHMMSS-xxxx`` in UTC: sortable by start time, unique by its random suffix."""
    moment = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    return WaveId(f"w-{moment:%Y%m%d-%H%M%S}-{secrets.token_hex(2)}")


def wave_branch(wave_id: str) -> Branch:
    return Branch(f"{BRANCH_PREFIX}{wave_id}")


def item_branch(wave_id: str, item_id: str) -> Branch:
    return Branch(f"{ITEM_BRANCH_PREFIX}{wave_id}/{item_id}")


def parse_wave_branch(branch: str) -> WaveId | None:
    """The wave id of a wave branch name (``refs/heads/`` optional), or None."""
    name = branch.removeprefix("refs/heads/")
    wave_id = name.removeprefix(BRANCH_PREFIX)
    return WaveId(wave_id) if name.startswith(BRANCH_PREFIX) and WAVE_ID_RE.match(wave_id) else None


def parse_item_branch(branch: str) -> tuple[WaveId, str] | None:
    """``(wave_id, item_id)`` of an item branch name (``refs/heads/`` optional), or None."""
    name = branch.removeprefix("refs/heads/")
    if not name.startswith(ITEM_BRANCH_PREFIX):
        return None
    wave_id, _, item_id = name.removeprefix(ITEM_BRANCH_PREFIX).partition("/")
    return (WaveId(wave_id), item_id) if WAVE_ID_RE.match(wave_id) and item_id else None


def remove(repo_root: Path, path: Path) -> None:
    """Remove a worktree, whatever state it is in (dirty, half-created, already gone)."""
    if not gitops_worktrees.remove_worktree(repo_root, path):
        shutil.rmtree(path, ignore_errors=True)
        gitops_worktrees.prune_worktrees(repo_root)


def remove_all_under(repo_root: Path, directory: Path) -> None:
    """Remove every worktree of ``git worktree list`` below ``directory``, then the directory itself.

    The files go first and one ``git worktree prune`` then drops the admin entries of them all; only a
    locked worktree (which prune keeps) needs ``git worktree remove`` of its own.
    """
    prefix = directory.resolve()
    locked: list[Path] = []
    for found in gitops_worktrees.worktrees(repo_root):
        wt = found.path.resolve()
        if wt.is_relative_to(prefix):
            shutil.rmtree(wt, ignore_errors=True)
            if found.locked:
                locked.append(wt)
    workspace.remove(directory)
    gitops_worktrees.prune_worktrees(repo_root)
    for wt in locked:
        remove(repo_root, wt)


HALF_MADE_AGE_S = 60.0
"""How long a half-made worktree's admin files must have been left untouched before it is repaired.

``git worktree add`` writes them and finishes (HEAD set, lock removed) in well under a second, and each
wavegit process serialises its own adds; so one untouched this long is not being made by any live
process in this clone: its maker was killed (``kill -9`` in the middle of the add).
"""

_OID_RE = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")


@dataclass(frozen=True)
class HalfMade:
    """A worktree left by an interrupted ``git worktree add``: its admin dir, its path and what is wrong."""

    admin: Path
    """``<common dir>/worktrees/<name>``."""
    path: Path
    why: str

    def line(self) -> str:
        return f"repair half-made worktree {self.path} ({self.why}: a `git worktree add` was interrupted)"


def find_half_made(repo: Repo, *, min_age_s: float = HALF_MADE_AGE_S) -> list[HalfMade]:
    """Worktrees wavegit made (under ``<state dir>/worktrees``) whose HEAD is missing, empty or not an
    object, and whose admin files are at least ``min_age_s`` old.

    Every ``git fetch`` and ``git worktree add`` in the clone reads each worktree's HEAD and fails on one
    holding the placeholder (null) id that the add writes first ("bad object worktrees/<name>/HEAD").
    Only reads directories and small files, except that a well-formed id in a worktree still locked
    "initializing" (the add did not finish) is looked up with one ``git cat-file`` for all of them.
    """
    try:
        admins = sorted(p for p in (repo.common_dir / "worktrees").iterdir() if p.is_dir())
    except FileNotFoundError:
        return []
    ours = repo.worktrees_dir.resolve()
    now = time.time()
    found: list[HalfMade] = []
    unsure: list[tuple[Path, Path, str]] = []
    for admin in admins:
        path = _worktree_of(admin)
        if path is None or not path.is_relative_to(ours) or now - _last_touched(admin) < min_age_s:
            continue
        head = _read(admin / "HEAD")
        why = _bad_head(head)
        if why is not None:
            found.append(HalfMade(admin, path, why))
        elif head is not None and _OID_RE.match(head) and _initializing(admin):
            unsure.append((admin, path, head))
    missing = gitops_objects.missing_objects(repo.root, [oid for _, _, oid in unsure])
    for (admin, path, oid), gone in zip(unsure, missing, strict=True):
        if gone:
            found.append(HalfMade(admin, path, f"HEAD names {oid[:12]}, not an object"))
    return sorted(found, key=lambda half: half.admin)


def repair_half_made(repo: Repo, *, min_age_s: float = HALF_MADE_AGE_S) -> list[str]:
    """Remove the worktrees :func:`find_half_made` finds; one line for each that was repaired."""
    found = find_half_made(repo, min_age_s=min_age_s)
    for half in found:
        if not gitops_worktrees.remove_worktree(repo.root, half.path) or half.admin.exists():
            # `git worktree prune` keeps a locked entry, so its admin dir goes by hand first.
            shutil.rmtree(half.path, ignore_errors=True)
            shutil.rmtree(half.admin, ignore_errors=True)
            gitops_worktrees.prune_worktrees(repo.root)
    return [half.line() for half in found]


def _worktree_of(admin: Path) -> Path | None:
    """The worktree an admin dir belongs to (its ``gitdir`` file names ``<worktree>/.git``), resolved."""
    gitdir = _read(admin / "gitdir")
    if not gitdir:
        return None
    return (admin / gitdir).resolve().parent


def _last_touched(admin: Path) -> float:
    """The newest modification time of the admin dir and the files directly in it (now if it vanished)."""
    try:
        with os.scandir(admin) as entries:
            return max([admin.stat().st_mtime, *(entry.stat().st_mtime for entry in entries)])
    except FileNotFoundError:
        return time.time()


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except (FileNotFoundError, NotADirectoryError):
        return None


def _bad_head(head: str | None) -> str | None:
    """What is wrong with a worktree's HEAD that needs no git to tell, or None."""
    if head is None:
        return "HEAD is missing"
    if not head:
        return "HEAD is empty"
    if head.startswith("ref: "):
        return None
    if not _OID_RE.match(head):
        return "HEAD is neither an object id nor a symbolic ref"
    return "HEAD is the null id" if not head.strip("0") else None


def _initializing(admin: Path) -> bool:
    return _read(admin / "locked") == "initializing"


@dataclass(frozen=True)
class Trailers:
    item_id: str
    wave_id: str
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
    gitops.update_ref(repo_root, f"refs/heads/{branch}", commit)


def delete_branch(repo_root: Path, branch: str) -> None:
    """Delete a local branch if it exists."""
    delete_branches(repo_root, [branch])


def delete_branches(repo_root: Path, branches: Sequence[str]) -> None:
    """Delete local branches (one git call), ignoring any that do not exist."""
    gitops.delete_refs(repo_root, [f"refs/heads/{branch}" for branch in branches])


def item_branches(repo_root: Path, wave_id: str) -> list[Branch]:
    refs = gitops.for_each_ref(repo_root, f"refs/heads/{ITEM_BRANCH_PREFIX}{wave_id}/")
    return [Branch(ref.removeprefix("refs/heads/")) for ref in refs]


class CombineConflict(GitError):
    """Two item commits could not be combined (should not happen: their owned paths are disjoint)."""


def combine(repo_root: Path, start: str, commits: Sequence[tuple[str, str]], *,
            branch: str | None = None) -> str:
    """Replay each ``(item commit, its message)`` (parent = the wave's base) on top of ``start`` in order.

    Each replayed commit keeps its item's message (and so its trailers); the final commit is returned and,
    when ``branch`` is given, that branch is set to it. When every item commit sits directly on ``start``
    and no two change the same path (or a file and a directory holding it), each replay is its item's
    own change applied as is, so one ``git fast-import`` writes the whole chain. Otherwise every commit
    is merged with ``git merge-tree --write-tree`` (git >= 2.38; merge base: the item commit's parent).
    """
    if not commits:
        head = start
    else:
        changes = _own_changes(repo_root, start, [commit for commit, _ in commits])
        if changes is not None and _disjoint(changes):
            return _fast_import(repo_root, start, [message for _, message in commits], changes, branch)
        head = _merge_chain(repo_root, start, commits)
    if branch is not None:
        set_branch(repo_root, branch, head)
    return head


def _merge_chain(repo_root: Path, start: str, commits: Sequence[tuple[str, str]]) -> str:
    head = start
    for commit, message in commits:
        try:
            tree = gitops_merges.merge_tree(repo_root, head, commit)
        except GitError as error:
            raise CombineConflict(error.command[1:], error.returncode, error.stderr) from error
        head = gitops.commit_tree(repo_root, tree, [head], message)
    return head


def _own_changes(repo_root: Path, start: str, commits: Sequence[str]) -> list[list[Change]] | None:
    """Each commit's changes against its parent (one ``diff-tree``); None unless every parent is ``start``."""
    found = gitops_merges.changes_of_commits(repo_root, commits)
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
                 branch: str | None) -> str:
    """The replay chain written by one ``git fast-import``; its last commit (``branch`` set to it)."""
    author, committer = gitops_objects.idents(repo_root)
    # Without a branch the chain is built on a scratch ref that the closing `reset` (no `from`) drops.
    ref = f"refs/heads/{branch}" if branch else f"refs/wavegit-combine/{secrets.token_hex(8)}"
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
    return gitops_objects.fast_import(repo_root, "".join(stream), force=True)


def fetch_branch(repo_root: Path, remote: str, branch: str) -> str:
    """Fetch ``branch`` from ``remote`` into its remote-tracking ref; the commit it points at."""
    tracking = f"refs/remotes/{remote}/{branch}"
    gitops.fetch(repo_root, remote, [f"+refs/heads/{branch}:{tracking}"])
    return gitops.commit_of(repo_root, tracking)
