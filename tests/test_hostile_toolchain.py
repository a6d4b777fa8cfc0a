"""Hostile workers and item authors against the toolchain the sandbox shows (issue 21): the installs a
launch passes through are shown read-only, the rest of the hidden HOME is not. Real sandboxed waves."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.repos import RemoteRepo, wavegit
from tests.helpers.wave import item, make_wave_repo, write_and_push
from tests.test_hostile_env import BWRAP_PROBLEM, state_files

# Whole sandboxed waves (a slow suite).
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(BWRAP_PROBLEM is not None, reason=f"bwrap cannot run: {BWRAP_PROBLEM}")]

HOSTILE = Path(__file__).resolve().parent / "hostile_workers"


def test_attack_a_test_launched_through_a_link_whose_text_names_a_home_folder_is_not_shown_that_folder(
        tmp_path: Path) -> None:
    # The launch chain read a link's text as a string: `L/../../..` cancelled the folder before each `..`
    # where the kernel follows `L` first, so a link the worker committed named HOME/.ssh to the sandbox,
    # which showed all of ~/.ssh to the item's test while the kernel ran the worker's own script.
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY of the user\n")
    worker = shlex.join([sys.executable, str(HOSTILE / "toolchain_link.py"), str(home)])
    remote = make_wave_repo(tmp_path, [item("A", ["link"], ["src/"], "src/x")], worker=worker,
                            sandbox="bwrap", attempts=1, concurrency=1)
    report, written = _sandboxed_run(remote.clone, {"HOME": str(home)})
    # The worker's script ran (its test launched), and read nothing of HOME.
    assert "id_ed25519: No such file or directory" in written, written
    assert "PRIVATE KEY" not in written
    assert report["items"][0]["test_exit"] == 1


@pytest.mark.parametrize("absolute", [False, True], ids=["relative", "absolute"])
def test_attack_a_test_whose_interpreter_names_a_path_of_the_users_checkout_is_not_shown_that_folder(
        tmp_path: Path, absolute: bool) -> None:
    # `#!/usr/bin/env ... NAME`: a NAME with a slash was looked up from wavegit's own working folder (the
    # user's checkout), whose folder the sandbox then showed, while env runs it (or, past `-u NAME`, another
    # program) from the test's tree: the checkout's untracked `scripts/.env` was printed into the test log.
    # Absolute, NAME named the checkout's program itself: `-u` takes a name, env ran `sh src/steal.sh`.
    checkout = tmp_path / "work"
    name = [str(checkout / "scripts" / "deploy.sh")] if absolute else []
    remote = make_wave_repo(tmp_path, [item("A", ["env"], ["run", "src/"], "./run")], sandbox="bwrap",
                            attempts=1, concurrency=1,
                            worker=shlex.join([sys.executable, str(HOSTILE / "shebang_env.py"), str(checkout),
                                               *name]))
    _assert_the_checkouts_untracked_env_stays_hidden(remote, "scripts/deploy.sh",
                                                     "#!/bin/sh\necho deploying\n")


def test_attack_a_test_whose_interpreter_is_a_program_of_the_users_checkout_is_shown_only_that_program(
        tmp_path: Path) -> None:
    # `#!CHECKOUT/scripts/tool.sh`: the kernel runs the checkout's own program (an earlier item's: it reads
    # what lies beside it), and the sandbox showed its folder, the checkout's untracked `scripts/.env` too.
    checkout = tmp_path / "work"
    worker = shlex.join([sys.executable, str(HOSTILE / "shebang_checkout.py"), str(checkout)])
    remote = make_wave_repo(tmp_path, [item("A", ["tool"], ["run"], "./run")], sandbox="bwrap", attempts=1,
                            concurrency=1, worker=worker)
    _assert_the_checkouts_untracked_env_stays_hidden(remote, "scripts/tool.sh",
                                                     '#!/bin/sh\ncat "$(dirname "$0")/.env"\n')


def _assert_the_checkouts_untracked_env_stays_hidden(remote: RemoteRepo, script: str, text: str) -> None:
    """``script`` (``text``) pushed as the checkout's program beside an untracked ``scripts/.env``: the wave's
    item test (the hostile worker's) cannot read that file, and fails."""
    write_and_push(remote.clone, {script: text}, script, executable=True)
    (remote.clone / "scripts" / ".env").write_text("DEPLOY_SECRET=untracked-in-the-checkout\n")
    report, written = _sandboxed_run(remote.clone)
    assert "scripts/.env: No such file or directory" in written, written
    assert "untracked-in-the-checkout" not in written
    assert report["items"][0]["test_exit"] == 1


def _sandboxed_run(clone: Path, env: dict[str, str] | None = None) -> tuple[dict[str, Any], str]:
    """``wavegit run --json`` under bwrap: its report, and everything it wrote (output, logs, reports)."""
    result = wavegit(clone, "run", "--json", env=env)
    report: dict[str, Any] = json.loads(result.stdout)
    assert report["sandbox"] == "bwrap", result.stderr
    return report, "\n".join([result.stdout, result.stderr,
                              *(p.read_text(errors="replace") for p in state_files(clone))])
