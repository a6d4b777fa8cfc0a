"""The scheduler's heartbeat and the claims it explains: a running wave beats on the remote, and every clone's
`plan`, `ls`, `status` and `sync` name a dead or foreign wave's claims, its scheduler, the age of its
heartbeat, the end of its lease and the `release` command. Two clones share a bare origin; the scheduler is a
real `wavegit run`, killed with SIGKILL."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from tests.helpers.reliability import wavegit_in_process as wavegit_here
from tests.helpers.repos import REPO_ROOT, git, wavegit
from tests.helpers.scheduler import Scheduler, forge_foreign_beat, hanging_wave, kill_with_sigkill
from tests.helpers.sync import origin_item
from tests.helpers.wave import item, make_wave_repo
from wavegit.core import heartbeat, wavelock
from wavegit.core.git import WaveId
from wavegit.core.repo import Repo

HOST = socket.gethostname()


@pytest.fixture
def scheduler(tmp_path: Path) -> Iterator[Scheduler]:
    with hanging_wave(tmp_path) as state:
        yield state


def beat_on_origin(origin: Path, wave: str) -> dict[str, object] | None:
    """The record of the wave's heartbeat ref on the bare origin; None when there is none."""
    ref = f"{heartbeat.REF_PREFIX}{wave}"
    found = subprocess.run(["git", "log", "-1", "--format=%B", ref], cwd=origin, capture_output=True,
                           text=True)
    if found.returncode != 0:
        return None
    message = found.stdout
    record: dict[str, object] = json.loads(message[message.index("{"):])
    return record


