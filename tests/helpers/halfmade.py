"""Worktrees half-made the way a ``kill -9`` inside ``git worktree add`` leaves them, built deterministically.

``git worktree add`` first creates the admin dir ``<common dir>/worktrees/<name>/`` with a ``locked`` file
saying "initializing", the ``gitdir`` pointer and a placeholder HEAD holding the null id; only then does it
set HEAD and remove the lock. A real worktree is made, then its admin dir is put back in that state.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from tests.helpers.repos import git

NULL_OID = "0" * 40
OLD_S = 600.0
"""An age well past ``worktree.HALF_MADE_AGE_S``."""


def admin_dir(path: Path) -> Path:
    """The admin dir of the worktree at ``path`` (its ``.git`` file says ``gitdir: <admin dir>``)."""
    return Path((path / ".git").read_text().removeprefix("gitdir:").strip())


def backdate(admin: Path, seconds: float) -> None:
    """Move the modification times of ``admin`` and the files in it ``seconds`` into the past."""
    moment = time.time() - seconds
    for entry in [*admin.iterdir(), admin]:
        os.utime(entry, (moment, moment))


def backdate_all_admin_dirs(clone: Path, seconds: float) -> None:
    """:func:`backdate` every worktree admin dir of ``clone``."""
    root = clone / ".git" / "worktrees"
    for admin in root.iterdir() if root.is_dir() else []:
        backdate(admin, seconds)


def make_half_made(clone: Path, path: Path, *, head: str | None = NULL_OID, age_s: float = OLD_S) -> Path:
    """A worktree at ``path`` left as an interrupted add leaves it (HEAD = ``head``; None: no HEAD file),
    untouched for ``age_s`` seconds; its admin dir."""
    git(clone, "worktree", "add", "-q", "--no-checkout", "--detach", str(path), "HEAD")
    admin = admin_dir(path)
    (admin / "locked").write_text("initializing\n")
    if head is None:
        (admin / "HEAD").unlink()
    else:
        (admin / "HEAD").write_text(f"{head}\n" if head else "")
    backdate(admin, age_s)
    return admin
