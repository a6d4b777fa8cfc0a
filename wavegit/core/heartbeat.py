"""The scheduler's heartbeat: a ref on the remote saying that a wave's scheduler still runs, for every clone.

While ``wavegit run`` schedules wave W it keeps ``refs/wavegit/heartbeat/<W>`` on the remote at a parentless
commit of the empty tree whose message names the scheduler (its ``wavelock`` fields: host, pid, start time,
boot id) and the time of the beat. The first beat lands with the claim: its commit, made while the claim
is prepared, rides the claim's push (:meth:`Heartbeat.rider`, one atomic push), or, where a scheduler does
not claim by one push, it is pushed first and the claim waits for it (:meth:`Heartbeat.landed`). Then one
every ``heartbeat_s`` (a forced push of one small commit, without the pre-push hook: it changes no file);
the ref is deleted once the wave's claims are settled. A ``kill -9`` leaves the last beat, which ages until
the ``sync`` or ``release`` that returns the wave's claims deletes it (:func:`delete_gone`).

Every fetch of the tracker branch also fetches these refs into ``refs/wavegit/heartbeats/<remote>/<W>`` (a
scheduler updates its own copy as it beats), so ``plan``, ``ls`` and ``status`` read them offline and
``sync`` and ``release`` fresh.

Why a ref of its own and not the tracker branch: a beat there would be a compare-and-swap commit every few
seconds racing every other writer of the tracker, and the branch's history would grow by one commit a beat.
A beat ref conflicts with nothing and stays one commit. Why not the claim's ``claimed_at``: it is written
once, and the lease it starts (``lease_ttl_s``, 2 h by default) must cover the longest wave.

A beat older than ``STALE_BEATS`` periods says the scheduler has stopped beating: killed, its machine down
or cut off from the remote. On the scheduler's own machine its pid says more (``SchedulerLock.alive``).
"""

import contextlib
import json
import math
import threading
import time
from collections.abc import Iterable
from datetime import datetime, timezone
from typing import NamedTuple

from wavegit.core import git, wavelock
from wavegit.core.git import WaveId
from wavegit.core.repo import Repo

REF_PREFIX = "refs/wavegit/heartbeat/"
STALE_BEATS = 4
"""A beat older than this many periods is stale: the scheduler stopped beating."""
_SUBJECT = "wavegit heartbeat"


def local_prefix(remote: str) -> str:
    """Where this clone keeps its copies of ``remote``'s heartbeat refs."""
    return f"refs/wavegit/heartbeats/{remote}/"


def refspec(remote: str) -> str:
    """The fetch refspec that copies ``remote``'s heartbeats here."""
    return f"+{REF_PREFIX}*:{local_prefix(remote)}*"


class Beat(NamedTuple):
    """A wave's last heartbeat as this clone has it (a NamedTuple: ``plan`` reads them when items are in
    flight)."""

    scheduler: wavelock.SchedulerLock
    at: datetime
    every_s: float

    def age_s(self, now: datetime) -> float:
        return max(0.0, (now - self.at).total_seconds())

    def stale(self, now: datetime) -> bool:
        """Whether the scheduler has missed ``STALE_BEATS`` beats."""
        return self.age_s(now) > STALE_BEATS * self.every_s

    def message(self) -> str:
        record = {**self.scheduler._asdict(), "at": self.at.isoformat(), "every_s": self.every_s}
        return f"{_SUBJECT} {self.scheduler.wave}\n\n{json.dumps(record)}\n"


def _parse(message: str) -> Beat | None:
    """The beat a heartbeat commit's message holds; None for anything else (a forged or foreign ref)."""
    try:
        record = json.loads(message[message.index("{"):])
        at = datetime.fromisoformat(str(record["at"]))
        every_s = float(record["every_s"])
    except (ValueError, KeyError, TypeError, OverflowError):  # OverflowError: an integer of 400 digits
        return None
    scheduler = wavelock.from_record(record)
    # NaN and infinity too: a period that is not a finite number of seconds crashed the readers' arithmetic.
    if scheduler is None or not 0 < every_s < math.inf or at.tzinfo is None:
        return None
    return Beat(scheduler, at, every_s)