@pytest.mark.parametrize("mode", [[], ["--continuous"]], ids=["run", "continuous"])
def test_a_running_wave_keeps_a_heartbeat_on_the_remote_and_removes_it_when_it_ends(
        tmp_path: Path, mode: list[str]) -> None:
    # `--continuous` beats per wave as `run` does: without it, another clone was told a live scheduler's
    # claims were "unknown" and that `release` "returns them now".
    remote = make_wave_repo(tmp_path, [item("A", ["sleep 1.5", "write src/a.txt ok"], ["src/a.txt"])],
                            heartbeat_s=0.3)
    seen: list[object] = []
    proc = subprocess.Popen([sys.executable, "-m", "wavegit", "run", *mode, "--json"], cwd=remote.clone,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    while proc.poll() is None:
        refs = git(remote.origin, "for-each-ref", "--format=%(refname)", heartbeat.REF_PREFIX).split()
        for ref in refs:
            record = beat_on_origin(remote.origin, ref.rsplit("/", 1)[1])
            if record is not None and record["at"] not in seen:
                seen.append(record["at"])
                assert (record["pid"], record["host"], record["every_s"]) == (proc.pid, HOST, 0.3)
    out, err = proc.communicate()
    assert proc.returncode == 0, err
    assert len(seen) >= 3, seen  # it beat again and again while the worker ran
    wave = json.loads(out)["wave_id"]
    assert beat_on_origin(remote.origin, wave) is None  # settled: the ref is gone
    assert git(remote.clone, "for-each-ref", heartbeat.local_prefix("origin")) == ""


def test_a_killed_waves_claims_are_named_from_another_clone_and_its_sync_releases_them_uncounted(
        scheduler: Scheduler) -> None:
    remote = scheduler.remote
    proc = scheduler.start()
    wave = origin_item(remote, "A").wave
    assert wave is not None
    kill_with_sigkill(proc)
    scheduler.kill_workers()
    other = remote.new_clone("other")
    listed = wavegit(other, "ls", "--fetch")
    assert listed.returncode == 0, listed.stderr
    said = re.search(rf"wave {wave} holds A: its scheduler, pid {proc.pid} on {re.escape(HOST)}, is gone; "
                     r"last heartbeat (\d+) s ago \(one every 30 s\); its lease ends at (\S+) \(in 59 min\); "
                     rf"`wavegit sync` returns them now \(or `wavegit release --wave {wave}`\)$",
                     listed.stderr, re.MULTILINE)
    assert said, listed.stderr
    claimed = datetime.fromisoformat(str(origin_item(remote, "A").claimed_at).replace("Z", "+00:00"))
    assert said.group(2) == (claimed + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    planned = wavegit_here(other, "plan")
    assert f"claims held (1 wave(s) not running in this clone):\n  wave {wave} holds A: its scheduler, pid " \
           f"{proc.pid} on {HOST}, is gone" in planned.stdout
    held = json.loads(wavegit_here(other, "plan", "--json").stdout)["held"]
    assert [(h["wave"], h["items"], h["scheduler"], h["pid"], h["host"]) for h in held] == [
        (wave, ["A"], "gone", proc.pid, HOST)]
    assert f"wave {wave} holds A: its scheduler, pid {proc.pid}" in wavegit_here(other, "status").stdout
    synced = wavegit(other, "sync")
    assert synced.returncode == 0, synced.stderr
    assert synced.stdout.startswith(f"A: in_progress -> todo (its scheduler (pid {proc.pid} on {HOST}) is "
                                    "gone"), synced.stdout
    released = origin_item(remote, "A")
    assert (released.status, released.attempts) == ("todo", 0)  # wavegit's death is not the item's
    # Its beat goes with its claims: the killed scheduler could not delete it, and every clone fetched it
    # with every tracker fetch for good.
    assert beat_on_origin(remote.origin, wave) is None
    assert git(other, "for-each-ref", heartbeat.local_prefix("origin")) == ""
    assert "holds" not in wavegit(other, "sync").stdout


def test_a_wave_that_ended_since_the_last_fetch_is_told_as_that_fetch_saw_it(scheduler: Scheduler) -> None:
    # Seen in a trial: a teammate's clone fetched while a wave ran; the wave then ended as usual, and that
    # clone's `plan` said its scheduler "is gone" and that `release` "returns them now", with no word that
    # the claims it named were the last fetch's.
    remote = scheduler.remote
    proc = scheduler.start()
    wave = origin_item(remote, "A").wave
    other = remote.new_clone("other")
    assert f"wave {wave} holds A: its scheduler, pid {proc.pid} on {HOST}, runs" in \
        wavegit_here(other, "ls", "--fetch").stderr
    scheduler.kill_workers()  # its one attempt fails: the wave records it and ends as usual
    assert proc.wait(timeout=120) == 1
    note = "(as last fetched: a wave that ended since holds nothing; `wavegit ls --fetch` tells)"
    planned = wavegit_here(other, "plan")
    assert f"wave {wave} holds A: its scheduler, pid {proc.pid} on {HOST}, is gone" in planned.stdout
    assert planned.stdout.rstrip().endswith(f"`wavegit sync` returns them now (or `wavegit release --wave "
                                            f"{wave}`) {note}")
    fetched = wavegit_here(other, "ls", "--fetch")
    assert fetched.returncode == 0, fetched.stderr
    assert "claims held" not in fetched.stderr  # the ended wave holds nothing
    assert wavegit_here(other, "status").stdout == "no wave is running (--all lists finished ones)\n"


def test_release_from_another_clone_on_the_same_machine_names_the_dead_scheduler(
        scheduler: Scheduler) -> None:
    remote = scheduler.remote
    proc = scheduler.start()
    wave = origin_item(remote, "A").wave
    other = remote.new_clone("other")
    refused = wavegit(other, "release", "--wave", str(wave))
    assert refused.returncode == 2
    assert (f"wave {wave}'s scheduler is alive on this machine (pid {proc.pid} on {HOST}): stop it "
            f"(kill {proc.pid})") in refused.stderr
    kill_with_sigkill(proc)
    scheduler.kill_workers()
    released = wavegit(other, "release", "--wave", str(wave))
    assert released.returncode == 0, released.stderr
    assert f"released wave {wave} (its scheduler: pid {proc.pid} on {HOST}, gone): A: in_progress -> todo" \
        in released.stdout
    assert "not on this machine" not in released.stdout
    assert (origin_item(remote, "A").status, origin_item(remote, "A").attempts) == ("todo", 0)


def test_a_foreign_scheduler_that_stopped_beating_is_named_and_released_by_hand(scheduler: Scheduler) -> None:
    remote = scheduler.remote
    proc = scheduler.start()
    wave = str(origin_item(remote, "A").wave)
    kill_with_sigkill(proc)
    scheduler.kill_workers()
    # As if it had run on another machine: its beat names that machine, and stopped 10 minutes ago.
    forge_foreign_beat(remote.clone, wave, timedelta(minutes=10))
    other = remote.new_clone("other")
    synced = wavegit(other, "sync")
    assert synced.returncode == 0, synced.stderr
    assert (f"wave {wave} holds A: its scheduler, pid 4242 on elsewhere.example, stopped beating; last "
            "heartbeat 10 min ago (one every 30 s); its lease ends at") in synced.stdout
    assert synced.stdout.startswith("in sync: nothing to change")  # another machine: its lease stands
    released = wavegit(other, "release", "--wave", wave)
    assert released.returncode == 0, released.stderr
    assert (f"released wave {wave} (its scheduler: pid 4242 on elsewhere.example, another machine, last "
            "heartbeat 10 min ago): A: in_progress -> todo") in released.stdout
    assert origin_item(remote, "A").attempts == 0
    assert beat_on_origin(remote.origin, wave) is None  # released: nobody is to read that beat any more


def log_pushes(origin: Path) -> Path:
    """A pre-receive hook on the bare ``origin`` writing one line per push it receives: the refs it
    updates, then, for a push to main, the heartbeat refs the origin already held; the log's path."""
    log = origin / "pushes.log"
    hook = origin / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\n"
                    f'refs=$(cut -d" " -f3 | tr "\\n" " ")\n'
                    f'beats=$(git for-each-ref --format="%(refname)" {heartbeat.REF_PREFIX} | tr "\\n" " ")\n'
                    f'echo "$refs| $beats" >> "{log}"\n')
    hook.chmod(0o755)
    return log


@pytest.mark.parametrize("mode", [[], ["--continuous"]], ids=["run", "continuous"])
def test_the_first_beat_lands_with_or_before_the_claim_and_its_deletion_rides_the_records_push(
        tmp_path: Path, mode: list[str]) -> None:
    # `run`: the first beat rides the claim's push (all or nothing: never claims without their beat).
    # `--continuous` pushes it first and its claim waits for it. `run`'s record's push carries the wave
    # branch, the shared report and the heartbeat's deletion: one atomic push, all or none.
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])])
    log = log_pushes(remote.origin)
    done = wavegit(remote.clone, "run", "--json", *mode)
    assert done.returncode == 0, done.stderr
    wave = json.loads(done.stdout.splitlines()[0] if mode else done.stdout)["wave_id"]
    beat, report = f"{heartbeat.REF_PREFIX}{wave}", f"refs/wavegit/reports/{wave}"
    pushes = [line.split("|") for line in log.read_text().splitlines()]
    updated = [sorted(refs.split()) for refs, _ in pushes]
    if mode:
        claim = updated.index(["refs/heads/main"])
        assert beat in pushes[claim][1].split(), pushes  # the beat was on the origin when the claim came
        assert [beat] in updated[:claim], pushes  # pushed by a push of its own, before the claim's
    else:
        assert updated == [sorted(["refs/heads/main", beat]),  # the claim, its beat with it
                           sorted(["refs/heads/main", f"refs/heads/wavegit/{wave}", beat, report])], pushes
    assert beat_on_origin(remote.origin, wave) is None
    # The report's ref: one parentless commit holding report.json, the report the wave printed.
    assert git(remote.origin, "rev-list", "--count", report) == "1"
    assert json.loads(git(remote.origin, "show", f"{report}:report.json"))["wave_id"] == wave


