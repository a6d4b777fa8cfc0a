"""`wavegit validate` as a real subprocess in real repositories."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from tests.helpers.repos import EXAMPLE, RemoteRepo, git, wavegit, with_tracker


def test_validate_ok_prints_item_count(remote_repo: RemoteRepo) -> None:
    result = wavegit(with_tracker(remote_repo), "validate")
    assert (result.returncode, result.stdout, result.stderr) == (0, "ok: 8 items\n", "")


def test_validate_reports_every_problem_with_location_and_writes_nothing(remote_repo: RemoteRepo) -> None:
    bad = EXAMPLE.read_text().replace("priority: P3", "priority: P7").replace("owns: [migrations/]",
                                                                               "owns: migrations/")
    clone = with_tracker(remote_repo, bad)
    head = git(clone, "rev-parse", "HEAD")
    result = wavegit(clone, "validate")
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 2 and all(re.match(r"^\.wavegit/tracker\.yaml:\d+:\d+: item ", t) for t in lines)
    assert "API-8" in lines[0] and "DB-2" in lines[1]
    assert git(clone, "rev-parse", "HEAD") == head


def test_validate_reports_config_and_tracker_problems_together(remote_repo: RemoteRepo) -> None:
    clone = with_tracker(remote_repo, "version: 1\nitems: nope\n")
    (clone / ".wavegit" / "config.yaml").write_text("concurrency: 0\n")
    result = wavegit(clone, "validate")
    assert result.returncode == 2
    assert result.stderr.startswith(".wavegit/config.yaml:1:14: ")
    assert ".wavegit/tracker.yaml:2:8: " in result.stderr


def test_validate_missing_tracker_is_a_clear_error(remote_repo: RemoteRepo) -> None:
    result = wavegit(remote_repo.clone, "validate")
    assert result.returncode == 2 and "no such file" in result.stderr and "Traceback" not in result.stderr


def test_validate_a_missing_file_names_the_directory_it_was_read_from_not_init(tmp_path: Path) -> None:
    result = wavegit(tmp_path, "validate", "--file", "nope.yaml")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == (f"wavegit validate: nope.yaml: no such file (check the path given to --file; "
                             f"it is read from {tmp_path.resolve()})\n")


def test_validate_file_works_outside_a_repository(tmp_path: Path) -> None:
    shutil.copy(EXAMPLE, tmp_path / "t.yaml")
    result = wavegit(tmp_path, "validate", "--file", "t.yaml")
    assert (result.returncode, result.stdout) == (0, "ok: 8 items\n")


def test_validate_bad_environment_variable_exits_2_naming_it(remote_repo: RemoteRepo) -> None:
    result = wavegit(with_tracker(remote_repo), "validate", env={"WAVEGIT_MAX_ITEMS": "lots"})
    assert result.returncode == 2 and "WAVEGIT_MAX_ITEMS" in result.stderr
