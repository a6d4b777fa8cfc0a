"""Pieces of a ``git fast-import`` stream, shared by the writers of item trees and of replay chains, and a
commit of whole files in one fast-import (tracker commits, heartbeats)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from wavegit.core import git

SCRATCH_IDENT = "wavegit <wavegit@localhost> 0 +0000"
"""The identity of a commit that exists only to have fast-import build a tree (no ref keeps it)."""


_QUOTED = {**{code: f"\\{code:03o}" for code in [*range(0x20), 0x7F]}, ord('"'): '\\"', ord("\\"): "\\\\"}


def quote(path: str) -> str:
    """A path as fast-import reads it: C-style quoted, so spaces, quotes and control characters survive.
    One ``str.translate``: a read asks for every folder on the way to each changed path, megabytes of names
    for a worker's deep, long-named folders, which a character-by-character join took seconds over."""
    return f'"{path.translate(_QUOTED)}"'


def data(text: str) -> str:
    """A ``data`` command holding ``text`` (a byte carried as a surrogate escape counts as one byte)."""
    return f"data {len(text.encode('utf-8', 'surrogateescape'))}\n{text}\n"


def commit(root: Path, parent: git.CommitSha | None, texts: Mapping[str, str | None], message: str
           ) -> git.CommitSha:
    """A commit of ``parent``'s tree (none: the empty tree) with ``texts`` written (mode 100644, exactly: no
    filters) or removed (None), by git's identities at ``root``, in one ``git fast-import`` (a tree and a
    commit-tree, or five plumbing processes with a temporary index, before); on a scratch ref that the
    closing ``reset`` (no ``from``) drops again, so no ref moves."""
    author, committer = git.idents(root)
    ref = f"refs/wavegit-commit/{os.urandom(16).hex()}"
    stream = [f"feature done\ncommit {ref}\nmark :1\nauthor {author}\ncommitter {committer}\n", data(message)]
    if parent:
        stream.append(f"from {parent}\n")
    for path, text in texts.items():
        stream.append(f"D {quote(path)}\n" if text is None
                      else f"M 100644 inline {quote(path)}\n{data(text)}")
    stream.append(f"\nget-mark :1\nreset {ref}\n\ndone\n")
    return git.CommitSha(git.fast_import(root, "".join(stream)).strip())
