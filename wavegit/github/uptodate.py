"""A wave PR brought up to date with its base ("Update branch"): which merges lie between the reported head
and the PR's head, and whether each only brings in the base branch (docs/security.md, "Who the merge gate
believes"). Walking first parents back to the reported head, every commit must be a merge whose second
parent is on the base branch and which changes no path that differs from both of its parents (a conflict
resolved by hand, an edit slipped in, or both sides changing one file: all fail closed).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from wavegit.github.api import Histories

MAX_MERGES = 20
"""Merges of the base after the reported head that the gate follows; more fails closed."""
SHOWN_PATHS = 3
"""Paths named in a one-line reason; the rest are counted."""


class NotUpToDate(Exception):
    """The PR head is not the reported head plus merges of the base; the message says why."""


def _short(sha: str) -> str:
    return sha[:12]


def listing(found: Sequence[str]) -> str:
    """The first :data:`SHOWN_PATHS` of ``found``, the rest counted: for a one-line reason (a path with a
    line break or another control character in its name is quoted, JSON style)."""
    shown = ", ".join(path if path.isprintable() else json.dumps(path) for path in found[:SHOWN_PATHS])
    return shown + (f" and {len(found) - SHOWN_PATHS} more" if len(found) > SHOWN_PATHS else "")


def base_merges(client: Histories, reported: str, head: str, base_ref: str) -> list[str]:
    """The merge commits from the reported head to the PR head, newest first ([] when they are the same);
    :class:`NotUpToDate` when a commit in between is anything but a merge of ``base_ref``."""
    merges: list[str] = []
    commit = head
    while commit != reported:
        stale = f"stale report: it describes {_short(reported)}, the PR head is {_short(head)}"
        if len(merges) == MAX_MERGES:
            raise NotUpToDate(f"{stale}, over {MAX_MERGES} merges of {base_ref} away")
        parents = client.commit_parents(commit)
        if len(parents) != 2:
            raise NotUpToDate(f"{stale}; {_short(commit)} is not a merge of {base_ref}")
        ours, theirs = parents
        if not client.compare(theirs, base_ref).contains_base:
            raise NotUpToDate(f"{stale}; {_short(commit)} merges {_short(theirs)}, not on {base_ref}")
        wave_side, base_side = client.compare(ours, commit), client.compare(theirs, commit)
        if not (wave_side.complete and base_side.complete):
            raise NotUpToDate(f"the merge {_short(commit)} changes more files than GitHub lists: what it "
                              "brings cannot be checked")
        beyond = sorted(set(wave_side.files) & set(base_side.files))
        if beyond:
            raise NotUpToDate(f"the merge {_short(commit)} of {base_ref} changes {listing(beyond)} beyond "
                              f"what {base_ref} brought")
        merges.append(commit)
        commit = ours
    return merges
