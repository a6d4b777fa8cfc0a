"""A wave from its claim to its report (see :mod:`wavegit.engine`), with declared extension points: where
the items' runs come from (:class:`ItemSource`) and where a pushed wave goes (:class:`Delivery`)."""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Protocol

from wavegit.attempts import reaper, sandbox, wavebranch
from wavegit.core import heartbeat, wavelock
from wavegit.core.errors import EXIT_INTERRUPTED, EXIT_OK, RaceLostError, WavegitError
from wavegit.core.git import WaveId
from wavegit.core.repo import Repo
from wavegit.core.soon import soon
from wavegit.engine import only, preflight, shared_report
from wavegit.engine.claim import Claim, claim, resolve_base, with_first_beat
from wavegit.engine.eventlog import EventLog, Tee
from wavegit.engine.outcome import (
    REPORT_TAIL_LINES,
    WaveOutcome,
    ceiling_reason,
    exit_code,
    item_report,
    record,
    wave_succeeded,
    write_report,
)
from wavegit.engine.runs import Events, ItemRun, NoEvents, utc_now
from wavegit.engine.wave import Collected, Wave, branch_refspec, collect, push_branch
from wavegit.model import report
from wavegit.model.config import Config
from wavegit.model.lifecycle import one_line
from wavegit.model.select import Plan
from wavegit.trackerbranch import budget
from wavegit.trackerbranch.store import GitStore, Snapshot, TrackerStore, tracker_source


class Delivery(Protocol):
    """Where a pushed wave goes besides its branch: its pull request and report (``publish.Publisher``)."""

    def open_pr(self, rep: report.WaveReport) -> int | None:
        """After the push, before the record, with the report so far: the pull request's number or None."""

    def post_report(self, rep: report.WaveReport) -> int | None:
        """After the record, with the final report: the pull request's number or None."""


class NoDelivery:
    """A wave that stays a branch: no pull request, no report comment."""

    def open_pr(self, rep: report.WaveReport) -> int | None:
        del rep
        return None

    def post_report(self, rep: report.WaveReport) -> int | None:
        del rep
        return None


class ItemSource(Protocol):
    """Where a claimed wave's item runs come from."""

    def base(self, claimed: Claim) -> str:
        """The commit the wave branch starts from."""

    def fill(self, wave: Wave, runs: list[ItemRun]) -> None:
        """Fill ``runs`` (one per claimed item, in tracker order) in place."""


@dataclass(frozen=True)
class RunHere:
    """The items run in this process (``wavegit run``), from the base branch's head."""

    repo: Repo
    config: Config

    def base(self, claimed: Claim) -> str:
        return resolve_base(self.repo, self.config, claimed.commit)

    def fill(self, wave: Wave, runs: list[ItemRun]) -> None:
        wave.run_items(runs)


@dataclass(frozen=True)
class WaveOptions:
    push: bool = True
    """False: the wave branch stays in this repository (``--no-push``)."""
    events: Events = field(default_factory=NoEvents)
    config_source: str = ""
    """Where the config the wave obeys was read (the report's ``config_source``)."""
    sandbox: sandbox.Decision | None = None
    """The sandbox ``run_wave`` decided before its claim (else the wave decides it)."""
    hidden: Callable[[], tuple[Path, ...]] | None = None
    """What its sandboxes hide besides the fixed paths, read while the claim reads (``Confiner.others``)."""
    only: tuple[str, ...] = ()
    """``run --only``: claim exactly these items or nothing (:mod:`.only`); empty: plan the backlog."""
    beating: heartbeat.Heartbeat | None = None
    """The wave's heartbeat, when the wave may retire it: once its claims are settled, its deletion goes in
    the push of the shared report (one push fewer)."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM, once the wave has settled what it could; ``settled``: its claims were recorded;
    ``report``: the wave's, as written."""

    def __init__(self, settled: bool, report: report.WaveReport | None = None) -> None:
        super().__init__()
        self.settled = settled
        self.report = report


