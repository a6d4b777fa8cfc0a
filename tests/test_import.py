"""``wavegit import``: another tool's backlog lands in one compare-and-swap commit, or nothing is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.reliability import wavegit_in_process as wavegit_here
from tests.helpers.repos import RemoteRepo, git, wavegit
from wavegit.core.yamlread import Node
from wavegit.model import tracker

TRACKER = ".wavegit/tracker.yaml"
BRANCH = "wavegit-tracker"  # where `wavegit init` puts the tracker in a repository with a remote


def initialised(remote: RemoteRepo) -> RemoteRepo:
    result = wavegit(remote.clone, "init")
    assert result.returncode == 0, result.stderr
    return remote


def origin_tracker(remote: RemoteRepo) -> tracker.Tracker:
    return tracker.loads(git(remote.origin, "show", f"{BRANCH}:{TRACKER}") + "\n")


def write_backlog(clone: Path, records: object, name: str = "backlog.json") -> str:
    (clone / name).write_text(json.dumps(records, indent=2))
    return name


AESOP = {"items": [
    {"slug": "new feature", "prompt": "Add it.", "ownsFiles": ["src/feature.py"], "testCmd": "true",
     "priority": "P2", "createdAt": "2026-03-01T00:00:00Z"},
    {"slug": "old bug", "prompt": "Fix it.", "ownsFiles": ["src\\bug.py"], "testCmd": "true",
     "priority": "P2", "status": "in_progress", "createdAt": "2026-01-01T00:00:00Z"},
    {"id": "DONE-1", "slug": "shipped", "prompt": "Was done.", "ownsFiles": ["src/old.py"], "testCmd": "true",
     "status": "done"}]}


def test_import_adds_every_item_oldest_first_in_one_commit_that_plan_then_reads(
        remote_repo: RemoteRepo) -> None:
    remote = initialised(remote_repo)
    before = git(remote.origin, "rev-parse", BRANCH)
    result = wavegit_here(remote.clone, "import", write_backlog(remote.clone, AESOP), "--from", "aesop")
    assert result.returncode == 0, result.stderr
    assert "imported 3 items from backlog.json: commit" in result.stdout
    assert git(remote.origin, "rev-list", "--count", f"{before}..{BRANCH}") == "1"
    loaded = origin_tracker(remote)
    assert [(i.id, i.status, i.owns) for i in loaded.items] == [
        ("old-bug", "todo", ("src/bug.py",)), ("new-feature", "todo", ("src/feature.py",)),
        ("DONE-1", "done", ("src/old.py",))]
    # Equal priority: the older item is the first the next wave would take.
    plan = json.loads(wavegit_here(remote.clone, "plan", "--json", "--max-items", "1").stdout)
    assert plan["selected"] == ["old-bug"]


def test_dry_run_lists_the_items_and_writes_nothing(remote_repo: RemoteRepo) -> None:
    remote = initialised(remote_repo)
    before = git(remote.origin, "rev-parse", BRANCH)
    name = write_backlog(remote.clone, AESOP)
    result = wavegit_here(remote.clone, "import", name, "--from", "aesop", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "would add 3 items" in result.stdout and "nothing written" in result.stdout
    listed = [line.split()[0] for line in result.stdout.splitlines()[1:]]
    assert listed == ["old-bug", "new-feature", "DONE-1"]
    assert git(remote.origin, "rev-parse", BRANCH) == before


def test_a_bad_backlog_is_every_problem_at_its_line_exit_2_and_nothing_written(
        remote_repo: RemoteRepo) -> None:
    remote = initialised(remote_repo)
    before = git(remote.origin, "rev-parse", BRANCH)
    records = [{"slug": "a", "prompt": "ok", "ownsFiles": ["../outside"], "testCmd": "true"},
               {"slug": "b", "prompt": "", "ownsFiles": ["src/b.py"], "testCmd": "true", "priority": "high"}]
    result = wavegit_here(remote.clone, "import", write_backlog(remote.clone, records), "--from", "aesop")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert lines[0].startswith("backlog.json:2:3: item 1 (a): ownsFiles '../outside'")
    assert lines[1:] == ["backlog.json:10:3: item 2 (b): prompt is missing",
                         "backlog.json:10:3: item 2 (b): priority: must be one of P0, P1, P2, P3, got 'high' "
                         "(hint: e.g. 'P0')"]
    assert git(remote.origin, "rev-parse", BRANCH) == before


def test_a_file_that_never_ends_is_refused_at_its_bound_not_read_until_memory_runs_out(
        remote_repo: RemoteRepo) -> None:
    remote = initialised(remote_repo)
    head = git(remote.origin, "rev-parse", BRANCH)
    result = wavegit_here(remote.clone, "import", "/dev/zero", "--from", "csv")
    assert (result.returncode, result.stderr) == (
        2, "wavegit import: /dev/zero: cannot read it ([Errno 27] more than 268,435,456 bytes)\n")
    assert git(remote.origin, "rev-parse", BRANCH) == head


def test_an_id_the_tracker_already_has_refuses_the_whole_import(remote_repo: RemoteRepo) -> None:
    remote = initialised(remote_repo)
    name = write_backlog(remote.clone, AESOP)
    assert wavegit_here(remote.clone, "import", name, "--from", "aesop").returncode == 0
    head = git(remote.origin, "rev-parse", BRANCH)
    again = wavegit_here(remote.clone, "import", "backlog.json", "--from", "aesop")
    assert again.returncode == 2
    assert "id 'DONE-1' is already taken" in again.stderr
    assert git(remote.origin, "rev-parse", BRANCH) == head


def test_jsonl_and_csv_import_through_the_command_too(remote_repo: RemoteRepo) -> None:
    remote = initialised(remote_repo)
    (remote.clone / "b.jsonl").write_text(json.dumps({"slug": "j", "prompt": "p", "ownsFiles": ["j.py"],
                                                      "testCmd": "true"}) + "\n")
    (remote.clone / "b.csv").write_text("id,prompt,owns,test\nC-1,do it,c.py;d.py,true\n")
    one = wavegit_here(remote.clone, "import", "b.jsonl", "--from", "jsonl")
    assert one.returncode == 0 and one.stdout.startswith("imported 1 item from b.jsonl: commit ")
    assert wavegit_here(remote.clone, "import", "b.csv", "--from", "csv").returncode == 0
    assert [(i.id, i.owns) for i in origin_tracker(remote).items] == [
        ("j", ("j.py",)), ("C-1", ("c.py", "d.py"))]


def test_a_missing_file_or_unknown_format_is_exit_2_naming_it(remote_repo: RemoteRepo) -> None:
    remote = initialised(remote_repo)
    missing = wavegit_here(remote.clone, "import", "nope.json", "--from", "aesop")
    assert missing.returncode == 2 and missing.stderr.startswith("wavegit import: nope.json: cannot read it")
    unknown = wavegit_here(remote.clone, "import", "nope.json", "--from", "trello")
    assert unknown.returncode == 2 and "invalid choice: 'trello'" in unknown.stderr


def test_attack_a_hostile_backlog_is_exit_2_one_line_and_nothing_written(remote_repo: RemoteRepo) -> None:
    remote = initialised(remote_repo)
    before = git(remote.origin, "rev-parse", BRANCH)
    (remote.clone / "deep.json").write_text("[" * 100000 + "]" * 100000)
    result = wavegit_here(remote.clone, "import", "deep.json", "--from", "aesop")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.splitlines() == ["deep.json:1:1: not JSON: nested too deeply to be a backlog"]
    assert git(remote.origin, "rev-parse", BRANCH) == before


def test_imported_dependencies_hold_the_dependent_back_in_plan(remote_repo: RemoteRepo) -> None:
    remote = initialised(remote_repo)
    records = [{"slug": "second", "prompt": "p", "ownsFiles": ["src/b.py"], "testCmd": "true",
                "priority": "P0", "dependsOn": ["first"]},
               {"slug": "first", "prompt": "p", "ownsFiles": ["src/a.py"], "testCmd": "true",
                "priority": "P3"}]
    backlog = write_backlog(remote.clone, records)
    # The listing says what each item waits for (a trial read a dry run without a word of it).
    dry = wavegit_here(remote.clone, "import", backlog, "--from", "aesop", "--dry-run")
    assert dry.stdout.splitlines()[1:] == ["  second  P0  todo    second  (after first)",
                                           "  first   P3  todo    first"]
    result = wavegit_here(remote.clone, "import", backlog, "--from", "aesop")
    assert result.returncode == 0, result.stderr
    assert "ignored key" not in result.stderr
    assert origin_tracker(remote).get("second").depends_on == ("first",)  # type: ignore[union-attr]
    plan = json.loads(wavegit_here(remote.clone, "plan", "--json").stdout)
    assert plan["selected"] == ["first"]
    assert {"id": "second", "reason": "depends on first"} in plan["skipped"]


def test_a_big_import_parses_the_tracker_a_fixed_number_of_times_not_once_per_item(
        remote_repo: RemoteRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    # A trial's 1,800-item backlog took 4.5 minutes to dry-run: each item was appended by parsing the
    # whole tracker again (quadratic). The count of parses must not grow with the number of items.
    from wavegit import cli
    from wavegit.core import yamlcompose

    remote = initialised(remote_repo)
    parses: list[int] = []
    real_compose = yamlcompose.compose

    def counted(text: str, name: str, **options: bool) -> Node | None:
        parses.append(len(text))
        return real_compose(text, name, **options)

    monkeypatch.setattr(yamlcompose, "compose", counted)

    def parses_for(count: int) -> int:
        records = [{"id": f"B-{n}", "prompt": "p", "ownsFiles": [f"src/b{n}.py"], "testCmd": "true"}
                   for n in range(count)]
        (remote.clone / "big.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
        parses.clear()
        assert cli.main(["-C", str(remote.clone), "import", "big.jsonl", "--from", "jsonl", "--dry-run"]) == 0
        return len(parses)

    parses_for(2)  # the tracker's own parse, cached by blob from then on
    assert parses_for(40) == parses_for(2)


def test_a_worker_profile_the_config_lacks_refuses_the_import_before_the_tracker_is_written(
        remote_repo: RemoteRepo) -> None:
    remote = initialised(remote_repo)
    before = git(remote.origin, "rev-parse", BRANCH)
    records = [{"slug": "a", "prompt": "p", "ownsFiles": ["a.py"], "testCmd": "true", "worker": "slow"}]
    result = wavegit_here(remote.clone, "import", write_backlog(remote.clone, records), "--from", "aesop")
    assert (result.returncode, result.stderr) == (2, (
        "backlog.json:2:3: item 1 (a): worker 'slow': no such profile in `workers` of the config "
        "(it has none) (hint: add it to `workers` in .wavegit/config.yaml)\n"))
    assert git(remote.origin, "rev-parse", BRANCH) == before