def read(repo: Repo, remote: str | None) -> dict[WaveId, Beat]:
    """wave -> its last heartbeat, from this clone's copies of ``remote``'s heartbeat refs (no network)."""
    if remote is None:
        return {}
    prefix = local_prefix(remote)
    found: dict[WaveId, Beat] = {}
    for ref, message in git.ref_messages(repo.root, prefix).items():
        beat = _parse(message)
        if beat is not None and beat.scheduler.wave == ref[len(prefix):]:
            found[beat.scheduler.wave] = beat
    return found


def fetch(repo: Repo, remote: str | None) -> None:
    """Bring this clone's copies of the remote's heartbeats up to date (a beat deleted there goes here too);
    a remote that cannot be reached leaves the copies as they were."""
    if remote is None:
        return
    # Unreachable: the copies stay as last fetched; their age says how old they are.
    with contextlib.suppress(git.GitError):
        git.fetch(repo.root, remote, [refspec(remote)], prune=True)


def delete_gone(repo: Repo, remote: str | None, waves: Iterable[WaveId]) -> None:
    """Delete the heartbeat refs of ``waves``, whose schedulers are gone and whose claims are released: on
    the remote only at the beat this clone saw (a lease, so a beat pushed since stays), and this clone's
    copies. A killed scheduler cannot delete its own, which every fetch of the tracker would otherwise bring
    to every clone for good."""
    if remote is None:
        return
    seen = git.for_each_ref(repo.root, local_prefix(remote))
    gone = {wave: seen[copy] for wave in waves if (copy := f"{local_prefix(remote)}{wave}") in seen}
    # One push; a ref beaten meanwhile, or a remote out of reach, keeps its beat (and this clone its copy).
    kept = git.delete_refs(repo.root, {f"{REF_PREFIX}{wave}": sha for wave, sha in gone.items()},
                           remote=remote)
    git.delete_refs(repo.root, {f"{local_prefix(remote)}{wave}": sha for wave, sha in gone.items()
                                if f"{REF_PREFIX}{wave}" not in kept})


