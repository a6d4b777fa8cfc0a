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

from wavegit import git
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
    cwd = sync.worktree
    updated = [path for path, sha in sync.paths.items() if sha]
    removed = [path for path, sha in sync.paths.items() if sha is None]
    if updated:
        entries = "".join(f"100644 {sync.paths[path]}\t{path}\n" for path in updated)
        git.run(["update-index", "--add", "--index-info"], cwd=cwd, input=entries)
        # checkout-index writes through the user's filters and records fresh stat data in the index.
        git.run(["checkout-index", "-f", "--", *updated], cwd=cwd)
    if removed:
        git.run(["update-index", "--force-remove", "--", *removed], cwd=cwd)
        for path in removed:
            (cwd / path).unlink(missing_ok=True)


def checked_out_at(repo: Repo, branch_ref: str) -> Path | None:
    """The work tree (main or linked) whose HEAD is ``branch_ref``, if any."""
    listing = git.out(["worktree", "list", "--porcelain"], cwd=repo.root)
    for block in listing.split("\n\n"):
        lines = block.splitlines()
        if f"branch {branch_ref}" in lines and lines[0].startswith("worktree "):
            return Path(lines[0].removeprefix("worktree "))
    return None


def _is_clean(worktree: Path, path: str, old_sha: str | None) -> bool:
    staged = git.out(["--literal-pathspecs", "ls-files", "-s", "-z", "--", path], cwd=worktree)
    entries = [entry for entry in staged.split("\0") if entry]
    file = worktree / path
    if old_sha is None:
        return not entries and not file.exists() and not file.is_symlink()
    if len(entries) != 1:
        return False
    _mode, sha, stage = entries[0].split("\t")[0].split()
    if stage != "0" or sha != old_sha or not file.is_file() or file.is_symlink():
        return False
    return git.out(["hash-object", "--", path], cwd=worktree) == old_sha
