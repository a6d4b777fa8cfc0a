"""Hostile workers against attempt accounting: whatever an attempt's worker did that made it fail is charged
to that attempt (counted towards ``max_attempts``), never to the setup or to nobody. Real waves."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from tests.helpers.repos import git, wavegit
from tests.helpers.wave import item, make_wave_repo, origin_item

HOSTILE = Path(__file__).resolve().parent / "hostile_workers"


@pytest.mark.parametrize("way", ["delete", "chmod", "shebang", "loop"])
def test_attack_a_worker_that_breaks_its_own_test_program_has_its_attempt_counted(
        tmp_path: Path, way: str) -> None:
    # The test `tests/run.sh` is a file of the tree the item owns: a worker that deleted it (or made it
    # unrunnable) had its test "not launch", the setup's fault in wavegit's eyes: no attempt counted, the item
    # back to todo, and every later wave paid its agent again, max_attempts never reached.
    worker = shlex.join([sys.executable, str(HOSTILE / "unlaunchable_test.py"), way, "tests/run.sh"])
    remote = make_wave_repo(tmp_path, [item("A", ["break"], ["src/a.txt", "tests/run.sh"], "tests/run.sh")],
                            worker=worker, sandbox="none", attempts=1, max_attempts=1, concurrency=1)
    run_sh = remote.clone / "tests" / "run.sh"
    run_sh.parent.mkdir()
    run_sh.write_text("#!/bin/sh\nexit 0\n")
    run_sh.chmod(0o755)
    git(remote.clone, "add", "tests")
    git(remote.clone, "commit", "-qm", "the item's test")
    git(remote.clone, "push", "-q", "origin", "HEAD:main")
    result = wavegit(remote.clone, "run", "--json")
    attempt = json.loads(result.stdout)["items"][0]["attempt_records"][0]
    assert "cannot launch" in attempt["error"] and attempt["counted"], attempt
    found = origin_item(remote, "A")
    assert (found.status, found.attempts) == ("failed", 1)
