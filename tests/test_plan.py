"""``wavegit plan`` as a real subprocess on real repositories."""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers.reliability import wavegit_in_process as wavegit_here
from tests.helpers.repos import RemoteRepo, git, wavegit

TRACKER = """\
version: 1
items:
  - id: FLY
    prompt: busy
    owns: [src/core.py]
    test: "true"
    status: in_progress
    wave: w1
  - id: OLD
    prompt: small and old
    owns: [src/a.py]
    test: "true"
    priority: P3
  - id: BIG
    prompt: three files, more important
    owns: [src/a.py, src/b.py, src/c.py]
    test: "true"
    priority: P1
  - id: CORE
    prompt: touches the in-flight file
    owns: [SRC/Core.py]
    test: "true"
  - id: LATER
    prompt: waits for BIG
    owns: [docs/]
    test: "true"
    depends_on: [BIG]
  - id: FREE1
    prompt: free
    owns: [lib/x.py]
    test: "true"
  - id: FREE2
    prompt: free
    owns: [lib/y.py]
    test: "true"
  - id: DONE
    prompt: finished
    owns: [src/a.py]
    test: "true"
    status: done
"""

EXPECTED_SKIPPED = [
    {"id": "OLD", "reason": "overlaps BIG"},
    {"id": "CORE", "reason": "in flight: FLY"},
    {"id": "LATER", "reason": "depends on BIG"},
]


def commit_tracker(repo: Path, text: str, config: str | None = None) -> str:
    """Commit the tracker (and optionally a config) on the checked-out branch; the tracker's blob sha."""
    (repo / ".wavegit").mkdir(exist_ok=True)
    (repo / ".wavegit" / "tracker.yaml").write_text(text)
    if config is not None:
        (repo / ".wavegit" / "config.yaml").write_text(config)
    git(repo, "add", ".wavegit")
    git(repo, "commit", "-q", "-m", "tracker")
    return git(repo, "rev-parse", "HEAD:.wavegit/tracker.yaml")


def test_plan_json_takes_priority_first_disjoint_items_and_explains_the_rest(remote_repo: RemoteRepo) -> None:
    repo = remote_repo.clone
    blob = commit_tracker(repo, TRACKER)
    git(repo, "push", "-q", "origin", "main")
    result = wavegit(repo, "plan", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "selected": ["BIG", "FREE1", "FREE2"], "skipped": EXPECTED_SKIPPED, "tracker_sha": blob,
        "tracker": {"ref": "origin/main", "path": ".wavegit/tracker.yaml", "blob": blob},
        "would_start": True, "reason": None, "exit_code": 0,
        # FLY's wave w1 runs nowhere this clone knows of: no lock, no heartbeat, no claimed_at.
        "held": [{"wave": "w1", "items": ["FLY"], "scheduler": "unknown", "host": None, "pid": None,
                  "heartbeat_age_s": None, "lease_ends": None, "release": "wavegit release --wave w1"}]}


