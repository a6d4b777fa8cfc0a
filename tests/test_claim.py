"""A wave's claim (wavegit/engine/claim.py): HALT and the day budget are re-checked on every snapshot the
claim commit may rest on, so one that lands while the claim is being pushed wins."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import pytest

from tests.helpers.repos import RemoteRepo, git, wavegit
from tests.helpers.store import WrappedStore
from tests.helpers.wave import item, make_wave_repo, origin_item
from wavegit.commands._summary import summary
from wavegit.core import heartbeat
from wavegit.core.errors import EXIT_HALTED, BudgetExceededError, HaltedError
from wavegit.core.repo import Repo, discover
from wavegit.engine import claim as claim_module
from wavegit.engine.claim import claim
from wavegit.engine.pipeline import run_wave
from wavegit.model.config import Config, load_config
from wavegit.trackerbranch.store import Change, GitStore, Snapshot

NOON = datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc)  # conftest dates every commit 2026-01-01T00:00Z
WAVE = "w-20260101-120000-abcd"


class RivalFirst(WrappedStore):
    """A clone's GitStore whose first write lets a rival clone push first: the deterministic moment between
    the claim's read and its push."""

    def __init__(self, inner: GitStore, rival: Callable[[], None]) -> None:
        super().__init__(inner)
        self.rival = rival
        self.writes = 0

    def write(self, expected: Snapshot, change: Change, message: str) -> str:
        self.writes += 1
        if self.writes == 1:
            self.rival()
        return self.inner.write(expected, change, message)


def opened(remote: RemoteRepo, rival: Callable[[], None]) -> tuple[Repo, Config, RivalFirst]:
    repo = discover(remote.clone)
    config = load_config(repo.root)
    return repo, config, RivalFirst(GitStore(repo, config), rival)


def one_item_repo(tmp_path: Path, **config: object) -> RemoteRepo:
    return make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])], **config)


def test_a_halt_pushed_while_the_claim_is_pushed_wins_exit_3_nothing_claimed(tmp_path: Path) -> None:
    remote = one_item_repo(tmp_path)
    other = remote.new_clone("other")

    def halt_from_another_clone() -> None:
        halted = wavegit(other, "halt", "--reason", "deploy freeze")
        assert halted.returncode == 0, halted.stderr

    repo, config, store = opened(remote, halt_from_another_clone)
    with pytest.raises(HaltedError, match="deploy freeze") as raised:
        run_wave(repo, config, store)
    assert raised.value.exit_code == EXIT_HALTED == 3
    assert store.writes == 1  # the claim's push lost to the halt and was never replayed
    assert git(remote.origin, "log", "-1", "--format=%s", "main") == "wavegit: halt: deploy freeze"
    assert origin_item(remote, "A").status == "todo"


def test_a_spend_pushed_while_the_claim_is_pushed_over_the_day_budget_wins(tmp_path: Path) -> None:
    remote = one_item_repo(tmp_path, budget={"day_usd": 2.0})
    other = remote.new_clone("other")

    def another_wave_records_its_spend() -> None:
        git(other, "commit", "-q", "--allow-empty", "-m", "wavegit: record wave x\n\nWavegit-Cost: 2.5")
        git(other, "push", "-q", "origin", "main")

    repo, config, store = opened(remote, another_wave_records_its_spend)
    head_before_claim = git(remote.origin, "rev-parse", "main")
    with pytest.raises(BudgetExceededError, match=r"spent \$2.5 of \$2") as raised:
        claim(repo, config, store, max_items=4, wave_id=WAVE, now=NOON)
    assert raised.value.exit_code == EXIT_HALTED
    assert git(remote.origin, "rev-parse", "main^") == head_before_claim  # only the rival's commit landed
    assert origin_item(remote, "A").status == "todo"


def test_a_claim_replayed_on_a_moved_head_rests_on_the_read_of_that_head(tmp_path: Path) -> None:
    """The first launches may reuse the claim's HALT read only if it is the read of the head the claim
    landed on, never the read from before the race."""
    remote = one_item_repo(tmp_path, budget={"day_usd": 10.0})
    other = remote.new_clone("other")
    rival_pushed: list[float] = []

    def unrelated_commit_with_a_spend() -> None:
        git(other, "commit", "-q", "--allow-empty", "-m", "wavegit: record wave x\n\nWavegit-Cost: 1.5")
        git(other, "push", "-q", "origin", "main")
        rival_pushed.append(time.monotonic())

    repo, config, store = opened(remote, unrelated_commit_with_a_spend)
    claimed = claim(repo, config, store, max_items=4, wave_id=WAVE, now=NOON)
    assert store.writes == 2 and claimed.commit is not None
    assert git(remote.origin, "rev-parse", "main") == claimed.commit
    assert claimed.halt_read_at > rival_pushed[0]
    assert claimed.day_spent == 1.5  # read on the head the claim landed on
    assert origin_item(remote, "A").status == "in_progress"


def test_a_claim_lost_to_another_scheduler_says_so_for_each_item_it_lost(tmp_path: Path) -> None:
    remote = one_item_repo(tmp_path)
    other = remote.new_clone("other")

    def another_scheduler_claims_first() -> None:
        rival = wavegit(other, "run", "--no-push", "--json")
        assert rival.returncode in (0, 1), rival.stderr

    repo, config, store = opened(remote, another_scheduler_claims_first)
    outcome = run_wave(repo, config, store)
    assert outcome.report.items == [] and store.writes == 1
    rival = origin_item(remote, "A")
    assert rival.status != "todo"
    reason = (f"lost the claim race: another scheduler claimed it first ({rival.status}"
              + (f" in wave {rival.wave})" if rival.wave else ")"))
    assert [(skip.id, skip.reason) for skip in outcome.report.skipped] == [("A", reason)]
    assert summary(outcome.report).splitlines()[1:] == [f"  A: {reason}"]


def test_the_claim_plans_while_its_first_beat_is_made(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # The first beat rides the claim's push, and is asked for only at that push: the claim reads and plans
    # meanwhile. It used to wait for the beat first (two `git var` and a fast-import, ~12 ms of every wave).
    remote = one_item_repo(tmp_path)
    planning = threading.Event()
    beat_made_after_planning: list[bool] = []
    load_tracker, make_beat = claim_module.load_tracker, heartbeat.Heartbeat._commit

    def planned(*args: object, **kwargs: object) -> object:
        planning.set()
        return load_tracker(*args, **kwargs)  # type: ignore[arg-type]

    def beat_once_planning(self: heartbeat.Heartbeat) -> object:
        beat_made_after_planning.append(planning.wait(timeout=5))
        return make_beat(self)

    monkeypatch.setattr(claim_module, "load_tracker", planned)
    monkeypatch.setattr(heartbeat.Heartbeat, "_commit", beat_once_planning)
    repo = discover(remote.clone)
    config = load_config(repo.root)
    log = git(remote.origin, "log", "-1", "--format=%H", "main")
    outcome = run_wave(repo, config, GitStore(repo, config))
    assert beat_made_after_planning[0] is True
    assert [(entry.id, entry.verified) for entry in outcome.report.items] == [("A", True)]
    claim_commit = git(remote.origin, "log", "--format=%H %s", f"{log}..main").splitlines()[-1]
    assert claim_commit.endswith("wavegit: claim wave " + outcome.report.wave_id)
