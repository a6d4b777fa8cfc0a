"""An attempt's tree read into the scheduler's repository as content, within limits.

The attempt's own git directory is never consulted (a worker may have rewritten or deleted it). The tree
is walked with ``lstat`` only: a symlink is recorded as a symlink (its target is the blob), never
followed; anything named ``.git`` is skipped, as git does. A file whose ``lstat`` is what it was when
wavegit checked the tree out (inode, size, modification and change times, mode) is the base's; every
other file is read and hashed here. New paths ignored by the base tree's ``.gitignore`` files (and the
scheduler's own exclude files) are left out; a worker's ``.git/info/exclude`` or config plays no part.

The limits are checked on the ``lstat`` sizes before anything is read or written, so a 3 GB sparse file
costs one ``lstat``; the whole read stops at the attempt's deadline. Blobs and the tree are written to the
scheduler's repository by ``git fast-import``, in a commit whose ref the stream drops again: the item's
commit when its message and identities are given (no ``commit-tree`` after it), else a scratch commit.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from wavegit.core import fastimport, git

BATCH_BYTES = 64 * 1024 * 1024
"""Blob data handed to one fast-import process at most (so memory stays bounded)."""
LISTED_FOLDER_BYTES = 1024 * 1024
"""The names of the folders a read lists (``Snapshot.written``) at most: each is asked for and printed
whole, so a worker's thousands of deep chains of long names were hundreds of megabytes (and seconds) where
their files' own paths were a few."""

_GITLINK = "160000"
_SYMLINK = "120000"
_DELETED = "000000"
_DEADLINE_EVERY = 256
"""Entries walked or files read between two looks at the clock."""


class TreeRejected(Exception):
    """The worker's tree cannot be taken: over a limit, past the deadline, or unreadable. The worker's
    doing, so its attempt counts."""


@dataclass(frozen=True)
class Limits:
    max_file_bytes: int
    max_changed_files: int


@dataclass(frozen=True)
class Entry:
    mode: str
    sha: str


StatKey = tuple[int, int, int, int, int]
"""What says a file is untouched: mode, inode, size, modification and change time (ns)."""


def stat_key(st: os.stat_result) -> StatKey:
    return (st.st_mode, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


@dataclass(frozen=True)
class Base:
    """What a tree is compared against: the base commit's entries, its tree, and its ignore rules."""

    commit: str
    tree: str
    entries: Mapping[str, Entry]
    git_dir: Path
    rules: Path
    """A directory holding only the base tree's ``.gitignore`` files, for ``git check-ignore``."""
    links: Mapping[str, str]
    """Every symlink of the base: path -> its target as written (a protected file reached through one is
    protected too: ``protected.through_links``)."""

    @classmethod
    def load(cls, repo_root: Path, commit: str, rules: Path) -> Base:
        """Read ``commit``'s entries and write its ``.gitignore`` files under ``rules``."""
        entries = {entry.path: Entry(entry.mode, entry.sha)
                   for entry in git.ls_tree_recursive(repo_root, commit)}
        tree = git.tree_of(repo_root, commit)
        git_dir = git.absolute_git_dir(repo_root)
        _write_ignore_files(repo_root, entries, rules)
        return cls(commit, tree, entries, git_dir, rules, _links(repo_root, entries))

    @cached_property
    def blobs(self) -> frozenset[str]:
        """Every object id the base's entries name: worked out once per base, not for each read of a wave."""
        return frozenset(entry.sha for entry in self.entries.values())

    def ignored(self, paths: list[str]) -> set[str]:
        """Which of the (new) ``paths`` the base's ignore rules ignore."""
        return git.check_ignore(self.git_dir, self.rules, paths)


def links_of(repo_root: Path, commit: str) -> dict[str, str]:
    """Every symlink of ``commit``: path -> its target as written."""
    return _links(repo_root, {entry.path: Entry(entry.mode, entry.sha)
                              for entry in git.ls_tree_recursive(repo_root, commit)})


def _links(repo_root: Path, entries: Mapping[str, Entry]) -> dict[str, str]:
    paths = sorted(path for path, entry in entries.items() if entry.mode == _SYMLINK)
    targets = git.cat_file_batch(repo_root, [git.BlobSha(entries[path].sha) for path in paths])
    return {path: target.decode("utf-8", "surrogateescape")
            for path, target in zip(paths, targets, strict=True)}


def _write_ignore_files(repo_root: Path, entries: Mapping[str, Entry], rules: Path) -> None:
    # A symlinked .gitignore is not read by git, so only regular ones count.
    wanted = sorted(path for path, entry in entries.items()
                    if path.rsplit("/", 1)[-1] == ".gitignore" and entry.mode in ("100644", "100755"))
    rules.mkdir(parents=True, exist_ok=True)
    contents = git.cat_file_batch(repo_root, [git.BlobSha(entries[path].sha) for path in wanted])
    for path, content in zip(wanted, contents, strict=True):
        target = rules / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)


