"""The lifecycle as a team lives it, end to end, on a real library (six 1.16.0, tests/fixtures/six/) with its
own tests: init, add, a wave merged with --no-ff, one squash-merged, one rebase-merged, sync after each, a
wave killed with SIGKILL, release, reopen. Real git, a bare origin, real ``wavegit`` processes."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.helpers.repos import REPO_ROOT, TESTS, RemoteRepo, git, make_remote_repo, wavegit
from tests.helpers.wave import origin_item
from wavegit.model import tracker

FIXTURE = TESTS / "fixtures" / "six"
SCRIPTED = shlex.join([sys.executable, str(TESTS / "wave_workers" / "scripted.py")])
# The library's own tests (a quick part of them), run on a clean checkout of each item's change.
LIBRARY_TESTS = shlex.join([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_six.py",
                            "-k", "test_lazy or test_add_metaclass or test_print_"])

pytestmark = pytest.mark.slow


def project(tmp_path: Path) -> RemoteRepo:
    files = {name: (FIXTURE / name).read_text() for name in ("six.py", "test_six.py", "LICENSE")}
    remote = make_remote_repo(tmp_path, files)
    ok(wavegit(remote.clone, "init", "--tracker-branch", "main"))  # its config and tracker share main
    git(remote.clone, "pull", "-q", "--ff-only")
    config = {"worker": SCRIPTED, "concurrency": 2, "timeout_s": 120, "idle_timeout_s": 120, "attempts": 1}
    (remote.clone / ".wavegit" / "config.yaml").write_text(yaml.safe_dump(config))
    git(remote.clone, "commit", "-q", "-am", "wavegit: the scripted worker")
    git(remote.clone, "push", "-q", "origin", "main")
    return remote


def ok(result: object) -> str:
    code, out, err = (getattr(result, name) for name in ("returncode", "stdout", "stderr"))
    assert code == 0, f"exit {code}\n{out}\n{err}"
    return str(out)


def add(remote: RemoteRepo, item_id: str, actions: list[str], owns: list[str]) -> None:
    ok(wavegit(remote.clone, "add", item_id, "--prompt", "\n".join(actions), "--owns", *owns,
               "--test", LIBRARY_TESTS))


def wave(remote: RemoteRepo) -> str:
    report = json.loads(ok(wavegit(remote.clone, "run", "--json")))
    assert report["success"], report
    return str(report["wave_id"])


def statuses(remote: RemoteRepo, *item_ids: str) -> list[str]:
    return [origin_item(remote, item_id).status for item_id in item_ids]


def merge(remote: RemoteRepo, wave_id: str, how: str) -> None:
    clone, branch = remote.clone, f"origin/wavegit/{wave_id}"
    git(clone, "fetch", "-q", "origin")
    git(clone, "checkout", "-q", "main")
    git(clone, "reset", "-q", "--hard", "origin/main")
    if how == "no-ff":
        git(clone, "merge", "-q", "--no-ff", "-m", f"merge {wave_id}", branch)
    elif how == "squash":
        git(clone, "merge", "-q", "--squash", branch)
        git(clone, "commit", "-q", "-m", f"squash {wave_id}")
    else:
        git(clone, "checkout", "-q", "-B", "rebased", branch)
        git(clone, "rebase", "-q", "main")
        git(clone, "checkout", "-q", "main")
        git(clone, "merge", "-q", "--ff-only", "rebased")
    git(clone, "push", "-q", "origin", "main")


def kill_a_slow_wave(remote: RemoteRepo) -> tuple[tracker.Item, int]:
    """Add SLOW (its worker sleeps), run a wave from the clone, SIGKILL its scheduler once the worker has
    started: SLOW as the origin has it then (in progress), and the scheduler's pid."""
    add(remote, "SLOW", ["sleep 120", "write slow.py SLOW = True"], ["slow.py"])
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    run = subprocess.Popen([sys.executable, "-m", "wavegit", "run"], cwd=remote.clone, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while "started" not in wavegit(remote.clone, "status").stdout:
            assert time.monotonic() < deadline and run.poll() is None, "the worker never started"
            time.sleep(0.2)
        slow = origin_item(remote, "SLOW")
        assert slow.status == "in_progress" and slow.wave is not None
    finally:
        os.killpg(run.pid, signal.SIGKILL)
        run.wait()
    return slow, run.pid


def test_a_teams_afternoon_on_a_real_library(tmp_path: Path) -> None:
    remote = project(tmp_path)
    add(remote, "NOTES", ["write NOTES.md six, kept in step with wavegit"], ["NOTES.md"])
    add(remote, "COMPAT", ["write compat.py from six import PY3"], ["compat.py"])
    first = wave(remote)
    assert statuses(remote, "NOTES", "COMPAT") == ["review", "review"]

    merge(remote, first, "no-ff")
    ok(wavegit(remote.clone, "sync"))
    assert statuses(remote, "NOTES", "COMPAT") == ["done", "done"]

    for n, how in enumerate(("squash", "rebase")):
        item_id = f"STEP-{n}"
        add(remote, item_id, [f"write step_{n}.py STEP = {n}"], [f"step_{n}.py"])
        merge(remote, wave(remote), how)
        said = ok(wavegit(remote.clone, "sync"))
        assert statuses(remote, item_id) == ["done"], how
        assert f"{item_id}: review -> done by " in said, said

    # A wave whose scheduler dies: its claim holds the file until release returns it.
    slow, _ = kill_a_slow_wave(remote)
    ok(wavegit(remote.clone, "release", "--wave", str(slow.wave)))
    assert statuses(remote, "SLOW") == ["todo"]
    ok(wavegit(remote.clone, "reopen", "SLOW", "--reason", "the scheduler was killed; run it again"))
    released = origin_item(remote, "SLOW")
    assert (released.status, released.attempts) == ("todo", 0)
    git(remote.origin, "fsck", "--strict", "--no-dangling")
