"""``wavegit release --wave W``: refuses a live scheduler on this machine, releases a killed one's claims (as
sync would after the lease) in one commit with its op trailer, once; an unknown wave is exit 2."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest

from tests.helpers.repos import git, wavegit
from tests.helpers.scheduler import Scheduler, hanging_wave, kill_with_sigkill
from tests.helpers.sync import (
    claimed,
    entry,
    make_tracker_repo,
    make_wave_branch,
    origin_head,
    origin_item,
    origin_tracker,
)
from tests.helpers.wave import item, make_wave_repo, run


@pytest.fixture
def scheduler(tmp_path: Path) -> Iterator[Scheduler]:
    with hanging_wave(tmp_path) as state:
        yield state


def test_release_refuses_a_live_scheduler_then_returns_the_claims_of_the_killed_one_once(
        scheduler: Scheduler) -> None:
    remote = scheduler.remote
    proc = scheduler.start()
    wave = origin_item(remote, "A").wave
    assert wave is not None
    head = origin_head(remote)
    refused = wavegit(remote.clone, "release", "--wave", wave)
    assert refused.returncode == 2
    assert f"wave {wave}'s scheduler is alive on this machine (pid {proc.pid} on " in refused.stderr
    assert "nothing written" in refused.stderr and "Traceback" not in refused.stderr
    assert origin_head(remote) == head
    kill_with_sigkill(proc)
    scheduler.kill_workers()
    released = wavegit(remote.clone, "release", "--wave", wave)
    assert released.returncode == 0, released.stderr
    assert released.stdout.startswith(f"released wave {wave} (its scheduler: pid {proc.pid} on ")
    assert "): A: in_progress -> todo: commit " in released.stdout
    assert git(remote.origin, "log", "-1", "--format=%(trailers:key=Wavegit-Op,valueonly)", "main"
               ).splitlines()[0] == f"release {wave}"
    back = origin_item(remote, "A")
    assert (back.status, back.attempts, back.wave, back.claimed_at) == ("todo", 0, None, None)
    assert "released by `wavegit release`" in str(back.last_error)
    assert not (remote.clone / ".git" / "wavegit" / "locks" / f"{wave}.json").exists()
    head = origin_head(remote)
    again = wavegit(remote.clone, "release", "--wave", wave)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip().startswith(f"wave {wave} was released already by commit ")
    assert again.stdout.strip().endswith("nothing written") and origin_head(remote) == head


def test_release_of_an_unknown_wave_is_exit_2_with_the_nearest_wave_and_nothing_written(
        tmp_path: Path) -> None:
    known = "w-20260101-000001-ab01"
    remote = make_tracker_repo(tmp_path, [entry("A", "review", wave=known)])
    head = origin_head(remote)
    unknown = wavegit(remote.clone, "release", "--wave", "w-20260101-000001-ab02")
    assert unknown.returncode == 2
    assert f"did you mean '{known}'?" in unknown.stderr and origin_head(remote) == head
    held = wavegit(remote.clone, "release", "--wave", known)
    assert (held.returncode, held.stdout.strip()) == (
        0, f"wave {known} holds no claim in progress (A review); nothing written")
    bad = wavegit(remote.clone, "release", "--wave", "yesterday")
    assert bad.returncode == 2 and "--wave 'yesterday': not a wave id" in bad.stderr


def test_release_of_a_wave_that_finished_and_whose_items_left_it_is_exit_0_with_nothing_written(
        tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt no"], ["src/a.txt"])], attempts=1)
    wave = run(remote.clone).report.wave_id
    assert origin_item(remote, "A").wave is None  # back to todo: nothing in the tracker names the wave
    head = origin_head(remote)
    result = wavegit(remote.clone, "release", "--wave", wave)
    assert (result.returncode, result.stdout.strip()) == (
        0, f"wave {wave} holds no claim: its items have all left it; nothing written")
    assert origin_head(remote) == head


REJECT_RECORDS = """#!/bin/sh
while read old new ref; do
  if [ "$ref" = refs/heads/main ] && git log -1 --format=%s "$new" | grep -q '^wavegit: record'; then
    echo "policy: records are frozen" >&2; exit 1
  fi
done
"""


def test_release_of_a_wave_that_pushed_its_branch_recovers_its_items_as_sync_would_after_the_lease(
        tmp_path: Path) -> None:
    wave = "w-20260101-000002-ab02"
    fresh = datetime.now(timezone.utc).isoformat(timespec="seconds")
    remote = make_tracker_repo(tmp_path, [claimed("A", wave, at=fresh), claimed("B", wave, at=fresh)])
    make_wave_branch(remote.clone, wave, ["A"])
    released = wavegit(remote.clone, "release", "--wave", wave)
    assert released.returncode == 0, released.stderr
    assert released.stdout.startswith(f"released wave {wave} (its scheduler: unknown: no lock in this clone "
                                      "and no heartbeat from the remote): A: in_progress -> review; "
                                      "B: in_progress -> todo: commit ")
    # A's attempt is on the branch; B's ended with its scheduler, which counts against nothing.
    assert [(i.status, i.attempts) for i in origin_tracker(remote).items] == [("review", 1), ("todo", 0)]
