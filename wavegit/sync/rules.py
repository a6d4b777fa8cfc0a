"""The rules of ``wavegit sync``, per item (:mod:`wavegit.sync.reconcile` says them in full): what an item in
review or in progress becomes, given its wave's branches, merges, lease and scheduler, and its pull request
when there is somewhere to ask."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cache
from typing import Protocol

from wavegit.attempts import wavebranch
from wavegit.core.git import WaveId
from wavegit.model import lifecycle, report, tracker
from wavegit.model.config import Config
from wavegit.model.lifecycle import Status
from wavegit.sync.refs import WaveRefs
from wavegit.trackerbranch import claims

PR_RULE = "pr"


class PullRequests(Protocol):
    """What sync asks of wherever pull requests live (GitHub: ``wavegit.github.api.SyncPullRequests``)."""

    def state(self, number: int) -> tuple[str, str | None]:
        """(``open`` | ``merged`` | ``closed``, the merge commit when merged) of PR ``number``."""
        ...

    def mark_outcome(self, number: int, outcome: str) -> None:
        """Say ``outcome`` on the PR's report comment."""
        ...


@dataclass(frozen=True)
class ItemChange:
    """One item's status change, with the tracker fields it writes."""

    id: str
    wave: WaveId | None
    old: str
    new: Status
    reason: str
    fields: Mapping[str, object | None] = field(compare=False)
    pr: int | None = None
    merge_sha: str | None = None
    rule: str | None = None
    """How a merge was found: ``pr``, or a rule of :mod:`wavegit.sync.merged`; None for other
    changes."""

    def line(self) -> str:
        how = f" by {self.rule}" if self.rule else ""
        return f"{self.id}: {self.old} -> {self.new}{how} ({self.reason})"

    def to_json(self) -> dict[str, object]:
        return {"kind": "item", "id": self.id, "wave": self.wave, "from": self.old, "to": self.new,
                "reason": self.reason, "pr": self.pr, "merge_sha": self.merge_sha, "rule": self.rule}


class Facts:
    """What the rules look at besides the tracker; every lookup is made at most once per sync."""

    def __init__(self, refs: WaveRefs, pulls: PullRequests | None,
                 dead_waves: Mapping[WaveId, str] | None = None) -> None:
        self.refs = refs
        self.pulls = pulls
        self.dead_waves = dead_waves or {}
        """Waves whose scheduler on this machine is gone, each with who it was (``claims.dead_waves``)."""
        self.pr_state: Callable[[int], tuple[str, str | None]] = cache(self._pr_state)

    def _pr_state(self, number: int) -> tuple[str, str | None]:
        assert self.pulls is not None
        return self.pulls.state(number)


def decide(item: tracker.Item, facts: Facts, config: Config, now: datetime) -> ItemChange | None:
    """The change the rules (module docstring) make to ``item``, or None."""
    if item.status == Status.REVIEW:
        return _review(item, facts, now)
    if item.status == Status.IN_PROGRESS:
        return _in_progress(item, facts, config, now)
    return None


def _review(item: tracker.Item, facts: Facts, now: datetime) -> ItemChange | None:
    if item.pr is not None and facts.pulls is not None:
        state, merge_sha = facts.pr_state(item.pr)
        if state == "merged":
            return _done(item, merge_sha, f"PR #{item.pr} merged", now, PR_RULE)
        if state == "closed":
            update = lifecycle.reopen(f"PR #{item.pr} was closed without merging", report.utc_timestamp(now))
            return _change(item, update, f"PR #{item.pr} closed without merging")
        return None
    if item.wave is None:
        return None
    return _done_if_merged(item, item.wave, facts, now)


def _in_progress(item: tracker.Item, facts: Facts, config: Config, now: datetime) -> ItemChange | None:
    wave = item.wave
    on_branch = wave is not None and item.id in facts.refs.items_on(wave)
    merges = facts.refs.merges(wave) if wave is not None else None
    if wave is not None and merges is not None and merges.has_item(item.id):
        done = _done_if_merged(item, wave, facts, now)
        if done is not None:
            return done
    dead = facts.dead_waves.get(wave) if wave is not None else None
    claimed = claims.claim_time(item.claimed_at)
    if dead is None and claimed is not None and now - claimed < timedelta(seconds=config.lease_ttl_s):
        return None
    since = f"claimed at {item.claimed_at}" if claimed else "no valid claimed_at"
    why = f"its scheduler ({dead}) is gone" if dead else f"lease expired ({since})"
    if wave is None or wave not in facts.refs.tips:
        branch = wavebranch.wave_branch(wave) if wave else "(no wave)"
        where = facts.refs.where
        return _release(item, config, f"{why}; no branch {branch} on {where}", now, counted=dead is None)
    if on_branch:
        # The wave's record is lost, not its attempt: one attempt, verified.
        update = lifecycle.record(item, verified=True, used=1, cost=0.0, error=None,
                                  max_attempts=config.max_attempts, at=report.utc_timestamp(now))
        return _change(item, update, f"recovered from {wavebranch.wave_branch(wave)}: the wave stopped "
                                     "before recording")
    return _release(item, config, f"{why}; {wavebranch.wave_branch(wave)} has no commit "
                                  "of this item", now, counted=dead is None)


def _release(item: tracker.Item, config: Config, reason: str, now: datetime, *, counted: bool) -> ItemChange:
    update = lifecycle.release(item, reason, config.max_attempts, report.utc_timestamp(now), counted=counted)
    if update.status == Status.FAILED:
        reason = f"{reason}; attempt {item.attempts + 1} of {config.max_attempts}"
    return _change(item, update, reason)


def _done_if_merged(item: tracker.Item, wave: WaveId, facts: Facts, now: datetime) -> ItemChange | None:
    merges = facts.refs.merges(wave)
    merged = merges.item(item.id, item.owns) if merges is not None else None
    if merged is None:
        return None
    return _done(item, merged.commit, merged.reason, now, merged.rule)


def _done(item: tracker.Item, merge_sha: str | None, reason: str, now: datetime, rule: str) -> ItemChange:
    return _change(item, lifecycle.done(merge_sha, report.utc_timestamp(now)), reason, merge_sha, rule)


def _change(item: tracker.Item, update: lifecycle.Update, reason: str,
            merge_sha: str | None = None, rule: str | None = None) -> ItemChange:
    return ItemChange(item.id, item.wave, item.status, update.status, reason, update.fields, item.pr,
                      merge_sha, rule)