def run_wave(repo: Repo, config: Config, store: TrackerStore, *, max_items: int | None = None,
             delivery: Delivery | None = None, options: WaveOptions | None = None) -> WaveOutcome:
    """Claim, run, collect, record, report (``wavegit run``). Halted or over the day budget: raises.

    From before the claim to the end, the wave's lock names this process (``wavegit.core.wavelock``), so that
    a ``sync`` on this machine releases the claims at once if the process is killed. It is removed only once
    the claims are settled (recorded, or none made); otherwise it stays, since they die with this process
    all the same, and a lock on a wave with no claim left costs a sync nothing. Every other clone sees the
    scheduler by its heartbeat (``wavegit.core.heartbeat``), kept over the same span."""
    started = utc_now()
    wave_id = wavebranch.new_wave_id(started)
    # The first beat is made while the claim is prepared, and rides its push (or, with a store of another
    # kind, is pushed meanwhile: the claim waits for it).
    riding = isinstance(store, GitStore) and store.remote is not None
    beating = hold(repo, config, wave_id, landed=False, riding=riding)
    settled = False
    try:
        outcome = _run_wave(repo, config, store, wave_id, started, max_items=max_items, delivery=delivery,
                            options=replace(options or WaveOptions(), beating=beating))
        settled = outcome.report.tracker_updated or not outcome.report.items
        return outcome
    except WavegitError:
        settled = True  # raised at the claim or before it (halted, over budget, bad input): nothing claimed
        raise
    except Interrupted as exc:
        settled = exc.settled
        raise
    finally:
        beating.stop(settled=settled)
        if settled:
            wavelock.remove(repo, wave_id)


def hold(repo: Repo, config: Config, wave_id: WaveId, *, landed: bool = True, riding: bool = False
         ) -> heartbeat.Heartbeat:
    """Name this process as wave ``wave_id``'s scheduler before its claim: its lock here, for ``sync`` on
    this machine, and its heartbeat on the remote, for every other clone (stopped by the caller).
    ``landed=False``: the first beat may still be on its way; the caller waits for it
    (:meth:`~wavegit.core.heartbeat.Heartbeat.landed`) before its claim is pushed, or, ``riding``, has the
    claim's push carry it (:meth:`~wavegit.core.heartbeat.Heartbeat.rider`)."""
    scheduler = wavelock.this_process(wave_id)
    wavelock.write(repo, scheduler)
    remote = config.remote if repo.has_remote(config.remote) else None
    beating = heartbeat.Heartbeat(repo, remote, scheduler, config.heartbeat_s).start(riding=riding)
    if landed:
        beating.landed()
    return beating


def _run_wave(repo: Repo, config: Config, store: TrackerStore, wave_id: WaveId, started: datetime, *,
              max_items: int | None, delivery: Delivery | None, options: WaveOptions) -> WaveOutcome:
    # Decided while the claim reads (what its sandboxes hide read meanwhile), and before its commit: a sandbox
    # that was asked for and cannot be had is bad input (exit 2), nothing claimed.
    jail, hidden = sandbox.decide_soon(config.sandbox, os.environ), sandbox.others_soon(repo, config.sandbox)

    def claiming(before_commit: Callable[[], None]) -> Claim:
        def check(snapshot: Snapshot, plan: Plan) -> None:
            sandboxed = jail().bwrap is not None
            preflight.claim_checks(repo, config, wave_id, sandboxed=sandboxed)(snapshot, plan)
            before_commit()  # the last step before the claim's commit: a beat pushed meanwhile

        return claim(repo, config, store, max_items=max_items or config.max_items, wave_id=wave_id,
                     now=started, check=check, planner=only.planner(options.only) if options.only else None)

    claimed = with_first_beat(store, options.beating, claiming)
    options = replace(options, sandbox=jail(), hidden=hidden)
    rep = claim_report(config, store, claimed, options, started)
    if not claimed.items:
        # Written only when the claim failed items with no attempt left.
        rep.success, rep.tracker_updated = True, claimed.commit is not None
        rep.notes.append("nothing selected: no ready item fits this wave; nothing was claimed")
        rep.finished_at = report.utc_timestamp()
        return WaveOutcome(rep, EXIT_OK)
    return run_claimed(repo, config, store, claimed, rep, source=RunHere(repo, config),
                       delivery=delivery or NoDelivery(), options=options)


