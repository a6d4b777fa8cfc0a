"""wavegit.engine.preflight: what ``run`` refuses inside its claim, before anything is written (the CLI
path, with nothing written, is in test_run.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.repos import RemoteRepo
from wavegit.core.errors import UsageError, ValidationError
from wavegit.core.parsecache import blob_sha
from wavegit.core.repo import discover
from wavegit.engine import preflight
from wavegit.model import tracker
from wavegit.model.config import Config, WorkerProfile
from wavegit.trackerbranch.store import Snapshot


def _item(item_id: str, test: str = "true") -> tracker.Item:
    return tracker.Item(id=item_id, prompt="p", owns=("a.py",), test=test)


def test_a_worker_found_on_path_or_as_an_executable_file_passes(tmp_path: Path) -> None:
    program = tmp_path / "agent"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    preflight.check_worker(Config(worker="agent --flag"), {"PATH": str(tmp_path)})
    preflight.check_worker(Config(worker=str(program)), {"PATH": ""})
    # Relative to the item's tree, which only the launch has: left to it.
    preflight.check_worker(Config(worker="tools/agent"), {"PATH": ""})


@pytest.mark.parametrize(("worker", "wave_test", "message"), [
    ("claude", "", "'claude' is not on PATH"),
    ("/nowhere/agent -p", "", "'/nowhere/agent' is not an executable file"),
    ("agent 'open", "", "worker: cannot parse command"),
    ("agent", "pytest 'open", "wave_test: cannot parse command"),
])
def test_a_worker_that_cannot_run_is_bad_input_saying_nothing_was_claimed(
        tmp_path: Path, worker: str, wave_test: str, message: str) -> None:
    (tmp_path / "agent").write_text("#!/bin/sh\n")
    (tmp_path / "agent").chmod(0o755)
    with pytest.raises(UsageError, match="nothing was claimed") as raised:
        preflight.check_worker(Config(worker=worker, wave_test=wave_test), {"PATH": str(tmp_path)})
    assert message in str(raised.value)


def test_a_worker_program_not_found_is_said_where_the_config_sets_it(tmp_path: Path) -> None:
    # As plan's warning does: a typo in `worker:` or a profile's command is named at its path:line:col.
    (tmp_path / ".wavegit").mkdir()
    (tmp_path / ".wavegit" / "config.yaml").write_text(
        "worker: claud -p\nworkers:\n  slow:\n    command: slwo --x\n")
    config = Config(worker="claud -p", workers=(WorkerProfile(name="slow", command="slwo --x"),))
    with pytest.raises(UsageError) as raised:
        preflight.check_worker(config, {"PATH": ""}, root=tmp_path)
    assert str(raised.value).startswith(".wavegit/config.yaml:1:9: worker 'claud -p': 'claud' is not on PATH")
    with pytest.raises(UsageError) as raised:
        preflight.check_worker(config, {"PATH": ""}, ["slow"], root=tmp_path)
    assert str(raised.value).startswith(".wavegit/config.yaml:4:14: worker profile 'slow': 'slwo' is not")
    with pytest.raises(UsageError) as raised:
        preflight.check_worker(config, {"PATH": "", "WAVEGIT_WORKER": "claud -p"}, root=tmp_path)
    assert str(raised.value).startswith("WAVEGIT_WORKER: worker 'claud -p'")


def test_a_non_executable_file_is_not_a_worker(tmp_path: Path) -> None:
    (tmp_path / "agent").write_text("#!/bin/sh\n")
    with pytest.raises(UsageError, match="is not an executable file"):
        preflight.check_worker(Config(worker=str(tmp_path / "agent")), {"PATH": ""})


def test_items_need_a_test_that_splits_and_an_id_that_names_a_branch() -> None:
    preflight.check_items([_item("A-1"), _item("b.c")], "w-20260101-000000-abcd")
    with pytest.raises(UsageError, match=r"item x\.lock: its id cannot name the git branch "
                                         r"wavegit/items/w-20260101-000000-abcd/x\.lock: .*'\.lock'"):
        preflight.check_items([_item("A-1"), _item("x.lock")], "w-20260101-000000-abcd")
    with pytest.raises(UsageError, match="item A-1: test: cannot parse command"):
        preflight.check_items([_item("A-1", test="sh -c 'open")], "w-20260101-000000-abcd")


def test_an_invalid_tracker_is_located_in_the_blob_read(remote_repo: RemoteRepo) -> None:
    repo = discover(remote_repo.clone)
    text = ("version: 1\nitems:\n  - id: A\n    prompt: p\n    owns: [a.py]\n    priority: P9\n"
            "    test: 'true'\n")
    with pytest.raises(ValidationError) as raised:
        preflight.check_tracker(repo, Config(), Snapshot(text, blob_sha(text), None))
    [problem] = raised.value.problems
    assert (problem.line, problem.item_id) == (6, "A")
    good = text.replace("P9", "P1")
    loaded = preflight.check_tracker(repo, Config(), Snapshot(good, blob_sha(good), None))
    assert [item.id for item in loaded.items] == ["A"]
