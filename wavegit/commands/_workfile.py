"""Reading the tracker from the work tree, for ``validate``: it checks the file you are editing, before you
commit it. (Commands that act on the backlog read the tracker branch's head through the store.)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from wavegit.core.errors import Problem, UsageError, ValidationError
from wavegit.core.parsecache import blob_sha


@dataclass(frozen=True)
class TrackerText:
    text: str
    blob_sha: str
    display_path: str
    """The path as messages show it (repo-relative, or as the user typed it)."""


def read_tracker_text(file: Path, display_path: str, missing_hint: str = "create it with `wavegit init`"
                      ) -> TrackerText:
    """The tracker text at ``file``; a missing file or undecodable bytes are clear errors (exit 2)."""
    try:
        data = file.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"{display_path}: no such file ({missing_hint})") from None
    except OSError as exc:
        raise UsageError(f"{display_path}: cannot read: {exc.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = data[:exc.start]
        line = before.count(b"\n") + 1
        col = len(before) - (before.rfind(b"\n") + 1) + 1
        raise ValidationError([Problem(display_path, line, col, "not valid UTF-8 text", None,
                                       "save the file as UTF-8")]) from None
    return TrackerText(text, blob_sha(text), display_path)
