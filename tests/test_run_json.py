"""``wavegit run --json`` prints one report on every exit path: stdout is that JSON and nothing else, with
``phase``, ``halt_reason``, ``ceiling_reason``, ``error`` and ``exit_code``; stderr says only what went wrong.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.repos import REPO_ROOT, CliResult, git, wavegit
from tests.helpers.wave import item, make_wave_repo, untouched, write_and_push
from wavegit.model.report import WaveReport


def run_json(clone: Path, *args: str, env: dict[str, str] | None = None) -> tuple[CliResult, WaveReport]:
    result = wavegit(clone, "run", "--json", *args, env=env)
    report = WaveReport.from_json(result.stdout)  # the whole of stdout is one valid report
    assert report.exit_code == result.returncode, result.stderr
    assert "Traceback" not in result.stderr
    return result, report


def test_a_successful_wave_is_phase_done_exit_0_and_stderr_stays_empty(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])])
    result, report = run_json(remote.clone)
    assert (result.returncode, report.phase, report.error, report.success) == (0, "done", None, True)
    assert (report.halt_reason, report.ceiling_reason) == (None, None)
    assert result.stderr == ""  # no progress lines: stderr says only what went wrong


def test_a_failed_item_is_phase_done_exit_1_its_error_ending_with_the_tests_last_words(
        tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt no"], ["src/a.txt"])], attempts=1)
    result, report = run_json(remote.clone)
    assert (result.returncode, report.phase, report.success) == (1, "done", False)
    assert report.items[0].error == "test exited 1: check failed: src/a.txt should contain 'ok', has 'no\\n'"


def test_nothing_selected_is_a_report_with_its_skip_reasons_and_exit_0(tmp_path: Path) -> None:
    held = item("A", ["write src/a.txt ok"], ["src/a.txt"], status="in_progress",
                wave="w-20260101-000001-ab01", claimed_at="2026-01-01T00:00:00Z")
    remote = make_wave_repo(tmp_path, [held, item("B", ["write src/a.txt ok"], ["src/a.txt"])])
    result, report = run_json(remote.clone)
    assert (result.returncode, report.phase, report.items) == (0, "done", [])
    assert [(s.id, s.reason) for s in report.skipped] == [("B", "in flight: A")]


def _stopped(report: WaveReport, phase: str, code: int) -> None:
    """A wave that ended before its claim: no wave, no items, nothing a successful wave would have."""
    assert (report.phase, report.exit_code, report.wave_id, report.items, report.success) == (
        phase, code, "", [], False)
    assert report.error


def test_bad_input_before_the_claim_is_a_preflight_report_with_the_error_and_exit_2(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])])
    before = untouched(remote.origin, remote.clone)
    result, report = run_json(remote.clone, "--max-items", "0")
    _stopped(report, "preflight", 2)
    assert report.error == "--max-items must be at least 1, got 0"
    assert result.stderr == "wavegit run: --max-items must be at least 1, got 0\n"
    assert untouched(remote.origin, remote.clone) == before


@pytest.mark.parametrize(("path", "text", "where"), [
    (".wavegit/config.yaml", "concurrency: many\n", ".wavegit/config.yaml:1:"),
    (".wavegit/tracker.yaml", "version: 1\nitems: {not: a list}\n", ".wavegit/tracker.yaml:2:"),
], ids=["config", "tracker"])
def test_an_invalid_config_or_tracker_is_a_preflight_report_with_its_location(
        tmp_path: Path, path: str, text: str, where: str) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])])
    write_and_push(remote.clone, {path: text}, "break it")
    before = untouched(remote.origin, remote.clone)
    result, report = run_json(remote.clone)
    _stopped(report, "preflight", 2)
    assert where in (report.error or "") and where in result.stderr
    assert untouched(remote.origin, remote.clone) == before


def test_a_worker_that_does_not_resolve_is_a_preflight_report(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])],
                            worker="no-such-agent-here -p")
    before = untouched(remote.origin, remote.clone)
    _, report = run_json(remote.clone)
    _stopped(report, "preflight", 2)
    assert "'no-such-agent-here' is not on PATH" in (report.error or "")
    assert untouched(remote.origin, remote.clone) == before


def test_halted_is_a_preflight_report_with_the_halt_reason_and_exit_3(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])])
    assert wavegit(remote.clone, "halt", "--reason", "deploy freeze").returncode == 0
    before = untouched(remote.origin, remote.clone)
    _, report = run_json(remote.clone)
    _stopped(report, "preflight", 3)
    assert report.halted and "deploy freeze" in (report.halt_reason or "")
    assert report.ceiling_reason is None
    assert untouched(remote.origin, remote.clone) == before


def test_over_the_day_budget_is_a_preflight_report_with_the_ceiling_reason_and_exit_3(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])],
                            budget={"day_usd": 1.0})
    monkeypatch.setenv("GIT_COMMITTER_DATE", time.strftime("%Y-%m-%dT%H:%M:%S+0000", time.gmtime()))
    git(remote.clone, "commit", "-q", "--allow-empty", "-m", "wavegit: record\n\nWavegit-Cost: 1.5")
    git(remote.clone, "push", "-q", "origin", "main")
    before = untouched(remote.origin, remote.clone)
    _, report = run_json(remote.clone)
    _stopped(report, "preflight", 3)
    assert report.budget.exceeded and not report.halted
    assert report.ceiling_reason == "over the daily budget: spent $1.5 of $1 today (UTC)"
    assert untouched(remote.origin, remote.clone) == before


def test_a_wave_ceiling_reached_mid_wave_names_it_in_the_ceiling_reason(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [
        item(name, ["cost 2.0", f"write src/{name}.txt ok"], [f"src/{name}.txt"]) for name in ("a", "b")
    ], concurrency=1, budget={"wave_usd": 1.0})
    result, report = run_json(remote.clone)
    assert (result.returncode, report.phase, report.budget.exceeded) == (1, "done", True)
    assert report.ceiling_reason == "wave budget: spent $2 of $1"
    assert [i.attempts for i in report.items] == [1, 0]


@pytest.mark.slow
def test_a_claim_that_loses_its_compare_and_swap_is_a_claim_report_with_exit_4(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])])
    # A ref lock left on the remote: every push of the claim fails until the write gives up.
    lock = remote.origin / "refs" / "heads" / "main.lock"
    lock.write_text("")
    before = untouched(remote.origin, remote.clone)
    _, report = run_json(remote.clone)
    _stopped(report, "claim", 4)
    assert "lost the compare-and-swap race" in (report.error or "") and "main.lock" in (report.error or "")
    assert untouched(remote.origin, remote.clone) == before


def _pre_receive(origin: Path, script: str) -> None:
    hook = origin / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\n" + script)
    hook.chmod(0o755)


def test_a_wave_branch_the_remote_refuses_ends_in_phase_collect_with_the_error(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])])
    _pre_receive(remote.origin, 'while read old new ref; do case "$ref" in refs/heads/wavegit/*) '
                                'echo "no wave branches here" >&2; exit 1;; esac; done\n')
    result, report = run_json(remote.clone)
    assert (result.returncode, report.phase, report.tracker_updated) == (1, "collect", True)
    assert "push" in (report.error or "") and "no wave branches here" in (report.error or "")


def test_a_record_the_remote_refuses_ends_in_phase_record_with_the_error(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])])
    # The claim lands; every later update of main (the record) is refused.
    mark = tmp_path / "claimed"
    _pre_receive(remote.origin, f'while read old new ref; do if [ "$ref" = refs/heads/main ]; then '
                                f'if [ -e {mark} ]; then echo "main is frozen" >&2; exit 1; fi; '
                                f'touch {mark}; fi; done\n')
    result, report = run_json(remote.clone)
    assert (result.returncode, report.phase, report.tracker_updated) == (1, "record", False)
    assert (report.error or "").startswith("the tracker update did not land")
    assert "main is frozen" in (report.error or "")


def test_sigterm_while_the_claim_is_pushed_is_a_claim_phase_report_exit_130_and_nothing_claimed(
        tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])])
    # The remote hangs on the first push, the claim's (the wave's first heartbeat rides it): the claim rests
    # on the tracker the config's fetch brought, so it fetches nothing.
    hanging = tmp_path / "hanging"
    receive = tmp_path / "receive-pack"
    receive.write_text(f'#!/bin/sh\ntouch {hanging}; sleep 8\nexec git-receive-pack "$@"\n')
    receive.chmod(0o755)
    git(remote.clone, "config", "remote.origin.receivepack", str(receive))
    before = git(remote.origin, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "wavegit", "run", "--json"], cwd=remote.clone, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not hanging.exists():
        assert time.monotonic() < deadline and proc.poll() is None, proc.stderr
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130 and stderr.strip() == "wavegit run: interrupted"
    report = WaveReport.from_json(stdout)
    assert (report.wave_id, report.phase, report.exit_code, report.items) == ("", "claim", 130, [])
    assert report.error == "interrupted before its claim was settled"
    assert git(remote.origin, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/") == before
