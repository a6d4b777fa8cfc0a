"""Hostile items against ``sandbox.ro_paths`` (issue 21): the installs the links of its ``bin`` folders point
to are shown, nothing else of the hidden HOME, even when the repository, whose content earlier items landed,
holds the folder listed. Real sandboxed waves."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers.repos import git, wavegit
from tests.helpers.wave import check, item, make_wave_repo, write_and_push
from tests.test_hostile_env import BWRAP_PROBLEM, state_files

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(BWRAP_PROBLEM is not None, reason=f"bwrap cannot run: {BWRAP_PROBLEM}")]

HOSTILE = Path(__file__).resolve().parent / "hostile_workers"


@pytest.mark.parametrize("helper", [False, True], ids=["shebang", "helper"])
def test_attack_a_link_an_earlier_item_landed_in_a_relative_ro_path_shows_no_folder_of_home(
        tmp_path: Path, helper: bool) -> None:
    # A link in `tools/venv/bin` (ro_paths: ["tools/venv"], from the checkout) to a script whose `#!` only
    # names HOME/.ssh/id_ed25519 (no program) showed all of ~/.ssh to every later attempt of the repository;
    # a link to a program of the user's beside their tokens (HOME/.aws/helper) showed all of ~/.aws. Nothing
    # runs such a link here: only the installs of a `PREFIX/bin` it leads through are shown.
    home = tmp_path / "home"
    for folder in (".ssh", ".aws"):
        (home / folder).mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY of the user\n")
    (home / ".aws" / "credentials").write_text("PRIVATE KEY of the user's cloud\n")
    (home / ".aws" / "helper").write_text("#!/bin/sh\ncat ~/.aws/credentials\n")
    (home / ".aws" / "helper").chmod(0o755)
    env = {"HOME": str(home)}
    worker = shlex.join([sys.executable, str(HOSTILE / "ro_paths_plant.py"), str(home),
                         *(["helper"] if helper else [])])
    plant = item("PLANT", ["plant"], ["tools/"], check("tools/venv/lib/python3", "#!"))
    remote = make_wave_repo(tmp_path, [plant], worker=worker, attempts=1,
                            concurrency=1, sandbox={"mode": "bwrap", "ro_paths": ["tools/venv"]})
    first = json.loads(wavegit(remote.clone, "run", "--json", env=env).stdout)
    assert first["items"][0]["verified"], first
    # The wave's pull request is merged (it changed only what its item owns), and the checkout updated.
    git(remote.clone, "fetch", "-q", "origin")
    git(remote.clone, "merge", "-q", "--no-edit", "origin/main", f"origin/wavegit/{first['wave_id']}")
    assert (remote.clone / "tools/venv/bin/python").is_symlink()
    tracker = {"version": 1, "items": [item("LOOT", ["loot"], ["src/x"])]}
    write_and_push(remote.clone, {".wavegit/tracker.yaml": yaml.safe_dump(tracker)}, "next item")
    second = wavegit(remote.clone, "run", "--json", env=env)
    written = "\n".join([second.stdout, second.stderr,
                         *(p.read_text(errors="replace") for p in state_files(remote.clone))])
    assert "no loot: [Errno 2] No such file or directory" in written, written
    assert "PRIVATE KEY" not in written
