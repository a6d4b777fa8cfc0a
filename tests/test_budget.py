"""Cost ceilings: the day's spend from Wavegit-Cost trailers (fail closed), the running wave spend."""

from __future__ import annotations

import os
import shlex
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from tests.helpers.repos import RemoteRepo, git
from tests.helpers.wave import WORKERS, item, make_wave_repo, origin_item, run
from wavegit.core.errors import BudgetExceededError
from wavegit.model.config import Budget
from wavegit.trackerbranch import budget

SCRIPTED = WORKERS / "scripted.py"
NOON = datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc)  # conftest dates every commit 2026-01-01T00:00Z


def commit(repo: Path, message: str, monkeypatch: pytest.MonkeyPatch, date: str | None = None) -> str:
    if date:
        monkeypatch.setenv("GIT_COMMITTER_DATE", date)
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2026-01-01T00:00:00+0000")
    return git(repo, "rev-parse", "HEAD")


@pytest.mark.parametrize(("usd", "text"), [(0.0, "0"), (1.2, "1.2"), (0.1234567, "0.123457"), (12.0, "12")])
def test_costs_are_written_as_plain_decimals(usd: float, text: str) -> None:
    assert budget.format_usd(usd) == text
    assert budget.cost_trailer(usd) == f"Wavegit-Cost: {text}"


@pytest.mark.parametrize("text", ["-1", "nan", "inf", "abc", ""])
def test_malformed_costs_are_rejected(text: str) -> None:
    with pytest.raises(ValueError):
        budget.parse_usd(text)


