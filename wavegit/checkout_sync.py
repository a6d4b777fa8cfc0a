"""The store's one exception to "never touch the user's checkout".

In a repository without a remote, a tracker commit moves the local branch itself. If that branch is
checked out somewhere, its index and files would suddenly look like they revert the commit. So for each
changed file that was clean there (index and file equal to the old blob, or both absent), the index
entry and the file are brought up to date. A file with any local change is left exactly as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from wavegit import gitops
from wavegit.repo import Repo


@dataclass(frozen=True)
class CheckoutSync:
    worktree: Path
    paths: Mapping[str, str | None]
    """Repo path -> its new blob sha (None = delete), only for paths that were clean."""


def prepare(repo: Repo, branch_ref: str, old: Mapping[str, str | None],
            new: Mapping[str, str | None]) -> CheckoutSync | None:
    """What to refresh after ``branch_ref`` moves; call before moving it. None when nothing is due."""
    worktree = checked_out_at(repo, branch_ref)
    if worktree is None:
        return None
    clean = {path: sha for path, sha in new.items() if _is_clean(worktree, path, old.get(path))}
    return CheckoutSync(worktree, clean) if clean else None


def apply(sync: CheckoutSync) -> None:
    """Point the index entries at the new blobs and write (or delete) the files."""
    gitops.refresh_files(sync.worktree, sync.paths)


def checked_out_at(repo: Repo, branch_ref: str) -> Path | None:
    """The work tree (main or linked) whose HEAD is ``branch_ref``, if any."""
    return next((wt.path for wt in gitops.worktrees(repo.root) if wt.branch == branch_ref), None)


def _is_clean(worktree: Path, path: str, old_sha: str | None) -> bool:
    entries = gitops.staged_entries(worktree, path)
    file = worktree / path
    if old_sha is None:
        return not entries and not file.exists() and not file.is_symlink()
    if len(entries) != 1:
        return False
    _mode, sha, stage = entries[0]
    if stage != "0" or sha != old_sha or not file.is_file() or file.is_symlink():
        return False
    return gitops.hash_file(worktree, path) == old_sha
