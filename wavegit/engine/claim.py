"""A wave's claim: preflight, the one compare-and-swap commit that takes its items, and its base commit."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime

from wavegit.attempts import wavebranch
from wavegit.core import git, heartbeat
from wavegit.core.git import WaveId
from wavegit.core.repo import Repo
from wavegit.model import lifecycle, report, tracker
from wavegit.model.config import Config, protected_of
from wavegit.model.select import Plan, Skip, select
from wavegit.trackerbranch import budget, halt
from wavegit.trackerbranch.missing import no_tracker
from wavegit.trackerbranch.mutation import mutate
from wavegit.trackerbranch.store import Change, GitStore, RemoteError, Snapshot, TrackerStore, known


@dataclass
class Claim:
    wave_id: WaveId
    plan: Plan
    commit: str | None
    """The claim commit; None when nothing was written."""
    snapshot_commit: str | None
    """The tracker branch head the plan was made on."""
    items: tuple[tracker.Item, ...]
    """The claimed items, in tracker order; empty when nothing was selected."""
    day_spent: float
    halt_read_at: float = -math.inf
    """``time.monotonic()`` when the HALT read the claim rests on had started, at the latest."""
    exhausted: tuple[str, ...] = ()
    """``todo`` items with no attempt left that the claim marked ``failed`` (``lifecycle.exhausted``)."""


def earlier_claim(wave_id: WaveId, items: tuple[tracker.Item, ...], snapshot: Snapshot,
                  day_spent: float) -> Claim:
    """A :class:`Claim` for a wave claimed earlier (by another process), to run or collect its items."""
    plan = Plan(tuple(item.id for item in items), (), snapshot.blob_sha or "")
    return Claim(wave_id, plan, None, snapshot.commit, items, day_spent)


def load_tracker(snapshot: Snapshot, store_repo: Repo, config: Config) -> tracker.Tracker:
    if snapshot.text is None or snapshot.blob_sha is None:
        raise no_tracker(store_repo.root, f"{config.tracker_path} on {config.tracker_branch}")
    return tracker.load_cached(snapshot.text, snapshot.blob_sha, store_repo.cache_dir,
                               config.tracker_path, strict=False, protected=protected_of(config))


def claim(repo: Repo, config: Config, store: TrackerStore, *, max_items: int, wave_id: WaveId,
          now: datetime, check: Callable[[Snapshot, Plan], None] | None = None,
          planner: Callable[[tracker.Tracker, int, str], Plan] | None = None) -> Claim:
    """Preflight and claim in one compare-and-swap commit (see :mod:`wavegit.engine`); ``check`` runs on the
    snapshot and its plan before anything is written (``preflight.claim_checks``) and may raise;
    ``planner`` makes the plan in place of ``select`` (``only.planner`` for ``run --only``)."""
    at = report.utc_timestamp(now)
    chosen: list[tuple[Plan, tuple[str, ...]]] = []
    tried: list[tuple[str, ...]] = []
    """What each try selected: the first is what this scheduler saw before any race."""
    checked: list[tuple[float, float]] = []

    def guard(snapshot: Snapshot) -> None:
        # On every snapshot the claim may be written on, replays included: a HALT or a spend that lands
        # while the claim is pushed wins (exit 3, nothing claimed).
        halt.check(store, snapshot)
        day_spent = budget.check_day(config.budget, repo.root, snapshot.commit, now)
        checked[:] = [(time.monotonic(), day_spent)]

    def apply(snapshot: Snapshot) -> Change | None:
        loaded = load_tracker(snapshot, repo, config)
        updates: dict[str, lifecycle.Update] = {}
        for item in loaded.items:
            update = lifecycle.exhausted(item, config.max_attempts, at)
            if update is not None:
                updates[item.id] = update
        # The planner sees exhausted items as the claim leaves them: failed.
        planned = loaded if not updates else tracker.Tracker(loaded.version, tuple(
            replace(item, status=updates[item.id].status.value) if item.id in updates else item
            for item in loaded.items))
        plan = (planner or select)(planned, max_items, snapshot.blob_sha or "")
        if check is not None:
            check(snapshot, plan)
        chosen[:] = [(plan, tuple(updates))]
        tried.append(plan.selected)
        updates.update((item_id, lifecycle.claim(wave_id, at)) for item_id in plan.selected)
        if not updates:
            return None
        assert snapshot.text is not None
        text = tracker.set_items_fields(snapshot.text, {item_id: update.fields
                                                        for item_id, update in updates.items()}, loaded)
        return Change(text, exact=True)

    message = f"wavegit: claim wave {wave_id}\n\n{wavebranch.TRAILER_WAVE}: {wave_id}"
    # On the tracker as last fetched (`run` fetched the base branch for its config just before): the claim's
    # compare-and-swap tells whether it still was the head, and a fetch follows only when it was not.
    result = mutate(store, apply, message=message, guard=guard, known=known(store))
    # The claim landed on (or, writing nothing, was decided on) the last snapshot the guard passed: the
    # branch held no HALT when it did, so the wave's first launches may reuse that moment, never an earlier
    # read.
    halt_read_at, day_spent = checked[0]
    plan, exhausted = chosen[0]
    loaded = load_tracker(result.snapshot, repo, config)
    items = tuple(sorted((i for i in loaded.items if i.id in plan.selected), key=lambda i: i.index))
    plan = _with_lost(plan, tried[0], loaded)
    return Claim(wave_id, plan, result.commit, result.snapshot.commit, items, day_spent, halt_read_at,
                 exhausted)


def _with_lost(plan: Plan, first_selected: tuple[str, ...], loaded: tracker.Tracker) -> Plan:
    """``plan`` with a skip reason for each item its first try selected that changed on the tracker before
    the claim landed (neither selected nor skipped as not ready): another scheduler's claim, or a change by
    hand, such as `wavegit done`, since the tracker this clone last fetched, where the first try is made."""
    said = set(plan.selected) | {skip.id for skip in plan.skipped}
    lost = tuple(Skip(item.id, _lost_reason(item))
                 for item in loaded.items if item.id in first_selected and item.id not in said)
    return plan._replace(skipped=plan.skipped + lost) if lost else plan


def _lost_reason(item: tracker.Item) -> str:
    if item.wave:
        return f"lost the claim race: another scheduler claimed it first ({item.status} in wave {item.wave})"
    return f"changed on the tracker before the claim landed: {item.status} now, in no wave"


def resolve_base(repo: Repo, config: Config, claim_commit: str | None) -> str:
    """The commit the wave branch starts from: the base branch head (the claim commit if they coincide)."""
    if config.base_branch == config.tracker_branch and claim_commit:
        return claim_commit
    if repo.has_remote(config.remote):
        return wavebranch.fetch_branch(repo.root, config.remote, config.base_branch)
    return git.commit_of(repo.root, f"refs/heads/{config.base_branch}")


def with_first_beat(store: TrackerStore, beating: heartbeat.Heartbeat | None,
                    claiming: Callable[[Callable[[], None]], Claim]) -> Claim:
    """The claim made by ``claiming`` (given what to do just before its commit is written) with the wave's
    first heartbeat: carried by the claim's push where the tracker is a branch on a remote (all or nothing:
    the claims are never on the remote without their beat), else pushed meanwhile and waited for."""
    if beating is None or not beating.rides or not isinstance(store, GitStore):
        return claiming(beating.landed if beating is not None else _nothing)
    try:
        # The beat is asked for at the claim's push: made meanwhile, it does not hold up the claim's reads.
        with store.riding(lambda: [rider] if (rider := beating.rider()) is not None else []):
            claimed = claiming(_nothing)
    except RemoteError:
        # A remote that refuses the beat's ref (a hook, a host's rule) may take the tracker's: the beat goes
        # on its own, as every later beat does, and the claim again once it landed.
        beating.rode(False)
        beating.landed()
        return claiming(_nothing)
    if claimed.commit is not None:
        # A beat that could not be made rode nothing: the next one comes in its time, as for any failed beat.
        beating.rode(beating.rider() is not None)
    return claimed


def _nothing() -> None:
    pass
