"""The git layer's operations on attempt trees and bulk objects: making an attempt's repository (``init``,
``reset --hard``), reading a base tree whole (``ls-tree -r``, ``cat-file --batch``, ``check-ignore``) and
writing objects in bulk (``fast-import``)."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

from wavegit.core.git import _runner as git
from wavegit.core.git._ops import BlobSha, Branch, CommitSha, TreeEntry


def git_path(root: Path, name: str) -> Path:
    """Where the repository at ``root`` keeps ``name`` (``git rev-parse --git-path``), absolute."""
    return (root / git.out(["rev-parse", "--git-path", name], cwd=root)).resolve()


def absolute_git_dir(root: Path) -> Path:
    return Path(git.out(["rev-parse", "--absolute-git-dir"], cwd=root))


# An attempt's tree is made without the user's or the system's git config: a committed .gitattributes could
# otherwise name a filter (as git-lfs's) defined there, which would run in wavegit's checkout, unsandboxed.
_NO_USER_CONFIG = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def init_repository(path: Path, branch: Branch) -> None:
    """A new repository in the directory ``path``, on ``branch``, with no templates (no hooks, no
    ``info/exclude``) and no user or system config."""
    git.run(["init", "--quiet", "--template=", f"--initial-branch={branch}", "."], cwd=path,
            env=_NO_USER_CONFIG)


def ls_tree_recursive(root: Path, treeish: str) -> list[TreeEntry]:
    """Every blob, symlink and gitlink in ``treeish``, with full-tree paths."""
    listing = git.out(["ls-tree", "-r", "-z", "--full-tree", treeish], cwd=root)
    entries = []
    for record in filter(None, listing.split("\0")):
        meta, path = record.split("\t", 1)
        mode, kind, sha = meta.split(" ")
        entries.append(TreeEntry(mode, kind, BlobSha(sha), path))
    return entries


def cat_file_batch(root: Path, blobs: Sequence[BlobSha]) -> list[bytes]:
    """The exact bytes of each of ``blobs``, in order, from one ``git cat-file --batch``."""
    if not blobs:
        return []
    batch = git.run(["cat-file", "--batch"], cwd=root, input="".join(f"{blob}\n" for blob in blobs)).stdout
    raw = batch.encode("utf-8", "surrogateescape")
    contents = []
    at = 0
    for _ in blobs:
        header_end = raw.index(b"\n", at)
        size = int(raw[at:header_end].split()[2])
        contents.append(raw[header_end + 1: header_end + 1 + size])
        at = header_end + 1 + size + 1  # each object ends with a newline of its own
    return contents


def missing_objects(root: Path, oids: Sequence[str]) -> list[bool]:
    """For each of ``oids``, in order, whether the repository lacks it (one ``git cat-file``)."""
    if not oids:
        return []
    listing = git.out(["cat-file", "--batch-check=%(objecttype)"], cwd=root,
                      input="".join(f"{oid}\n" for oid in oids))
    return [answer.endswith(" missing") for answer in listing.splitlines()]


def check_ignore(git_dir: Path, work_tree: Path, paths: Sequence[str]) -> set[str]:
    """Which of ``paths`` (relative to ``work_tree``) the ignore files in ``work_tree`` and ``git_dir``'s
    exclude files ignore; the index plays no part (``--no-index``)."""
    if not paths:
        return set()
    # Each path goes as ./PATH (and comes back so): a name like `:(exclude)x` is no pathspec magic.
    found = git.run(["--git-dir", str(git_dir), "--work-tree", str(work_tree), "check-ignore",
                     "--no-index", "-z", "--stdin"], cwd=work_tree,
                    input="".join(f"./{path}\0" for path in paths), check=False)
    if found.returncode not in (0, 1):  # 1: none of them is ignored
        raise git.GitError(["check-ignore"], found.returncode, found.stderr)
    return {path.removeprefix("./") for path in found.stdout.split("\0") if path}


_IDENT_VARS = ("GIT_AUTHOR_IDENT", "GIT_COMMITTER_IDENT")
_DATE_VARS = ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE")
_idents_read: dict[tuple[Path, frozenset[tuple[str, str]]], tuple[str, str]] = {}


def idents(root: Path) -> tuple[str, str]:
    """The author and committer lines git would record here now (``Name <email> <time> <tz>``): asked of
    ``git var`` once per repository and environment in a process, then dated now as ``commit-tree`` would,
    unless ``GIT_AUTHOR_DATE`` or ``GIT_COMMITTER_DATE`` fixes the date (``git var`` printed it)."""
    key = (root.absolute(), frozenset(item for item in os.environ.items() if item[0].startswith("GIT_")))
    found = _idents_read.get(key)
    if found is None:
        author, committer = (git.out(["var", name], cwd=root) for name in _IDENT_VARS)
        found = _idents_read[key] = (author, committer)
    return _dated_now(found[0], _DATE_VARS[0]), _dated_now(found[1], _DATE_VARS[1])


def _dated_now(ident: str, pinned_by: str) -> str:
    if pinned_by in os.environ:
        return ident
    person, _, zone = ident.rsplit(" ", 2)
    return f"{person} {int(time.time())} {zone}"


def fast_import(root: Path, stream: str, *, force: bool = False, keep_pack: bool = False) -> str:
    """Run ``git fast-import --quiet`` on ``stream``; what it printed (``get-mark``, ``ls`` answers).
    ``force`` lets it move branches to commits that do not descend from where they are. ``keep_pack``: what
    it writes stays one pack, however few objects (else, under ``fastimport.unpackLimit``, 100, a second
    git process writes each as a loose object: 20 ms for a 16-commit chain on this machine's disk, 6 ms
    kept)."""
    keep = ["-c", "fastimport.unpackLimit=0"] if keep_pack else []
    return git.out([*keep, "fast-import", "--quiet", *(["--force"] if force else [])], cwd=root, input=stream)


def pack_reachable(root: Path, pack: Path, revs: Sequence[str], *, objects: Path | None = None) -> None:
    """Pack every object ``revs`` reach (``^REV``: less what REV reaches) into ``pack``-HASH.pack and its
    index (``git pack-objects --revs``: packed deltas reused, none computed again); not synced to disk: the
    packs are a wave's, made again after a crash (an fsync costs ~20 ms on a busy disk).

    ``objects``: ``root``'s object directory, given when ``pack`` lies in another object directory
    (``OBJECTS/pack/NAME``), maybe on another file system (the cache folder). git writes its temporary file
    in its object directory and renames it, so that directory is made ``OBJECTS``, reading ``objects`` as
    an alternate."""
    env = None
    if objects is not None:
        env = {"GIT_OBJECT_DIRECTORY": str(pack.parent.parent.absolute()),
               "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(objects)}
    git.run(["-c", "core.fsync=none", "pack-objects", "--revs", "--quiet", "--delta-base-offset", str(pack)],
            cwd=root, input="".join(f"{rev}\n" for rev in revs), env=env)


def tags_merged(root: Path, commit: str) -> list[tuple[str, str, str]]:
    """The tags of the repository at ``root`` whose commit ``commit`` reaches, by name (as ``packed-refs``
    sorts them): (ref name, the tag's object, the commit it peels to, "" for a lightweight tag)."""
    listing = git.out(["for-each-ref", f"--merged={commit}", "--sort=refname",
                       "--format=%(refname) %(objectname) %(*objectname)", "refs/tags/"], cwd=root)
    tags = []
    for line in git.lines(listing):
        name, oid, peeled = line.split(" ", 2)  # a lightweight tag's peeled field is empty
        tags.append((name, oid, peeled))
    return tags


def check_out_unlogged(worktree: Path, commit: CommitSha) -> None:
    """Point ``worktree``'s branch, index and files at ``commit`` (no user or system config), writing no
    reflog: a fresh tree needs none, and each is files to make and remove."""
    git.run(["-c", "core.logAllRefUpdates=false", "reset", "--hard", "--quiet", commit], cwd=worktree,
            env=_NO_USER_CONFIG)


def check_out_files(worktree: Path, commit: CommitSha) -> None:
    """Write ``commit``'s files and the index of the fresh tree ``worktree`` (no user or system config),
    leaving its refs alone: for a tree whose branch its maker wrote already."""
    git.run(["read-tree", "--reset", "-u", commit], cwd=worktree, env=_NO_USER_CONFIG)