def claim_report(config: Config, store: TrackerStore, claimed: Claim, options: WaveOptions,
                 started: datetime) -> report.WaveReport:
    """A claimed wave's report as its claim leaves it: what was skipped, the budget so far, the notes;
    ``options.sandbox`` is the sandbox decided before the claim."""
    assert options.sandbox is not None
    jail = options.sandbox
    limits = report.BudgetReport(wave_usd_limit=config.budget.wave_usd, day_usd_limit=config.budget.day_usd,
                                 wave_tokens_limit=config.budget.wave_tokens,
                                 day_spent_usd=round(claimed.day_spent, 6))
    skipped = [report.SkippedItem(id=s.id, reason=s.reason) for s in claimed.plan.skipped]
    rep = report.WaveReport(wave_id=claimed.wave_id, base_sha=claimed.snapshot_commit or "", skipped=skipped,
                            budget=limits, started_at=report.utc_timestamp(started),
                            config_source=options.config_source, sandbox=jail.mode,
                            tracker_source=tracker_source(store.target, config.tracker_path,
                                                          claimed.plan.tracker_sha))
    if jail.warning:
        rep.notes.append(jail.warning)
    rep.notes += [f"{item_id}: no attempt left (max_attempts {config.max_attempts}); marked failed"
                  for item_id in claimed.exhausted]
    return rep


def run_claimed(repo: Repo, config: Config, store: TrackerStore, claimed: Claim, rep: report.WaveReport, *,
                source: ItemSource, delivery: Delivery, options: WaveOptions) -> WaveOutcome:
    """Run a claimed wave to its report: its items from ``source``, the pushed wave to ``delivery``."""
    log = EventLog(repo.events_dir / f"{claimed.wave_id}.jsonl")
    log.claimed(claimed.wave_id, claimed.plan.selected)
    options = replace(options, events=Tee(options.events, log))
    options.events.note(f"wave {claimed.wave_id}: claimed {', '.join(claimed.plan.selected)}")
    if options.sandbox is not None and options.sandbox.warning:
        # Before any worker runs: the report's note comes once every worker has run unsandboxed.
        options.events.note(f"warning: {options.sandbox.warning}")
    # Nothing to open between the branch's push and the record: one atomic push carries both.
    riding = options.push and isinstance(delivery, NoDelivery) and isinstance(store, GitStore)
    ran = _run(repo, config, store, claimed, rep, source, options, hold=riding)
    pr = _open_pr(rep, ran, config, delivery)
    together = None
    if ran.collected is not None and ran.collected.held:
        assert isinstance(store, GitStore)
        # Lost (its race given up before the paused beat turns stale) or refused: the branch goes alone,
        # and the record is tried again on its own, the heartbeat beating.
        together = _land_together(repo, config, store, claimed, rep, ran, options)
    if together is not None:
        rep, ran, code = together
    else:
        if ran.collected is not None and ran.collected.held:
            ran = _push_held(repo, config, claimed.wave_id, rep, ran, options.events)
        race_lost = _record(repo, config, store, claimed, rep, ran, pr)
        code = _conclude(rep, config, claimed, ran, race_lost, delivery, pr)
        _share(repo, config, rep, ran, options.beating)
    try:
        write_report(repo, rep)
    except OSError as exc:
        # The claims are recorded and the report is still printed: only its file is missing.
        _failed(rep, f"the report could not be written to {repo.reports_dir}: {exc.strerror or exc}")
    # The wave's trees went to the trash in its cleanup; their files go after it returns.
    reaper.reap_later(repo.trash_dir)
    if ran.interrupted:
        # Its end is logged and, once its claims are recorded, its lock removed: `status` must not show a
        # wave stopped this way as running, or as killed.
        log.finished(EXIT_INTERRUPTED, False)
        raise Interrupted(rep.tracker_updated or not rep.items, rep)
    log.finished(code, rep.success)
    return WaveOutcome(rep, code)


