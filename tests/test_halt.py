"""``wavegit halt`` / ``resume`` and the HALT file: committed through the store, corrupt still halts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.reliability import wavegit_in_process as wavegit_here
from tests.helpers.repos import git, wavegit
from tests.helpers.wave import item, make_wave_repo, write_and_push
from wavegit.trackerbranch import halt


def test_halt_commits_who_when_why_and_run_then_exits_3_claiming_nothing(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])])
    result = wavegit(remote.clone, "halt", "--reason", "deploy freeze")
    assert result.returncode == 0, result.stderr
    notice = json.loads(git(remote.origin, "show", "main:.wavegit/HALT"))
    assert notice["who"] == "Wave Tester <tester@example.com>" and notice["why"] == "deploy freeze"
    assert notice["when"].endswith("+00:00")
    before = git(remote.origin, "rev-parse", "main")
    run = wavegit(remote.clone, "run")
    assert run.returncode == 3
    assert "halted by Wave Tester <tester@example.com>" in run.stderr and "deploy freeze" in run.stderr
    assert "Traceback" not in run.stderr
    assert git(remote.origin, "rev-parse", "main") == before


def test_resume_removes_halt_and_a_second_resume_writes_nothing(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [])
    assert wavegit_here(remote.clone, "halt", "--reason", "stop").returncode == 0
    assert wavegit(remote.clone, "resume").returncode == 0
    assert ".wavegit/HALT" not in git(remote.origin, "ls-tree", "-r", "--name-only", "main")
    head = git(remote.origin, "rev-parse", "main")
    again = wavegit(remote.clone, "resume")
    assert (again.returncode, again.stdout.strip()) == (0, "not halted; nothing to do")
    assert git(remote.origin, "rev-parse", "main") == head


def test_corrupt_halt_still_halts_and_says_it_is_corrupt(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])])
    write_and_push(remote.clone, {".wavegit/HALT": "\x00garbage: [\n"}, "broken halt")
    run = wavegit(remote.clone, "run")
    assert run.returncode == 3 and "corrupt" in run.stderr


def test_empty_reason_is_bad_input_and_writes_nothing(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [])
    head = git(remote.origin, "rev-parse", "main")
    result = wavegit_here(remote.clone, "halt", "--reason", "  ")
    assert result.returncode == 2 and "--reason must not be empty" in result.stderr
    assert git(remote.origin, "rev-parse", "main") == head


@pytest.mark.parametrize("text", [
    '{"who": "a", "when": "t", "why": "w"}',
    "who: a\nwhen: t\nwhy: w\n",
])
def test_halt_files_are_read_as_json_or_yaml(text: str) -> None:
    assert halt.parse(text) == halt.HaltNotice("a", "t", "w")


@pytest.mark.parametrize(("text", "problem"), [
    ("", "not a mapping"),
    ("[1, 2]", "not a mapping"),
    ('{"who": "a", "when": "t"}', "missing or not text: why"),
    ('{"who": 1, "when": "t", "why": " "}', "missing or not text: who, why"),
    ("key: [unclosed", "neither JSON nor YAML"),
])
def test_corrupt_halt_files_are_described_as_corrupt(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        halt.parse(text)
    assert "is corrupt" in halt.describe(text) and problem in halt.describe(text)


def test_render_then_parse_round_trips() -> None:
    notice = halt.HaltNotice("Ann <a@x>", "2026-01-01T00:00:00+00:00", "reason: with colon\nand lines")
    assert halt.parse(halt.render(notice)) == notice


def test_halt_while_halted_says_so_and_keeps_the_first_reason_unless_forced(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [])
    assert wavegit_here(remote.clone, "halt", "--reason", "deploy freeze").returncode == 0
    head = git(remote.origin, "rev-parse", "main")
    again = wavegit_here(remote.clone, "halt", "--reason", "something else")
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("already halted by Wave Tester <tester@example.com> at ")
    assert ": deploy freeze " in again.stdout and again.stdout.strip().endswith(
        "the first notice stands; --force replaces it; nothing written")
    assert git(remote.origin, "rev-parse", "main") == head
    forced = wavegit_here(remote.clone, "halt", "--reason", "something else", "--force")
    assert forced.returncode == 0 and forced.stdout.startswith("halted: something else (commit ")
    assert json.loads(git(remote.origin, "show", "main:.wavegit/HALT"))["why"] == "something else"
