"""``wavegit run --only ID...``: exactly those items, still disjoint and claimed first, or nothing (exit 2).
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers.repos import git, wavegit
from tests.helpers.wave import item, make_wave_repo, origin_item, untouched
from wavegit.model.report import WaveReport

IN_FLIGHT = {"status": "in_progress", "wave": "w-20260101-000001-ab01", "claimed_at": "2026-01-01T00:00:00Z"}


def test_only_runs_the_named_items_and_leaves_the_rest_of_the_backlog_todo(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [
        item(name, [f"write src/{name}.txt ok"], [f"src/{name}.txt"], priority=priority)
        for name, priority in (("A", "P0"), ("B", "P3"), ("C", "P2"), ("D", "P1"))])
    result = wavegit(remote.clone, "run", "--json", "--only", "C", "B", "C")
    assert result.returncode == 0, result.stderr
    report = WaveReport.from_json(result.stdout)
    # A duplicated id counts once; the higher-priority A and D are not taken.
    assert [i.id for i in report.items] == ["B", "C"] and report.skipped == []
    assert [origin_item(remote, name).status for name in "ABCD"] == ["todo", "review", "review", "todo"]
    # Claimed first, by one compare-and-swap commit that names only those items.
    claim = git(remote.origin, "log", "--format=%H", "--grep", "^wavegit: claim wave", "main")
    diff = git(remote.origin, "show", "--format=", claim, "--", ".wavegit/tracker.yaml")
    claimed = [line for line in diff.splitlines() if line.startswith("+") and "in_progress" in line]
    assert len(claimed) == 2


def test_only_refuses_unknown_not_ready_and_overlapping_ids_one_line_each_writing_nothing(
        tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [
        item("HELD", ["write src/x.txt ok"], ["src/x/"], **IN_FLIGHT),
        item("NEAR", ["write src/x/y.txt ok"], ["src/x/y.txt"]),
        item("DONE", ["write src/d.txt ok"], ["src/d.txt"], status="done"),
        item("WAITS", ["write src/w.txt ok"], ["src/w.txt"], depends_on=["LATER"]),
        item("LATER", ["write src/l.txt ok"], ["src/l.txt"]),
        item("FIRST", ["write src/s.txt ok"], ["src/s.txt"], priority="P1"),
        item("SECOND", ["write src/s.txt ok"], ["src/s.txt"], priority="P2"),
        item("FINE", ["write src/f.txt ok"], ["src/f.txt"]),
    ])
    before = untouched(remote.origin, remote.clone)
    result = wavegit(remote.clone, "run", "--only", "FINE", "NOPE", "DONE", "WAITS", "NEAR", "FIRST",
                     "SECOND")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines() == [
        "wavegit run: --only: 5 problems; nothing was claimed",
        "--only NOPE: no such item in the tracker",
        "--only DONE: not ready (status done)",
        "--only WAITS: not ready (depends on LATER)",
        "--only NEAR: overlaps HELD, which is in flight",
        "--only SECOND: overlaps FIRST (also named by --only; run them in separate waves)",
    ]
    assert untouched(remote.origin, remote.clone) == before
    # With --json the same refusal is a report on stdout.
    refused = wavegit(remote.clone, "run", "--json", "--only", "NOPE")
    report = WaveReport.from_json(refused.stdout)
    assert (refused.returncode, report.phase, report.exit_code) == (2, "preflight", 2)
    assert report.error == "--only: 1 problem; nothing was claimed\n--only NOPE: no such item in the tracker"
    assert untouched(remote.origin, remote.clone) == before


def test_only_with_max_items_is_bad_input(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])])
    before = untouched(remote.origin, remote.clone)
    result = wavegit(remote.clone, "run", "--only", "A", "--max-items", "1")
    assert result.returncode == 2
    assert result.stderr == ("wavegit run: --only and --max-items do not mix: --only takes exactly the items "
                             "it names\n")
    assert untouched(remote.origin, remote.clone) == before


def test_an_unknown_only_id_close_to_a_todo_item_says_did_you_mean(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("AUTH-12", ["write src/a.txt ok"], ["src/a.txt"])])
    result = wavegit(remote.clone, "run", "--only", "AUHT-12")
    assert result.returncode == 2
    said = "--only AUHT-12: no such item in the tracker; did you mean 'AUTH-12'?"
    assert said in result.stderr.splitlines()
