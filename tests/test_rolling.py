"""``wavegit run --continuous``: rolling waves, several in flight, each still a wave (real git, a bare origin,
real ``wavegit`` processes and real worker processes)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.reliability import dispatch_log, items_by_wave_branch, worker_command
from tests.helpers.repos import REPO_ROOT, RemoteRepo, git, wavegit
from tests.helpers.wave import check, item, make_wave_repo, origin_item, origin_tracker
from wavegit.engine.wave import HALT_FRESH_S
from wavegit.model.report import WaveReport

pytestmark = pytest.mark.slow  # whole schedulers with sleeping workers


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT),
                                                                      os.environ.get("PYTHONPATH")]))}


def start(clone: Path, *args: str, extra: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """``wavegit run --continuous --json ARGS`` as a process of its own session."""
    return subprocess.Popen([sys.executable, "-m", "wavegit", "run", "--continuous", "--json", *args],
                            cwd=clone, env={**env(), **(extra or {})}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def reports(stdout: str) -> list[WaveReport]:
    """The JSON Lines ``run --continuous --json`` prints: one report per wave, in the order they ended."""
    return [WaveReport.from_json(line) for line in stdout.splitlines() if line.strip()]


def wait_for(condition: Callable[[], bool], what: str, proc: subprocess.Popen[str] | None = None,
             timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert proc is None or proc.poll() is None, f"the scheduler ended before {what}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def statuses(remote: RemoteRepo) -> dict[str, tuple[str, str | None]]:
    return {i.id: (i.status, i.wave) for i in origin_tracker(remote).items}


def test_freed_slots_take_new_items_into_later_waves_delivered_while_an_earlier_wave_still_runs(
        tmp_path: Path) -> None:
    meet = tmp_path / "meet"
    meet.mkdir()
    slow = item("SLOW", [f"meet {meet} 2", "write src/slow.txt ok"], ["src/slow.txt"])
    quick = [item(f"Q{n}", [f"write src/q{n}.txt ok"], [f"src/q{n}.txt"]) for n in range(5)]
    remote = make_wave_repo(tmp_path, [slow, *quick], concurrency=2, max_items=2, attempts=1, sandbox="none")
    proc = start(remote.clone)
    # SLOW runs until every quick item was delivered in a wave of its own, in SLOW's wave's freed slot.
    wait_for(lambda: {"Q1", "Q2", "Q3", "Q4"} <= {
        i.id for i in origin_tracker(remote).items if i.status == "review"}, "the later waves", proc)
    assert origin_item(remote, "SLOW").status == "in_progress"
    (meet / "go").touch()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    waves = reports(out)
    taken = [i.id for wave in waves for i in wave.items]
    assert sorted(taken) == sorted(["SLOW", *(f"Q{n}" for n in range(5))])  # each item in one wave, once
    assert all(len(wave.items) <= 2 for wave in waves) and all(wave.success for wave in waves)
    assert sorted(i.id for i in waves[-1].items) == ["Q0", "SLOW"] and len(waves) == 3
    assert all(status == "review" for status, _ in statuses(remote).values())
    assert {wave.wave_id: sorted(i.id for i in wave.items) for wave in waves} == {
        wave: sorted(ids) for wave, ids in items_by_wave_branch(remote.clone, "origin/main").items()}
    # Every wave logged its end and dropped its lock: nothing shows as running.
    assert wavegit(remote.clone, "status").stdout.startswith("no wave is running")
    assert list((remote.clone / ".git" / "wavegit" / "locks").iterdir()) == []


def test_every_wave_takes_at_most_max_items(tmp_path: Path) -> None:
    items = [item(f"I{n}", ["sleep 0.2", f"write src/i{n}.txt ok"], [f"src/i{n}.txt"]) for n in range(7)]
    remote = make_wave_repo(tmp_path, items, concurrency=4, max_items=3, attempts=1)
    result = wavegit(remote.clone, "run", "--continuous", "--json", timeout=120)
    assert result.returncode == 0, result.stderr
    waves = reports(result.stdout)
    assert max(len(wave.items) for wave in waves) <= 3 and sum(len(wave.items) for wave in waves) == 7
    # No wave lists an item it took as skipped.
    assert all({i.id for i in wave.items}.isdisjoint(s.id for s in wave.skipped) for wave in waves)


def test_each_claim_into_the_open_wave_is_said_as_its_first_was(tmp_path: Path) -> None:
    # One slot: the first claim takes three items (the idle slot and two rounds ahead), later claims add
    # the other two to the same open wave; a trial saw those only as "queued".
    items = [item(f"I{n}", ["sleep 0.3", f"write src/i{n}.txt ok"], [f"src/i{n}.txt"]) for n in range(5)]
    remote = make_wave_repo(tmp_path, items, concurrency=1, attempts=1)
    result = wavegit(remote.clone, "run", "--continuous", timeout=120)
    assert result.returncode == 0, result.stderr
    claims = [line for line in result.stderr.splitlines() if ": claimed " in line]  # the progress
    waves = {line.split(":")[0] for line in claims}
    assert len(claims) >= 2 and len(waves) == 1, claims  # one wave, claimed into more than once
    said = [item_id for line in claims for item_id in line.split(": claimed ")[1].split(", ")]
    assert sorted(said) == [f"I{n}" for n in range(5)]


def race_items(count: int) -> list[dict[str, Any]]:
    """Every third item also owns ``src/shared.txt``: at most one of those may run (none is merged)."""
    return [{"id": f"R{n}", "prompt": f"make R{n}\n", "status": "todo", "test": "true",
             "owns": [f"src/r{n}.txt", *(["src/shared.txt"] if n % 3 == 0 else [])]} for n in range(count)]


def test_two_continuous_schedulers_in_two_clones_never_claim_the_same_or_overlapping_items(
        tmp_path: Path) -> None:
    log = tmp_path / "dispatched.log"
    remote = make_wave_repo(tmp_path, race_items(12), worker=worker_command("race"), concurrency=3,
                            max_items=2, attempts=1, sandbox="none", worker_env=["RACE_LOG"])
    other = remote.new_clone("other")
    procs = [start(clone, extra={"RACE_LOG": str(log)}) for clone in (remote.clone, other)]
    outs = [proc.communicate(timeout=180) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], [err for _, err in outs]
    dispatched = dispatch_log(log)
    assert all(len(waves) == 1 for waves in dispatched.values()), dispatched
    shared = [item_id for item_id in dispatched if int(item_id[1:]) % 3 == 0]
    assert len(shared) == 1, shared
    waves = [wave for out, _ in outs for wave in reports(out)]
    assert len({wave.wave_id for wave in waves}) == len(waves) >= 2
    assert sorted(i.id for wave in waves for i in wave.items) == sorted(dispatched)
    assert all(len(wave.items) <= 2 for wave in waves)
    final = statuses(remote)
    assert {item_id for item_id, (status, _) in final.items() if status == "review"} == set(dispatched)
    assert {item_id for item_id, (status, _) in final.items() if status == "todo"} == {
        f"R{n}" for n in range(12) if n % 3 == 0} - set(shared)


def test_a_halt_mid_run_stops_new_claims_and_lets_the_running_item_finish(tmp_path: Path) -> None:
    meet = tmp_path / "meet"
    meet.mkdir()
    items = [item("A", [f"meet {meet} 2", "write src/a.txt ok"], ["src/a.txt"]),
             *(item(i, [f"write src/{i.lower()}.txt ok"], [f"src/{i.lower()}.txt"]) for i in ("B", "C"))]
    remote = make_wave_repo(tmp_path, items, concurrency=1, attempts=1, sandbox="none")
    proc = start(remote.clone)
    wait_for(lambda: any(meet.iterdir()), "A's worker to start", proc)
    halted = wavegit(remote.new_clone("operator"), "halt", "--reason", "freeze")
    assert halted.returncode == 0, halted.stderr
    # A launch reuses a HALT read at most HALT_FRESH_S old: past that, B's launch reads the HALT afresh.
    time.sleep(HALT_FRESH_S)
    (meet / "go").touch()  # A's worker may finish now; the next claim sees the HALT
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 3, err
    assert "halted" in err and "freeze" in err
    # B and C were claimed ahead (two rounds of slots), waiting for A's slot: the HALT read before each
    # launch kept them from starting.
    [wave] = reports(out)
    assert [(i.id, i.verified, i.attempts) for i in wave.items] == [
        ("A", True, 1), ("B", False, 0), ("C", False, 0)], err
    assert all("halted" in (i.error or "") for i in wave.items[1:])
    assert statuses(remote) == {"A": ("review", wave.wave_id), "B": ("todo", None), "C": ("todo", None)}


def test_the_day_ceiling_counts_the_waves_in_flight_and_stops_new_claims(tmp_path: Path) -> None:
    items = [item(f"I{n}", ["cost 0.4", f"write src/i{n}.txt ok"], [f"src/i{n}.txt"]) for n in range(5)]
    remote = make_wave_repo(tmp_path, items, concurrency=1, attempts=1, budget={"day_usd": 1.0})
    result = wavegit(remote.clone, "run", "--continuous", "--json", timeout=120)
    assert result.returncode == 3, result.stderr
    assert "daily budget" in result.stderr
    # 0.4 + 0.4 is under the ceiling, 1.2 is over it: what was claimed ahead (up to two rounds of slots),
    # waiting for a slot, never starts, and nothing more is claimed.
    [wave] = reports(result.stdout)
    done, ahead = wave.items[:3], wave.items[3:]
    assert [(i.id, i.verified) for i in done] == [("I0", True), ("I1", True), ("I2", True)]
    assert ahead and all(not i.verified and i.attempts == 0 for i in ahead)
    assert wave.budget.exceeded
    assert [status for status, _ in statuses(remote).values()] == ["review"] * 3 + ["todo"] * 2


def sleeping_items(count: int, started: Path, seconds: float = 8) -> list[dict[str, Any]]:
    return [item(f"K{n}", [f"env {started}", f"sleep {seconds:g}", f"write src/k{n}.txt ok"],
                 [f"src/k{n}.txt"]) for n in range(count)]


def test_sigterm_cancels_every_wave_in_flight_each_recording_and_reporting_its_items(tmp_path: Path) -> None:
    started = tmp_path / "started.jsonl"
    remote = make_wave_repo(tmp_path, sleeping_items(3, started, 50), concurrency=2, max_items=1, attempts=1,
                            timeout_s=120, idle_timeout_s=120, sandbox="none")
    proc = start(remote.clone)
    wait_for(lambda: lines(started) == 2, "two workers to start", proc)
    # Two waves run an item each, a third item waits for a slot in a third wave: all three are in flight.
    wait_for(lambda: len(json.loads(wavegit(remote.clone, "status", "--json").stdout)) == 3,
             "the third wave to log its claim", proc)
    running = json.loads(wavegit(remote.clone, "status", "--json").stdout)
    assert {wave["scheduler"] for wave in running} == {"running"}
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    waves = reports(out)
    assert len(waves) == 3 and {wave.exit_code for wave in waves} == {130}
    assert all(status == "todo" and wave is None for status, wave in statuses(remote).values())
    assert wavegit(remote.clone, "status").stdout.startswith("no wave is running")
    assert list((remote.clone / ".git" / "wavegit" / "locks").iterdir()) == []


def test_kill_9_leaves_each_wave_in_flight_to_sync_which_releases_every_claim(tmp_path: Path) -> None:
    started = tmp_path / "started.jsonl"
    remote = make_wave_repo(tmp_path, sleeping_items(3, started), concurrency=2, max_items=1, attempts=1,
                            idle_timeout_s=60, sandbox="none", lease_ttl_s=3600)
    proc = start(remote.clone)
    wait_for(lambda: lines(started) == 2, "two workers to start", proc)
    wait_for(lambda: len(json.loads(wavegit(remote.clone, "status", "--json").stdout)) == 3,
             "the third wave to log its claim", proc)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert {status for status, _ in statuses(remote).values()} == {"in_progress"}  # two run, one waits
    gone = json.loads(wavegit(remote.clone, "status", "--json").stdout)
    assert len(gone) == 3 and {wave["scheduler"] for wave in gone} == {"gone"}
    synced = wavegit(remote.clone, "sync")
    assert synced.returncode == 0, synced.stderr
    assert all(status == "todo" for status, _ in statuses(remote).values())
    # The backlog runs again, whole.
    again = wavegit(remote.clone, "run", "--continuous", "--json", timeout=120)
    assert again.returncode == 0, again.stderr
    assert all(status == "review" for status, _ in statuses(remote).values())


def test_watch_picks_up_an_item_added_while_it_runs_until_interrupted_and_status_shows_it_idle(
        tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])], attempts=1)
    proc = start(remote.clone, "--watch")
    wait_for(lambda: origin_item(remote, "A").status == "review", "A to be recorded", proc)
    # No wave in flight, yet a scheduler waits for ready items: `status` says so, not just "no wave".
    idle = wavegit(remote.clone, "status")
    assert idle.returncode == 0, idle.stderr
    assert f"a scheduler is watching for ready items (pid {proc.pid} on " in idle.stdout, idle.stdout
    writer = remote.new_clone("writer")
    added = wavegit(writer, "add", "B", "--prompt", "write src/b.txt ok", "--owns", "src/b.txt", "--test",
                    "true", "--push")
    assert added.returncode == 0, added.stderr
    wait_for(lambda: origin_item(remote, "B").status == "review", "B to be recorded", proc)
    assert proc.poll() is None  # still watching
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    # Interrupted (as a watch ends): 130, whatever each wave's report says.
    assert proc.returncode == 130, err
    assert all(wave.success for wave in reports(out))
    assert [[i.id for i in wave.items] for wave in reports(out)] == [["A"], ["B"]]
    assert wavegit(remote.clone, "status").stdout == "no wave is running (--all lists finished ones)\n"
    assert git(remote.origin, "rev-parse", "--verify", "-q", "refs/heads/main")


def test_a_hostile_worker_writing_another_waves_file_fails_its_own_item_and_leaves_that_wave_intact(
        tmp_path: Path) -> None:
    hostile = item("A", ["write src/b.txt hacked", "write src/a.txt ok"], ["src/a.txt"])
    victim = item("B", ["sleep 0.5", "write src/b.txt ok"], ["src/b.txt"])
    remote = make_wave_repo(tmp_path, [hostile, victim], concurrency=2, max_items=1, attempts=1,
                            max_attempts=2)
    result = wavegit(remote.clone, "run", "--continuous", "--json", timeout=120)
    assert result.returncode == 1, result.stderr  # a wave's work failed
    waves = reports(result.stdout)
    [victims] = [wave for wave in waves if wave.items[0].id == "B"]
    assert victims.success and git(remote.origin, "show", f"{victims.branch}:src/b.txt") == "ok"
    # A is rejected in every wave that takes it (its record makes it ready again) until max_attempts.
    hostiles = [wave for wave in waves if wave.items[0].id == "A"]
    assert len(hostiles) == 2 and not any(wave.success or wave.branch for wave in hostiles)
    assert all(wave.items[0].ownership_violations == ["src/b.txt"] for wave in hostiles)
    assert statuses(remote) == {"A": ("failed", hostiles[-1].wave_id), "B": ("review", victims.wave_id)}


def test_a_wave_stopped_by_its_own_error_stops_new_claims_instead_of_retaking_its_items_forever(
        tmp_path: Path) -> None:
    items = [item(f"I{n}", [f"write src/i{n}.txt ok"], [f"src/i{n}.txt"]) for n in range(4)]
    remote = make_wave_repo(tmp_path, items, concurrency=1, max_items=1, attempts=1)
    # The branch waves start from is gone from the remote since this clone last fetched it (one that never
    # existed is refused before any claim): every wave stops before its first item, which goes back to todo
    # as never started.
    git(remote.clone, "push", "-q", "origin", "main:missing")
    git(remote.clone, "fetch", "-q", "origin")
    git(remote.origin, "branch", "-D", "missing")
    config = remote.clone / ".wavegit" / "config.yaml"
    config.write_text(config.read_text() + "base_branch: missing\n")
    result = wavegit(remote.clone, "run", "--continuous", "--json", env={"WAVEGIT_CONFIG_SOURCE": "checkout"},
                     timeout=120)
    assert result.returncode == 1, result.stderr
    assert "no new claims: wave" in result.stderr and "missing" in result.stderr
    waves = reports(result.stdout)
    assert 1 <= len(waves) <= 2 and all(wave.error for wave in waves)  # the first, and one claimed ahead
    assert all(status == "todo" for status, _ in statuses(remote).values())


def test_an_item_whose_test_cannot_launch_is_taken_once_not_again_in_a_new_wave_every_few_seconds(
        tmp_path: Path) -> None:
    # A launch failure counts no attempt, so the item went back to todo and the next claim took it again: a
    # user's typo (`pytset`) made a wave (two tracker commits) every two seconds until Ctrl-C.
    items = [item("A", ["write src/a.txt ok"], ["src/a.txt"], test="no-such-test-program -q"),
             item("B", ["write src/b.txt ok"], ["src/b.txt"])]
    remote = make_wave_repo(tmp_path, items, concurrency=2, attempts=2)
    result = wavegit(remote.clone, "run", "--continuous", "--json", timeout=60)
    assert result.returncode == 1, result.stderr
    waves = reports(result.stdout)
    assert [i.id for wave in waves for i in wave.items if i.id == "A"] == ["A"]
    assert statuses(remote)["B"][0] == "review"
    a = origin_item(remote, "A")
    assert (a.status, a.attempts) == ("todo", 0)
    assert "cannot launch 'no-such-test-program'" in (a.last_error or "")


def test_an_unlaunchable_item_is_taken_again_once_its_test_is_edited(tmp_path: Path) -> None:
    items = [item("A", ["write src/a.txt ok"], ["src/a.txt"], test="no-such-test-program -q")]
    remote = make_wave_repo(tmp_path, items, attempts=1)
    proc = start(remote.clone, "--watch")
    wait_for(lambda: "cannot launch" in (origin_item(remote, "A").last_error or ""), "A's first wave", proc)
    edited = wavegit(remote.clone, "edit", "A", "--test", check("src/a.txt"))
    assert edited.returncode == 0, edited.stderr
    wait_for(lambda: origin_item(remote, "A").status == "review", "A to be verified", proc)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert [[i.verified for i in wave.items] for wave in reports(out)] == [[False], [True]]


def test_halted_before_its_first_claim_it_ends_as_run_does_with_one_json_line(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])])
    assert wavegit(remote.clone, "halt", "--reason", "freeze").returncode == 0
    before = git(remote.origin, "rev-parse", "main")
    result = wavegit(remote.clone, "run", "--continuous", "--json", timeout=120)
    assert result.returncode == 3 and "freeze" in result.stderr
    [refused] = reports(result.stdout)
    assert (refused.wave_id, refused.halted, refused.exit_code) == ("", True, 3)
    assert git(remote.origin, "rev-parse", "main") == before


def test_kill_int_stops_a_watch_a_shell_started_in_the_background_as_ctrl_c_does(tmp_path: Path) -> None:
    # A shell without job control starts `cmd &` with SIGINT ignored; `kill -INT` must still end the watch.
    ignored = subprocess.run(["sh", "-c", "grep SigIgn /proc/self/status & wait"], capture_output=True,
                             text=True, check=True).stdout
    assert int(ignored.split()[-1], 16) >> (signal.SIGINT - 1) & 1  # so this test starts wavegit that way
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])], attempts=1)
    pid_file = tmp_path / "pid"
    shell = subprocess.Popen(
        ["sh", "-c", '"$@" & echo $! > "$PID_FILE"; wait $!', "sh", sys.executable, "-m", "wavegit", "run",
         "--continuous", "--json", "--watch"], cwd=remote.clone, env={**env(), "PID_FILE": str(pid_file)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        wait_for(lambda: origin_item(remote, "A").status == "review", "A to be recorded", shell)
        os.kill(int(pid_file.read_text()), signal.SIGINT)
        out, err = shell.communicate(timeout=30)
    finally:
        if shell.poll() is None:
            os.killpg(shell.pid, signal.SIGKILL)
            shell.wait()
    assert shell.returncode == 130, err
    assert [[i.id for i in wave.items] for wave in reports(out)] == [["A"]]
    assert list((remote.clone / ".git" / "wavegit" / "locks").iterdir()) == []
