"""The git layer's operations for settling waves: what each commit changed and whether a change is already
in a branch (patch ids, the blobs of paths at many revisions, a merge's tree, the last commit to touch
paths).
"""

from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from wavegit.core.git import _runner as git
from wavegit.core.git._ops import BlobSha, CommitSha, TreeSha


class Change(NamedTuple):
    """A path a commit changed against its first parent: its new mode and blob (mode ``000000``: deleted)."""

    path: str
    mode: str
    sha: BlobSha

    @property
    def deleted(self) -> bool:
        return self.mode == "000000"


def own_changes(root: Path, commit: CommitSha) -> list[Change]:
    """What ``commit`` changed against its first parent (no rename detection)."""
    raw = git.out(["diff-tree", "-r", "-z", "--no-renames", git.SUBMODULE_CHANGES, f"{commit}^", commit],
                  cwd=root)
    fields = raw.rstrip("\0").split("\0") if raw else []
    changes = []
    for meta, path in zip(fields[0::2], fields[1::2], strict=True):
        _, new_mode, _, new_sha, _ = meta.lstrip(":").split(" ")
        changes.append(Change(path, new_mode, BlobSha(new_sha)))
    return changes


class CommitChanges(NamedTuple):
    parents: list[CommitSha]
    changes: list[Change]
    """What the commit changed against its first parent (no rename detection)."""


def changes_of_commits(root: Path, commits: Sequence[CommitSha]) -> list[CommitChanges]:
    """The parents and own changes of each of ``commits``, in order, from one ``git diff-tree --stdin``."""
    raw = git.out(["diff-tree", "--stdin", "-r", "-z", "--no-renames", git.SUBMODULE_CHANGES, "--always",
                   "--format=%H %P"], cwd=root, input="".join(f"{commit}\n" for commit in commits))
    found: list[CommitChanges] = []
    fields = iter(raw.split("\0"))
    for field in fields:
        field = field.strip("\n")
        if field.startswith(":"):
            _, mode, _, sha, _ = field[1:].split(" ")
            found[-1].changes.append(Change(next(fields), mode, BlobSha(sha)))
        elif field:
            found.append(CommitChanges([CommitSha(p) for p in field.split(" ")[1:]], []))
    return found


def merge_tree(root: Path, ours: str, theirs: str) -> TreeSha:
    """The tree of merging ``theirs`` into ``ours`` (``git merge-tree --write-tree``, git >= 2.38); a
    GitError whose stderr holds git's output (the conflicts) when they do not merge cleanly."""
    result = git.run(["merge-tree", "--write-tree", "--no-messages", ours, theirs], cwd=root, check=False)
    if result.returncode != 0:
        raise git.GitError(["merge-tree", "--write-tree", ours, theirs], result.returncode,
                           result.stdout + result.stderr)
    return TreeSha(result.stdout.split("\n", 1)[0].strip())


def patch_ids(root: Path, commits: Sequence[CommitSha] = (), *, revs: Sequence[str] = (),
              paths: Sequence[str] = ()) -> dict[CommitSha, str]:
    """Commit -> its ``git patch-id --stable`` (the same change on another parent has the same id), for
    exactly ``commits``, or for the commits ``revs`` lists that change any of ``paths`` (their patches cut
    down to those paths); merges and empty commits have none."""
    if not commits and not (revs and paths):
        return {}
    args = ["-c", "log.showSignature=false", "--literal-pathspecs", "log", "-p", "--binary", "--no-merges",
            "--no-renames", "--no-color", "--no-ext-diff", "--no-textconv", git.SUBMODULE_CHANGES,
            "--format=commit %H"]
    if commits:
        patches = git.out([*args, "--no-walk=unsorted", "--stdin"], cwd=root, input="\n".join(commits) + "\n")
    else:
        patches = git.out([*args, *revs, "--", *paths], cwd=root)
    if not patches.strip():
        return {}
    listing = git.out(["patch-id", "--stable"], cwd=root, input=patches + "\n")
    found = {}
    for line in listing.splitlines():
        patch_id, _, commit = line.partition(" ")
        found[CommitSha(commit)] = patch_id
    return found


def last_change(root: Path, rev: str, paths: Sequence[str]) -> CommitSha | None:
    """The newest commit of ``rev`` that changed any of ``paths`` (taken literally); None when none did."""
    found = git.out(["--literal-pathspecs", "log", "--max-count=1", "--format=%H", rev, "--", *paths],
                    cwd=root)
    return CommitSha(found) if found else None
