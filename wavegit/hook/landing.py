"""A reviewed wave landing by hand: which collisions of a push are the wave's own work arriving.

Without a pull request, a wave in ``review`` is merged by whoever reviewed it, in whatever form suits the
branch: a merge, a squash, a rebase, a cherry-pick. What they have in common is what the pushed commit holds,
not how it got there, so the test is on content: a path owned by an item in review in wave W passes when the
pushed commit has it exactly as the wave's pushed head ``refs/remotes/<remote>/wavegit/<W>`` has it (same
blob and mode, or absent from both). Any other content -- an edit on top, a partial squash, a conflict
resolved differently -- is a change nobody reviewed and is still refused. Imported only for a push that
collides with a wave in review.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from wavegit.core import git

if TYPE_CHECKING:  # prepush imports this module when it needs it
    from wavegit.hook.prepush import Violation
    from wavegit.hook.pushed import RefUpdate

_Entry = tuple[str, str] | None
"""(mode, object) of a path in a tree; None: absent."""


def _entries(root: Path, treeish: str, paths: Sequence[str]) -> dict[str, _Entry] | None:
    """path -> its entry in ``treeish``; None when ``treeish`` cannot be read (no such ref here)."""
    try:
        listed = git.ls_tree(root, treeish, paths)
    except git.GitError:
        return None
    found: dict[str, _Entry] = dict.fromkeys(paths)
    found.update({entry.path: (entry.mode, entry.sha) for entry in listed if entry.path in found})
    return found


def wave_head(remote: str, wave: str) -> str:
    """The remote-tracking ref of a wave's pushed branch."""
    return f"refs/remotes/{remote}/wavegit/{wave}"


def less_landing(root: Path, updates: Sequence[RefUpdate], remote: str,
                 violations: Sequence[Violation]) -> tuple[list[Violation], list[str]]:
    """``violations`` less those whose path the pushed commit holds as its reviewed wave's pushed head does;
    what is left, and the waves whose every collision was so dropped."""
    local_oid = {update.remote_ref: update.local_oid for update in updates if not update.is_delete}
    reviewed = sorted({v.owner.wave for v in violations
                       if v.owner is not None and v.owner.status == "review" and v.owner.wave})
    if not reviewed:
        return list(violations), []
    wanted: dict[str, set[str]] = {}
    for v in violations:
        if v.owner is not None and v.owner.wave in reviewed:
            wanted.setdefault(v.ref, set()).add(v.path)
    paths = sorted({path for found in wanted.values() for path in found})
    heads = {wave: _entries(root, wave_head(remote, wave), paths) for wave in reviewed}
    pushed = {ref: _entries(root, local_oid[ref], sorted(found)) for ref, found in wanted.items()
              if ref in local_oid}

    def lands(v: Violation) -> bool:
        if v.owner is None or v.owner.wave not in heads:
            return False
        head, local = heads[v.owner.wave], pushed.get(v.ref)
        return head is not None and local is not None and head[v.path] == local[v.path]

    left = [v for v in violations if not lands(v)]
    still = {v.owner.wave for v in left if v.owner is not None}
    return left, [wave for wave in reviewed if wave not in still]
