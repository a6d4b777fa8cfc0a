"""``wavegit run`` as a subprocess: JSON report, text summary, --no-push, bad input, exit codes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers.repos import REPO_ROOT, git, make_remote_repo, wavegit
from tests.helpers.wave import branches, item, make_wave_repo, origin_item, worktrees
from wavegit.report import WaveReport


def test_json_output_is_exactly_the_report_and_exit_0_on_success(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["say hi", "write src/a.txt ok"], ["src/a.txt"])])
    result = wavegit(remote.clone, "run", "--json")
    assert result.returncode == 0, result.stderr
    report = WaveReport.from_json(result.stdout)
    assert report.success and [i.id for i in report.items] == ["A"]
    assert report.items[0].log_tail == "hi"
    assert git(remote.origin, "rev-parse", f"wavegit/{report.wave_id}") == report.head_sha


def test_text_output_summarises_each_item_and_exit_1_on_failure(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [
        item("GOOD", ["write src/a.txt ok"], ["src/a.txt"]),
        item("BAD", ["write src/b.txt no"], ["src/b.txt"]),
    ], attempts=1)
    result = wavegit(remote.clone, "run")
    assert result.returncode == 1
    assert "1 of 2 verified" in result.stdout
    assert "GOOD: review" in result.stdout and "BAD: todo (test exited 1)" in result.stdout
    assert "GOOD verified" in result.stderr  # progress lines when not a terminal
    # The last line says where the Markdown report is, relative to where wavegit ran.
    shown = result.stdout.splitlines()[-1].removeprefix("report: ")
    assert shown.startswith(".git/wavegit/reports/")
    assert "| <code>BAD</code> |" in (remote.clone / shown).read_text()


def test_an_edited_uncommitted_config_is_named_on_stderr_as_not_obeyed(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"]),
                                       item("B", ["write src/b.txt ok"], ["src/b.txt"])])
    config = remote.clone / ".wavegit" / "config.yaml"
    config.write_text(config.read_text().replace("concurrency: 4", "concurrency: 1"))
    result = wavegit(remote.clone, "run", "--json", "--max-items", "1")
    assert result.returncode == 0, result.stderr
    assert WaveReport.from_json(result.stdout).config_source.endswith("differing working copy was ignored)")
    assert ("wavegit: warning: the checkout's .wavegit/config.yaml differs from "
            "origin/main:.wavegit/config.yaml, the one this wave obeys: commit and push it") in result.stderr
    git(remote.clone, "checkout", "-q", "--", ".wavegit/config.yaml")
    assert "warning" not in wavegit(remote.clone, "run", "--json").stderr
    config.unlink()  # a checkout without the file (another branch) is no edit to warn about
    assert "warning" not in wavegit(remote.clone, "run", "--json").stderr


def test_nothing_selected_says_why_each_item_was_skipped(tmp_path: Path) -> None:
    held = item("A", ["write src/a.txt ok"], ["src/a.txt"], status="in_progress",
                wave="w-20260101-000001-ab01", claimed_at="2026-01-01T00:00:00Z")
    remote = make_wave_repo(tmp_path, [held, item("B", ["write src/a.txt ok"], ["src/a.txt"])])
    result = wavegit(remote.clone, "run")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].endswith(": nothing selected (1 item skipped)")
    assert lines[1] == "  B: in flight: A"


def test_no_push_leaves_the_remote_without_a_wave_branch(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])])
    result = wavegit(remote.clone, "run", "--json", "--no-push")
    assert result.returncode == 0, result.stderr
    report = WaveReport.from_json(result.stdout)
    assert branches(remote.origin) == [] and branches(remote.clone) == [f"wavegit/{report.wave_id}"]


def test_max_items_limits_the_wave(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [
        item(name, [f"write src/{name}.txt ok"], [f"src/{name}.txt"]) for name in ("a", "b", "c")])
    report = WaveReport.from_json(wavegit(remote.clone, "run", "--json", "--max-items", "2").stdout)
    assert [i.id for i in report.items] == ["a", "b"]
    assert {s.id: s.reason for s in report.skipped} == {"c": "max items"}


def test_max_items_below_one_is_bad_input_and_writes_nothing(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])])
    head = git(remote.origin, "rev-parse", "main")
    result = wavegit(remote.clone, "run", "--max-items", "0")
    assert result.returncode == 2 and "--max-items must be at least 1" in result.stderr
    assert git(remote.origin, "rev-parse", "main") == head


def test_missing_tracker_is_bad_input(tmp_path: Path) -> None:
    remote = make_remote_repo(tmp_path)
    result = wavegit(remote.clone, "run")
    assert result.returncode == 2 and "run `wavegit init`" in result.stderr
    assert "Traceback" not in result.stderr


def test_invalid_tracker_is_bad_input_with_its_location(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])])
    (remote.clone / ".wavegit" / "tracker.yaml").write_text("version: 1\nitems: {not: a list}\n")
    git(remote.clone, "commit", "-qam", "break it")
    git(remote.clone, "push", "-q", "origin", "main")
    head = git(remote.origin, "rev-parse", "main")
    result = wavegit(remote.clone, "run")
    assert result.returncode == 2 and ".wavegit/tracker.yaml:2:" in result.stderr
    assert git(remote.origin, "rev-parse", "main") == head


def test_sigterm_cancels_workers_releases_the_claim_and_removes_worktrees(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    started = out / "started.jsonl"
    remote = make_wave_repo(tmp_path, [item("A", [f"env {started}", "sleep 30"], ["src/a.txt"])],
                            idle_timeout_s=60, sandbox={"rw_paths": [str(out)]})
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "wavegit", "run"], cwd=remote.clone, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while not started.exists():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "interrupted" in stderr
    released = origin_item(remote, "A")
    assert (released.status, released.attempts, released.wave) == ("todo", 0, None)
    assert worktrees(remote.clone) == [str(remote.clone)]
    # Its end is logged and its lock removed: status shows it neither as running nor as killed.
    assert wavegit(remote.clone, "status").stdout.startswith("no wave is running")
    [ended] = json.loads(wavegit(remote.clone, "status", "--all", "--json").stdout)
    assert (ended["finished"]["exit_code"], ended["scheduler"]) == (130, "finished")
    assert list((remote.clone / ".git" / "wavegit" / "locks").iterdir()) == []