def baseline(tree: Path) -> dict[str, StatKey]:
    """The ``lstat`` of every file in a freshly checked-out tree, taken before any worker sees it."""
    return {path: stat_key(st) for path, st in _walk(tree, frozenset(), None)}


@dataclass(frozen=True)
class CommitInfo:
    """The commit a read writes of the tree it took (its parent: the base commit)."""

    message: str
    author: str
    committer: str
    """``Name <email> <seconds> <tz>``, as ``git var GIT_AUTHOR_IDENT`` prints them."""


@dataclass(frozen=True)
class Snapshot:
    tree: str
    changed: list[str]
    """Every path that differs from the base (new, deleted, both sides of a rename, mode changes), sorted."""
    commit: str | None = None
    """The commit of :class:`CommitInfo` when one was asked for and something changed."""
    written: tuple[str, ...] = ()
    """Every object the commit has that its base has not: the commit, the trees on the way to each changed
    path, the changed paths' blobs (what its test checkout needs beside the base's objects)."""
    changes: tuple[git.Change, ...] = ()
    """What the commit changes against its base, as ``git diff-tree -r`` says it (a deletion's mode
    ``000000``), when a commit was asked for."""


def read(repo_root: Path, tree: Path, base: Base, untouched: Mapping[str, StatKey], limits: Limits,
         deadline: float | None, commit: CommitInfo | None = None) -> Snapshot:
    """Write ``tree`` into the scheduler's repository as content; raise :class:`TreeRejected`.

    ``untouched``: the :func:`baseline` of the tree; ``deadline``: a ``time.monotonic()`` value;
    ``commit``: what the commit of the tree says (else only the tree is kept).
    """
    gitlinks = frozenset(path for path, entry in base.entries.items() if entry.mode == _GITLINK)
    walked = dict(_walk(tree, gitlinks, deadline))
    deleted = [path for path in base.entries if path not in walked and path not in gitlinks]
    # Only a base file can be untouched: a new one is new whenever it appeared.
    touched = {path: st for path, st in walked.items() if path not in gitlinks
               and (path not in base.entries or untouched.get(path) != stat_key(st))}
    ignored = base.ignored(sorted(path for path in touched if path not in base.entries))
    candidates = {path: st for path, st in touched.items() if path not in ignored}
    _check_limits(candidates, len(deleted), limits)
    changes: list[tuple[str, Entry]] = []
    pending: list[str] = []
    pending_bytes = 0
    for n, (path, st) in enumerate(sorted(candidates.items())):
        if n % _DEADLINE_EVERY == 0:
            _check_deadline(deadline)
        mode, content = _content(tree, path, st, limits)
        entry = Entry(mode, _blob_sha(content, len(base.commit)))
        if base.entries.get(path) == entry:
            continue
        changes.append((path, entry))
        pending.append(f"blob\n{fastimport.data(content.decode('utf-8', 'surrogateescape'))}")
        pending_bytes += len(content)
        if pending_bytes >= BATCH_BYTES:
            _import(repo_root, pending)
            pending, pending_bytes = [], 0
    changed = sorted([*deleted, *(path for path, _ in changes)])
    if not changed:
        return Snapshot(base.tree, [])
    _check_deadline(deadline)
    # A ref of its own (concurrent reads run at once), which the closing `reset` drops again.
    ref = f"refs/wavegit-snapshot/{os.urandom(8).hex()}"
    said = (f"author {commit.author}\ncommitter {commit.committer}\n{fastimport.data(commit.message)}"
            if commit is not None else f"committer {fastimport.SCRATCH_IDENT}\n{fastimport.data('')}")
    stream = [f"commit {ref}\nmark :1\n", f"{said}from {base.commit}\n"]
    stream += [f"D {fastimport.quote(path)}\n" for path in deleted]
    stream += [f"M {entry.mode} {entry.sha} {fastimport.quote(path)}\n" for path, entry in changes]
    # The root first, then every folder holding a changed path (`missing` when it went); none when they add
    # up to more than LISTED_FOLDER_BYTES (the test checkout's pack-objects finds the trees then).
    folders = sorted({"/".join(parts[:n]) for parts in (path.split("/") for path in changed)
                      for n in range(1, len(parts))})
    listed_all = sum(map(len, folders)) <= LISTED_FOLDER_BYTES
    folders = folders if listed_all else []
    stream.append("\nget-mark :1\nls :1 \"\"\n")
    stream += [f"ls :1 {fastimport.quote(folder)}\n" for folder in folders]
    stream.append(f"reset {ref}\n\n")
    # What fast-import prints: the commit, then each folder as `040000 tree SHA\tPATH` (or what replaced it).
    made, *listed = _import(repo_root, [*pending, "".join(stream)]).split("\n")
    trees = _trees(listed[:len(folders) + 1])
    if commit is None:
        return Snapshot(trees[0], changed)
    diff = (*(git.Change(path, _DELETED, git.BlobSha("")) for path in deleted),
            *(git.Change(path, entry.mode, git.BlobSha(entry.sha)) for path, entry in changes))
    if not listed_all:
        return Snapshot(trees[0], changed, made, changes=diff)
    # A copy or a rename keeps a blob of the base (there, maybe packed, and no object the commit adds).
    blobs = dict.fromkeys(entry.sha for _, entry in changes if entry.sha not in base.blobs)
    return Snapshot(trees[0], changed, made, (made, *trees, *blobs), diff)


