"""The tracker: item model, schema validation with ``file:line:col`` errors, minimal-diff YAML edits.

INTERFACE (owned by the tracker helper; signatures are the contract other modules code against).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

PRIORITIES = ("P0", "P1", "P2", "P3")
STATUSES = ("todo", "in_progress", "review", "done", "failed", "blocked")
IN_FLIGHT = ("in_progress", "review")


@dataclass(frozen=True)
class Item:
    id: str
    prompt: str
    owns: tuple[str, ...]
    """Normalised ownership patterns (see wavegit.paths)."""
    test: str
    title: str = ""
    priority: str = "P2"
    depends_on: tuple[str, ...] = ()
    status: str = "todo"
    wave: str | None = None
    attempts: int = 0
    pr: int | None = None
    claimed_at: str | None = None
    updated_at: str | None = None
    last_error: str | None = None
    cost: float = 0.0
    merge_sha: str | None = None
    index: int = field(default=0, compare=False)
    """Position in the file (0-based): intake appends, so a lower index is older."""
    line: int = field(default=0, compare=False)
    """1-based line where the item starts, for messages."""
    problems: tuple[str, ...] = field(default=(), compare=False)
    """Item-level validation problems (only when loaded with strict=False)."""


@dataclass(frozen=True)
class Tracker:
    version: int
    items: tuple[Item, ...]

    def get(self, item_id: str) -> Item | None:
        raise NotImplementedError


def loads(text: str, path: str = ".wavegit/tracker.yaml", *, strict: bool = True) -> Tracker:
    """Parse and validate; raise ValidationError listing every problem."""
    raise NotImplementedError


def load_cached(text: str, blob_sha: str, cache_dir: Path | None, path: str = ".wavegit/tracker.yaml",
                *, strict: bool = True) -> Tracker:
    """``loads`` with a parse cache keyed by blob SHA under ``cache_dir``."""
    raise NotImplementedError


def set_fields(text: str, item_id: str, fields: Mapping[str, object | None]) -> str:
    """Change (or add, or with None remove) fields of one item, editing only those lines."""
    raise NotImplementedError


def append_item(text: str, item: Item) -> str:
    """The text with ``item`` appended to ``items``; everything before it is unchanged."""
    raise NotImplementedError


def initial_text() -> str:
    """The tracker ``wavegit init`` writes."""
    raise NotImplementedError
