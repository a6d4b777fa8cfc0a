"""The scheduler's lock: who it names, when that scheduler counts as gone, and what `sync` makes of a real
`wavegit run` killed with SIGKILL (at once on its machine; after the lease elsewhere)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.repos import git, wavegit
from tests.helpers.scheduler import Scheduler, hanging_wave, kill_with_sigkill
from tests.helpers.sync import origin_head, origin_item
from tests.helpers.wave import item, make_wave_repo, run
from wavegit.core import wavelock
from wavegit.core.errors import HaltedError
from wavegit.core.repo import Repo, discover

# -- the lock and its scheduler ----------------------------------------------------------------------------

@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    git(tmp_path, "init", "-q")
    return discover(tmp_path)


def test_the_lock_names_this_process_and_it_is_alive(repo: Repo) -> None:
    lock = wavelock.this_process("w-20260101-000000-ab12")
    wavelock.write(repo, lock)
    on_disk = json.loads(repo.scheduler_lock(lock.wave).read_text())
    assert on_disk["pid"] == os.getpid() and on_disk["host"] == socket.gethostname()
    assert on_disk["start_time"] == wavelock.process_start_time(os.getpid()) is not None
    assert wavelock.read(repo, lock.wave) == lock and lock.alive() is True
    assert wavelock.dead_waves(repo) == {}
    wavelock.remove(repo, lock.wave)
    assert wavelock.read(repo, lock.wave) is None


def test_a_scheduler_whose_pid_ended_is_gone(repo: Repo) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    lock = wavelock.this_process("w-20260101-000000-ab12")._replace(pid=child.pid)
    wavelock.write(repo, lock)
    assert lock.alive() is False
    assert wavelock.dead_waves(repo) == {lock.wave: f"pid {child.pid} on {socket.gethostname()}"}


def test_a_watching_scheduler_is_listed_while_it_runs_and_not_once_its_pid_ended(repo: Repo) -> None:
    mine = wavelock.watch(repo, "2026-01-01T00:00:00+00:00")
    assert [(lock.pid, since) for lock, since in wavelock.watchers(repo)] == \
        [(os.getpid(), "2026-01-01T00:00:00+00:00")]
    # What a watcher killed with SIGKILL left behind (it never removed its file) is no watcher.
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    left = json.loads(mine.read_text())
    mine.unlink()
    mine.with_name(f"{child.pid}.json").write_text(json.dumps({**left, "pid": child.pid}))
    assert wavelock.watchers(repo) == []


def test_a_killed_scheduler_not_yet_reaped_is_gone(repo: Repo) -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        lock = wavelock.this_process("w-20260101-000000-ab12")
        lock = lock._replace(pid=child.pid, start_time=wavelock.process_start_time(child.pid))
        assert lock.alive() is True
        child.send_signal(signal.SIGKILL)
        # A zombie until its parent waits for it: its /proc entry stays, with the same start time.
        deadline = time.monotonic() + 30
        while wavelock.process_start_time(child.pid) is not None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert Path(f"/proc/{child.pid}/stat").exists() and lock.alive() is False
    finally:
        child.kill()
        child.wait()


def test_a_reused_pid_or_another_boot_is_gone_and_another_host_cannot_be_told(repo: Repo) -> None:
    mine = wavelock.this_process("w-20260101-000000-ab12")
    assert mine._replace(start_time="1").alive() is False  # the pid now runs another process
    assert mine._replace(boot_id="another-boot").alive() is False
    assert mine._replace(host="elsewhere.example").alive() is None
    wavelock.write(repo, mine._replace(host="elsewhere.example"))
    assert wavelock.dead_waves(repo) == {}


def test_an_unreadable_lock_is_no_lock(repo: Repo) -> None:
    path = repo.scheduler_lock("w-20260101-000000-ab12")
    path.parent.mkdir(parents=True)
    path.write_text('{"wave": "w-20260101-000000-ab12", "pid": "x"')
    assert wavelock.read(repo, "w-20260101-000000-ab12") is None and wavelock.dead_waves(repo) == {}


# -- a real `wavegit run` killed with SIGKILL ---------------------------------------------------------------

@pytest.fixture
def scheduler(tmp_path: Path) -> Iterator[Scheduler]:
    with hanging_wave(tmp_path) as state:
        yield state


def test_sync_on_the_machine_of_a_killed_run_releases_its_claims_at_once_uncounted(
        scheduler: Scheduler) -> None:
    remote = scheduler.remote
    proc = scheduler.start()
    wave = origin_item(remote, "A").wave
    assert wave is not None and origin_item(remote, "A").status == "in_progress"
    lock = json.loads((remote.clone / ".git" / "wavegit" / "locks" / f"{wave}.json").read_text())
    assert (lock["pid"], lock["wave"]) == (proc.pid, wave)
    # While the scheduler lives, sync leaves its claim alone, on its machine too.
    assert wavegit(remote.clone, "sync").stdout.strip() == "in sync: nothing to change"
    kill_with_sigkill(proc)
    scheduler.kill_workers()
    # Another clone on this machine judges it by its heartbeat just as well (tests/test_heartbeat.py);
    # another machine cannot tell, and there the lease stands.
    other = remote.new_clone("other")
    elsewhere = wavegit(other, "sync", "--dry-run")
    assert elsewhere.stdout.startswith("would move A: in_progress -> todo (its scheduler "), elsewhere.stdout
    head = origin_head(remote)
    here = wavegit(remote.clone, "sync", "--json")
    assert here.returncode == 0, here.stderr
    changes = [c for c in json.loads(here.stdout) if c["kind"] == "item"]
    assert [(c["id"], c["from"], c["to"]) for c in changes] == [("A", "in_progress", "todo")]
    assert f"its scheduler (pid {proc.pid} on {socket.gethostname()}) is gone" in str(changes[0]["reason"])
    assert git(remote.origin, "rev-list", "--count", f"{head}..main") == "1"
    released = origin_item(remote, "A")
    assert (released.status, released.attempts, released.wave) == ("todo", 0, None)  # wavegit's death
    assert not (remote.clone / ".git" / "wavegit" / "locks" / f"{wave}.json").exists()
    # Its worktrees went with the claim.
    assert not (discover(remote.clone).worktrees_dir / wave).exists()


REJECT_RECORDS = """#!/bin/sh
while read old new ref; do
  if [ "$ref" = refs/heads/main ] && git log -1 --format=%s "$new" | grep -q '^wavegit: record'; then
    echo "policy: records are frozen" >&2; exit 1
  fi