def test_day_spend_sums_only_that_utc_days_trailers(remote_repo: RemoteRepo,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    clone = remote_repo.clone
    commit(clone, "yesterday\n\nWavegit-Cost: 100", monkeypatch, "2025-12-31T23:59:00+0000")
    commit(clone, "record\n\nWavegit-Cost: 0.5\nWavegit-Op: x", monkeypatch)
    commit(clone, "unrelated", monkeypatch)
    # 2026-01-01T01:00+02:00 is 2025-12-31T23:00Z: the previous UTC day.
    commit(clone, "other tz\n\nWavegit-Cost: 7", monkeypatch, "2026-01-01T01:00:00+0200")
    head = commit(clone, "record\n\nWavegit-Cost: 1.25", monkeypatch)
    assert budget.day_spend(clone, head, NOON) == pytest.approx(1.75)
    assert budget.day_spend(clone, head, datetime(2025, 12, 31, 23, 59, 59, tzinfo=timezone.utc)) == 107


def test_no_tracker_branch_means_nothing_spent(remote_repo: RemoteRepo) -> None:
    assert budget.day_spend(remote_repo.clone, None, NOON) == 0.0


def test_a_malformed_trailer_counts_as_exceeded(remote_repo: RemoteRepo,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    head = commit(remote_repo.clone, "record\n\nWavegit-Cost: lots", monkeypatch)
    with pytest.raises(BudgetExceededError, match="malformed Wavegit-Cost trailer 'lots'"):
        budget.day_spend(remote_repo.clone, head, NOON)


def test_an_unreadable_history_counts_as_exceeded(remote_repo: RemoteRepo) -> None:
    with pytest.raises(BudgetExceededError, match="cannot read the day's spend"):
        budget.day_spend(remote_repo.clone, "0" * 40, NOON)


def test_check_day_passes_below_the_ceiling_and_stops_at_it(remote_repo: RemoteRepo,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    head = commit(remote_repo.clone, "record\n\nWavegit-Cost: 2", monkeypatch)
    assert budget.check_day(Budget(day_usd=2.5), remote_repo.clone, head, NOON) == 2.0
    with pytest.raises(BudgetExceededError, match=r"spent \$2 of \$2 today"):
        budget.check_day(Budget(day_usd=2.0), remote_repo.clone, head, NOON)


def test_without_a_day_ceiling_the_day_spend_is_still_read_for_the_report(
        remote_repo: RemoteRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    head = commit(remote_repo.clone, "record\n\nWavegit-Cost: 2.4", monkeypatch)
    assert budget.check_day(Budget(day_usd=0), remote_repo.clone, head, NOON) == pytest.approx(2.4)


def test_without_a_day_ceiling_an_unreadable_history_stops_nothing(remote_repo: RemoteRepo) -> None:
    assert budget.check_day(Budget(day_usd=0), remote_repo.clone, "0" * 40, NOON) == 0.0
    with pytest.raises(BudgetExceededError):
        budget.check_day(Budget(day_usd=5), remote_repo.clone, "0" * 40, NOON)


def test_wave_spend_is_exceeded_at_the_limit_and_never_without_one() -> None:
    spend = budget.WaveSpend(1.0)
    threads = [threading.Thread(target=spend.record, args=(f"A attempt {n}", 0.1, None, None))
               for n in range(9)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert spend.spent == pytest.approx(0.9) and not spend.exceeded
    spend.record("B attempt 1", 0.1 + 1e-9, None, None)
    assert spend.exceeded
    unlimited = budget.WaveSpend(0.0)
    unlimited.record("C attempt 1", 1e6, None, None)
    assert not unlimited.exceeded


def test_an_unreadable_cost_reaches_a_ceiling_and_is_noted_but_stops_nothing_without_one() -> None:
    capped, uncapped = budget.WaveSpend(100.0), budget.WaveSpend(0.0)
    for spend in (capped, uncapped):
        spend.unreadable('A attempt 1: cost file c.json: usd must be a number, got "2.0"')
    assert capped.exceeded and capped.spent == 0 and not uncapped.exceeded
    assert capped.notes == ('unreadable cost, counted as over the ceiling: A attempt 1: cost file c.json: '
                            'usd must be a number, got "2.0"',)
    assert uncapped.notes[0].startswith("unreadable cost, not counted (no ceiling is set): A attempt 1")


@pytest.mark.parametrize(("limits", "wave_spent", "day_spent", "unreadable", "over"), [
    (Budget(wave_usd=1.0), 1.0, 1.0, False, False),  # reached, not passed
    (Budget(wave_usd=1.0), 1.2, 1.2, False, True),  # concurrent items overshot the wave's ceiling
    (Budget(day_usd=3.0), 1.0, 3.5, False, True),  # this wave took the day past its ceiling
    (Budget(day_usd=3.0), 1.0, 2.0, True, True),
    (Budget(), 50.0, 50.0, True, False),  # no ceiling: nothing to exceed
])
def test_over_ceiling_is_spent_past_a_ceiling_or_an_unreadable_cost_under_one(
        limits: Budget, wave_spent: float, day_spent: float, unreadable: bool, over: bool) -> None:
    assert budget.over_ceiling(limits, wave_spent, day_spent, unreadable=unreadable) is over


# --- in real waves ------------------------------------------------------------------------------------


def test_a_string_cost_counts_as_over_the_wave_ceiling_so_one_item_runs_and_the_rest_keep_their_last_error(
        tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [
        item(name, ["cost-text {\"usd\": \"2.0\"}", f"write src/{name}.txt ok"], [f"src/{name}.txt"],
             last_error=f"{name} failed before")
        for name in ("a", "b", "c", "d")
    ], concurrency=1, budget={"wave_usd": 1.0})
    outcome = run(remote.clone)
    rep = outcome.report
    # A wave that claimed never exits 3 (the README's contract): the rest were not started, exit 1.
    assert (outcome.exit_code, rep.success, rep.budget.exceeded) == (1, False, True)
    assert [i.attempts for i in rep.items] == [1, 0, 0, 0]
    assert "cost that could not be read" in (rep.items[1].error or "")
    (note,) = [n for n in rep.notes if n.startswith("unreadable cost")]
    assert note.startswith("unreadable cost, counted as over the ceiling: a attempt 1: cost file ")
    assert "'2.0'" in note
    assert [origin_item(remote, name).status for name in "bcd"] == ["todo"] * 3
    # The ceiling is no news about the items not started: each keeps why its last attempt failed.
    assert [origin_item(remote, name).last_error for name in "bcd"] == [f"{n} failed before" for n in "bcd"]


def test_concurrent_items_that_overshoot_the_wave_ceiling_mark_it_exceeded(tmp_path: Path) -> None:
    meet = tmp_path / "meet"
    meet.mkdir()
    # Both workers start before either reports its cost: the ceiling cannot stop the second one.
    remote = make_wave_repo(tmp_path, [
        item(name, [f"meet {meet} 2", "cost 0.6", f"write src/{name}.txt ok"], [f"src/{name}.txt"])
        for name in ("a", "b")
    ], concurrency=2, budget={"wave_usd": 1.0}, sandbox={"rw_paths": [str(meet)]})
    rep = run(remote.clone).report
    assert [i.verified for i in rep.items] == [True, True]
    assert rep.budget.wave_spent_usd == pytest.approx(1.2) and rep.budget.exceeded


def test_the_reports_day_spend_is_the_days_total_with_this_wave_without_a_day_ceiling(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["cost 0.25", "write src/a.txt ok"], ["src/a.txt"])])
    # An earlier wave's record commit, today (UTC), spent 1.5.
    monkeypatch.setenv("GIT_COMMITTER_DATE", time.strftime("%Y-%m-%dT%H:%M:%S+0000", time.gmtime()))
    git(remote.clone, "commit", "-q", "--allow-empty", "-m", "wavegit: record\n\nWavegit-Cost: 1.5")
    git(remote.clone, "push", "-q", "origin", "main")
    rep = run(remote.clone).report
    assert rep.budget.day_usd_limit == 0 and not rep.budget.exceeded
    assert rep.budget.day_spent_usd == pytest.approx(1.75)


def test_the_reports_day_spend_includes_this_wave_and_passing_the_day_ceiling_is_exceeded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["cost 0.75", "write src/a.txt ok"], ["src/a.txt"])],
                            budget={"day_usd": 2.0})
    monkeypatch.setenv("GIT_COMMITTER_DATE", time.strftime("%Y-%m-%dT%H:%M:%S+0000", time.gmtime()))
    git(remote.clone, "commit", "-q", "--allow-empty", "-m", "wavegit: record\n\nWavegit-Cost: 1.5")
    git(remote.clone, "push", "-q", "origin", "main")
    rep = run(remote.clone).report
    assert rep.budget.day_spent_usd == pytest.approx(2.25) and rep.budget.exceeded


