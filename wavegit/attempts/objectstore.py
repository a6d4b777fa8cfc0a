"""The objects a wave's trees may read: only those reachable from its base, in an object directory of its own.

An attempt's repository borrowed the scheduler's whole object directory, readable in the sandbox: a stash,
a key staged and unstaged again (an unreachable blob), every other branch. A worker listed them all (``git
cat-file --batch-all-objects``) and landed them. Now each wave folder holds a store (:func:`ensure`) packed
from what its base reaches (``git pack-objects --revs``, which reuses the packed deltas, so no object is
compressed again), the only object directory a sandbox shows; each tree borrows from it, and a test
checkout of a worker's commit keeps in its own repository what that commit adds (:func:`narrow`).

The store goes with its wave's folder. It is made by wavegit before any worker of the wave runs and never
written while one can read it: a new base adds a pack of its own (``BASE ^TIPS``).

The tags a base reaches come with it (their tag objects packed, their refs listed in :data:`TAGS` for each
tree's ``packed-refs``): an item test that asks git for the project's version (``git describe``,
setuptools-scm) found no name at all. Another branch's tags stay out, as its objects do.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path

from wavegit.attempts.workspace import History
from wavegit.core import git

STORE = "_objects"
TIPS = "wavegit-tips"
"""The file in a store naming, one per line, the commits whose every object it holds."""
SHALLOW = "wavegit-shallow"
"""The file in a store holding the scheduler's ``shallow`` file as it was when the store was made."""
TAGS = "wavegit-tags"
"""The file in a store holding the ``packed-refs`` lines of the tags its commits reach, sorted by name."""


def store_of(folder: Path) -> Path:
    """The store of the wave folder ``folder`` (where its trees are made)."""
    return folder / STORE


def tips(store: Path) -> list[str]:
    """The commits whose closure ``store`` holds ([] when there is no store yet)."""
    with contextlib.suppress(FileNotFoundError):
        return (store / TIPS).read_text(encoding="ascii").split()
    return []


def ensure(root: Path, folder: Path, base: str, objects: Path | None = None) -> Path:
    """The store of ``folder``, holding every object ``base`` (a commit id) reaches, packed from the
    repository at ``root`` (its object directory ``objects``, asked of git when not given) when it does not
    yet; callers serialise (one wave makes its trees under a lock)."""
    store = store_of(folder)
    held = tips(store)
    if base in held:
        return store
    pack = store / "pack"
    pack.mkdir(parents=True, exist_ok=True)
    (store / "info").mkdir(exist_ok=True)
    objects = objects or git.git_path(root, "objects")
    with contextlib.suppress(FileNotFoundError):
        # A shallow clone's grafts, which each tree's git directory needs as its own (`git log` there).
        _write_atomically(store / SHALLOW, (objects.parent / "shallow").read_text(encoding="ascii"))
    known = _parse(tag_lines(store))
    tags = {name: (oid, peeled) for name, oid, peeled in git.tags_merged(root, base)}
    # A tag object is reached from the tag alone (what it names is in ``base`` already); one an earlier
    # base's pack holds is not packed again.
    annotated = [oid for name, (oid, peeled) in tags.items() if peeled and known.get(name, ("",))[0] != oid]
    known.update(tags)
    git.pack_reachable(root, pack / "pack", [base, *annotated, *(f"^{tip}" for tip in held)],
                       objects=objects)
    _write_atomically(store / TAGS, "".join(f"{oid} {name}\n" + (f"^{peeled}\n" if peeled else "")
                                            for name, (oid, peeled) in sorted(known.items())))
    _write_atomically(store / TIPS, "".join(f"{tip}\n" for tip in [*held, base]))
    return store


def history(store: Path) -> History:
    """What each tree borrowing from ``store`` is told of its history: the tags, a shallow clone's grafts."""
    shallow = ""
    with contextlib.suppress(FileNotFoundError):
        shallow = (store / SHALLOW).read_text(encoding="ascii")
    return History(tag_lines(store), shallow)


def tag_lines(store: Path) -> str:
    """The ``packed-refs`` lines of the tags ``store``'s commits reach ("" when none, or no store yet)."""
    with contextlib.suppress(FileNotFoundError):
        return (store / TAGS).read_text(encoding="utf-8")
    return ""


def _parse(lines: str) -> dict[str, tuple[str, str]]:
    """Name -> (object, the commit it peels to or "") of each tag of :func:`tag_lines`'s text."""
    parsed: dict[str, tuple[str, str]] = {}
    name = ""
    for line in git.lines(lines):  # a tag's name may hold U+2028, which splitlines() splits at
        if line.startswith("^") and name:
            parsed[name] = (parsed[name][0], line[1:])
        elif line:
            oid, name = line.split(" ", 1)
            parsed[name] = (oid, "")
    return parsed


def narrow(tree: Path, commit: str, store: Path, objects: Path, written: Sequence[str] = ()) -> None:
    """Keep in ``tree``'s own object directory what ``commit`` adds to ``store`` (found in the scheduler's
    objects, ``objects``, whichever the tree borrows yet) and make ``store`` its only alternate: the test
    that runs there reads the worker's commit, and nothing its base does not reach.

    ``written``: the objects the commit adds, as the read that wrote them listed them
    (:attr:`wavegit.attempts.snapshot.Snapshot.written`). When each is a loose object of ``objects`` (a
    small read is), they are copied (never linked: the test may write its tree's files); else ``git
    pack-objects`` finds them.
    """
    own = tree / ".git" / "objects"
    if not (written and _copy_loose(objects, own, written)):
        (own / "pack").mkdir(parents=True, exist_ok=True)
        # `objects` named: a checkout made at its base ahead (then moved to `commit`) borrows the store alone.
        git.pack_reachable(tree, own / "pack" / "pack", [commit, *(f"^{tip}" for tip in tips(store))],
                           objects=objects)
    _write_atomically(own / "info" / "alternates", f"{store}\n")


def _copy_loose(objects: Path, own: Path, oids: Sequence[str]) -> bool:
    """Copy each of ``oids`` from the loose objects of ``objects`` into ``own``; False at the first that is
    not loose there (packed, or already in another object directory) or no object id (then no path)."""
    for oid in oids:
        if not git.is_object_id(oid):
            return False
        try:
            content = (objects / oid[:2] / oid[2:]).read_bytes()
        except FileNotFoundError:
            return False
        (own / oid[:2]).mkdir(exist_ok=True)
        (own / oid[:2] / oid[2:]).write_bytes(content)
    return True


def _write_atomically(path: Path, text: str) -> None:
    staged = path.with_name(f".{path.name}-{os.urandom(4).hex()}")
    staged.write_text(text, encoding="utf-8")
    os.replace(staged, path)
