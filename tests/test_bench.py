"""The benchmark suite: every benchmark runs in its quick mode through ``bench/run.py`` and produces its
section and its targets; the shared helpers write and merge BENCHMARKS.md correctly."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import common  # bench/ (not a package) is on pytest's pythonpath
import pytest
import quality
import run

from wavegit.model import tracker

pytestmark = pytest.mark.slow  # every benchmark in quick mode

BENCH = common.BENCH_DIR


def run_bench(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(BENCH / "run.py"), *args], capture_output=True, text=True,
                          timeout=timeout, check=False)


@pytest.mark.parametrize("name", list(run.BENCHMARKS))
def test_each_benchmark_runs_quick_and_writes_its_section_and_targets(name: str, tmp_path: Path) -> None:
    out = tmp_path / "BENCHMARKS.md"
    proc = run_bench("--quick", "--only", name, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    found = common.sections(text)
    heading = run.BENCHMARKS[name][0]
    assert set(found) == {run.SUMMARY, heading}
    assert "_Measured " in found[heading] and "Quick mode" in text
    assert "Traceback" not in proc.stderr
    rows = common.table_rows(found[run.SUMMARY])
    assert rows and {row[0] for row in rows} == {name}
    assert all(row[5] in ("met", "**NOT met**") for row in rows)


def test_quick_without_out_prints_and_writes_nothing(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(BENCH / "run.py"), "--quick", "--only", "quality"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "## selection quality" in proc.stdout
    assert list(tmp_path.iterdir()) == []


def test_an_unknown_benchmark_name_is_a_usage_error_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "BENCHMARKS.md"
    proc = run_bench("--only", "nonesuch", "--out", str(out))
    assert proc.returncode == 2 and "invalid choice: 'nonesuch'" in proc.stderr
    assert not out.exists()


def test_a_failing_benchmark_is_one_message_and_writes_nothing(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    def broken(quick: bool) -> common.Result:
        raise common.BenchError("git push failed (128)")

    monkeypatch.setitem(run.BENCHMARKS, "wave", ("wave", broken))
    out = tmp_path / "BENCHMARKS.md"
    assert run.main(["--only", "wave", "--out", str(out)]) == 1
    assert "bench: wave failed, nothing written: git push failed (128)" in capsys.readouterr().err
    assert not out.exists()


def result(name: str, figure: str, met: bool) -> tuple[common.Result, str]:
    heading = run.BENCHMARKS[name][0]
    section = f"## {heading}\n\nfigure {figure}\n"
    target = common.Target(3, f"{name} target", "≤ 1x", figure, met)
    return common.Result(name, section, (target,)), section


def test_rerunning_some_benchmarks_keeps_the_other_sections_and_their_targets() -> None:
    both = {"wave": result("wave", "2x", False), "cas": result("cas", "all", True)}
    first = run.document("", both, "# B\n")
    second = run.document(first, {"wave": result("wave", "1x", True)}, "# B again\n")
    found = common.sections(second)
    assert second.startswith("# B again\n")
    assert found["wave"] == "## wave\n\nfigure 1x\n"
    assert found["compare-and-swap throughput"] == "## compare-and-swap throughput\n\nfigure all\n"
    rows = common.table_rows(found[run.SUMMARY])
    assert sorted((row[0], row[4], row[5]) for row in rows) == [("cas", "all", "met"), ("wave", "1x", "met")]
    assert "Not met: 0 of 2" in found[run.SUMMARY]


def test_a_section_no_benchmark_writes_is_kept_as_it_was_after_the_benchmarks() -> None:
    # The figures of `.ci/run`, measured by hand, live in BENCHMARKS.md too: a rerun must not drop them.
    first = run.document("", {"wave": result("wave", "2x", False)}, "# B\n") + "\n## CI\n\nby hand\n"
    second = run.document(first, {"wave": result("wave", "1x", True)}, "# B again\n")
    assert common.sections(second)["CI"] == "## CI\n\nby hand\n"
    assert second.endswith("## CI\n\nby hand\n")


def test_the_summary_names_every_target_not_met() -> None:
    text = run.document("", {"wave": result("wave", "2x", False), "cas": result("cas", "all", True)}, "# B\n")
    summary = common.sections(text)[run.SUMMARY]
    assert "**Not met: 1 of 2**: wave target (2x, target ≤ 1x)." in summary


def test_a_section_with_the_wrong_heading_is_refused() -> None:
    with pytest.raises(common.BenchError, match="not '## wave'"):
        run.stamped(common.Result("wave", "## something else\n"), "wave")


def test_sections_split_a_document_by_second_level_heading() -> None:
    doc = "# T\n\nintro\n\n## a\n\nold a\n\n## b: c\n\nkeep b\n### sub\n"
    assert common.sections(doc) == {"a": "## a\n\nold a\n", "b: c": "## b: c\n\nkeep b\n### sub\n"}


def test_table_escapes_pipes_right_aligns_numbers_and_reads_back() -> None:
    text = common.table(["name", "ms"], [("a|b", 12), ("c", 3)], numeric=(1,))
    assert text.splitlines()[1] == "| --- | ---: |"
    assert common.table_rows(text) == [["a|b", "12"], ["c", "3"]]


def test_stats_give_median_and_range() -> None:
    stats = common.Stats((0.3, 0.1, 0.2, 0.5))
    assert (stats.median, stats.low, stats.high) == (0.25, 0.1, 0.5)
    assert stats.ms() == "250 (100-500)" and stats.s(1) == "0.2 (0.1-0.5)"


def test_interleaved_times_each_pipeline_every_round_after_an_untimed_round() -> None:
    calls: list[str] = []

    def recorder(name: str) -> Callable[[], None]:
        return lambda: calls.append(name)

    pipelines = [common.Pipeline(name, [sys.executable, "-c", "pass"], before=recorder(name))
                 for name in ("a", "b")]
    timings = common.interleaved(pipelines, 3)
    assert calls == ["a", "b"] * 4
    assert all(len(t.wall.samples) == len(t.cpu.samples) == 3 for t in timings.values())
    assert all(t.wall.low > 0 and t.cpu.low >= 0 for t in timings.values())


def test_a_failing_timed_command_raises_with_its_stderr() -> None:
    failing = common.Pipeline("x", [sys.executable, "-c", "import sys; sys.exit('no tracker here')"])
    with pytest.raises(common.BenchError, match="failed \\(1\\):\nno tracker here"):
        common.time_process(failing)


def backlog_text(*items: str) -> str:
    return "version: 1\nitems:\n" + "".join(items)


def item(item_id: str, owns: str, priority: str = "P2", status: str = "todo") -> str:
    return (f"  - id: {item_id}\n    prompt: p\n    owns: [{owns}]\n    test: 'true'\n"
            f"    priority: {priority}\n    status: {status}\n")


def test_brute_force_prefers_one_p1_over_two_conflicting_p2s() -> None:
    t = tracker.loads(backlog_text(item("A", "src/a.py, src/b.py", "P1"), item("B", "src/a.py"),
                                   item("C", "src/B.py")))
    counts, ids = quality.brute_force(quality.candidates(t))
    assert counts == (0, 1, 0, 0) and ids == ["A"]


def test_candidates_exclude_items_overlapping_work_in_flight() -> None:
    t = tracker.loads(backlog_text(item("A", "src/"), item("F", "src/x.py", status="in_progress"),
                                   item("B", "docs/a.md")))
    assert [i.id for i in quality.candidates(t)] == ["B"]


def test_plain_greedy_ignores_work_in_flight_and_overlap_greedy_does_not() -> None:
    t = tracker.loads(backlog_text(item("F", "src/x.py", status="in_progress"), item("A", "src/")))
    assert quality.plain_greedy(t) == ["A"]
    assert quality.overlap_greedy(t) == []
