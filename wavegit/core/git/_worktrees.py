"""The git layer's operations on work trees: the user's checkout after a local tracker commit (what is staged,
refreshing files, whether it is clean, a fast-forward) and the list of its work trees (main and linked).
"""

from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from wavegit.core.git import _runner as git
from wavegit.core.git._ops import C_LOCALE, FILE_MODE, BlobSha, CommitSha


def staged_entries(worktree: Path, path: str) -> list[tuple[str, str, str]]:
    """``(mode, blob, stage)`` of each index entry of ``path`` (taken literally) in ``worktree``'s index."""
    staged = git.out(["--literal-pathspecs", "ls-files", "-s", "-z", "--", path], cwd=worktree)
    entries = []
    for entry in filter(None, staged.split("\0")):
        mode, sha, stage = entry.split("\t")[0].split()
        entries.append((mode, sha, stage))
    return entries


def refresh_files(worktree: Path, blobs: Mapping[str, BlobSha | None]) -> None:
    """Point ``worktree``'s index entries at ``blobs`` (None: remove) and write (or delete) the files."""
    updated = [path for path, sha in blobs.items() if sha]
    removed = [path for path, sha in blobs.items() if sha is None]
    if updated:
        entries = "".join(f"{FILE_MODE} {blobs[path]}\t{path}\0" for path in updated)
        git.run(["update-index", "-z", "--add", "--index-info"], cwd=worktree, input=entries)
        # checkout-index writes through the user's filters and records fresh stat data in the index.
        git.run(["checkout-index", "-f", "--", *updated], cwd=worktree)
    if removed:
        git.run(["update-index", "--force-remove", "--", *removed], cwd=worktree)
        for path in removed:
            (worktree / path).unlink(missing_ok=True)


def is_clean(worktree: Path) -> bool:
    """Whether ``worktree`` has no staged or unstaged change to a tracked file (``git status --porcelain``;
    untracked files do not count)."""
    return git.out(["status", "--porcelain", "-z", "--untracked-files=no"], cwd=worktree) == ""


def fast_forward(worktree: Path, commit: CommitSha) -> None:
    """Fast-forward the branch checked out in ``worktree`` to ``commit``, index and files included
    (``git merge --ff-only``); a GitError when that is no fast-forward or a file is in the way."""
    git.run(["merge", "--ff-only", "--quiet", commit], cwd=worktree, env=C_LOCALE)


class Worktree(NamedTuple):
    path: Path
    branch: str | None
    """The full ref checked out there (None: detached or bare)."""


def worktrees(root: Path) -> list[Worktree]:
    """Every work tree of the repository (``git worktree list``), the main one first."""
    listing = git.out(["worktree", "list", "--porcelain", "-z"], cwd=root)
    found = []
    for record in listing.split("\0\0"):
        fields = record.strip("\0").split("\0")
        if not fields[0].startswith("worktree "):
            continue
        branch = next((f.removeprefix("branch ") for f in fields[1:] if f.startswith("branch ")), None)
        found.append(Worktree(Path(fields[0].removeprefix("worktree ")), branch))
    return found