class Heartbeat:
    """The beats of one running wave, pushed from a thread of the scheduler's process."""

    def __init__(self, repo: Repo, remote: str | None, scheduler: wavelock.SchedulerLock, every_s: float
                 ) -> None:
        self.repo = repo
        self.remote = remote
        self.scheduler = scheduler
        self.every_s = every_s
        self._stop = threading.Event()
        self._first = threading.Event()
        """Set once the first beat is on the remote, or failed to get there, as any beat may."""
        self._made = threading.Event()
        self._first_beat: tuple[git.CommitSha, float] | None = None
        """The first beat's commit and its time (``time.monotonic``), when made for the claim's push."""
        self._told = threading.Event()
        """Set once the claim's push carried the first beat or went without it (:meth:`rode`), or on stop."""
        self._pushed = False
        """A beat of this wave is on the remote: its deletion is due once the claims are settled."""
        self._retired = False
        self._thread: threading.Thread | None = None
        self.rides = False
        """Started with ``riding``: the first beat is made for the claim's push to carry (:meth:`rider`)."""

    @property
    def _local_ref(self) -> str:
        return f"{local_prefix(self.remote or '')}{self.scheduler.wave}"

    @property
    def _ref(self) -> str:
        return f"{REF_PREFIX}{self.scheduler.wave}"

    def _commit(self) -> git.CommitSha:
        from wavegit.core import fastimport  # only a scheduler beats: plan and status read beats without it

        beat = Beat(self.scheduler, datetime.now(timezone.utc), self.every_s)
        return fastimport.commit(self.repo.root, None, {}, beat.message())

    def beat(self) -> None:
        """Push one beat now, then update this clone's copy; a failed push is left to the next beat."""
        if self.remote is None:
            return
        with contextlib.suppress(git.GitError):  # the remote is unreachable for now: the beat ages there
            self._push(self._commit())

    def _push(self, commit: git.CommitSha) -> None:
        git.push(self.repo.root, self.remote or "", [f"{commit}:{self._ref}"], force=True, no_verify=True,
                 timeout=self.every_s)
        self._pushed = True
        self._first.set()  # the claim waiting for the first beat does not wait for the copy too
        git.update_ref(self.repo.root, self._local_ref, commit)

    def start(self, *, riding: bool = False) -> "Heartbeat":
        """Beat in the background: at once (:meth:`landed` waits for that first beat), then every
        ``every_s``. ``riding``: the first beat is only made, for the claim's push to carry
        (:meth:`rider`, then :meth:`rode`)."""
        self._stop.clear()
        self.rides = riding and self.remote is not None
        self._thread = threading.Thread(target=self._loop, daemon=True,
                                        name=f"heartbeat {self.scheduler.wave}")
        self._thread.start()
        return self

    def landed(self) -> None:
        """Wait until the first beat has been pushed (or has failed, as any beat may)."""
        self._first.wait()

    def rider(self) -> str | None:
        """The refspec that pushes the first beat (made meanwhile by ``start(riding=True)``), for the claim's
        push to carry: all or nothing, so the claims are never on the remote without their beat; then
        :meth:`rode`. None: nothing to carry (no remote, or the beat could not be made)."""
        self._made.wait()
        return None if self._first_beat is None else f"+{self._first_beat[0]}:{self._ref}"

    def rode(self, landed: bool) -> None:
        """The claim's push carried the first beat (``landed``), or went without it: the beat then goes on
        its own, at once (:meth:`landed` waits for it)."""
        if landed:
            self._pushed = True
            self._first.set()
        self._told.set()

    def _loop(self) -> None:
        try:
            if self.rides:
                self._ride_first()
            else:
                self.beat()
        finally:
            self._made.set()
            self._first.set()
        while not self._stop.wait(self.every_s):
            self.beat()

    def _ride_first(self) -> None:
        with contextlib.suppress(git.GitError):
            self._first_beat = (self._commit(), time.monotonic())
        self._made.set()
        if self._first_beat is None:
            return  # as a beat that failed: the next one comes in its time
        self._told.wait()
        if self._stop.is_set() and not self._pushed:
            return
        commit, made_at = self._first_beat
        with contextlib.suppress(git.GitError):
            if not self._pushed:
                self._push(commit)
            elif time.monotonic() - made_at >= self.every_s:
                self.beat()  # the claim took its time (lost races): its beat went out aged
            else:
                git.update_ref(self.repo.root, self._local_ref, commit)  # this clone's copy

    def stop(self, *, settled: bool) -> None:
        """Stop beating; ``settled``: the wave holds no claim, so its heartbeat ref is deleted too (left
        behind otherwise: it ages, as a dead scheduler's does)."""
        if not settled:
            self._halt()
            return
        deletion = self.retire()
        if deletion is None:
            return
        with contextlib.suppress(git.GitError):
            # An unreachable remote keeps the ref: its age says the scheduler is gone.
            git.push(self.repo.root, self.remote or "", [deletion], no_verify=True, timeout=self.every_s)

    def retire(self) -> str | None:
        """Stop beating and delete this clone's copy of the ref, once the wave holds no claim; the refspec
        that deletes it on the remote, for the caller to push with what it pushes anyway (one push fewer),
        or None when there is nothing to push (no remote, no beat pushed, or retired already)."""
        self._halt()
        if self.remote is None or self._retired or not self._pushed:
            return None
        self._retired = True
        with contextlib.suppress(git.GitError):
            git.delete_refs(self.repo.root, {self._local_ref: None})
        return f":{self._ref}"

    def pause(self) -> str | None:
        """Stop beating for a push that deletes the ref (a beat after it would put the ref back); the
        refspec that deletes it, or None (no remote, or retired). :meth:`retire` once that push landed,
        else :meth:`resume`."""
        self._halt()
        return None if self.remote is None or self._retired else f":{self._ref}"

    def resume(self) -> None:
        """Beat again after :meth:`pause` (at once: the paused time counts against the beat's age)."""
        if not self._retired and not (self._thread is not None and self._thread.is_alive()):
            self.start()

    def _halt(self) -> None:
        self._stop.set()
        self._told.set()  # a first beat the claim never carried is not pushed now
        if self._thread is not None and self._thread.is_alive():
            self._thread.join()