def test_a_killed_claude_run_without_its_result_line_counts_as_over_the_ceiling(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `claude` on PATH is the scripted worker (its arguments ignored): it is killed before printing the JSON
    # result whose total_cost_usd is what a claude run costs.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "claude"
    fake.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} {shlex.quote(str(SCRIPTED))}\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    remote = make_wave_repo(tmp_path, [
        item(name, [f"write src/{name}.txt ok", "crash"], [f"src/{name}.txt"]) for name in ("a", "b")
    ], worker="claude", concurrency=1, attempts=1, sandbox="none", budget={"wave_usd": 5.0},
        worker_env=["ANTHROPIC_API_KEY"])
    rep = run(remote.clone).report
    assert [i.attempts for i in rep.items] == [1, 0] and rep.budget.exceeded
    (note,) = [n for n in rep.notes if n.startswith("unreadable cost")]
    assert "a attempt 1: claude run: killed, so no account of its own" in note


def test_a_token_ceiling_is_reached_by_the_tokens_attempts_report() -> None:
    spend = budget.WaveSpend(0.0, limit_tokens=1000)
    spend.record("a attempt 1", None, 600, None)
    assert not spend.exceeded and spend.tokens == 600
    spend.record("b attempt 1", 0.5, 400, None)
    assert spend.exceeded and (spend.spent, spend.tokens) == (0.5, 1000)


def test_what_a_reached_ceiling_says_names_the_ceiling_and_its_amounts() -> None:
    tokens = budget.WaveSpend(0.0, limit_tokens=1000)
    tokens.record("a attempt 1", 0.25, 1200, None)
    assert tokens.reached() == "1,200 of 1,000 tokens"  # not "$0.25", which no ceiling limits
    dollars = budget.WaveSpend(0.6)
    dollars.record("a attempt 1", 1.0, None, None)
    dollars.unreadable("b attempt 1: cost file c.json: not JSON")
    assert dollars.reached() == "$1 spent of $0.6 allowed; a cost that could not be read"


@pytest.mark.parametrize(("usd", "tokens", "limits", "missing"), [
    (None, 10, (5.0, 0), "no dollars"), (1.0, None, (0.0, 100), "no tokens"),
    (None, None, (5.0, 100), "no dollars and no tokens")])
def test_an_attempt_reporting_nothing_of_a_ceilings_kind_reaches_it(
        usd: float | None, tokens: int | None, limits: tuple[float, int], missing: str) -> None:
    spend = budget.WaveSpend(*limits)
    spend.record("a attempt 1", usd, tokens, None)
    assert spend.exceeded
    (note,) = spend.notes
    assert note == ("unreadable cost, counted as over the ceiling: a attempt 1: the worker reported "
                    f"{missing} (a worker reports them in $WAVEGIT_COST_FILE, a preset in its output)")


def test_without_a_ceiling_reporting_nothing_is_no_note() -> None:
    spend = budget.WaveSpend(0.0)
    spend.record("a attempt 1", None, None, None)
    assert not spend.exceeded and spend.notes == ()


def test_over_ceiling_counts_the_waves_tokens() -> None:
    assert budget.over_ceiling(Budget(wave_tokens=100), 0.0, 0.0, wave_tokens=101)
    assert not budget.over_ceiling(Budget(wave_tokens=100), 0.0, 0.0, wave_tokens=100)
