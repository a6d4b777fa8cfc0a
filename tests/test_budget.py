"""Cost ceilings: the day's spend from Wavegit-Cost trailers (fail closed), the running wave spend."""

from __future__ import annotations

import threading
from datetime import datetime, timezone
from pathlib import Path

import pytest

from tests.helpers.repos import RemoteRepo, git
from wavegit import budget
from wavegit.config import Budget
from wavegit.errors import BudgetExceededError

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


def test_no_day_ceiling_reads_nothing(remote_repo: RemoteRepo) -> None:
    # A commit that cannot be read would fail closed, so returning 0 proves the history was not read.
    assert budget.check_day(Budget(day_usd=0), remote_repo.clone, "0" * 40, NOON) == 0.0


def test_wave_spend_is_exceeded_at_the_limit_and_never_without_one() -> None:
    spend = budget.WaveSpend(1.0)
    threads = [threading.Thread(target=spend.add, args=(0.1,)) for _ in range(9)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert spend.spent == pytest.approx(0.9) and not spend.exceeded
    spend.add(0.1 + 1e-9)
    assert spend.exceeded
    unlimited = budget.WaveSpend(0.0)
    unlimited.add(1e6)
    assert not unlimited.exceeded