def test_a_remote_refusing_the_heartbeat_ref_still_takes_the_claim_and_the_record(tmp_path: Path) -> None:
    # A host's rule or hook that refuses refs/wavegit/heartbeat/*: the claim that carried the first beat is
    # refused with it, so the claim goes again on its own (as do the beats, which fail); the wave runs and
    # records as it did when beats were always pushed alone.
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])])
    log = log_pushes(remote.origin)
    hook = remote.origin / "hooks" / "pre-receive"
    hook.write_text(hook.read_text().replace("#!/bin/sh\n", "#!/bin/sh\ninput=$(cat)\n", 1)
                    .replace('refs=$(cut', 'refs=$(printf "%s\\n" "$input" | cut', 1)
                    + f'case "$refs" in *{heartbeat.REF_PREFIX}*) echo "no beats" >&2; exit 1;; esac\n')
    done = wavegit(remote.clone, "run", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    rep = json.loads(done.stdout)
    assert rep["success"] is True and rep["tracker_updated"] is True
    assert origin_item(remote, "A").status == "review"
    pushed = [sorted(line.split("|")[0].split()) for line in log.read_text().splitlines()]
    beat = f"{heartbeat.REF_PREFIX}{rep['wave_id']}"
    # Refused with its beat; then the beat alone (refused), and the claim alone.
    assert pushed[:3] == [sorted(["refs/heads/main", beat]), [beat], ["refs/heads/main"]], pushed
    assert beat_on_origin(remote.origin, rep["wave_id"]) is None


def test_a_refused_all_at_once_push_goes_one_push_at_a_time_and_still_lands_everything(tmp_path: Path
                                                                                      ) -> None:
    # A remote that takes one ref per push (a hook, a host's rule): the heartbeat beats again, and the wave
    # ends as it did before the record carried the rest: branch, record, report with the beat's deletion.
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])])
    log = log_pushes(remote.origin)
    hook = remote.origin / "hooks" / "pre-receive"
    refuse = '[ "$(printf "%s\\n" "$input" | wc -l)" -gt 2 ] && { echo "one at a time" >&2; exit 1; }\n'
    hook.write_text(hook.read_text().replace("#!/bin/sh\n", "#!/bin/sh\ninput=$(cat)\n", 1)
                    .replace('refs=$(cut', 'refs=$(printf "%s\\n" "$input" | cut', 1) + refuse + "exit 0\n")
    done = wavegit(remote.clone, "run", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    rep = json.loads(done.stdout)
    wave = rep["wave_id"]
    assert rep["success"] is True and rep["tracker_updated"] is True
    beat, report = f"{heartbeat.REF_PREFIX}{wave}", f"refs/wavegit/reports/{wave}"
    updated = [sorted(line.split("|")[0].split()) for line in log.read_text().splitlines()]
    # The beat that resumed is pushed from its own thread, beside the branch's push.
    assert [beat] in updated[-5:]
    assert [refs for refs in updated[-5:] if refs != [beat]] == [
        sorted(["refs/heads/main", f"refs/heads/wavegit/{wave}", beat, report]),
        [f"refs/heads/wavegit/{wave}"], ["refs/heads/main"], sorted([beat, report])]
    assert origin_item(remote, "A").status == "review"
    assert beat_on_origin(remote.origin, wave) is None
    assert json.loads(git(remote.origin, "show", f"{report}:report.json"))["tracker_updated"] is True


def test_the_record_carrying_the_branch_gives_up_its_race_before_the_paused_beat_turns_stale(
        tmp_path: Path) -> None:
    # The heartbeat is paused while the record carrying the wave branch is pushed; that record retried lost
    # races for 120 s, by when other clones took the beat (STALE_BEATS periods) for a dead scheduler's.
    # Here every all-at-once push loses its race (the remote moves main under it): with 0.5 s beats the
    # record gives up within 1.5 s, the branch goes alone, and the record, tried again on its own with the
    # heartbeat beating, lands (it used to be given up for good: exit 4, the items left in progress).
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])], heartbeat_s=0.5)
    hook = remote.origin / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\n"
                    'input=$(cat)\n'
                    '[ "$(printf "%s\\n" "$input" | wc -l)" -gt 2 ] || exit 0\n'
                    "unset GIT_QUARANTINE_PATH GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES\n"
                    'git update-ref refs/heads/main "$(git commit-tree main^{tree} -p main -m moved)"\n')
    hook.chmod(0o755)
    done = wavegit(remote.clone, "run", "--json", timeout=60)
    rep = json.loads(done.stdout)
    assert (done.returncode, rep["tracker_updated"], rep["error"]) == (0, True, None), done.stderr
    assert git(remote.origin, "rev-parse", "--verify", "-q", f"refs/heads/wavegit/{rep['wave_id']}")
    assert origin_item(remote, "A").status == "review"