def _conclude(rep: report.WaveReport, config: Config, claimed: Claim, ran: _Ran, race_lost: bool,
              delivery: Delivery, pr: int | None) -> int:
    """The report's account once the record is made (or failed), the pull request's report posted; the
    exit code."""
    _account(rep, config, claimed, ran)
    rep.pr = pr
    if rep.error is None:
        rep.phase = "done"
    if ran.pushed:
        try:
            rep.pr = delivery.post_report(rep) or pr
        except WavegitError as exc:
            rep.success = False
            _failed(rep, f"publishing failed: {one_line(str(exc))}")
    rep.finished_at = report.utc_timestamp()
    code = rep.exit_code = EXIT_INTERRUPTED if ran.interrupted else exit_code(rep, race_lost)
    return code


@dataclass(frozen=True)
class _Ran:
    """A claimed wave once its items ran and its branch was built (and pushed), or it stopped trying."""

    runs: list[ItemRun]
    wave: Wave | None
    collected: Collected | None
    interrupted: bool

    @property
    def pushed(self) -> bool:
        return self.collected is not None and self.collected.pushed

    @property
    def spent(self) -> float:
        """What the runs cost: the wave's own attempts, or (scale-out) the runners' results it collected."""
        return sum(run.cost for run in self.runs)


def _run(repo: Repo, config: Config, store: TrackerStore, claimed: Claim, rep: report.WaveReport,
         source: ItemSource, options: WaveOptions, *, hold: bool = False) -> _Ran:
    """The items' runs (phase ``run``), then the wave branch combined, tested and pushed (``collect``; with
    ``hold``, left for the record's push); a failure or an interruption on the way is the report's
    ``error``, and the claims are still recorded."""
    runs = [ItemRun(item) for item in claimed.items]
    branch = wavebranch.wave_branch(claimed.wave_id)
    notes = options.events
    wave: Wave | None = None
    collected: Collected | None = None
    interrupted = False
    rep.phase = "run"

    def deliver(wave: Wave) -> Collected:
        rep.phase = "collect"
        wave.cleanup.start()
        collected = collect(repo, config, claimed.wave_id, rep.base_sha, runs, push=options.push,
                            cleanup=wave.cleanup, confiner=wave.context.confiner,
                            idents=wave.context.workspaces.idents(), hold=hold, known=wave.context.verified)
        if collected.wave_test is not None:
            notes.note(collected.wave_test.verdict())  # the last long step, told as it ends
        if collected.pushed:
            notes.note(f"pushed {branch} to {config.remote}")
        if any(run.commit for run in runs):
            rep.head_sha, rep.branch = collected.head, branch
            if not collected.pushed and not collected.held:
                rep.notes.append(f"wave branch {branch} was not pushed (--no-push or no remote "
                                 f"{config.remote!r}); it exists in this repository only")
        return collected

    try:
        rep.base_sha = source.base(claimed)
        wavebranch.set_branch(repo.root, branch, rep.base_sha)
        wave = Wave(repo, config, store, claimed, rep.base_sha, events=options.events, jail=options.sandbox,
                    hidden=options.hidden)
        source.fill(wave, runs)
        collected = deliver(wave)
    except (WavegitError, OSError) as exc:
        # OSError: the disk wavegit's state is on is full, or gone; the claims are still recorded below.
        rep.error = one_line(str(exc))
        rep.notes.append(f"the wave stopped: {rep.error}")
    except KeyboardInterrupt:
        # Ctrl-C or SIGTERM: workers were cancelled. What they verified is still combined, tested and
        # pushed (a second interrupt gives that up); the claims are recorded below either way.
        interrupted = True
        rep.error = "the wave was interrupted"
        rep.notes.append(rep.error)
        if wave is not None and rep.phase == "run" and any(run.commit for run in runs):
            try:
                collected = deliver(wave)
            except (WavegitError, OSError) as exc:
                rep.notes.append(f"its verified items were not delivered: {one_line(str(exc))}")
            except KeyboardInterrupt:
                rep.notes.append("its verified items were not delivered: interrupted again")
    finally:
        if wave is not None:
            wave.cleanup.finish()
    if collected is None:
        _undelivered(runs)
    return _Ran(runs, wave, collected, interrupted)


