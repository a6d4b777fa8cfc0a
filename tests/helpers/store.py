"""Helpers for the store tests: a small tracker, a store on a clone, commits by others, counted applies."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.helpers.repos import git
from wavegit.core.repo import discover
from wavegit.model.config import Config
from wavegit.trackerbranch.store import Change, GitStore, Snapshot, TrackerStore

TRACKER = ".wavegit/tracker.yaml"


def tracker_text(*ids: str) -> str:
    """A valid tracker with one item per id, each owning its own file."""
    items = "".join(
        f"  - id: {item_id}\n    prompt: do {item_id}\n    owns: [src/{item_id}.py]\n    test: 'true'\n"
        for item_id in ids
    )
    return f"# the tracker\nversion: 1\nitems:{' []' if not ids else ''}\n{items}"


def store_at(path: Path, tracker_branch: str = "main") -> GitStore:
    return GitStore(discover(path), Config(tracker_branch=tracker_branch))


def commit_file(clone: Path, rel: str, text: str, *, push: bool = True) -> str:
    """Someone else's commit on main (pushed when ``push``); its sha."""
    target = clone / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    git(clone, "add", "--", rel)
    git(clone, "commit", "-q", "-m", f"edit {rel}")
    if push:
        git(clone, "pull", "-q", "--rebase", "origin", "main")
        git(clone, "push", "-q", "origin", "main")
    return git(clone, "rev-parse", "HEAD")


class Counting:
    """An ``apply`` that appends an item, counting its calls, with an optional hook before returning."""

    def __init__(self, item_id: str, before_return: Callable[[int], None] | None = None) -> None:
        self.item_id = item_id
        self.calls = 0
        self.before_return = before_return

    def __call__(self, snapshot: Snapshot) -> Change:
        self.calls += 1
        assert snapshot.text is not None
        if self.before_return:
            self.before_return(self.calls)
        return Change(tracker_text(*item_ids(snapshot.text), self.item_id))


def item_ids(text: str | None) -> list[str]:
    assert text is not None
    return [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("  - id:")]


class WrappedStore:
    """A store that hands every call to ``inner``: a test subclass overrides the one call it bends."""

    def __init__(self, inner: TrackerStore) -> None:
        self.inner = inner
        self.target = inner.target

    def read(self) -> Snapshot:
        return self.inner.read()

    def read_file(self, snapshot: Snapshot, path: str) -> str | None:
        return self.inner.read_file(snapshot, path)

    def read_head_file(self, path: str) -> str | None:
        return self.inner.read_head_file(path)

    def contains_op(self, head: Snapshot, since: Snapshot, op_id: str) -> bool:
        return self.inner.contains_op(head, since, op_id)

    def write(self, expected: Snapshot, change: Change, message: str) -> str:
        return self.inner.write(expected, change, message)
