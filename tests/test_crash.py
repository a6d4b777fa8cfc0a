"""Real ``kill -9`` of a ``wavegit run`` at several points, then ``wavegit sync`` and another wave.

The scheduler runs in its own process group, which is killed whole (its git children too, like a
machine losing power). The moment is found by polling what the scheduler leaves: the claim commit on
the remote, the workers' pid files, and for "after the push, before the record" a pre-receive hook on
the remote that holds the record push (a slow network) and says so with a marker file.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from tests.helpers.repos import REPO_ROOT, RemoteRepo, git, wavegit
from tests.helpers.scheduler import forge_foreign_beat
from tests.helpers.sync import make_tracker_repo, origin_tracker
from tests.helpers.wave import worktrees
from wavegit.sync.rules import claimed_at

pytestmark = pytest.mark.slow  # real processes killed at every step, then recovered

TESTS = Path(__file__).resolve().parent
WORKER = shlex.join([sys.executable, str(TESTS / "crash_workers" / "worker.py")])
ITEMS = ("A", "B", "C")
ALL_TODO = dict.fromkeys(ITEMS, "todo")
"""What sync makes of a wave killed before any item finished: every item released."""
HOLD_RECORD_HOOK = """#!/bin/sh
# Hold a push of a tracker record commit to main (a slow network), after saying so.
while read old new ref; do
  if [ "$ref" = refs/heads/main ] && git log -1 --format=%s "$new" | grep -q '^wavegit: record'; then
    touch "$HOLD_MARKER"
    sleep 60
  fi
done
"""
REFUSE_RIDING_HOOK = """#!/bin/sh
# Refuse a push updating main and a wave branch at once (a record carrying the branch); hold a record
# pushed alone (a slow network), after saying so.
input=$(cat)
case "$input" in *" refs/heads/wavegit/w-"*)
  case "$input" in *" refs/heads/main"*) echo "one ref at a time" >&2; exit 1;; esac;;
esac
printf '%s\\n' "$input" | while read old new ref; do
  if [ "$ref" = refs/heads/main ] && git log -1 --format=%s "$new" | grep -q '^wavegit: record'; then
    touch "$HOLD_MARKER"
    sleep 60
  fi
done
"""


@dataclass
class Crash:
    remote: RemoteRepo
    pid_dir: Path
    marker: Path
    env: dict[str, str] = field(default_factory=dict)
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start_run(self, **extra: str) -> subprocess.Popen[bytes]:
        env = {**os.environ, **self.env, **extra,
               "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
        log = (self.remote.base / "run.log").open("ab")
        proc = subprocess.Popen([sys.executable, "-m", "wavegit", "run"], cwd=self.remote.clone, env=env,
                                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        self.procs.append(proc)
        return proc

    def kill_workers(self) -> None:
        for pid_file in self.pid_dir.iterdir():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.killpg(int(pid_file.read_text()), signal.SIGKILL)


@pytest.fixture
def crash(tmp_path: Path) -> Iterator[Crash]:
    check = TESTS / "wave_workers" / "check.py"
    items = [{"id": i, "prompt": f"make {i}\n", "owns": [f"src/{i}.txt"],
              "test": shlex.join([sys.executable, str(check), f"src/{i}.txt", "ok"]), "status": "todo"}
             for i in ITEMS]
    # Unsandboxed: the test kills leftover workers by the process groups they record outside their trees.
    remote = make_tracker_repo(tmp_path, items, worker=WORKER, concurrency=3, attempts=1, timeout_s=60,
                               idle_timeout_s=60, lease_ttl_s=3600, sandbox="none",
                               worker_env=["CRASH_PID_DIR", "CRASH_SLEEP_S", "CRASH_FAIL_ITEMS",
                                           "HOLD_MARKER"])
    # A real remote's receive-pack runs on another machine, out of reach of the scheduler's process group;
    # killed with it here, it could die between moving main and releasing the remote's HEAD.lock (a stale
    # lock on the remote, see test_a_stale_remote_lock_makes_sync_give_up_naming_the_lock).
    git(remote.clone, "config", "remote.origin.receivepack", "setsid git-receive-pack")
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    state = Crash(remote, pid_dir, tmp_path / "held", {"CRASH_PID_DIR": str(pid_dir),
                                                         "HOLD_MARKER": str(tmp_path / "held")})
    yield state
    for proc in state.procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    state.kill_workers()


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def kill_scheduler(proc: subprocess.Popen[bytes]) -> None:
    os.killpg(proc.pid, signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL


def claim_landed(crash: Crash) -> bool:
    return git(crash.remote.origin, "log", "-1", "--format=%s", "main").startswith("wavegit: claim wave")


def all_workers_started(crash: Crash) -> bool:
    return {p.name for p in crash.pid_dir.iterdir()} == set(ITEMS)


def wave_branches(remote: RemoteRepo) -> list[str]:
    refs = git(remote.origin, "for-each-ref", "--format=%(refname:short)", "refs/heads/wavegit/")
    return refs.splitlines()


def worktree_count(remote: RemoteRepo) -> int:
    """The clone's own work tree, its linked worktrees and the attempt trees left under its state dir (not
    the wave folder's ignore rules or its fence)."""
    found = map(Path, worktrees(remote.clone))
    return sum(1 for path in found if path.is_dir() and not path.name.startswith("_"))


