"""``wavegit report`` (commands/report.py) and what ``wavegit run`` says of its report, on real waves."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from tests.helpers.reliability import wavegit_in_process as wavegit_here
from tests.helpers.repos import git, make_remote_repo, wavegit
from tests.helpers.wave import WORKERS, item, make_wave_repo, origin_item
from wavegit.model.report import WaveReport

# A wave test that fails with a recognisable last line of output.
WAVE_TEST = shlex.join([sys.executable, str(WORKERS / "check.py"), "src/nowhere.txt", "ok"])


def _report_path(run_stdout: str, cwd: Path) -> Path:
    return cwd / run_stdout.splitlines()[-1].removeprefix("report: ")


def test_report_shows_the_last_wave_with_reasons_the_wave_test_tail_and_log_paths(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [
        item("GOOD", ["write src/a.txt ok"], ["src/a.txt"]),
        item("BAD", ["write src/b.txt no"], ["src/b.txt"]),
    ], attempts=1, wave_test=WAVE_TEST)
    ran = wavegit(remote.clone, "run")
    assert ran.returncode == 1
    markdown = _report_path(ran.stdout, remote.clone)
    assert markdown.is_file() and markdown.suffix == ".md"
    claimed_from = git(remote.origin, "rev-parse", "main~2:.wavegit/tracker.yaml")
    assert f"  tracker: origin/main:.wavegit/tracker.yaml blob {claimed_from[:12]}" in ran.stdout.splitlines()
    # run's own summary already shows the failing wave test's log and the end of its output.
    assert "  wave test " in ran.stdout and "failed (exit 1); log: " in ran.stdout
    assert "    | check failed: src/nowhere.txt should contain 'ok'" in ran.stdout

    shown = wavegit_here(remote.clone, "report")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[-1] == f"report: {markdown.with_suffix('.json')}"
    said = "test exited 1: check failed: src/b.txt should contain 'ok', has 'no\\n'"
    assert f"  BAD: todo ({said}) [attempt 1]" in lines
    why = lines[lines.index("why not:") + 1:-1]
    assert len(why) == 1 and why[0].split()[:4] == ["BAD", "test", "exit", "1;"]
    # The log that says why: the test's (the worker's said nothing of the failure).
    log = Path(why[0].split("log: ")[1])
    assert log.name == "BAD-1.test.log" and "check failed" in log.read_text()
    assert "    | check failed: src/nowhere.txt should contain 'ok', has None" in lines

    as_json = wavegit_here(remote.clone, "report", "--json")
    report = WaveReport.from_json(as_json.stdout)
    assert report == WaveReport.from_json(markdown.with_suffix(".json").read_text())
    assert report.tracker_source == f"origin/main:.wavegit/tracker.yaml blob {claimed_from[:12]}"
    assert report.wave_test.exit_code == 1 and Path(report.wave_test.log_path).is_file()
    assert "check failed" in report.wave_test.log_tail

    as_markdown = wavegit_here(remote.clone, "report", "--markdown")
    assert as_markdown.stdout == markdown.read_text()
    rows = [row for row in as_markdown.stdout.splitlines() if row.startswith("| ")]
    assert rows[0].startswith("| item | status | verified | reason | attempts |")
    assert "| <code>BAD</code> | todo | no | test exit 1 |" in as_markdown.stdout
    assert "| <code>GOOD</code> | review | yes | — |" in as_markdown.stdout


def test_report_of_a_given_wave_by_id_or_branch_and_clear_errors(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])])
    first = WaveReport.from_json(wavegit(remote.clone, "run", "--json").stdout)
    assert wavegit_here(remote.clone, "add", "B", "--prompt", "write src/b.txt ok", "--owns", "src/b.txt",
                   "--test", "true").returncode == 0
    second = WaveReport.from_json(wavegit(remote.clone, "run", "--json").stdout)
    assert [i.id for i in second.items] == ["B"]
    assert json.loads(wavegit_here(remote.clone, "report", "--json").stdout)["wave_id"] == second.wave_id
    for name in (first.wave_id, f"wavegit/{first.wave_id}"):
        shown = wavegit_here(remote.clone, "report", name, "--json")
        assert json.loads(shown.stdout)["wave_id"] == first.wave_id, shown.stderr
    missing = wavegit_here(remote.clone, "report", "w-20200101-000000-abcd")
    assert missing.returncode == 2 and "no report for wave 'w-20200101-000000-abcd'" in missing.stderr
    hostile = wavegit_here(remote.clone, "report", "../../config")
    assert hostile.returncode == 2 and "not a wave id" in hostile.stderr


def test_report_before_any_wave_is_a_clear_error(tmp_path: Path) -> None:
    remote = make_remote_repo(tmp_path)
    result = wavegit_here(remote.clone, "report")
    assert result.returncode == 2 and result.stdout == ""
    assert "no wave report in" in result.stderr and "Traceback" not in result.stderr


def test_attempt_numbers_agree_in_progress_lines_report_and_tracker(tmp_path: Path) -> None:
    # One attempt was used by an earlier wave; this wave's first try fails, its retry passes.
    remote = make_wave_repo(tmp_path, [
        item("A", ["no-feedback write src/a.txt no", "if-feedback write src/a.txt ok"], ["src/a.txt"],
             attempts=1),
    ], attempts=2)
    ran = wavegit(remote.clone, "run")
    assert ran.returncode == 0, ran.stderr
    assert "A attempt 2 started" in ran.stderr and "A verified in " in ran.stderr
    assert "(attempt 3)" in ran.stderr and "attempt 1 " not in ran.stderr
    assert "  A: review [attempt 3]" in ran.stdout
    report = WaveReport.from_json(wavegit_here(remote.clone, "report", "--json").stdout)
    assert [a.attempt for a in report.items[0].attempt_records] == [2, 3]
    git(remote.clone, "fetch", "-q")
    assert origin_item(remote, "A").attempts == 3


def test_the_summary_names_no_attempt_for_a_launch_that_counted_none() -> None:
    from wavegit.commands._summary import summary
    from wavegit.model.report import AttemptRecord, ItemReport, WaveReport

    def record(counted: bool) -> AttemptRecord:
        return AttemptRecord(attempt=1, worker="w", prompt_sha256="0" * 64, base_commit="c" * 40,
                             started_at="2026-01-01T10:00:00Z", finished_at="2026-01-01T10:00:00Z",
                             counted=counted)

    failed = ItemReport(id="A", status="todo", attempts=1, attempt_records=[record(False)],
                        error="launch failure: no such file")
    ran = ItemReport(id="B", status="todo", attempts=1, attempt_records=[record(True)])
    report = WaveReport(wave_id="w-20260101-100000-ab12", base_sha="a" * 40,
                        started_at="2026-01-01T10:00:00Z", items=[failed, ran])
    lines = summary(report).splitlines()
    assert "  A: todo (launch failure: no such file) [no attempt counted]" in lines
    assert "  B: todo [attempt 1]" in lines
