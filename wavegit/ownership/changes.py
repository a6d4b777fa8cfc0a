"""Judging the paths a worker changed: names that are not UTF-8, protected paths, then ownership.

The names come from git as ``str`` with undecodable bytes carried as surrogate escapes (``\\udce9``):
such a name cannot be written to the tracker, the report or a log, so the attempt is refused and the name
is only ever shown escaped (``\\xe9``). Names are compared in NFC, as patterns are (``patterns.matches``):
a worker on a system that writes NFD (macOS) changes the file its item owns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from wavegit.core.undecodable import escape
from wavegit.ownership.patterns import matches
from wavegit.ownership.protected import DEFAULT_PROTECTED, guarded, through_links

SHOWN_VIOLATIONS = 5
SHOWN_BUILD_OUTPUT = 2


@dataclass(frozen=True)
class Judgement:
    """What the changed paths of an attempt say about it."""

    changed: list[str]
    """Every changed path, as shown (``undecodable.escape``)."""
    violations: list[str] = field(default_factory=list)
    """The paths the item may not change (protected, or not owned), as shown."""
    error: str | None = None
    """Why the attempt is refused, or None."""


def judge(item_id: str, owns: Sequence[str], protected: Sequence[str] | None,
          changed: Sequence[str], links: Mapping[str, str]) -> Judgement:
    """Judge the worker's ``changed`` paths of item ``item_id`` (owning ``owns``, normalised patterns);
    ``protected``: ``config.protected_of`` (None: the defaults); ``links``: the base's symlinks (path ->
    target), through which a protected path reaches others. A protected path is refused even when the
    item's patterns own it (they were checked against the protected paths when the tracker was written, but
    the config may have changed since)."""
    listed = [escape(path) for path in changed]
    undecodable = [name for path, name in zip(changed, listed, strict=True) if name != path]
    if undecodable:
        more = f" (and {len(undecodable) - 1} more)" if len(undecodable) > 1 else ""
        return Judgement(listed, error=f"{undecodable[0]}{more} is not a UTF-8 file name; nothing staged")
    guards = through_links(DEFAULT_PROTECTED if protected is None else protected, links)
    forbidden = [path for path in changed if guarded(path, guards) is not None]
    if forbidden:
        return Judgement(listed, forbidden, f"protected path violation: changed {_some(forbidden)}, which no "
                                            "item may change; changes discarded")
    outside = [path for path in changed if not any(matches(pattern, path) for pattern in owns)]
    if outside:
        if all(map(_build_output, outside)):
            # Few names, so the fix survives last_error's length limit (15 .pyc paths used to cut it off).
            shown = _counted(outside, SHOWN_BUILD_OUTPUT)
            return Judgement(listed, outside,
                             f"ownership violation: changed {shown}, not owned by {item_id}; "
                             "changes discarded; all build output: commit a .gitignore for it")
        return Judgement(listed, outside,
                         f"ownership violation: changed {_some(outside)}, not owned by {item_id}; "
                         "changes discarded")
    return Judgement(listed)


_BUILD_DIRS = frozenset(("__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", "node_modules"))
"""Folders only tools write (a test run, an install): a change there alone means no ``.gitignore`` hides it,
and the retry will leave the same."""


def _build_output(path: str) -> bool:
    return path.endswith((".pyc", ".pyo")) or not _BUILD_DIRS.isdisjoint(path.split("/")[:-1])


def _counted(paths: Sequence[str], shown: int) -> str:
    return ", ".join(paths[:shown]) + (f" and {len(paths) - shown} more" if len(paths) > shown else "")


def _some(paths: Sequence[str]) -> str:
    return ", ".join(paths[:SHOWN_VIOLATIONS]) + (" …" if len(paths) > SHOWN_VIOLATIONS else "")