def assert_claimed_by_one_wave(remote: RemoteRepo) -> str:
    """The tracker is valid and every item is claimed by the killed wave (nothing else happened)."""
    loaded = origin_tracker(remote)  # strict: raises when invalid
    waves = {item.wave for item in loaded.items}
    assert [item.status for item in loaded.items] == ["in_progress"] * len(ITEMS) and len(waves) == 1
    wave = waves.pop()
    assert wave is not None
    return wave


def wait_out_the_lease(remote: RemoteRepo, ttl_s: float) -> None:
    latest = max(claimed_at(item) or datetime.now(timezone.utc) for item in origin_tracker(remote).items)
    left = (latest - datetime.now(timezone.utc)).total_seconds() + ttl_s + 0.05
    time.sleep(max(left, 0.0))


def sync_json(remote: RemoteRepo, **env: str) -> list[dict[str, object]]:
    result = wavegit(remote.clone, "sync", "--json", env=env)
    assert result.returncode == 0, result.stderr
    changes: list[dict[str, object]] = json.loads(result.stdout)
    return changes


def recover_and_finish(crash: Crash, wave: str, expected: dict[str, str], kept: tuple[str, ...] = ()) -> None:
    """Sync after the lease (each item as ``expected``), then a following wave finishes the rest;
    ``kept``: wave branches of this clone that were never pushed, which every sync keeps and names."""
    remote = crash.remote
    wait_out_the_lease(remote, 1.0)
    changes = sync_json(remote, WAVEGIT_LEASE_TTL_S="1")
    assert {str(c["id"]): str(c["to"]) for c in changes if c["kind"] == "item"} == expected
    assert git(remote.origin, "diff", "--name-only", "main~1", "main") == ".wavegit/tracker.yaml"
    loaded = origin_tracker(remote)
    # The scheduler's death (its lock names a pid that is gone) counts no attempt; a recovered one counts.
    assert {i.id: (i.status, i.attempts) for i in loaded.items} == {
        k: (v, 1 if v == "review" else 0) for k, v in expected.items()}
    recovered = [i.wave for i in loaded.items if i.status == "review"]
    assert recovered == [wave] * list(expected.values()).count("review")
    # The killed wave's worktrees and item branches are gone.
    assert worktree_count(remote) == 1
    assert git(remote.clone, "for-each-ref", "refs/heads/wavegit/items/") == ""
    # The next wave takes exactly the released items and completes.
    result = wavegit(remote.clone, "run", "--json", timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    rep = json.loads(result.stdout)
    assert sorted(i["id"] for i in rep["items"]) == sorted(k for k, v in expected.items() if v == "todo")
    assert rep["success"] is True
    assert [i.status for i in origin_tracker(remote).items] == ["review"] * len(ITEMS)
    # No item was done twice: each item's commit is on exactly one wave branch.
    on_branches = [item_id for branch in wave_branches(remote) for item_id in
                   git(remote.origin, "log", "--format=%(trailers:key=Wavegit-Item,valueonly)",
                       f"main..{branch}").split()]
    assert sorted(on_branches) == sorted(ITEMS)
    last = sync_json(remote, WAVEGIT_LEASE_TTL_S="1")
    assert [(c["kind"], c["action"], c["branch"], c["where"]) for c in last] == [
        ("branch", "keep", branch, "local") for branch in kept]


def kill_wave_once(crash: Crash, ready: Callable[[Crash], bool], what: str) -> str:
    """Start a wave whose workers hang, kill it (scheduler and workers) once ``ready``; the wave id."""
    proc = crash.start_run(CRASH_SLEEP_S="30")
    wait_for(lambda: ready(crash), what)
    kill_scheduler(proc)
    crash.kill_workers()
    return assert_claimed_by_one_wave(crash.remote)


def kill_right_after_the_claim(crash: Crash) -> str:
    """Start a wave, kill it as soon as its claim lands; the wave id."""
    wave = kill_wave_once(crash, claim_landed, "the claim commit")
    assert wave_branches(crash.remote) == []
    return wave


def test_kill_right_after_the_claim_then_sync_releases_every_item(crash: Crash) -> None:
    wave = kill_right_after_the_claim(crash)
    recover_and_finish(crash, wave, ALL_TODO)


def test_kill_while_workers_run_leaves_a_claim_that_sync_on_another_machine_keeps_until_the_lease_ends(
        crash: Crash) -> None:
    wave = kill_wave_once(crash, all_workers_started, "all three workers")
    assert worktree_count(crash.remote) == 1 + len(ITEMS)  # the killed scheduler's worktrees are left
    # Within the lease, a sync on another machine (which can judge neither the scheduler's lock nor the pid
    # its heartbeat names) touches neither the items nor the worktrees of the wave in flight; the killed
    # scheduler's machine releases at once (tests/test_wavelock.py, tests/test_heartbeat.py).
    forge_foreign_beat(crash.remote.clone, wave, timedelta(seconds=1))
    before = git(crash.remote.origin, "rev-parse", "main")
    other = crash.remote.new_clone("other")
    elsewhere = wavegit(other, "sync", "--json")
    assert (elsewhere.returncode, json.loads(elsewhere.stdout)) == (0, []), elsewhere.stderr
    assert git(crash.remote.origin, "rev-parse", "main") == before
    assert worktree_count(crash.remote) == 1 + len(ITEMS)
    recover_and_finish(crash, wave, ALL_TODO)


def test_kill_during_the_record_carrying_the_branch_lands_neither_and_sync_releases_every_item(
        crash: Crash) -> None:
    # The record's push carries the wave branch, atomically: killed while it is held, neither landed.
    hook = crash.remote.origin / "hooks" / "pre-receive"
    hook.write_text(HOLD_RECORD_HOOK)
    hook.chmod(0o755)
    proc = crash.start_run(CRASH_FAIL_ITEMS="C")
    wait_for(crash.marker.exists, "the record push to be held")
    kill_scheduler(proc)
    hook.unlink()
    wave = assert_claimed_by_one_wave(crash.remote)
    assert wave_branches(crash.remote) == []
    # The work of A and B is on this clone's wave branch only, which sync keeps, never deletes.
    recover_and_finish(crash, wave, ALL_TODO, kept=(f"wavegit/{wave}",))


def test_kill_after_the_push_before_the_record_recovers_finished_items_from_the_branch(crash: Crash) -> None:
    # The record's push carrying the branch is refused: the branch goes on its own, then the record alone,
    # which is held.
    hook = crash.remote.origin / "hooks" / "pre-receive"
    hook.write_text(REFUSE_RIDING_HOOK)
    hook.chmod(0o755)
    proc = crash.start_run(CRASH_FAIL_ITEMS="C")
    wait_for(crash.marker.exists, "the record push to be held")
    kill_scheduler(proc)
    hook.unlink()
    wave = assert_claimed_by_one_wave(crash.remote)
    assert wave_branches(crash.remote) == [f"wavegit/{wave}"]
    recover_and_finish(crash, wave, {"A": "review", "B": "review", "C": "todo"})


def test_a_stale_remote_lock_makes_sync_give_up_naming_the_lock(crash: Crash) -> None:
    wave = kill_right_after_the_claim(crash)
    # What a kill of the remote's receive-pack right after it moved main leaves (it held HEAD.lock too).
    lock = crash.remote.origin / "HEAD.lock"
    lock.write_text("")
    wait_out_the_lease(crash.remote, 1.0)
    head = git(crash.remote.origin, "rev-parse", "main")
    result = wavegit(crash.remote.clone, "sync", env={"WAVEGIT_LEASE_TTL_S": "1"}, timeout=60)
    assert result.returncode == 4, result.stderr
    assert "HEAD.lock while the branch stood still" in result.stderr
    assert git(crash.remote.origin, "rev-parse", "main") == head
    lock.unlink()
    recover_and_finish(crash, wave, ALL_TODO)
