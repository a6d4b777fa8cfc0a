"""A wave's outcome: the record commit, the item reports, the success rule, exit codes, report files."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from wavegit.attempts import logcap, wavebranch
from wavegit.core.errors import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_RACE_LOST,
    EXIT_WORK_FAILED,
    BudgetExceededError,
    HaltedError,
    UsageError,
    ValidationError,
    WavegitError,
)
from wavegit.core.git import WaveId
from wavegit.core.repo import Repo
from wavegit.core.undecodable import escape
from wavegit.engine.attempt import tail_source
from wavegit.engine.claim import load_tracker
from wavegit.engine.runs import ItemRun, utc_now
from wavegit.engine.wave import WaveTest
from wavegit.model import lifecycle, report, report_markdown, tracker
from wavegit.model.config import Budget, Config
from wavegit.model.lifecycle import Status
from wavegit.trackerbranch import budget
from wavegit.trackerbranch.mutation import mutate
from wavegit.trackerbranch.store import Change, Snapshot, TrackerStore, known

REPORT_TAIL_LINES = 30


def item_update(run: ItemRun, current: tracker.Item, config: Config, now: datetime,
                pr: int | None = None) -> lifecycle.Update:
    """The tracker change ``run``'s outcome makes to ``current`` (``pr``: the wave's pull request)."""
    # A git error can quote a worker's file name undecoded: the tracker gets it escaped.
    error = None if run.item_error is None else escape(run.item_error)
    return lifecycle.record(current, verified=run.verified, used=run.used, cost=run.cost, error=error,
                            max_attempts=config.max_attempts, at=report.utc_timestamp(now), pr=pr)


def record(repo: Repo, config: Config, store: TrackerStore, wave_id: WaveId, runs: Sequence[ItemRun], *,
           spent: float, now: datetime, pr: int | None = None, deadline_s: float = 120.0) -> str | None:
    """One compare-and-swap commit with every item's outcome; the commit (None: nothing to write). Lost
    races are retried for ``deadline_s``."""
    by_id = {run.item.id: run for run in runs}

    def apply(snapshot: Snapshot) -> Change | None:
        loaded = load_tracker(snapshot, repo, config)
        assert snapshot.text is not None
        # Only items still claimed by this wave: a `sync` may have released them meanwhile.
        held = [item for item in loaded.items
                if item.id in by_id and item.status == Status.IN_PROGRESS and item.wave == wave_id]
        changes = {item.id: item_update(by_id[item.id], item, config, now, pr).fields for item in held}
        text = tracker.set_items_fields(snapshot.text, changes, loaded)
        return None if text == snapshot.text else Change(text)

    verified = sum(1 for run in runs if run.verified)
    message = (f"wavegit: record wave {wave_id}: {verified} of {len(runs)} verified\n\n"
               f"{wavebranch.TRAILER_WAVE}: {wave_id}\n{budget.cost_trailer(spent)}")
    # On the tracker as the claim's push left it: a fetch follows only when another write came since.
    return mutate(store, apply, message=message, deadline_s=deadline_s, known=known(store)).commit


def item_report(run: ItemRun, config: Config) -> report.ItemReport:
    """``run`` as the report shows it, with the status the record gives it (from the claimed item)."""
    last = run.attempts[-1] if run.attempts else None
    records = [
        report.AttemptRecord(
            attempt=a.number, worker=a.worker, prompt_sha256=a.prompt_sha256, base_commit=a.base,
            started_at=report.utc_timestamp(a.started_at),
            finished_at=report.utc_timestamp(a.finished_at or a.started_at), exit_code=a.exit_code,
            test_exit=a.test_exit, cost=a.cost, profile=a.profile, model=a.model,
            input_tokens=a.input_tokens, output_tokens=a.output_tokens,
            log_path=str(a.log_path or ""), killed=a.killed,
            error=None if a.error is None else escape(a.error), violated=bool(a.violations),
            counted=a.counted)
        for a in run.attempts
    ]
    duration = sum(((a.finished_at or a.started_at) - a.started_at).total_seconds() for a in run.attempts)
    tail_of = tail_source(last) if last else None
    status = item_update(run, run.item, config, utc_now()).status
    return report.ItemReport(
        id=run.item.id, title=escape(run.item.title), status=status.value, verified=run.verified,
        attempts=len(run.attempts),
        exit_code=last.exit_code if last else None, test_exit=last.test_exit if last else None,
        duration_s=round(duration, 3), files_changed=[escape(p) for p in last.files_changed] if last else [],
        ownership_violations=[escape(p) for p in last.violations] if last else [],
        cost=round(run.cost, 6) if any(a.cost is not None for a in run.attempts) else None, tokens=run.tokens,
        error=None if run.error is None else escape(run.error),
        log_tail=logcap.log_tail(tail_of, REPORT_TAIL_LINES) if tail_of else "",
        attempt_records=records)


def wave_succeeded(rep: report.WaveReport, wave_test: WaveTest | None) -> bool:
    """The success rule: the tracker update landed, every item is verified within its ownership, and the
    wave test passed (when one ran)."""
    return (rep.tracker_updated and all(item.verified and not item.ownership_violations for item in rep.items)
            and (wave_test is None or wave_test.exit_code == 0))


@dataclass
class WaveOutcome:
    report: report.WaveReport
    exit_code: int


def exit_code(rep: report.WaveReport, race_lost: bool) -> int:
    """The exit code of a wave that claimed. Never 3 (halted or over budget), which means nothing was
    claimed: a HALT or a ceiling reached mid-wave leaves items not started, so the wave is not a success
    (exit 1), unless every item was verified before it came."""
    if rep.success:
        return EXIT_OK
    if race_lost:
        return EXIT_RACE_LOST
    return EXIT_WORK_FAILED


def ceiling_reason(limits: Budget, wave_spent: float, day_spent: float, *, stopped: bool,
                   unreadable: bool, wave_tokens: int = 0) -> str | None:
    """Which ceiling a wave reached (``stopped``: no new attempt started for it) or passed, with the amounts;
    ``day_spent`` includes the wave's."""
    reasons = []
    if unreadable and (limits.wave_usd > 0 or limits.day_usd > 0 or limits.wave_tokens > 0):
        reasons.append("a cost that could not be read counts as over the ceiling")
    if limits.wave_usd > 0 and (wave_spent > limits.wave_usd or (stopped and wave_spent >= limits.wave_usd)):
        reasons.append(f"wave budget: spent ${budget.format_usd(wave_spent)} of "
                       f"${budget.format_usd(limits.wave_usd)}")
    if limits.day_usd > 0 and (day_spent > limits.day_usd or (stopped and day_spent >= limits.day_usd)):
        reasons.append(f"daily budget: spent ${budget.format_usd(day_spent)} of "
                       f"${budget.format_usd(limits.day_usd)} today (UTC)")
    if limits.wave_tokens > 0 and (wave_tokens > limits.wave_tokens
                                   or (stopped and wave_tokens >= limits.wave_tokens)):
        reasons.append(f"wave token budget: used {wave_tokens:,} of {limits.wave_tokens:,} tokens")
    return "; ".join(reasons) or None


