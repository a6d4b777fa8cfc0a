"""``wavegit demo`` end to end as a real subprocess, its built-in worker, and its own verdict."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.repos import REPO_ROOT, git, wavegit
from wavegit.demo import walkthrough
from wavegit.demo.project import EDITS
from wavegit.model import tracker
from wavegit.model.report import ItemReport, SkippedItem, WaveReport, WaveTestReport

pytestmark = pytest.mark.slow  # the demo project's whole wave


def test_demo_runs_a_wave_where_each_item_ends_as_designed(tmp_path: Path) -> None:
    keep = tmp_path / "kept"
    result = wavegit(tmp_path, "demo", "--json", "--keep", str(keep))
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert (out["ok"], out["problems"], out["directory"]) == (True, [], str(keep.resolve()))
    assert out["plan"]["selected"] == ["PRICE-1", "MONEY-2", "TAX-5", "STOCK-6"]
    items = {i["id"]: i for i in out["report"]["items"]}
    assert {k: (i["verified"], i["status"]) for k, i in items.items()} == {
        "PRICE-1": (True, "review"), "MONEY-2": (True, "review"), "TAX-5": (False, "todo"),
        "STOCK-6": (False, "todo")}
    assert (items["TAX-5"]["test_exit"], items["TAX-5"]["attempts"]) == (1, 2)
    assert items["STOCK-6"]["ownership_violations"] == ["README.md"]
    assert {s["id"]: s["reason"] for s in out["report"]["skipped"]} == {
        "MONEY-3": "overlaps MONEY-2", "CART-4": "depends on PRICE-1"}
    assert out["report"]["wave_test"]["exit_code"] == 0
    assert "+    status: review" in out["tracker_diff"]
    assert "+    last_error: 'test exited 1: FAIL: test_adds_the_rate_as_a_percentage " in out["tracker_diff"]
    assert [(c["id"], c["to"]) for c in out["sync"]] == [("PRICE-1", "done"), ("MONEY-2", "done")]
    assert "CART-4" in out["next_plan"]["selected"]
    # The kept repository tells the same story: the tracker on the remote, the merged wave branch.
    origin = keep / "origin.git"
    # The tracker on its own branch, as `wavegit init` puts it by default; main holds no bookkeeping.
    final = tracker.loads(git(origin, "show", "wavegit-tracker:.wavegit/tracker.yaml"))
    assert git(origin, "ls-tree", "--name-only", "main", ".wavegit/") == ".wavegit/config.yaml"
    assert {i.id: i.status for i in final.items} == {
        "PRICE-1": "done", "MONEY-2": "done", "MONEY-3": "todo", "CART-4": "todo", "TAX-5": "todo",
        "STOCK-6": "todo"}
    branch = out["report"]["branch"]
    trailers = git(origin, "log", "--format=%(trailers:key=Wavegit-Item,valueonly)", f"main..{branch}")
    assert trailers == ""  # merged
    merged_items = git(origin, "log", "--format=%(trailers:key=Wavegit-Item,valueonly)", branch).split()
    assert sorted(merged_items) == ["MONEY-2", "PRICE-1"]
    assert "Now with restocking" not in git(origin, "show", "main:README.md")


def test_demo_ignores_the_callers_settings_works_with_its_python_under_the_hidden_home_and_deletes_its_repo(
        tmp_path: Path) -> None:
    # One demo run (a whole wave, ~6 s of CPU) for both: pyenv and uv install Python under HOME; the sandbox
    # hides HOME, so the demo must show its toolchain.
    home = Path(sys.base_prefix).resolve().parent
    caller = {"WAVEGIT_WORKER": "false", "WAVEGIT_CONCURRENCY": "not-a-number", "GITHUB_TOKEN": "ghp_x",
              "GITHUB_REPOSITORY": "acme/widgets", "GITHUB_API_URL": "http://127.0.0.1:9", "HOME": str(home)}
    result = wavegit(tmp_path, "demo", env=caller)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[-1] == "demo: every item behaved as designed"
    where = next(line for line in lines if line.startswith("== the throwaway repository: "))
    directory = Path(where.removeprefix("== the throwaway repository: ").split(" (deleted")[0])
    assert not directory.exists()
    for section in ("== 3. wavegit plan", "== 5. the wave report", "== 6. the tracker diff"):
        assert any(line.startswith(section) for line in lines), section
    assert str(Path(sys.base_prefix).resolve()) in walkthrough.toolchain_paths()


def test_keep_refuses_a_non_empty_directory_and_writes_nothing(tmp_path: Path) -> None:
    keep = tmp_path / "busy"
    keep.mkdir()
    (keep / "mine.txt").write_text("mine\n")
    result = wavegit(tmp_path, "demo", "--keep", str(keep))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"wavegit demo: --keep {keep}: not an empty directory; give a new or empty one"]
    assert result.stdout == ""
    assert [p.name for p in keep.iterdir()] == ["mine.txt"]


def run_worker(cwd: Path, item_id: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "WAVEGIT_ITEM_ID": item_id, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run([sys.executable, "-m", "wavegit.demo.worker"], cwd=cwd, input="do it\n",
                          capture_output=True, text=True, env=env, check=False)


def test_the_demo_worker_writes_its_items_scripted_files_and_refuses_unknown_items(tmp_path: Path) -> None:
    done = run_worker(tmp_path, "STOCK-6")
    assert done.returncode == 0
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert written == sorted(EDITS["STOCK-6"])
    assert (tmp_path / "shop/stock.py").read_text() == EDITS["STOCK-6"]["shop/stock.py"]
    unknown = run_worker(tmp_path / "shop", "NOPE-1")
    assert unknown.returncode == 2 and "no scripted edit for item 'NOPE-1'" in unknown.stderr


def designed_report() -> WaveReport:
    items = [ItemReport(id="PRICE-1", status="review", verified=True, attempts=1, test_exit=0),
             ItemReport(id="MONEY-2", status="review", verified=True, attempts=1, test_exit=0),
             ItemReport(id="TAX-5", status="todo", verified=False, attempts=2, test_exit=1),
             ItemReport(id="STOCK-6", status="todo", verified=False, attempts=2,
                        ownership_violations=["README.md"])]
    skipped = [SkippedItem(id="MONEY-3", reason="overlaps MONEY-2"),
               SkippedItem(id="CART-4", reason="depends on PRICE-1")]
    return WaveReport(wave_id="w-20260101-000000-abcd", base_sha="0" * 40, items=items, skipped=skipped,
                      wave_test=WaveTestReport(command="t", exit_code=0), tracker_updated=True,
                      started_at="2026-01-01T00:00:00Z", finished_at="2026-01-01T00:00:01Z")


def test_the_demos_verdict_names_every_item_that_did_not_behave_as_designed(tmp_path: Path) -> None:
    sync = [{"id": "PRICE-1", "to": "done"}, {"id": "MONEY-2", "to": "done"}]
    good = walkthrough.DemoResult(tmp_path, report=designed_report(), sync=list(sync),
                           next_plan={"selected": ["CART-4"]})
    assert walkthrough.check(good, walkthrough.Expected()) == []
    bad = designed_report()
    bad.items[2].verified, bad.items[2].test_exit = True, 0  # the failing item passed
    bad.items[3].ownership_violations = []  # the trespassing item did not trespass
    bad.skipped = bad.skipped[:1]
    result = walkthrough.DemoResult(tmp_path, report=bad, sync=sync[:1], next_plan={"selected": []})
    assert walkthrough.check(result, walkthrough.Expected()) == [
        "TAX-5 should fail its test",
        "STOCK-6 should violate its ownership with README.md",
        "CART-4 should be skipped: depends on PRICE-1 (got None)",
        "sync should mark PRICE-1, MONEY-2 done after the merge",
        "CART-4 should be ready once its dependency is merged",
    ]
