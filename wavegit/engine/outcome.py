"""A wave's outcome: the record commit, the item reports, the success rule, exit codes, report files."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from wavegit import budget, lifecycle, report, runner, tracker, worktree
from wavegit.config import Config
from wavegit.engine.attempt import tail_source
from wavegit.engine.claim import load_tracker
from wavegit.engine.records import ItemRun, utc_now
from wavegit.engine.wave import WaveTest
from wavegit.errors import EXIT_OK, EXIT_RACE_LOST, EXIT_WORK_FAILED
from wavegit.lifecycle import Status
from wavegit.repo import Repo
from wavegit.store import Change, Snapshot, TrackerStore, mutate
from wavegit.undecodable import escape

REPORT_TAIL_LINES = 30


def item_update(run: ItemRun, current: tracker.Item, config: Config, now: datetime,
                pr: int | None = None) -> lifecycle.Update:
    """The tracker change ``run``'s outcome makes to ``current`` (``pr``: the wave's pull request)."""
    # A git error can quote a worker's file name undecoded: the tracker gets it escaped.
    error = None if run.error is None else escape(run.error)
    return lifecycle.record(current, verified=run.verified, used=run.used, cost=run.cost, error=error,
                            max_attempts=config.max_attempts, at=report.utc_timestamp(now), pr=pr)


def record(repo: Repo, config: Config, store: TrackerStore, wave_id: str, runs: Sequence[ItemRun], *,
           spent: float, now: datetime, pr: int | None = None) -> str | None:
    """One compare-and-swap commit with every item's outcome; the commit (None: nothing to write)."""
    by_id = {run.item.id: run for run in runs}

    def apply(snapshot: Snapshot) -> Change | None:
        loaded = load_tracker(snapshot, repo, config)
        assert snapshot.text is not None
        text = snapshot.text
        for current in loaded.items:
            run = by_id.get(current.id)
            # Only items still claimed by this wave: a `sync` may have released them meanwhile.
            if run is None or current.status != Status.IN_PROGRESS or current.wave != wave_id:
                continue
            text = tracker.set_fields(text, current.id, item_update(run, current, config, now, pr).fields)
        return None if text == snapshot.text else Change(text)

    verified = sum(1 for run in runs if run.verified)
    message = (f"wavegit: record wave {wave_id}: {verified} of {len(runs)} verified\n\n"
               f"{worktree.TRAILER_WAVE}: {wave_id}\n{budget.cost_trailer(spent)}")
    return mutate(store, apply, message=message).commit


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
            error=None if a.error is None else escape(a.error))
        for a in run.attempts
    ]
    duration = sum(((a.finished_at or a.started_at) - a.started_at).total_seconds() for a in run.attempts)
    tail_of = tail_source(last) if last else None
    status = item_update(run, run.item, config, utc_now()).status
    return report.ItemReport(
        id=run.item.id, status=status.value, verified=run.verified, attempts=len(run.attempts),
        exit_code=last.exit_code if last else None, test_exit=last.test_exit if last else None,
        duration_s=round(duration, 3), files_changed=[escape(p) for p in last.files_changed] if last else [],
        ownership_violations=[escape(p) for p in last.violations] if last else [],
        cost=round(run.cost, 6) if any(a.cost is not None for a in run.attempts) else None, tokens=run.tokens,
        error=None if run.error is None else escape(run.error),
        log_tail=runner.log_tail(tail_of, REPORT_TAIL_LINES) if tail_of else "",
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


def write_report(repo: Repo, rep: report.WaveReport) -> Path:
    """``<state dir>/reports/<wave>.json`` and ``.md``; the JSON path.

    Whatever text reached the report undecoded is written as a JSON ``\\udcNN`` escape (valid UTF-8 and
    valid JSON), never a failed write that leaves no report."""
    repo.reports_dir.mkdir(parents=True, exist_ok=True)
    json_path = repo.report_file(rep.wave_id, ".json")
    json_path.write_text(rep.to_json() + "\n", encoding="utf-8", errors="backslashreplace")
    repo.report_file(rep.wave_id, ".md").write_text(report.to_markdown(rep), encoding="utf-8",
                                                    errors="backslashreplace")
    return json_path