def _undelivered(runs: list[ItemRun]) -> None:
    for run in runs:
        if run.commit is not None:
            run.undelivered = "verified, but the wave branch could not be built or pushed"


def _land_together(repo: Repo, config: Config, store: GitStore, claimed: Claim, rep: report.WaveReport,
                   ran: _Ran, options: WaveOptions) -> tuple[report.WaveReport, _Ran, int] | None:
    """The record's commit, the held wave branch, the shared report and the heartbeat's deletion in one
    atomic push: two pushes fewer at the wave's end. The report is the one the record landing makes, since
    it lands only with it. None when that push did not land, or there was nothing to record (then nothing
    of it landed, and the heartbeat beats again): the caller goes on one push at a time."""
    assert ran.collected is not None and ran.wave is not None
    pushed = replace(ran, collected=replace(ran.collected, pushed=True, held=False))
    final = copy.deepcopy(rep)
    final.tracker_updated = True
    code = _conclude(final, config, claimed, pushed, False, NoDelivery(), None)
    wave_id, beating, committer = claimed.wave_id, options.beating, ran.wave.context.workspaces.idents()[1]
    # Written while the record reads and edits the tracker; its push waits for it.
    report_ref = soon(lambda: shared_report.write(repo, final, committer), "wavegit-shared-report")
    try:
        # Halted first (a beat pushed after the deletion would put the ref back), and paused meanwhile: the
        # race is given up before other clones would call it stale.
        deletion = beating.pause() if beating is not None else None
        with store.riding(lambda: [branch_refspec(wave_id), report_ref(), *([deletion] if deletion else [])]):
            landed = record(repo, config, store, wave_id, ran.runs, spent=ran.spent, now=utc_now(),
                            deadline_s=(heartbeat.STALE_BEATS - 1) * config.heartbeat_s)
    except WavegitError:
        # A race lost, or the riders alone may be what was refused: each goes again on its own.
        landed = None
    if landed is None:
        if beating is not None:
            beating.resume()
        return None
    if beating is not None:
        beating.retire()
    options.events.note(f"pushed {wavebranch.wave_branch(wave_id)} to {config.remote}")
    return final, pushed, code


def _push_held(repo: Repo, config: Config, wave_id: WaveId, rep: report.WaveReport, ran: _Ran,
               events: Events) -> _Ran:
    """The held wave branch pushed on its own, as ``collect`` pushes it (a failure is the report's error)."""
    try:
        push_branch(repo, config, wave_id)
    except WavegitError as exc:
        rep.error = one_line(str(exc))
        rep.notes.append(f"the wave stopped: {rep.error}")
        rep.head_sha = rep.branch = None  # as when the push in collect fails
        _undelivered(ran.runs)
        return replace(ran, collected=None)
    events.note(f"pushed {wavebranch.wave_branch(wave_id)} to {config.remote}")
    assert ran.collected is not None
    return replace(ran, collected=replace(ran.collected, pushed=True, held=False))


def _open_pr(rep: report.WaveReport, ran: _Ran, config: Config, delivery: Delivery) -> int | None:
    """The pushed wave's pull request (when an item was verified), opened with the report so far."""
    if not (ran.pushed and any(run.verified for run in ran.runs)):
        return None
    rep.items = [item_report(run, config) for run in ran.runs]
    try:
        return delivery.open_pr(rep)
    except WavegitError as exc:
        rep.notes.append(f"opening the pull request failed: {one_line(str(exc))}")
        return None