PREFLIGHT_ERRORS = (UsageError, ValidationError, HaltedError, BudgetExceededError)
"""What a wave that ends before its claim commit raises when its checks refuse it (phase ``preflight``);
any other error before the claim landed (a lost race, git failing) ends it in phase ``claim``."""


def stopped(exc: WavegitError | KeyboardInterrupt, started: datetime) -> WaveOutcome:
    """The report of a wave that ended before anything was claimed (``run --json`` prints it): no wave id,
    no items, ``phase``, ``error`` and, halted or over budget, ``halt_reason`` or ``ceiling_reason``. A
    KeyboardInterrupt (Ctrl-C, SIGTERM) before the claim was settled ends it in phase ``claim``, exit 130."""
    halted = isinstance(exc, HaltedError)
    over = isinstance(exc, BudgetExceededError)
    code = exc.exit_code if isinstance(exc, WavegitError) else EXIT_INTERRUPTED
    error = escape(str(exc)) if isinstance(exc, WavegitError) else "interrupted before its claim was settled"
    rep = report.WaveReport(
        wave_id=WaveId(""), base_sha="", started_at=report.utc_timestamp(started),
        finished_at=report.utc_timestamp(),
        phase="preflight" if isinstance(exc, PREFLIGHT_ERRORS) else "claim", halted=halted,
        halt_reason=str(exc) if halted else None, ceiling_reason=str(exc) if over else None,
        error=error, exit_code=code, budget=report.BudgetReport(exceeded=over))
    return WaveOutcome(rep, code)


def write_report(repo: Repo, rep: report.WaveReport) -> Path:
    """``<state dir>/reports/<wave>.json`` and ``.md``; the JSON path.

    Whatever text reached the report undecoded is written as a JSON ``\\udcNN`` escape (valid UTF-8 and
    valid JSON), never a failed write that leaves no report."""
    repo.reports_dir.mkdir(parents=True, exist_ok=True)
    json_path = repo.report_file(rep.wave_id, ".json")
    json_path.write_text(rep.to_json() + "\n", encoding="utf-8", errors="backslashreplace")
    repo.report_file(rep.wave_id, ".md").write_text(report_markdown.to_markdown(rep), encoding="utf-8",
                                                    errors="backslashreplace")
    return json_path
