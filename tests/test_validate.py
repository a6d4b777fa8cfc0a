"""`wavegit validate` as a real subprocess in real repositories."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from tests.helpers.reliability import wavegit_in_process as wavegit_here
from tests.helpers.repos import EXAMPLE, RemoteRepo, git, wavegit, with_tracker


def published(remote_repo: RemoteRepo) -> Path:
    """The example tracker committed and pushed: the tracker branch's, which validate checks by default."""
    clone = with_tracker(remote_repo)
    git(clone, "add", ".wavegit")
    git(clone, "commit", "-q", "-m", "tracker")
    git(clone, "push", "-q", "origin", "main")
    return clone


def test_validate_worktree_ok_prints_item_count_and_the_file(remote_repo: RemoteRepo) -> None:
    result = wavegit(with_tracker(remote_repo), "validate", "--worktree")
    assert (result.returncode, result.stdout, result.stderr) == (
        0, "ok: 8 items in the work tree's .wavegit/tracker.yaml\n", "")


def test_validate_checks_the_tracker_branch_plan_reads_and_names_it(remote_repo: RemoteRepo) -> None:
    clone = published(remote_repo)
    blob = git(clone, "rev-parse", "origin/main:.wavegit/tracker.yaml")
    result = wavegit(clone, "validate")
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == f"ok: 8 items in origin/main:.wavegit/tracker.yaml blob {blob[:12]}\n"
    as_json = json.loads(wavegit_here(clone, "validate", "--json").stdout)
    assert as_json == {"ok": True, "items": 8, "problems": [],
                       "tracker": {"ref": "origin/main", "path": ".wavegit/tracker.yaml", "blob": blob}}


def test_a_tab_pushed_from_another_clone_fails_validate_as_it_fails_plan(remote_repo: RemoteRepo) -> None:
    clone = published(remote_repo)
    other = remote_repo.new_clone("other")
    tracker = other / ".wavegit" / "tracker.yaml"
    lines = tracker.read_text().splitlines(keepends=True)
    at = next(n for n, line in enumerate(lines) if line.startswith("  - id: API-8"))
    lines[at + 1] = "\t" + lines[at + 1].lstrip()
    tracker.write_text("".join(lines))
    git(other, "commit", "-q", "-am", "a tab")
    git(other, "push", "-q", "origin", "main")
    git(clone, "fetch", "-q")
    # This clone's work tree still holds the good file; plan and validate both read origin/main.
    plan = wavegit_here(clone, "plan")
    result = wavegit_here(clone, "validate")
    assert plan.returncode == result.returncode == 2
    problems = [line for line in result.stderr.splitlines() if not line.startswith("note: ")]
    assert problems and problems[0].startswith(f".wavegit/tracker.yaml:{at + 2}:")
    assert plan.stderr.splitlines()[0] == problems[0]
    assert "note: checked the tracker at origin/main; your work tree's .wavegit/tracker.yaml differs" in (
        result.stderr)
    assert wavegit_here(clone, "validate", "--worktree").returncode == 0


def test_validate_json_lists_every_problem_and_exits_2(remote_repo: RemoteRepo) -> None:
    clone = with_tracker(remote_repo, EXAMPLE.read_text().replace("priority: P3", "priority: P7"))
    result = wavegit_here(clone, "validate", "--worktree", "--json")
    assert result.returncode == 2
    answer = json.loads(result.stdout)
    assert answer["ok"] is False and answer["tracker"]["ref"] is None
    [problem] = answer["problems"]
    assert problem["item"] == "API-8" and "P7" in problem["message"] and problem["line"] > 1


def test_validate_reports_every_problem_with_location_and_writes_nothing(remote_repo: RemoteRepo) -> None:
    bad = EXAMPLE.read_text().replace("priority: P3", "priority: P7").replace("owns: [migrations/]",
                                                                               "owns: migrations/")
    clone = with_tracker(remote_repo, bad)
    head = git(clone, "rev-parse", "HEAD")
    result = wavegit_here(clone, "validate", "--worktree")
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 2 and all(re.match(r"^\.wavegit/tracker\.yaml:\d+:\d+: item ", t) for t in lines)
    assert "API-8" in lines[0] and "DB-2" in lines[1]
    assert git(clone, "rev-parse", "HEAD") == head


def test_an_item_naming_no_profile_is_reported_with_the_other_problems_at_once(
        remote_repo: RemoteRepo) -> None:
    # It used to show up only once every other problem was fixed: one more round of validate.
    text = ("version: 1\nitems:\n"
            "  - {id: A, prompt: p, owns: [a.py], test: t, priority: P7}\n"
            "  - {id: B, prompt: p, owns: [b.py], test: t, worker: ghost}\n")
    result = wavegit(with_tracker(remote_repo, text), "validate", "--worktree")
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert [line.split(": item ")[0] for line in lines] == [".wavegit/tracker.yaml:3:57",
                                                             ".wavegit/tracker.yaml:4:55"]
    assert "'P7'" in lines[0] and "worker 'ghost' is no profile of the config" in lines[1]


def test_validate_reports_config_and_tracker_problems_together(remote_repo: RemoteRepo) -> None:
    clone = with_tracker(remote_repo, "version: 1\nitems: nope\n")
    (clone / ".wavegit" / "config.yaml").write_text("concurrency: 0\n")
    result = wavegit_here(clone, "validate", "--worktree")
    assert result.returncode == 2
    assert result.stderr.startswith(".wavegit/config.yaml:1:14: ")
    assert ".wavegit/tracker.yaml:2:8: " in result.stderr


