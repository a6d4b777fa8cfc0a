"""The pre-push hook's guards of the tracker branch itself (``hook.prepush`` imports this module only for a
push that needs them; the usual push does not).

- A push that is not a fast-forward is refused when the commits it drops include wavegit's own (a
  ``Wavegit-Op`` trailer: claims, records, halts): undoing a claim returns its items to ``todo`` while they
  run, so they could run twice.
- A push whose commits, not wavegit's own, change an item in flight (back to ``todo``, its ``owns``) is
  refused: its wave's scheduler still holds it.
- A push deleting the tracker branch is refused: deleting it and pushing an older commit anew is a rewind.
- A push whose commits change the tracker file (or the config: its protected paths) is refused when the
  tracker it leaves is invalid, saying where: an invalid tracker stops every wavegit command that reads it,
  and turns every later pre-push check into a warning that lets colliding pushes through.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from wavegit.core import git
from wavegit.core.errors import UsageError, ValidationError
from wavegit.model import tracker
from wavegit.model.config import CONFIG_PATH, config_from, protected_of
from wavegit.model.lifecycle import IN_FLIGHT
from wavegit.trackerbranch.store import OP_TRAILER

if TYPE_CHECKING:
    from wavegit.core.repo import Repo
    from wavegit.hook.pushed import RefUpdate

_IN_FLIGHT = frozenset(status.value for status in IN_FLIGHT)
MAX_LISTED = 5
"""Problems (and dropped commits) named in a refusal; the rest are counted."""
_FIELD = "\x1f"
_SKIP = "`git push --no-verify` skips this check, at your own risk."


def dropped_wavegit_commits(root: Path, update: RefUpdate) -> list[str] | None:
    """``<short sha> <subject>`` of each wavegit commit (``Wavegit-Op`` trailer) a push of ``update`` takes
    off its ref: reachable from the remote oid and not from the local one (none for a fast-forward). None
    when the remote oid is not in this repository, so what it drops cannot be told."""
    fmt = f"%h %s{_FIELD}%(trailers:key={OP_TRAILER},valueonly,separator=%x2C)"
    try:
        listing = git.log(root, [update.remote_oid, "--not", update.local_oid], fmt)
    except git.GitError:
        return None
    return [line.partition(_FIELD)[0] for line in git.lines(listing) if line.partition(_FIELD)[2].strip()]


def rewind_refusals(root: Path, updates: Sequence[RefUpdate], tracker_branch: str) -> list[str]:
    """A refusal for each non-fast-forward update of the tracker branch that drops wavegit commits."""
    tracker_ref = f"refs/heads/{tracker_branch}"
    refusals = []
    for update in updates:
        if update.remote_ref != tracker_ref or update.is_delete or update.is_new:
            continue
        dropped = dropped_wavegit_commits(root, update)
        if dropped == []:
            continue
        head = f"wavegit: push refused: {tracker_ref} is not a fast-forward"
        if dropped is None:
            refusals.append(f"{head}, and the remote's {update.remote_oid[:12]} is not in this repository, "
                            f"so what it drops cannot be told: fetch, then rebase onto it. {_SKIP}")
            continue
        listed = "".join(f"\n  {line}" for line in dropped[:MAX_LISTED])
        more = f"\n  ... and {len(dropped) - MAX_LISTED} more" if len(dropped) > MAX_LISTED else ""
        refusals.append(f"{head}: it drops {len(dropped)} wavegit commit(s) of the tracker branch:{listed}"
                        f"{more}\nThat would undo claims and records (an item in flight back to todo runs "
                        f"twice): rebase your commits onto {tracker_branch} (`git pull --rebase`). {_SKIP}")
    return refusals


def in_flight_refusals(root: Path, cache_dir: Path, updates: Sequence[RefUpdate], path: str) -> list[str]:
    """A refusal for the items in flight that pushed commits not wavegit's own (no ``Wavegit-Op`` trailer)
    change by hand: a claimed item set back to ``todo`` is planned again while it runs, so it runs twice (as
    a rewind would make it), and a change to its ``owns`` moves what the hook and the planner hold while its
    worker changes the files it was claimed with. A merge counts for the items it leaves unlike every parent.
    ``updates``: fast-forwards of the tracker branch (a rewind is :func:`rewind_refusals`')."""
    fmt = f"%H %P{_FIELD}%h %s{_FIELD}%(trailers:key={OP_TRAILER},valueonly,separator=%x2C)"
    changed: list[str] = []
    for update in updates:
        try:
            listing = git.log(root, [f"{update.remote_oid}..{update.local_oid}", "--", path], fmt)
        except git.GitError:
            continue
        for line in git.lines(listing):
            shas, subject, op = line.split(_FIELD)
            if op.strip():
                continue
            commit, *parents = shas.split()
            after = _items(root, cache_dir, commit, path)
            before = [_items(root, cache_dir, parent, path) for parent in parents]
            changed += [f"{subject}: {item.id} ({item.status}, wave {item.wave})"
                        for item in _in_flight(before[0]) if all(after.get(item.id) != items.get(item.id)
                                                                 for items in before)]
    if not changed:
        return []
    listed = "".join(f"\n  {line}" for line in changed[:MAX_LISTED])
    more = f"\n  ... and {len(changed) - MAX_LISTED} more" if len(changed) > MAX_LISTED else ""
    return [f"wavegit: push refused: it changes items in flight by hand:{listed}{more}\nTheir wave's "
            "scheduler still holds them (an item back to todo would run twice): leave them to it, `wavegit "
            f"release --wave W` if it is gone, and change them once it has recorded them. {_SKIP}"]


def _items(root: Path, cache_dir: Path, commit: str, path: str) -> dict[str, tracker.Item]:
    """The items of the tracker at ``commit`` by id (none when it has no readable tracker)."""
    found = git.read_blob_at(root, f"{commit}:{path}")
    if found is None:
        return {}
    blob_sha, text = found
    try:
        loaded = tracker.load_cached(text, blob_sha, cache_dir, path, strict=False)
    except ValidationError:
        return {}
    return {item.id: item for item in loaded.items}


def _in_flight(items: dict[str, tracker.Item]) -> list[tracker.Item]:
    return [item for item in items.values() if item.status in _IN_FLIGHT]


def deletion_refusal(tracker_ref: str) -> str:
    """The refusal of a push deleting the tracker branch: it drops every wavegit commit on it, and pushing
    an older commit to it anew (a new branch, no rewind to check) would undo claims as a rewind does."""
    return (f"wavegit: push refused: it deletes {tracker_ref}, the tracker branch: that drops every claim "
            f"and record of the tracker (items in flight would run twice) and the tracker itself. {_SKIP}")


def problems(root: Path, cache_dir: Path, commit: str, path: str,
             protected: tuple[str, ...] | None = None, *, removable: bool = False) -> list[str]:
    """What is wrong with the tracker at ``commit`` as wavegit's own writes check it (empty: valid), with the
    config's ``protected`` paths (``config.protected_of``): an item owning one the config adds stops every
    later write; each a ``path:line:col: message`` line when the parser says where. ``removable``: no
    tracker at all is fine (a config pushed before the first item, or before a tracker branch was
    fetched)."""
    try:
        found = git.read_blob_at(root, f"{commit}:{path}")
    except git.GitError as exc:
        return [] if removable else [f"{path}: cannot be read at {commit[:12]} ({exc})"]
    if found is None:
        return [] if removable else [f"{path}: the push removes the tracker"]
    blob_sha, text = found
    try:
        tracker.load_cached(text, blob_sha, cache_dir, path, strict=True, protected=protected)
    except ValidationError as exc:
        return [str(problem) for problem in exc.problems] or [str(exc)]
    return []


def pushed_protected(repo: Repo, commit: str, refusals: list[str]) -> tuple[str, ...] | None:
    """The protected paths of the config at the pushed ``commit``; an invalid one adds its refusal to
    ``refusals`` (and the defaults are used)."""
    try:
        return protected_of(config_from(repo.show_file(commit, CONFIG_PATH), repo.cache_dir, os.environ))
    except (ValidationError, UsageError) as exc:
        refusals.append(f"wavegit: push refused: the config it leaves is invalid: {exc}. {_SKIP}")
        return None


def tracker_refusals(root: Path, cache_dir: Path, ref: str, commit: str, path: str,
                     protected: tuple[str, ...] | None = None, *, removable: bool = False) -> list[str]:
    """The refusal of a push leaving an invalid tracker at ``commit`` on ``ref`` (none when it is valid)."""
    found = problems(root, cache_dir, commit, path, protected, removable=removable)
    if not found:
        return []
    lines = [f"wavegit: push refused: the tracker it leaves on {ref} is invalid:"]
    lines += [f"  {problem}" for problem in found[:MAX_LISTED]]
    if len(found) > MAX_LISTED:
        lines.append(f"  ... and {len(found) - MAX_LISTED} more")
    lines.append("Every wavegit command would stop at it, and this hook could no longer check pushes against "
                 "work in flight: fix it (`wavegit validate --worktree` names each problem, in a checkout of "
                 f"it) and push again. {_SKIP}")
    return ["\n".join(lines)]
