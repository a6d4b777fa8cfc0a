"""The store's one exception to "never touch the user's checkout", and ``wavegit pull``'s fast-forward.

Without a remote, a tracker commit moves the local branch itself; where that branch is checked out, each
changed file that was clean there (index and file at the old blob, or both absent) is brought up to date,
so the checkout does not seem to revert the commit. :func:`fast_forward` is ``git merge --ff-only`` for
``wavegit pull`` (README, "Where the tracker lives").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from wavegit.core import git
from wavegit.core.errors import UsageError
from wavegit.core.git import GitError
from wavegit.core.repo import Repo


@dataclass(frozen=True)
class CheckoutSync:
    worktree: Path
    paths: Mapping[str, git.BlobSha | None]
    """Repo path -> its new blob sha (None = delete), only for paths that were clean."""


def prepare(repo: Repo, branch_ref: str, old: Mapping[str, git.BlobSha | None],
            new: Mapping[str, git.BlobSha | None]) -> CheckoutSync | None:
    """What to refresh after ``branch_ref`` moves; call before moving it. None when nothing is due."""
    worktree = checked_out_at(repo, branch_ref)
    if worktree is None:
        return None
    clean = {path: sha for path, sha in new.items() if _is_clean(worktree, path, old.get(path))}
    return CheckoutSync(worktree, clean) if clean else None


@dataclass(frozen=True)
class Forwarded:
    """A local branch moved forward by :func:`fast_forward`."""

    branch: str
    old: git.CommitSha | None
    """None: the branch was created."""
    new: git.CommitSha
    worktree: Path | None
    """The checkout whose files followed (the branch is checked out there), if any."""


def fast_forward(repo: Repo, branch: str, commit: git.CommitSha, upstream: str) -> Forwarded | None:
    """Move the local ``branch`` to ``commit`` (``upstream``'s, e.g. ``origin/wavegit-tracker``), creating it
    when absent, and its checkout's files with it when it is checked out; None when it is there already.

    Refused (UsageError naming the fix, nothing moved) when the branch has commits ``upstream`` lacks, or
    when it is checked out in a work tree with uncommitted changes.
    """
    ref = f"refs/heads/{branch}"
    old = git.resolve_commit(repo.root, ref)
    if old == commit:
        return None
    if old is not None and not git.is_ancestor(repo.root, old, commit):
        how = ("is ahead of" if git.is_ancestor(repo.root, commit, old) else "has diverged from")
        raise UsageError(f"local branch {branch} {how} {upstream} (it has commits {upstream} does not): "
                         f"push them, or rebase it onto {upstream} (git rebase {upstream} {branch}), "
                         "then run wavegit pull again; nothing changed")
    worktree = checked_out_at(repo, ref)
    if worktree is None:
        git.update_ref(repo.root, ref, commit, old or git.CommitSha(""),
                       message=f"wavegit pull: from {upstream}")
        if old is None:
            # As `git switch` creates it: `git push` and `git pull` in a checkout of it then just work.
            git.set_upstream(repo.root, branch, upstream)
        return Forwarded(branch, old, commit, None)
    if not git.is_clean(worktree):
        raise UsageError(f"{worktree} has uncommitted changes and {branch} is checked out there: commit or "
                         "stash them (git stash), then run wavegit pull again; nothing changed")
    try:
        git.fast_forward(worktree, commit)
    except GitError as exc:  # an untracked file in the way: git names it
        detail = " ".join(exc.stderr.split()) or str(exc)
        raise UsageError(f"cannot fast-forward {branch} in {worktree}: {detail} (move the untracked files "
                         "git names), then run wavegit pull again; nothing changed") from exc
    return Forwarded(branch, old, commit, worktree)


def checked_out_at(repo: Repo, branch_ref: str) -> Path | None:
    """The work tree (main or linked) whose HEAD is ``branch_ref``, if any."""
    return next((wt.path for wt in git.worktrees(repo.root) if wt.branch == branch_ref), None)


def _is_clean(worktree: Path, path: str, old_sha: str | None) -> bool:
    entries = git.staged_entries(worktree, path)
    file = worktree / path
    if old_sha is None:
        return not entries and not file.exists() and not file.is_symlink()
    if len(entries) != 1:
        return False
    _mode, sha, stage = entries[0]
    if stage != "0" or sha != old_sha or not file.is_file() or file.is_symlink():
        return False
    return git.hash_file(worktree, path) == old_sha
