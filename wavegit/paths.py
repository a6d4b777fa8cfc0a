"""Path normalisation and ownership patterns (exact, ``dir/``, globs) with an exact overlap test.

INTERFACE (owned by the paths helper).
"""

from __future__ import annotations


class PatternError(ValueError):
    """An ownership pattern or path that is not allowed (message says why and how to fix it)."""


def normalize(pattern: str) -> str:
    """The canonical form of an ownership pattern or repo-relative path; raises PatternError."""
    raise NotImplementedError


def matches(pattern: str, path: str) -> bool:
    """Whether the normalised ``pattern`` owns the normalised repo-relative file ``path``."""
    raise NotImplementedError


def overlaps(a: str, b: str) -> bool:
    """Whether some path (existing or not) is owned by both normalised patterns."""
    raise NotImplementedError