def test_a_heartbeat_copy_whose_wave_deleted_its_ref_is_pruned_by_the_next_tracker_fetch(
        tmp_path: Path) -> None:
    # A fetch that raced a wave's end can copy its heartbeat just before the remote ref is deleted.
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])])
    head = git(remote.clone, "rev-parse", "HEAD")
    stale = f"{heartbeat.local_prefix('origin')}w-20260101-000000-dead"
    git(remote.clone, "update-ref", stale, head)
    assert wavegit_here(remote.clone, "ls", "--fetch").returncode == 0
    assert git(remote.clone, "for-each-ref", "--format=%(refname)", heartbeat.local_prefix("origin")) == ""


def test_a_first_beat_that_aged_while_its_claim_was_pushed_is_followed_by_a_fresh_one_at_once(
        tmp_path: Path) -> None:
    # A claim losing races for a while carries a beat made before them: once it lands, a fresh beat goes at
    # once, not a whole period later, so other clones never see the new claims under an aged beat.
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])])
    repo = Repo(remote.clone, remote.clone / ".git", remote.clone / ".git")
    wave = WaveId("w-20261203-000000-0001")
    beating = heartbeat.Heartbeat(repo, "origin", wavelock.this_process(wave), 0.3).start(riding=True)
    rider = beating.rider()
    assert rider is not None and rider.endswith(f":{heartbeat.REF_PREFIX}{wave}")
    git(remote.clone, "push", "-q", "origin", rider)  # what the claim's push carries
    time.sleep(0.35)  # the claim's races: longer than one period
    beating.rode(True)
    beating.stop(settled=False)  # stops after the fresh beat, which the thread sends before anything else
    carried = rider.split(":")[0].lstrip("+")
    assert git(remote.origin, "rev-parse", f"{heartbeat.REF_PREFIX}{wave}") != carried


def test_a_wave_that_claims_nothing_pushes_no_beat_and_no_deletion(tmp_path: Path) -> None:
    # The first beat is only made for the claim's push: with nothing to claim, nothing reaches the remote
    # (it used to push a beat, then its deletion).
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"], status="done")])
    log = log_pushes(remote.origin)
    done = wavegit(remote.clone, "run", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["items"] == []
    assert not log.exists() or log.read_text() == ""
    assert git(remote.origin, "for-each-ref", heartbeat.REF_PREFIX) == ""
