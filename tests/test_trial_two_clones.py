"""A team without GitHub, from two clones of one bare origin (issue 22), on a real library (six, with its own
tests): clone A runs the waves; clone B, with the pre-push hook installed, reads each wave's report, lands it
by a squash merge and pushes through the hook (never ``--no-verify``), and syncs; A's scheduler is killed
with SIGKILL mid-attempt, and B sees the claim it left (wave, host, pid, heartbeat, lease, release) and
returns it without counting an attempt against the item. Real git, real ``wavegit`` processes."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

import pytest

from tests.helpers.hook import install_hook
from tests.helpers.repos import git, wavegit
from tests.helpers.wave import origin_item
from tests.test_trial import add, kill_a_slow_wave, ok, project, statuses, wave

pytestmark = pytest.mark.slow


def test_two_clones_run_review_squash_merge_and_recover_a_killed_wave_without_no_verify(
        tmp_path: Path) -> None:
    remote = project(tmp_path)
    teammate = remote.new_clone("teammate")
    install_hook(teammate)

    # Clone A runs a wave; clone B reads its report, squash-merges it through the hook and syncs.
    add(remote, "NOTES", ["write NOTES.md six, kept in step with wavegit"], ["NOTES.md"])
    add(remote, "COMPAT", ["write compat.py from six import PY3"], ["compat.py"])
    first = wave(remote)
    assert statuses(remote, "NOTES", "COMPAT") == ["review", "review"]
    reported = ok(wavegit(teammate, "report", first))
    assert f"wave {first}: success: 2 of 2 verified" in reported
    git(teammate, "pull", "-q", "--ff-only")
    git(teammate, "merge", "-q", "--squash", f"origin/wavegit/{first}")
    git(teammate, "commit", "-q", "-m", f"wave {first}, reviewed and squashed")
    pushed = subprocess.run(["git", "push", "origin", "main"], cwd=teammate, capture_output=True, text=True,
                            check=False)
    assert pushed.returncode == 0, pushed.stderr
    assert f"this push lands wave {first} as pushed" in pushed.stderr
    synced = ok(wavegit(teammate, "sync"))
    assert "NOTES: review -> done by " in synced and "COMPAT: review -> done by " in synced
    assert statuses(remote, "NOTES", "COMPAT") == ["done", "done"]

    # A hand edit of a file in review, beyond the wave's pushed head, is still refused, with how to push.
    add(remote, "STEP", ["write step.py STEP = 1"], ["step.py"])
    second = wave(remote)
    git(teammate, "fetch", "-q", "origin")
    git(teammate, "merge", "-q", "--ff-only", "origin/main")
    git(teammate, "merge", "-q", "--squash", f"origin/wavegit/{second}")
    (teammate / "step.py").write_text("STEP = 2  # not what was reviewed\n")
    git(teammate, "commit", "-q", "-am", "squash, and an edit")
    refused = subprocess.run(["git", "push", "origin", "main"], cwd=teammate, capture_output=True, text=True,
                             check=False)
    assert refused.returncode != 0 and "step.py: owned by STEP (review" in refused.stderr
    assert f"its files must be exactly as on origin/wavegit/{second}" in refused.stderr
    git(teammate, "reset", "-q", "--hard", "origin/main")
    git(teammate, "merge", "-q", "--squash", f"origin/wavegit/{second}")
    git(teammate, "commit", "-q", "-m", f"wave {second}, as reviewed")
    ok(subprocess.run(["git", "push", "-q", "origin", "main"], cwd=teammate, capture_output=True, text=True,
                      check=False))
    ok(wavegit(teammate, "sync"))
    assert statuses(remote, "STEP") == ["done"]

    # Clone A's scheduler dies mid-attempt: B sees who holds the claim, and sync there returns it uncounted.
    git(remote.clone, "pull", "-q", "--ff-only")
    slow, pid = kill_a_slow_wave(remote)
    held = wavegit(teammate, "ls", "--fetch").stderr
    assert (f"wave {slow.wave} holds SLOW: its scheduler, pid {pid} on {socket.gethostname()}, is gone; "
            "last heartbeat ") in held
    # Seen in a trial: the clone that ran an interrupted wave whose record lost its race was told only of
    # `release`; `sync`, which returns them here at once, is what the other lines of status say.
    assert "its lease ends at " in held and \
        f"`wavegit sync` returns them now (or `wavegit release --wave {slow.wave}`)" in held
    assert f"wave {slow.wave} holds SLOW" in ok(wavegit(teammate, "plan"))
    assert f"wave {slow.wave} holds SLOW" in ok(wavegit(teammate, "status"))
    released = ok(wavegit(teammate, "sync"))
    assert released.startswith(f"SLOW: in_progress -> todo (its scheduler (pid {pid} on ")
    after = origin_item(remote, "SLOW")
    assert (after.status, after.attempts) == ("todo", 0)  # wavegit's death is not the item's
    plan = json.loads(ok(wavegit(teammate, "plan", "--json")))
    assert plan["selected"] == ["SLOW"] and plan["held"] == []
    git(remote.origin, "fsck", "--strict", "--no-dangling")
