"""A wave's item worktrees, made ahead of the attempts that need them and removed behind them.

A small pool of background threads creates each worktree (registered under the wave's git lock, because
concurrent ``git worktree add`` and ``fetch`` calls fail on each other's half-made admin files; checked
out outside it) before its attempt asks for it, and removes it after the attempt, so an item thread's
worker slot goes from one worker straight to the next. The wave bounds how far ahead it prepares (disk
use); everything is joined by :meth:`Workspaces.close`, before the wave's own cleanup runs.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from wavegit import worktree

WORKTREE_THREADS = 2
"""Background worktree threads: one registers while the other checks out or removes."""


@dataclass(frozen=True)
class Spec:
    """One worktree to make: where, on which (reset) branch, from which commit."""

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
        """Drop preparations not yet begun and wait for the rest (they may fail: cleanup follows)."""
        with self._guard:
            for made in self._made.values():
                made.cancel()
            self._made.clear()
        self._pool.shutdown(wait=True)

    def _make(self, spec: Spec) -> None:
        with self._guard:
            removed = self._removed.get(spec.branch)
        if removed is not None:
            # A retry reuses its item's branch, which git refuses while an older worktree still has it.
            removed.result()
        with self._lock:
            worktree.register(self._root, spec.path, branch=spec.branch, start=spec.start)
        worktree.checkout(spec.path)

    def _remove(self, path: Path) -> None:
        with self._lock:
            worktree.remove(self._root, path)