def test_plan_reads_the_tracker_branch_not_the_work_tree(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    blob = commit_tracker(tmp_path, TRACKER)
    # An uncommitted edit must not change the plan: the plan is of the committed tracker.
    (tmp_path / ".wavegit" / "tracker.yaml").write_text(TRACKER.replace("priority: P1", "priority: P3"))
    result = wavegit_here(tmp_path, "plan", "--json")
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan["selected"][0] == "BIG"
    assert plan["tracker_sha"] == blob


def test_plan_max_items_option_caps_the_wave(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    commit_tracker(tmp_path, TRACKER)
    result = wavegit_here(tmp_path, "plan", "--json", "--max-items", "2")
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan["selected"] == ["BIG", "FREE1"]
    assert {"id": "FREE2", "reason": "max items"} in plan["skipped"]


def test_plan_uses_max_items_from_config_and_environment(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    commit_tracker(tmp_path, TRACKER, config="max_items: 1\n")
    from_config = wavegit_here(tmp_path, "plan", "--json")
    assert from_config.returncode == 0, from_config.stderr
    assert json.loads(from_config.stdout)["selected"] == ["BIG"]
    from_env = wavegit_here(tmp_path, "plan", "--json", env={"WAVEGIT_MAX_ITEMS": "2"})
    assert json.loads(from_env.stdout)["selected"] == ["BIG", "FREE1"]


def test_plan_rejects_max_items_below_one_with_exit_2(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    commit_tracker(tmp_path, TRACKER)
    for bad in ("0", "-3", "many"):
        result = wavegit_here(tmp_path, "plan", "--max-items", bad)
        assert result.returncode == 2
        assert "--max-items" in result.stderr
        assert "Traceback" not in result.stderr
        assert result.stdout == ""


def test_plan_text_lists_selected_and_a_table_of_skip_reasons(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    blob = commit_tracker(tmp_path, TRACKER)
    result = wavegit_here(tmp_path, "plan")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"tracker main:.wavegit/tracker.yaml blob {blob[:12]}"  # no remote: the local branch
    assert lines[1:5] == ["selected (3):", "  BIG", "  FREE1", "  FREE2"]
    assert lines[5:] == ["skipped (3):", "  ID     REASON", "  OLD    overlaps BIG",
                         "  CORE   in flight: FLY", "  LATER  depends on BIG",
                         "claims held (1 wave(s) not running in this clone):",
                         "  wave w1 holds FLY: its scheduler: unknown (no heartbeat here: `wavegit ls "
                         "--fetch` fetches them); its lease has no valid claimed_at and ends at the next "
                         "`wavegit sync`; `wavegit release --wave w1` returns them now"]


def test_plan_gives_the_same_answer_cold_and_warm_and_fills_the_cache(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    commit_tracker(tmp_path, TRACKER)
    cache = tmp_path / ".git" / "wavegit" / "cache"
    cold = wavegit(tmp_path, "plan", "--json")
    assert cold.returncode == 0, cold.stderr
    assert cache.is_dir() and any(cache.iterdir())
    warm = wavegit(tmp_path, "plan", "--json")
    assert warm.stdout == cold.stdout


def test_plan_skips_an_invalid_item_and_exits_2_as_run_would_saying_the_wave_will_not_start(
        tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    free2 = "  - id: FREE2\n    prompt: free\n"
    bad = TRACKER.replace(free2, free2 + "    priority: P9\n")
    commit_tracker(tmp_path, bad)
    result = wavegit_here(tmp_path, "plan", "--json")
    assert result.returncode == 2, result.stderr
    plan = json.loads(result.stdout)
    reasons = {s["id"]: s["reason"] for s in plan["skipped"]}
    assert reasons["FREE2"].startswith("invalid: ")
    assert "P9" in reasons["FREE2"]
    assert (plan["would_start"], plan["exit_code"]) == (False, 2)
    assert "1 invalid item(s) (FREE2)" in plan["reason"]
    run = wavegit(tmp_path, "run")
    assert run.returncode == 2 and "FREE2" in run.stderr


def test_plan_under_halt_exits_3_as_run_would_and_says_why(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    commit_tracker(tmp_path, TRACKER)
    assert wavegit_here(tmp_path, "halt", "--reason", "release freeze").returncode == 0
    text = wavegit_here(tmp_path, "plan")
    assert text.returncode == 3
    refusal = text.stdout.splitlines()[1]
    assert refusal.startswith("the next wave will not start (`wavegit run` would exit 3): halted by ")
    assert "release freeze" in text.stdout.splitlines()[1]
    plan = json.loads(wavegit_here(tmp_path, "plan", "--json").stdout)
    assert (plan["would_start"], plan["exit_code"]) == (False, 3) and "release freeze" in plan["reason"]
    assert wavegit(tmp_path, "run").returncode == 3


def test_plan_over_the_day_budget_exits_3_as_run_would(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # A record commit of today spent $2, over the $1 a day: what the budget reads from the tracker history.
    monkeypatch.setenv("GIT_COMMITTER_DATE", datetime.now(timezone.utc).isoformat(timespec="seconds"))
    git(tmp_path, "init", "-q", "-b", "main")
    commit_tracker(tmp_path, TRACKER, config="budget: {day_usd: 1}\n")
    git(tmp_path, "commit", "-q", "--allow-empty", "-m", "wavegit: record\n\nWavegit-Cost: 2")
    result = wavegit_here(tmp_path, "plan", "--json")
    plan = json.loads(result.stdout)
    assert result.returncode == 3
    assert (plan["would_start"], plan["exit_code"]) == (False, 3) and "daily budget" in plan["reason"]
    assert wavegit(tmp_path, "run").returncode == 3


def test_plan_on_a_broken_tracker_exits_2_with_a_located_message(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    commit_tracker(tmp_path, "version: 1\nitems: {not: a list}\n")
    result = wavegit_here(tmp_path, "plan", "--json")
    assert result.returncode == 2
    assert result.stderr.startswith(".wavegit/tracker.yaml:2:")
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_plan_without_a_tracker_says_to_run_init(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / "README").write_text("x\n")
    git(tmp_path, "add", "README")
    git(tmp_path, "commit", "-q", "-m", "first")
    result = wavegit_here(tmp_path, "plan")
    assert result.returncode == 2
    assert "wavegit init" in result.stderr
    assert "Traceback" not in result.stderr


def test_plan_outside_a_repository_exits_2(tmp_path: Path) -> None:
    result = wavegit_here(tmp_path, "plan")
    assert result.returncode == 2
    assert "not inside a git work tree" in result.stderr


def test_warm_plan_never_reads_the_tracker_blob_out_of_git(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    blob = commit_tracker(tmp_path, TRACKER)
    cold = wavegit(tmp_path, "plan", "--json")
    assert cold.returncode == 0, cold.stderr
    # Without the blob's object, only the parse cache (keyed by the SHA in the commit's tree) can answer.
    (tmp_path / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    warm = wavegit(tmp_path, "plan", "--json")
    assert warm.returncode == 0, warm.stderr
    assert warm.stdout == cold.stdout
    shutil.rmtree(tmp_path / ".git" / "wavegit" / "cache")
    missing = wavegit(tmp_path, "plan", "--json")
    assert missing.returncode == 1
    assert blob in missing.stderr and "Traceback" not in missing.stderr


def test_plan_with_an_in_flight_item_with_invalid_owns_exits_2_as_run_would_and_caches_the_parse(
        tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    commit_tracker(tmp_path, TRACKER.replace("owns: [src/core.py]", "owns: [../core.py, src/core.py]"))
    result = wavegit(tmp_path, "plan", "--json")
    assert result.returncode == 2, result.stderr
    assert "BIG" in json.loads(result.stdout)["selected"]
    assert any((tmp_path / ".git" / "wavegit" / "cache").glob("tracker-*"))


def test_plan_output_larger_than_a_pipe_buffer_arrives_whole_despite_the_fast_exit(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    item = "  - id: I{0}\n    prompt: p\n    owns: [f{0}.py]\n    test: 'true'\n"
    items = "".join(item.format(n) for n in range(3000))
    commit_tracker(tmp_path, f"version: 1\nitems:\n{items}")
    result = wavegit(tmp_path, "plan", "--max-items", "1")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 5 + 2999  # blob, "selected", its id, "skipped", the column titles; then the rows
    assert lines[-1].split() == ["I2999", "max", "items"]


GOLDEN = Path(__file__).parent / "fixtures" / "plan"
"""Trackers, and the exact output `plan` gave for them before its speed work (wavegit main at dd0b603).
``backlog.yaml``: 700 items of ``bench/backlog.py`` (seed 11) and hand-made ones that reach every rule
(case-insensitive and glob overlaps with items in flight, directories, dependencies on stuck, in-flight and
todo items, a tied component); ``invalid.yaml``: the hand-made ones and invalid items (exit 2). Since then
the output ends with the claims the in-flight items' waves hold (``held`` in JSON), whose scheduler nothing
here knows."""


@pytest.mark.parametrize(("tracker", "args", "exit_code"), [
    ("backlog", (), 0), ("backlog", ("--json",), 0),
    ("backlog", ("--max-items", "100"), 0), ("backlog", ("--json", "--max-items", "100"), 0),
    ("backlog", ("--max-items", "1000"), 0), ("backlog", ("--json", "--max-items", "1000"), 0),
    ("invalid", (), 2), ("invalid", ("--json",), 2),
])
def test_plan_output_is_byte_for_byte_what_it_was_cold_and_warm(
        tmp_path: Path, tracker: str, args: tuple[str, ...], exit_code: int) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    commit_tracker(tmp_path, (GOLDEN / f"{tracker}.yaml").read_text(encoding="utf-8"))
    name = "-".join(arg.lstrip("-") for arg in args) or "text"
    expected = (GOLDEN / "expected" / f"{tracker}.{name}.out").read_text(encoding="utf-8")
    for run in ("cold", "warm"):
        result = wavegit(tmp_path, "plan", *args)
        assert (result.returncode, result.stderr) == (exit_code, ""), run
        assert result.stdout == expected, run


def test_a_warm_plan_imports_neither_the_item_model_nor_dataclasses(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    commit_tracker(tmp_path, TRACKER)
    assert wavegit(tmp_path, "plan", "--json").returncode == 0
    warm = wavegit(tmp_path, "plan", "--json", env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert warm.returncode == 0, warm.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in warm.stderr.splitlines() if "|" in line}
    assert "wavegit.model.select" in imported, "the import log is empty"
    assert not imported & {"dataclasses", "wavegit.model.tracker", "yaml"}


# FREE1 runs the profile `deep`; BIG and FREE2 config `worker`.
PROFILED = TRACKER.replace("    prompt: free\n    owns: [lib/x.py]\n",
                           "    prompt: free\n    owns: [lib/x.py]\n    worker: deep\n")


def worker_config(worker: str, deep: str = "true") -> str:
    return f"max_items: 8\nworker: {worker}\nworkers:\n  deep:\n    command: {deep} --fast\n"


def test_plan_warns_where_the_config_names_a_worker_program_that_is_not_found_and_exits_as_before(
        tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    commit_tracker(tmp_path, PROFILED, config=worker_config("'true'"))
    found = wavegit(tmp_path, "plan", "--json")
    assert (found.returncode, found.stderr) == (0, "")
    (tmp_path / ".wavegit" / "config.yaml").write_text(worker_config("claud -p"))
    typo = wavegit(tmp_path, "plan", "--json")
    assert (typo.returncode, typo.stdout) == (0, found.stdout)
    assert typo.stderr == (".wavegit/config.yaml:2:9: warning: the worker program 'claud' is not on PATH; "
                           "`wavegit run` here refuses to start (exit 2) until it is: install it, or change "
                           "`worker`\n")
    text = wavegit_here(tmp_path, "plan")
    assert text.returncode == 0 and text.stderr == typo.stderr


def test_plan_warns_about_the_profile_a_selected_item_names_and_the_variable_that_sets_worker(
        tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    commit_tracker(tmp_path, PROFILED, config=worker_config("'true'", deep="no-such-agent-here"))
    result = wavegit_here(tmp_path, "plan")
    assert result.returncode == 0
    assert result.stderr.startswith(".wavegit/config.yaml:5:14: warning: the worker program "
                                    "'no-such-agent-here' is not on PATH;")
    assert result.stderr.endswith("change `workers.deep.command`\n")
    # BIG alone: FREE1's profile would not run
    unselected = wavegit_here(tmp_path, "plan", "--max-items", "1")
    assert (unselected.returncode, unselected.stderr) == (0, "")
    from_env = wavegit_here(tmp_path, "plan", "--max-items", "1", env={"WAVEGIT_WORKER": "/no/such/agent"})
    assert from_env.returncode == 0
    assert from_env.stderr.startswith("WAVEGIT_WORKER: warning: the worker program '/no/such/agent' is not "
                                      "an executable file;")
    assert from_env.stderr.endswith("change WAVEGIT_WORKER\n")


def test_plan_says_nothing_of_a_default_worker_not_found_nor_of_a_relative_path(tmp_path: Path) -> None:
    # The default is no typo (`run` names it when it refuses), and a relative path is in the item's tree.
    git(tmp_path, "init", "-q", "-b", "main")
    commit_tracker(tmp_path, TRACKER, config=worker_config("./agents/run.sh"))
    only_git = tmp_path / "bin"
    only_git.mkdir()
    (only_git / "git").symlink_to(shutil.which("git") or "git")
    relative = wavegit_here(tmp_path, "plan", "--json", env={"PATH": str(only_git)})
    (tmp_path / ".wavegit" / "config.yaml").unlink()
    default = wavegit_here(tmp_path, "plan", "--json", env={"PATH": str(only_git)})
    assert (relative.returncode, relative.stderr, default.returncode, default.stderr) == (0, "", 0, "")


def test_a_presets_program_is_its_name_as_plan_looks_it_up() -> None:
    from wavegit.attempts.agents import PRESETS
    from wavegit.attempts.preset import Launch

    assert {name: preset.argv(Launch("", sandboxed, ""), ())[0] for name, preset in PRESETS.items()
            for sandboxed in (False, True)} == {name: name for name in PRESETS}


@given(st.text(st.characters(blacklist_categories=("Cs",)), max_size=20))
def test_the_program_plan_looks_up_is_the_first_word_run_splits(command: str) -> None:
    from wavegit.attempts.runner import command_argv
    from wavegit.core.errors import UsageError
    from wavegit.model.workerprogram import _program

    try:
        expected: str | None = command_argv(command)[0]
    except UsageError:
        expected = None
    assert _program(command) == expected


def test_plan_and_validate_exit_2_as_run_does_when_the_base_branch_does_not_exist(
        remote_repo: RemoteRepo) -> None:
    # plan said "selected (3)" and validate "ok" while `run` refused the config's base_branch typo (exit 2).
    repo = remote_repo.clone
    commit_tracker(repo, TRACKER, config="tracker_branch: main\nworker: 'true'\n")
    git(repo, "push", "-q", "origin", "main")
    expected = ("base_branch 'mian': no such branch on origin (did you mean 'main'?); waves branch from "
                "it and obey the config committed there: set WAVEGIT_BASE_BRANCH to the branch your work "
                "lands on")
    for command in (["plan"], ["plan", "--json"], ["validate"], ["run"]):
        result = wavegit(repo, *command, env={"WAVEGIT_BASE_BRANCH": "mian"})
        assert result.returncode == 2, command
        assert result.stderr.endswith(f"environment variable WAVEGIT_BASE_BRANCH: {expected}\n"), command
        assert result.stdout == "" and "Traceback" not in result.stderr, command
    assert wavegit(repo, "plan", env={"WAVEGIT_BASE_BRANCH": "main"}).returncode == 0


def test_plan_locates_a_base_branch_typo_in_the_checkouts_config(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    commit_tracker(tmp_path, TRACKER, config="tracker_branch: main\nbase_branch: mian\n")
    result = wavegit(tmp_path, "plan")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.startswith("wavegit plan: .wavegit/config.yaml:2:14: base_branch 'mian': "
                                    "no such branch here (did you mean 'main'?)")