def test_validate_missing_tracker_is_a_clear_error(remote_repo: RemoteRepo) -> None:
    result = wavegit_here(remote_repo.clone, "validate")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr == ("wavegit validate: no tracker at origin/main:.wavegit/tracker.yaml (no "
                             ".wavegit/config.yaml in this checkout: if someone ran `wavegit init` already, "
                             "`git pull` brings it and it says where the tracker is; else run `wavegit "
                             "init`; `wavegit validate --worktree` checks the file in your work tree)\n")
    result = wavegit_here(remote_repo.clone, "validate", "--worktree")
    assert result.returncode == 2 and "no such file" in result.stderr and "Traceback" not in result.stderr


def test_validate_worktree_on_the_base_branch_says_the_tracker_lives_on_its_own_branch(
        remote_repo: RemoteRepo) -> None:
    # the tracker on wavegit-tracker, as by default
    assert wavegit_here(remote_repo.clone, "init").returncode == 0
    result = wavegit_here(remote_repo.clone, "validate", "--worktree")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr == (
        "wavegit validate: .wavegit/tracker.yaml: no such file (the tracker lives on branch wavegit-tracker, "
        "not in this checkout: `wavegit validate` checks that branch's, `wavegit validate --file PATH` "
        "a copy; items change with `wavegit add` and `wavegit edit`)\n")
    assert wavegit_here(remote_repo.clone, "validate").returncode == 0


def test_validate_reports_config_problems_even_without_a_tracker(remote_repo: RemoteRepo) -> None:
    (remote_repo.clone / ".wavegit").mkdir()
    (remote_repo.clone / ".wavegit" / "config.yaml").write_text("concurrency: 0\n")
    result = wavegit_here(remote_repo.clone, "validate")
    assert result.returncode == 2 and result.stderr.startswith(".wavegit/config.yaml:1:14: ")


def test_validate_a_missing_file_names_the_directory_it_was_read_from_not_init(tmp_path: Path) -> None:
    result = wavegit_here(tmp_path, "validate", "--file", "nope.yaml")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == (f"wavegit validate: nope.yaml: no such file (check the path given to --file; "
                             f"it is read from {tmp_path.resolve()})\n")


def test_validate_file_refuses_a_file_that_never_ends_at_its_bound(tmp_path: Path) -> None:
    result = wavegit_here(tmp_path, "validate", "--file", "/dev/zero")
    assert (result.returncode, result.stderr) == (
        2, "wavegit validate: /dev/zero: cannot read: more than 268,435,456 bytes\n")


def test_validate_file_works_outside_a_repository(tmp_path: Path) -> None:
    shutil.copy(EXAMPLE, tmp_path / "t.yaml")
    result = wavegit_here(tmp_path, "validate", "--file", "t.yaml")
    assert (result.returncode, result.stdout) == (0, "ok: 8 items\n")


def test_validate_bad_environment_variable_exits_2_naming_it(remote_repo: RemoteRepo) -> None:
    result = wavegit(with_tracker(remote_repo), "validate", "--worktree", env={"WAVEGIT_MAX_ITEMS": "lots"})
    assert result.returncode == 2 and "WAVEGIT_MAX_ITEMS" in result.stderr


def test_an_invalid_tracker_as_last_fetched_says_the_remote_may_have_it_fixed_and_how_to_fetch(
        remote_repo: RemoteRepo) -> None:
    # A stale clone's plan, validate and ls named the problem of a tracker already fixed on the remote,
    # with no word of fetching it: plan even said `run` would exit 2, though run fetches first.
    clone = published(remote_repo)
    tracker = clone / ".wavegit" / "tracker.yaml"
    good = tracker.read_text()
    tracker.write_text(good.replace("priority: P1", "priority: P9", 1))
    git(clone, "commit", "-q", "-am", "a bad priority")
    git(clone, "push", "-q", "origin", "main")
    tracker.write_text(good)
    git(clone, "commit", "-q", "-am", "fixed")
    git(clone, "push", "-q", "origin", "main")
    git(clone, "update-ref", "refs/remotes/origin/main", "HEAD~1")  # as last fetched: the bad one
    hint = ("this is origin/main as last fetched; `wavegit pull` fetches the remote's, which may be fixed "
            "already")
    plan, validate, ls = (wavegit(clone, *command) for command in (["plan"], ["validate"], ["ls"]))
    assert (plan.returncode, validate.returncode, ls.returncode) == (2, 2, 0)
    assert f"`run` refuses the whole tracker until they are fixed; {hint}\n" in plan.stdout
    problems = [line for line in validate.stderr.splitlines() if not line.startswith("note: ")]
    assert problems and problems[0].startswith(".wavegit/tracker.yaml:")
    assert validate.stderr.splitlines()[-1] == f"note: {hint}"
    assert ls.stderr.splitlines()[-1] == (
        f"1 item(s) have problems; run `wavegit validate` for details; {hint}")
    broken = clone / ".wavegit" / "tracker.yaml"
    broken.write_text("version: 1\nitems: {not: a list}\n")  # the whole file, not an item
    git(clone, "commit", "-q", "-am", "broken")
    git(clone, "update-ref", "refs/remotes/origin/main", "HEAD")
    plan = wavegit(clone, "plan")
    assert plan.returncode == 2 and plan.stderr.splitlines()[-1] == f"note: {hint}"
    fetched = wavegit(clone, "validate", "--fetch")
    assert fetched.returncode == 0 and "as last fetched" not in fetched.stderr
