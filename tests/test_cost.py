"""wavegit.cost: the cost a worker reports in its cost file, or Claude Code in its log, read as hostile."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wavegit.cost import CostReading, cost_reading, read_cost


@pytest.mark.parametrize(
    ("content", "note_part"),
    [("{not json", "invalid JSON"), ('{"usd": -1}', "non-negative"), ('{"usd": "3"}', "non-negative"),
     ('{"usd": true}', "non-negative"), ('{"usd": NaN}', "invalid JSON"), ("[1]", '{"usd": N}'),
     ('{"dollars": 1}', '{"usd": N}')],
)
def test_bad_cost_file_reads_as_unknown_with_a_note(tmp_path: Path, content: str, note_part: str) -> None:
    cost_file = tmp_path / "cost.json"
    cost_file.write_text(content)
    reading = cost_reading(cost_file, tmp_path / "none.log", "custom")
    assert reading.usd is None and reading.note is not None
    assert note_part in reading.note and str(cost_file) in reading.note


def test_absent_cost_file_is_unknown_without_a_note(tmp_path: Path) -> None:
    assert cost_reading(tmp_path / "cost.json", tmp_path / "none.log", "custom") == CostReading(None, None)


def test_claude_preset_cost_comes_from_the_json_result_in_the_log(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    result_line = json.dumps({"type": "result", "total_cost_usd": 0.0731, "result": "ok"})
    log.write_text(f"some stderr noise\n{result_line}\n")
    assert read_cost(tmp_path / "cost.json", log, "claude") == pytest.approx(0.0731)
    assert read_cost(tmp_path / "cost.json", log, "codex") is None


def test_cost_file_wins_over_the_claude_log(tmp_path: Path) -> None:
    (tmp_path / "cost.json").write_text('{"usd": 1.5}')
    (tmp_path / "a.log").write_text('{"total_cost_usd": 9}\n')
    assert read_cost(tmp_path / "cost.json", tmp_path / "a.log", "claude") == 1.5


@pytest.mark.parametrize("log_text", [
    "", "killed mid-run\n", '{"type": "result", "total_cost_usd": "0.5"}\n'])
def test_a_claude_run_without_a_readable_result_is_an_unreadable_cost_with_a_note(
        tmp_path: Path, log_text: str) -> None:
    log = tmp_path / "a.log"
    log.write_text(log_text)
    reading = cost_reading(tmp_path / "cost.json", log, "claude")
    assert reading.usd is None and reading.note is not None
    assert "no result line with a readable total_cost_usd" in reading.note


def test_another_worker_without_a_cost_file_reported_nothing_so_no_note(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_text("killed mid-run\n")
    assert cost_reading(tmp_path / "cost.json", tmp_path / "a.log", "codex") == CostReading(None, None)