def _record(repo: Repo, config: Config, store: TrackerStore, claimed: Claim, rep: report.WaveReport,
            ran: _Ran, pr: int | None) -> bool:
    """Every item's outcome on the tracker branch (phase ``record``); whether the race was lost for good."""
    if rep.error is None:
        rep.phase = "record"
    try:
        rep.tracker_updated = record(repo, config, store, claimed.wave_id, ran.runs, spent=ran.spent,
                                     now=utc_now(), pr=pr) is not None
    except RaceLostError as exc:
        _failed(rep, f"the tracker update did not land: {exc}")
        return True
    except WavegitError as exc:
        _failed(rep, f"the tracker update did not land: {one_line(str(exc))}")
    return False


def _account(rep: report.WaveReport, config: Config, claimed: Claim, ran: _Ran) -> None:
    """The report's account of the wave: HALT, notes, what it spent against its ceilings, the wave test,
    its items, and whether it succeeded."""
    wave = ran.wave
    if wave is not None:
        rep.halted = wave.halted is not None
        rep.halt_reason = wave.halted
        if wave.halted:
            rep.notes.append(wave.halted)
        if wave.launch_error:
            rep.notes.append(wave.launch_error)
        rep.notes += wave.context.spend.notes
        rep.notes += [f"worker profile {profile!r} failed for good ({why}): no further attempt of it "
                      "started in this wave" for profile, why in wave.context.stopped_profiles.items()]
    spent = ran.spent
    # The day's total includes this wave; a ceiling is exceeded when passed, even by concurrent items.
    rep.budget.wave_spent_usd = round(spent, 6)
    rep.budget.day_spent_usd = round(claimed.day_spent + spent, 6)
    unreadable = wave is not None and wave.context.spend.has_unreadable
    rep.budget.wave_spent_tokens = wave.context.spend.tokens if wave is not None else 0
    stopped = wave is not None and wave.budget_exceeded
    rep.budget.exceeded = stopped or budget.over_ceiling(
        config.budget, spent, claimed.day_spent + spent, unreadable=unreadable,
        wave_tokens=rep.budget.wave_spent_tokens)
    if rep.budget.exceeded:
        # A rolling run's day ceiling may stop a wave whose own spend is under it: the wave names it.
        found = ceiling_reason(config.budget, spent, claimed.day_spent + spent, stopped=stopped,
                               unreadable=unreadable, wave_tokens=rep.budget.wave_spent_tokens)
        rep.ceiling_reason = found or (wave.ceiling if wave is not None else None)
    wave_test = ran.collected.wave_test if ran.collected is not None else None
    if wave_test is not None:
        rep.wave_test = wave_test.to_report(REPORT_TAIL_LINES)
        if wave_test.error:
            rep.notes.append(f"wave test {wave_test.error}")
    rep.items = [item_report(run, config) for run in ran.runs]
    rep.success = wave_succeeded(rep, wave_test)


def _share(repo: Repo, config: Config, rep: report.WaveReport, ran: _Ran,
           beating: heartbeat.Heartbeat | None) -> None:
    """The report goes where the wave went, for every clone (``wavegit report W``); the heartbeat's
    deletion with it once the claims are settled."""
    if not ran.pushed or ran.wave is None:
        return
    committer = ran.wave.context.workspaces.idents()[1]
    settled = rep.tracker_updated or not rep.items
    deletion = beating.retire() if beating is not None and settled else None
    unshared = shared_report.push(repo, config.remote, rep, committer,
                                  also=[deletion] if deletion else [])
    if unshared:
        rep.notes.append(unshared)


def _failed(rep: report.WaveReport, what: str) -> None:
    """A failure after the run: a note, and the report's ``error`` unless an earlier one stopped the wave."""
    rep.error = rep.error or what
    rep.notes.append(what)
