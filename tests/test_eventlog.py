"""wavegit.engine.eventlog and ``wavegit status``: a wave's events logged as they happen, read back live."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.reliability import wavegit_in_process as wavegit_here
from tests.helpers.repos import REPO_ROOT, wavegit
from tests.helpers.scheduler import hanging_wave, kill_with_sigkill
from tests.helpers.sync import origin_item
from tests.helpers.wave import check, item, make_wave_repo, run
from wavegit.core import wavelock
from wavegit.engine import eventlog


def log_of(clone: Path) -> Path:
    [log] = (clone / ".git" / "wavegit" / "events").glob("*.jsonl")
    return log


def test_a_wave_logs_its_claim_every_attempt_and_its_end_in_order(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"]),
                                       item("B", ["write src/b.txt bad"], ["src/b.txt"], check("src/b.txt"))],
                            attempts=2)
    outcome = run(remote.clone)
    records = [json.loads(line) for line in log_of(remote.clone).read_text().splitlines()]
    assert records[0]["event"] == "claimed" and records[0]["items"] == ["A", "B"]
    assert records[-1] == {"at": records[-1]["at"], "event": "finished", "exit_code": outcome.exit_code,
                           "success": False}
    b_states = [(r["state"], r["attempt"]) for r in records if r.get("item") == "B"]
    assert ("started", 1) in b_states and ("failed", 1) in b_states and ("failed", 2) in b_states
    assert b_states.index(("failed", 1)) < b_states.index(("started", 2))
    state = eventlog.read(log_of(remote.clone))
    a, b = state.items["A"], state.items["B"]
    assert (a.state, b.state, b.attempt) == ("verified", "failed", 2)


@pytest.mark.slow
def test_status_shows_a_running_wave_item_by_item_and_nothing_once_it_finished(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("SLOW", ["sleep 6", "write src/s.txt ok"], ["src/s.txt"]),
                                       item("FAST", ["write src/f.txt ok"], ["src/f.txt"])])
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    wave = subprocess.Popen([sys.executable, "-m", "wavegit", "run"], cwd=remote.clone, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        seen = ""
        while time.monotonic() < deadline:
            seen = wavegit(remote.clone, "status").stdout
            if "FAST" in seen and "verified" in seen:
                break
            time.sleep(0.2)
        assert "running since" in seen and "verified" in seen
        assert any(line.split()[:2] == ["SLOW", "started"] for line in seen.splitlines()[1:])
    finally:
        assert wave.wait(timeout=120) == 0
    assert wavegit_here(remote.clone, "status").stdout.startswith("no wave is running")
    listed = json.loads(wavegit_here(remote.clone, "status", "--all", "--json").stdout)
    assert [w["finished"]["exit_code"] for w in listed] == [0]


def test_status_of_a_finished_wave_says_how_many_items_verified_as_run_does(tmp_path: Path) -> None:
    # One verified, one failed: status said "failed, exit 1", where run's summary said "not a success".
    remote = make_wave_repo(tmp_path, [item("GOOD", ["write src/g.txt ok"], ["src/g.txt"]),
                                       item("BAD", ["write src/b.txt wrong"], ["src/b.txt"])], attempts=1)
    ran = wavegit(remote.clone, "run", "--json")
    wave = json.loads(ran.stdout)["wave_id"]
    shown = wavegit_here(remote.clone, "status", wave).stdout.splitlines()[0]
    assert shown.startswith(f"wave {wave}: not a success: 1 of 2 verified, exit 1 at ")


def test_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    log = tmp_path / "w-1.jsonl"
    log.write_text('{"at": "t", "event": "claimed", "items": ["A"]}\n{"at": "t", "item": "A", "sta')
    assert eventlog.read(log).items["A"].state == "claimed"


def test_status_of_an_unknown_wave_is_bad_input(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [])
    result = wavegit_here(remote.clone, "status", "w-nope")
    assert result.returncode == 2 and "no event log of that wave" in result.stderr


def test_status_says_a_killed_waves_scheduler_is_gone_and_after_sync_lists_it_only_with_all(
        tmp_path: Path) -> None:
    with hanging_wave(tmp_path) as scheduler:
        proc = scheduler.start()
        wave = origin_item(scheduler.remote, "A").wave
        assert wave is not None
        assert wavegit_here(scheduler.remote.clone, "status").stdout.startswith(f"wave {wave}: running since")
        kill_with_sigkill(proc)
        scheduler.kill_workers()
        clone = scheduler.remote.clone
        gone = wavegit_here(clone, "status")
        assert gone.returncode == 0
        assert gone.stdout.startswith(f"wave {wave}: not finished, its scheduler (pid {proc.pid} on ")
        assert "`wavegit sync` here returns its claims" in gone.stdout
        assert [w["scheduler"] for w in json.loads(wavegit(clone, "status", "--json").stdout)] == ["gone"]
        assert wavegit(clone, "sync").returncode == 0
        assert wavegit_here(clone, "status").stdout.startswith("no wave is running")
        listed = wavegit_here(clone, "status", "--all").stdout
        assert listed.startswith(f"wave {wave}: stopped without finishing")
        assert [w["scheduler"] for w in json.loads(wavegit_here(clone, "status", wave, "--json").stdout)] == [
            "released"]


def test_a_killed_wave_whose_claims_another_clone_returned_is_not_told_to_sync_here_again(
        tmp_path: Path) -> None:
    # Seen in a trial: a teammate's clone synced a killed wave's claims back to todo; this clone's status
    # still said the wave was not finished and that `wavegit sync` here would return its claims.
    with hanging_wave(tmp_path) as scheduler:
        proc = scheduler.start()
        wave = origin_item(scheduler.remote, "A").wave
        kill_with_sigkill(proc)
        scheduler.kill_workers()
        other = scheduler.remote.new_clone("other")
        assert wavegit(other, "sync").returncode == 0
        assert origin_item(scheduler.remote, "A").status == "todo"
        clone = scheduler.remote.clone
        assert wavegit_here(clone, "status").stdout.startswith("no wave is running")
        listed = wavegit_here(clone, "status", "--all").stdout
        assert listed.startswith(f"wave {wave}: stopped without finishing (started ")
        assert f"pid {proc.pid} on " in listed and "its claims were returned" in listed
        assert [w["scheduler"] for w in json.loads(wavegit(clone, "status", "--all", "--json").stdout)] == [
            "released"]


def test_with_no_lock_status_judges_the_process_the_log_names_so_a_collect_shows_as_running(
        tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [])
    events = remote.clone / ".git" / "wavegit" / "events"
    events.mkdir(parents=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    alive, gone = "w-20260101-000000-aa01", "w-20260101-000000-aa02"
    # `wavegit collect` holds no lock: the log's writer (here, this test) is what says it still runs.
    for wave_id, pid in ((alive, os.getpid()), (gone, dead.pid)):
        writer = wavelock.this_process(wave_id)._replace(pid=pid)
        claimed = {"at": "t", "event": "claimed", "items": ["A"], "process": writer._asdict()}
        (events / f"{wave_id}.jsonl").write_text(json.dumps(claimed) + "\n")
    shown = wavegit(remote.clone, "status").stdout
    assert shown.startswith(f"wave {alive}: running since") and gone not in shown
    listed = wavegit(remote.clone, "status", "--all").stdout
    assert f"wave {gone}: stopped without finishing (started t): pid {dead.pid} on " in listed
