"""Who holds the tracker's claims: each wave with items ``in_progress``, its scheduler and how it fares.

The lines ``plan``, ``ls``, ``status`` and ``sync`` end with (README, "A wave killed with kill -9"). A
scheduler's state rests on the best evidence at hand: this clone's lock, else the heartbeat's record (on the
same machine it names a pid that runs or not), else the heartbeat's age, else nothing but the lease.
"""

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta, timezone
from typing import NamedTuple

from wavegit.core import heartbeat, wavelock
from wavegit.core.git import WaveId
from wavegit.core.repo import Repo
from wavegit.model.config import Config

Claim = tuple[str, str, str | None]
"""An item ``in_progress``: (id, wave, claimed_at), as ``columns.claims_of`` lists them (``plan`` reads them
from its cached columns, without an ``Item``)."""

RUNNING, GONE, SILENT, UNKNOWN = "running", "gone", "silent", "unknown"
"""A scheduler that runs; one that is gone (its pid ended, on its machine); one that stopped beating (seen
from another machine); one nothing is known of (no lock here, no heartbeat)."""


def claim_time(claimed_at: str | None) -> datetime | None:
    """A ``claimed_at`` value as a time, or None when it is missing or not an ISO 8601 timestamp."""
    if not claimed_at:
        return None
    text = claimed_at.strip()
    try:
        moment = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


def duration(seconds: float) -> str:
    """``12 s``, ``3 min``, ``2 h 5 min``."""
    whole = int(seconds)
    if whole < 120:
        return f"{whole} s"
    if whole < 7200:
        return f"{whole // 60} min"
    return f"{whole // 3600} h {whole % 3600 // 60} min"


def _stamp(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class HeldWave(NamedTuple):
    wave: WaveId
    items: tuple[str, ...]
    lease_ends: datetime | None
    """The earliest of its items' ``claimed_at`` + ``lease_ttl_s``; None when none has a valid one."""
    scheduler: wavelock.SchedulerLock | None
    beat: heartbeat.Beat | None
    state: str
    fetched: bool
    """Whether the command fetched the tracker and the heartbeats first (else they are as last fetched)."""

    def describe(self, now: datetime) -> str:
        """One line: the wave, its items, its scheduler, heartbeat, lease, and how its claims come back."""
        who = (self.scheduler.describe() if self.scheduler
               else "unknown (no heartbeat here: `wavegit ls --fetch` fetches them)")
        if self.state == GONE:
            how = f"its scheduler, {who}, is gone"
        elif self.state == SILENT:
            how = f"its scheduler, {who}, stopped beating"
        elif self.state == RUNNING:
            how = f"its scheduler, {who}, runs"
        else:
            how = f"its scheduler: {who}"
        if self.beat is not None:
            how += (f"; last heartbeat {duration(self.beat.age_s(now))} ago (one every "
                    f"{duration(self.beat.every_s)})")
        if self.lease_ends is None:
            lease = "its lease has no valid claimed_at and ends at the next `wavegit sync`"
        elif self.lease_ends <= now:
            lease = f"its lease ended at {_stamp(self.lease_ends)}"
        else:
            left = duration((self.lease_ends - now).total_seconds())
            lease = f"its lease ends at {_stamp(self.lease_ends)} (in {left})"
        release = f"`wavegit release --wave {self.wave}`"
        # Gone is known only on its machine, where `sync` in any clone returns a dead scheduler's claims.
        action = {RUNNING: f"once it has stopped, {release} returns them",
                  GONE: f"`wavegit sync` returns them now (or {release})"}.get(self.state,
                                                                              f"{release} returns them now")
        if not self.fetched and self.state in (GONE, SILENT):
            # A wave that ended well after the last fetch still looks so here: its copies are that fetch's.
            action += " (as last fetched: a wave that ended since holds nothing; `wavegit ls --fetch` tells)"
        return f"wave {self.wave} holds {', '.join(self.items)}: {how}; {lease}; {action}"

    def to_json(self, now: datetime) -> dict[str, object]:
        return {"wave": self.wave, "items": list(self.items), "scheduler": self.state,
                "host": self.scheduler.host if self.scheduler else None,
                "pid": self.scheduler.pid if self.scheduler else None,
                "heartbeat_age_s": round(self.beat.age_s(now), 1) if self.beat else None,
                "lease_ends": _stamp(self.lease_ends) if self.lease_ends else None,
                "release": f"wavegit release --wave {self.wave}"}


def lines(waves: Sequence[HeldWave], now: datetime) -> list[str]:
    """What ``plan``, ``ls``, ``status`` and ``sync`` print of ``waves``: nothing when there is none."""
    if not waves:
        return []
    return [f"claims held ({len(waves)} wave(s) not running in this clone):",
            *(f"  {wave.describe(now)}" for wave in waves)]


def judge(scheduler: wavelock.SchedulerLock | None, beat: heartbeat.Beat | None, now: datetime) -> str:
    """A scheduler's state from this clone's lock or its heartbeat's record (``scheduler``) and its beat."""
    alive = scheduler.alive() if scheduler is not None else None
    if alive is not None:
        return RUNNING if alive else GONE
    if beat is not None:
        return SILENT if beat.stale(now) else RUNNING
    return UNKNOWN


def held(repo: Repo, config: Config, claims: Iterable[Claim], now: datetime | None = None, *,
         fetched: bool) -> list[HeldWave]:
    """The waves holding ``claims`` whose scheduler does not run in this clone, by wave id; ``fetched``:
    whether ``claims`` and the heartbeats come from a fetch this command made."""
    moment = now or datetime.now(timezone.utc)
    by_wave: dict[WaveId, list[Claim]] = {}
    for claim in claims:
        by_wave.setdefault(WaveId(claim[1]), []).append(claim)  # the tracker's word
    if not by_wave:
        return []
    beats = heartbeat.read(repo, config.remote if repo.has_remote(config.remote) else None)
    found = []
    for wave, claimed in sorted(by_wave.items()):
        lock = wavelock.read(repo, wave)
        if lock is not None and lock.alive():
            continue  # scheduled from this clone, and running: `status` tells of it
        beat = beats.get(wave)
        scheduler = lock or (beat.scheduler if beat else None)
        times = [t for t in (claim_time(claim[2]) for claim in claimed) if t is not None]
        lease_ends = min(times) + timedelta(seconds=config.lease_ttl_s) if times else None
        found.append(HeldWave(wave, tuple(claim[0] for claim in claimed), lease_ends, scheduler, beat,
                              judge(scheduler, beat, moment), fetched))
    return found


def dead_waves(repo: Repo, config: Config, now: datetime | None = None) -> dict[WaveId, str]:
    """The waves whose scheduler is known gone, each with who it was: ``wavelock.dead_waves`` (this clone's
    locks) and the heartbeats whose record names a process gone from this machine. A wave this clone holds a
    lock of is judged by that lock alone: anyone who can push a ref can write a heartbeat's record (a worker
    naming a pid that ended would have its own running wave's claims released)."""
    moment = now or datetime.now(timezone.utc)
    found = wavelock.dead_waves(repo)
    for wave, beat in heartbeat.read(repo, config.remote if repo.has_remote(config.remote) else None).items():
        if wave in found or wavelock.read(repo, wave) is not None:
            continue
        if judge(beat.scheduler, beat, moment) == GONE:
            found[wave] = beat.scheduler.describe()
    return found
