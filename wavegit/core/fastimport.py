"""Pieces of a ``git fast-import`` stream, shared by the writers of item trees and of replay chains."""

from __future__ import annotations

SCRATCH_IDENT = "wavegit <wavegit@localhost> 0 +0000"
"""The identity of a commit that exists only to have fast-import build a tree (no ref keeps it)."""


def quote(path: str) -> str:
    """A path as fast-import reads it: C-style quoted, so spaces, quotes and control characters survive."""
    escaped = "".join(f"\\{ord(c):03o}" if c < " " or c == "\x7f" else "\\" + c if c in '"\\' else c
                      for c in path)
    return f'"{escaped}"'


def data(text: str) -> str:
    """A ``data`` command holding ``text`` (a byte carried as a surrogate escape counts as one byte)."""
    return f"data {len(text.encode('utf-8', 'surrogateescape'))}\n{text}\n"