done
"""


def test_a_run_whose_record_did_not_land_leaves_its_lock_and_sync_recovers_its_items_at_once(
        tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])], attempts=1,
                            lease_ttl_s=3600)
    hook = remote.origin / "hooks" / "pre-receive"
    hook.write_text(REJECT_RECORDS)
    hook.chmod(0o755)
    ran = wavegit(remote.clone, "run", "--json")
    assert ran.returncode == 1 and json.loads(ran.stdout)["tracker_updated"] is False
    wave = json.loads(ran.stdout)["wave_id"]
    assert wavelock.read(discover(remote.clone), wave) is not None
    hook.unlink()
    synced = wavegit(remote.clone, "sync")
    assert synced.returncode == 0, synced.stderr
    assert synced.stdout.startswith(f"A: in_progress -> review (recovered from wavegit/{wave}")
    assert wavelock.read(discover(remote.clone), wave) is None



def test_a_wave_that_ends_recorded_or_halted_before_its_claim_leaves_no_lock(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])])
    locks = remote.clone / ".git" / "wavegit" / "locks"
    assert run(remote.clone).report.tracker_updated and list(locks.iterdir()) == []
    assert wavegit(remote.clone, "halt", "--reason", "stop").returncode == 0
    with pytest.raises(HaltedError):
        run(remote.clone)
    assert list(locks.iterdir()) == []