_TREE_ANSWER = re.compile(r"040000 tree ([0-9a-f]{40}|[0-9a-f]{64})\t")


def _trees(answers: list[str]) -> list[str]:
    """The tree ids of fast-import's ``ls`` ``answers``, one a line. Split at git's line ends only and read
    before the path: a user who has git print paths unquoted (``core.quotePath=false``) gets a worker's
    folder name back as it is, which may hold what ``str.splitlines`` takes for a line end (U+0085, U+2028)
    and, after it, a forged answer naming any object or file."""
    return [found.group(1) for answer in answers if (found := _TREE_ANSWER.match(answer))]


def _check_limits(candidates: Mapping[str, os.stat_result], deletions: int, limits: Limits) -> None:
    too_big = sorted(path for path, st in candidates.items()
                     if stat.S_ISREG(st.st_mode) and st.st_size > limits.max_file_bytes)
    if too_big:
        shown = ", ".join(f"{path} ({candidates[path].st_size} bytes)" for path in too_big[:5])
        raise TreeRejected(f"limit violation: {shown} over max_file_bytes ({limits.max_file_bytes}); "
                           "nothing staged")
    count = len(candidates) + deletions
    if count > limits.max_changed_files:
        raise TreeRejected(f"limit violation: {count} changed files, over max_changed_files "
                           f"({limits.max_changed_files}); nothing staged")


def _check_deadline(deadline: float | None) -> None:
    if deadline is not None and time.monotonic() > deadline:
        raise TreeRejected("timed out while reading the worker's tree (it counts against the attempt's "
                           "timeout_s)")


def _import(repo_root: Path, parts: list[str]) -> str:
    """Run one fast-import stream of ``parts``; what it printed."""
    stream = "feature done\n" + "".join(parts) + "done\n"
    return git.fast_import(repo_root, stream)


def _blob_sha(content: bytes, oid_length: int) -> str:
    digest = hashlib.sha256() if oid_length == 64 else hashlib.sha1()
    digest.update(b"blob %d\0" % len(content))
    digest.update(content)
    return digest.hexdigest()


def _content(tree: Path, path: str, st: os.stat_result, limits: Limits) -> tuple[str, bytes]:
    """The mode and bytes of the walked ``path``; the file it opens must be the one that was walked."""
    full = os.path.join(tree, path)
    try:
        if stat.S_ISLNK(st.st_mode):
            return _SYMLINK, os.fsencode(os.readlink(full))
        fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise TreeRejected(f"cannot read {path} in the worker's tree: {exc.strerror}") from exc
    with os.fdopen(fd, "rb") as handle:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != (st.st_dev, st.st_ino):
            raise TreeRejected(f"{path} was replaced while wavegit read the worker's tree")
        content = handle.read(limits.max_file_bytes + 1)
    if len(content) > limits.max_file_bytes:
        raise TreeRejected(f"limit violation: {path} grew over max_file_bytes ({limits.max_file_bytes}) "
                           "while being read; nothing staged")
    return ("100755" if opened.st_mode & stat.S_IXUSR else "100644"), content


def _walk(tree: Path, gitlinks: frozenset[str],
          deadline: float | None) -> Iterator[tuple[str, os.stat_result]]:
    """``(path, lstat)`` of every regular file and symlink below ``tree``, never following a symlink;
    a directory at a submodule's path is not entered."""
    pending: list[tuple[str, str]] = [(str(tree), "")]
    seen = 0
    while pending:
        directory, prefix = pending.pop()
        try:
            with os.scandir(directory) as entries:
                found = [(entry.name, entry.path, entry.stat(follow_symlinks=False)) for entry in entries]
        except OSError as exc:
            raise TreeRejected(f"cannot read {prefix or '.'} in the worker's tree: {exc.strerror}") from exc
        for name, full, st in found:
            seen += 1
            if seen % _DEADLINE_EVERY == 0:
                _check_deadline(deadline)
            if name.lower() == ".git":
                continue
            path = prefix + name
            if stat.S_ISDIR(st.st_mode):
                if path not in gitlinks:
                    pending.append((full, path + "/"))
            elif stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
                yield path, st
