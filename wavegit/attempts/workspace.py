"""An attempt's tree: a directory with a git directory of its own, and the clean checkout its test runs in.

An attempt's tree is not a linked worktree of the scheduler's repository: ``git init`` makes it a repository
of its own whose ``objects/info/alternates`` names an object directory of wavegit's (the wave's store of
what its base reaches, :mod:`wavegit.attempts.objectstore`; read by git, never written through), checked
out at the start commit on the item's branch name. Nothing a worker writes in it -- config, hooks, refs,
attributes, locks, or ``rm -rf .git`` -- is read by any git command wavegit runs on the scheduler's
repository: wavegit reads the tree back as content (:mod:`wavegit.attempts.snapshot`) and runs no git in it
after the worker started. Its folder is fenced (:func:`fence`): git finds no other repository from the tree,
even once a worker removed its ``.git``.

A wave runs ``git init`` once (:class:`Skeleton`) and writes the git directory it made again for each of
its trees itself, before any worker sees the tree: one git process per tree fewer. It writes the tree's
branch in ``packed-refs`` too, and ``git read-tree`` writes the files and the index: no loose ref (a file
and a folder per part of ``wavegit/items/<wave>/<item>``) and no reflog, each a file or folder fewer to make
and remove per tree (on this machine's disk, each new inode is searched for past the recently freed
ones); a worker's own commits are refs and logs as usual.

A kill while a tree is being made leaves a directory under the wave's folder and nothing in the
scheduler's repository, so no repair is due; the folder goes with its wave (the wave's cleanup, or
``wavegit sync`` pruning a dead wave's leftovers).
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from wavegit.core import git
from wavegit.core.errors import WavegitError


@dataclass(frozen=True)
class History:
    """What a tree's git directory says of its base's history besides the objects it borrows
    (:func:`wavegit.attempts.objectstore.history`)."""

    tags: str = ""
    """The ``packed-refs`` lines of the tags the base reaches, sorted by name."""
    shallow: str = ""
    """The scheduler's ``shallow`` file (a shallow clone's grafts): without it, ``git log`` in the tree
    stopped at the first parent the clone does not have (``Could not read ...``)."""


NO_HISTORY = History()


def objects_dir(repo_root: Path) -> Path:
    """The scheduler's object directory, which every attempt's repository borrows objects from."""
    return git.git_path(repo_root, "objects")


SCRATCH_BRANCH = "wavegit-attempt"
"""The branch of a tree made for no item (a test checkout)."""

_REF_COMPONENT = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*\Z")


@dataclass(frozen=True)
class Skeleton:
    """The git directory ``git init`` makes (no templates, no user or system config), read once per wave.

    Written again by :meth:`write` for each tree, with the tree's own branch in ``HEAD``: the same files
    ``git init`` would have written there, without starting git. Captured in wavegit's own folder before
    any worker of the wave runs, and kept in memory, so nothing a worker writes changes it.
    """

    dirs: tuple[str, ...]
    """Directories of the git directory, relative to it, parents first."""
    files: tuple[tuple[str, bytes], ...]

    @classmethod
    def capture(cls, scratch: Path) -> Skeleton | None:
        """Run ``git init`` in ``scratch`` (made here; it goes with the wave's folder) and read what it wrote;
        None when its ``HEAD`` is not a plain file naming the branch (another ref storage): then every tree
        runs ``git init`` itself."""
        remove(scratch)
        scratch.mkdir(parents=True)
        git.init_repository(scratch, git.Branch(SCRATCH_BRANCH))
        git_dir = scratch / ".git"
        dirs: list[str] = []
        files: list[tuple[str, bytes]] = []
        for folder, subdirs, names in os.walk(git_dir):
            subdirs.sort()
            relative = Path(folder).relative_to(git_dir)
            if relative != Path(".") and str(relative) not in _MADE_WHEN_NEEDED:
                dirs.append(str(relative))
            files += [(str(relative / name), (Path(folder) / name).read_bytes()) for name in sorted(names)]
        if dict(files).get("HEAD") != _head(SCRATCH_BRANCH):
            return None
        return cls(tuple(dirs), tuple(files))

    def write(self, path: Path, branch: str, start: str, tags: str = "") -> bool:
        """Write the git directory of the tree at ``path``, on ``branch`` at the commit ``start`` (a full
        id), the branch in ``packed-refs``: one file where a loose ref is a file and a folder per part of its
        name; ``tags``: the ``packed-refs`` lines of the tags it gets (sorted, after every branch). False
        (nothing written) when ``branch`` is not a name git would take as it is (``git init`` then judges
        it) or ``start`` no commit id."""
        if not all(_REF_COMPONENT.match(part) and not part.endswith((".", ".lock")) and ".." not in part
                   for part in branch.split("/")) or not git.is_object_id(start):
            return False
        git_dir = path / ".git"
        git_dir.mkdir()
        for name in self.dirs:
            (git_dir / name).mkdir()
        for name, content in self.files:
            (git_dir / name).write_bytes(_head(branch) if name == "HEAD" else content)
        _write_packed_refs(git_dir, tags, (branch, start))
        return True


_MADE_WHEN_NEEDED = frozenset({"objects/pack", "refs/heads", "refs/tags"})
"""Directories of ``git init`` that git makes when it first writes there: each tree goes without them (every
directory is an operation to make and one to remove; ``objects`` and ``refs`` make it a repository)."""


def _write_packed_refs(git_dir: Path, tags: str, branch: tuple[str, str] | None = None) -> None:
    """``packed-refs`` holding ``tags`` (their lines, sorted) and ``branch`` (name, commit) before them."""
    # "sorted": refs/heads/ sorts before refs/tags/, and the tags come sorted; "fully-peeled": each
    # annotated tag has its "^commit" line.
    heads = f"{branch[1]} refs/heads/{branch[0]}\n" if branch is not None else ""
    (git_dir / "packed-refs").write_text(f"# pack-refs with: peeled fully-peeled sorted \n{heads}{tags}",
                                         encoding="utf-8")


def _head(branch: str) -> bytes:
    return f"ref: refs/heads/{branch}\n".encode()


def create(objects: Path, path: Path, *, start: str, branch: str | None = None,
           skeleton: Skeleton | None = None, history: History = NO_HISTORY, as_stored: bool = False) -> None:
    """A new tree at ``path`` checked out at the commit ``start``, on ``branch`` (else a scratch branch);
    its git directory written from ``skeleton`` when given, else made by ``git init``, and ``history``
    told there. ``as_stored``: each file holds its blob's bytes, whatever the tree's ``.gitattributes``
    ask for (:data:`AS_STORED`), as a worker's tree must.

    Whatever was at ``path`` (a tree a killed wave left) goes first; an empty directory is kept (made
    ahead for a sandbox started before its tree, which binds that very directory).
    """
    if not _empty_dir(path):
        remove(path)
        path.mkdir(parents=True)
    fence(path.parent)
    branch = branch or SCRATCH_BRANCH
    written = skeleton is not None and skeleton.write(path, branch, start, history.tags)
    if not written:
        # No templates: the repository starts with no hooks, sample or otherwise, and no info/exclude.
        git.init_repository(path, git.Branch(branch))
        if history.tags:
            _write_packed_refs(path / ".git", history.tags)
    if history.shallow:
        (path / ".git" / "shallow").write_text(history.shallow, encoding="ascii")
    info = path / ".git" / "objects" / "info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "alternates").write_text(f"{objects}\n", encoding="utf-8")
    if as_stored:
        (path / ".git" / "info").mkdir(exist_ok=True)
        (path / ".git" / "info" / "attributes").write_text(AS_STORED, encoding="utf-8")
    if written:
        git.check_out_files(path, git.CommitSha(start))
    else:
        git.check_out_unlogged(path, git.CommitSha(start))


AS_STORED = "* -text -eol -crlf -ident -filter -working-tree-encoding\n"
"""A worker's tree's ``info/attributes``, which outranks every ``.gitattributes``: no conversion on checkout.
The tree is read back as its bytes (:mod:`wavegit.attempts.snapshot`, no clean conversion), so a file
written out converted (``eol=crlf``, ``ident``, ``working-tree-encoding``) came back changed: a one-line edit
committed every line with its CR, and a file a worker only rewrote was a change. The worker's own git reads
it too, so its ``git diff`` shows what will be committed. The test checkout keeps the attributes: it is
what a clone of the commit holds."""


def _empty_dir(path: Path) -> bool:
    if path.is_symlink():
        return False
    try:
        with os.scandir(path) as entries:
            return next(entries, None) is None
    except OSError:
        return False


_FENCE = "gitdir: /dev/null/no-repository: wavegit attempt trees have a git directory of their own\n"


def fence(folder: Path) -> None:
    """Make git, run anywhere below ``folder`` without a repository of its own, stop with an error.

    The trees lie in the user's cache, which may itself be inside a repository (a HOME kept in git) that git's
    discovery from a tree whose ``.git`` a worker removed would otherwise find and write to: its config, its
    refs. A ``.git`` file naming no repository ends that discovery at ``folder``.
    """
    barrier = folder / ".git"
    if not barrier.is_file():
        barrier.write_text(_FENCE, encoding="utf-8")


def test_checkout(objects: Path, commit: str, path: Path, skeleton: Skeleton | None = None,
                  history: History = NO_HISTORY) -> Path:
    """A fresh tree at ``path`` holding exactly ``commit``'s tree (nothing untracked or ignored), with
    ``history``: the directory an item's test runs in, so that it judges what gets committed."""
    create(objects, path, start=commit, skeleton=skeleton, history=history)
    return path


def advance(path: Path, commit: str, history: History = NO_HISTORY) -> None:
    """Move the test checkout at ``path``, written from a skeleton at the base (:func:`test_checkout`), to
    ``commit``, whose objects it holds: its branch set in ``packed-refs``, and only the files that differ
    from the base's written (``read-tree --reset -u`` keeps every entry that matches, after an ``lstat``)."""
    if not git.is_object_id(commit):
        raise WavegitError(f"not a commit id: {commit!r}")
    _write_packed_refs(path / ".git", history.tags, (SCRATCH_BRANCH, commit))
    git.check_out_files(path, git.CommitSha(commit))


def empty(path: Path) -> None:
    """Remove what the directory ``path`` holds, keeping the directory: a sandbox started on it binds it."""
    with contextlib.suppress(OSError), os.scandir(path) as entries:
        for entry in list(entries):
            remove(Path(entry.path))


def remove(path: Path) -> None:
    """Remove a tree whatever a worker did to it, as far as its user can; best effort (what is left of a
    wave's folder goes with the next cleanup or ``wavegit sync``)."""
    if path.is_symlink() or path.is_file():
        # Another remover (a wave's reaper and `sync`) may have been first.
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    elif path.is_dir():
        with contextlib.suppress(OSError):
            _remove_tree(path)


def move_to_trash(path: Path, trash: Path) -> None:
    """Move ``path`` (a tree or folder wavegit made) into ``trash`` under a name of its own: one rename, where
    removing it would take a filesystem operation per file and directory. Removed in place when it cannot be
    moved."""
    if not (path.is_symlink() or path.exists()):
        return
    try:
        trash.mkdir(parents=True, exist_ok=True)
        os.rename(path, trash / f"{path.name}-{os.urandom(6).hex()}")
    except OSError:
        remove(path)


def empty_trash(trash: Path) -> None:
    """Remove everything in ``trash`` (best effort, as :func:`remove`); the folder itself stays."""
    with contextlib.suppress(OSError):
        for entry in sorted(os.listdir(trash)):
            remove(trash / entry)


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_MAX_OPEN = 64
"""Directory descriptors open at once while removing; a deeper directory is moved up to the top first."""


def _remove_tree(path: Path) -> None:
    """Remove the directory ``path`` and everything in it, without recursion and through descriptors.

    A worker may nest directories deeper than Python's recursion limit (``shutil.rmtree`` recurses), with
    paths longer than the system can name, and leave them read-only or unreadable (``chmod 0``): they are
    this user's own, so each directory is given its owner's rights back before it is entered. Symlinks are
    unlinked, never followed.
    """
    with contextlib.suppress(OSError):
        os.chmod(path, stat.S_IRWXU)
    root = os.open(path, _DIR_FLAGS)
    stack: list[tuple[int, str, list[str]]] = [(root, "", _clear(root))]
    """(descriptor, name in its parent, subdirectories left) from ``path`` down."""
    hoisted = 0
    try:
        while stack:
            fd, name, pending = stack[-1]
            if not pending:
                stack.pop()
                if stack:
                    os.close(fd)
                    os.rmdir(name, dir_fd=stack[-1][0])
                continue
            child = pending.pop()
            if len(stack) >= _MAX_OPEN:
                hoisted += 1
                moved = f".wavegit-removing-{os.getpid()}-{hoisted}"
                os.rename(child, moved, src_dir_fd=fd, dst_dir_fd=root)
                stack[0][2].append(moved)
                continue
            with contextlib.suppress(OSError):
                os.chmod(child, stat.S_IRWXU, dir_fd=fd)
            opened = os.open(child, _DIR_FLAGS, dir_fd=fd)
            stack.append((opened, child, _clear(opened)))
    finally:
        for fd, _, _ in stack[1:]:
            os.close(fd)
        os.close(root)
    os.rmdir(path)


def _clear(fd: int) -> list[str]:
    """Unlink everything but directories in the directory ``fd``; the names of its subdirectories."""
    subdirs: list[str] = []
    with os.scandir(fd) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                subdirs.append(entry.name)
            else:
                os.unlink(entry.name, dir_fd=fd)
    return subdirs
