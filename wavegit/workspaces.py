"""A wave's item worktrees, made ahead of the attempts that need them, removed in the background.

A small pool of background threads creates each worktree (registered under the wave's git lock, because
concurrent ``git worktree add`` and ``fetch`` calls fail on each other's half-made admin files; checked
out outside it) before its attempt asks for it, so an item thread's worker slot goes from one worker
straight to the next. The wave bounds how far ahead it prepares, and releases (removes) a worktree only
when the item's branch is needed for a retry; the rest go in the wave's cleanup, all at once.
:meth:`Workspaces.close` joins the work begun and drops the rest, which that cleanup covers.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from wavegit import worktree

WORKTREE_THREADS = 2
"""Background worktree threads: one registers while the other checks out."""


@dataclass(frozen=True)
class Spec:
    """One worktree to make: where, on which existing branch (reset to ``start``), from which commit."""

    path: Path
    branch: str
    start: str


class Workspaces:
    def __init__(self, repo_root: Path, git_lock: threading.Lock) -> None:
        self._root = repo_root
        self._lock = git_lock
        self._pool = ThreadPoolExecutor(max_workers=WORKTREE_THREADS, thread_name_prefix="wavegit-worktree")
        self._made: dict[Path, Future[None]] = {}
        self._removed: dict[str, Future[None]] = {}
        """The latest removal per branch: a worktree on the same branch may only be made after it."""
        self._guard = threading.Lock()

    def prepare(self, spec: Spec) -> None:
        """Start making ``spec``'s worktree in the background (once)."""
        with self._guard:
            if spec.path not in self._made:
                self._made[spec.path] = self._pool.submit(self._make, spec)

    def take(self, spec: Spec) -> None:
        """``spec``'s worktree, ready: the one prepared earlier, or made now; its failure is raised here."""
        with self._guard:
            made = self._made.pop(spec.path, None)
        if made is None:
            self._make(spec)
        else:
            made.result()

    def release(self, spec: Spec) -> None:
        """Remove ``spec``'s worktree in the background."""
        with self._guard:
            self._removed[spec.branch] = self._pool.submit(self._remove, spec.path)

    def close(self) -> None:
        """Drop the work not begun yet and wait for the rest (it may fail): the wave's cleanup follows and
        removes whatever worktrees are left in one go."""
        self._pool.shutdown(wait=True, cancel_futures=True)
        with self._guard:
            self._made.clear()

    def _make(self, spec: Spec) -> None:
        with self._guard:
            removed = self._removed.get(spec.branch)
        if removed is not None:
            # A retry reuses its item's branch, which git refuses while an older worktree still has it.
            removed.result()
        with self._lock:
            worktree.register_on(self._root, spec.path, spec.branch)
        worktree.checkout(spec.path, spec.start)

    def _remove(self, path: Path) -> None:
        with self._lock:
            worktree.remove(self._root, path)
