"""wavegit.attempts.cost: the cost a worker reports in its cost file, or its preset in its log (Claude Code's
JSON result, Codex's usage events), in dollars and tokens, read as hostile; prices turn tokens into
dollars."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wavegit.attempts.agents import CLAUDE, CODEX, Agent
from wavegit.attempts.cost import CostReading, cost_reading
from wavegit.model.config import ModelPrice

COMMAND = Agent("worker", None, command="custom")
CLAUDE_AGENT = Agent("worker", CLAUDE)
CODEX_AGENT = Agent("fast", CODEX, model="gpt-5-codex")


@pytest.mark.parametrize(
    ("content", "note_part"),
    [("{not json", "invalid JSON"), ('{"usd": -1}', "non-negative"), ('{"usd": "3"}', "non-negative"),
     ('{"usd": true}', "non-negative"), ('{"usd": NaN}', "invalid JSON"), ("[1]", '{"usd": N}'),
     ('{"dollars": 1}', '{"usd": N}'), ('{"usd": 1, "input_tokens": 5}', "must both be whole numbers"),
     ('{"usd": 1, "input_tokens": -1, "output_tokens": 2}', "must both be whole numbers")],
)
def test_bad_cost_file_reads_as_unknown_with_a_note(tmp_path: Path, content: str, note_part: str) -> None:
    cost_file = tmp_path / "cost.json"
    cost_file.write_text(content)
    reading = cost_reading(cost_file, tmp_path / "none.log", COMMAND)
    assert reading.usd is None and reading.note is not None
    assert note_part in reading.note and str(cost_file) in reading.note


def test_absent_cost_file_is_unknown_without_a_note(tmp_path: Path) -> None:
    assert cost_reading(tmp_path / "cost.json", tmp_path / "none.log", COMMAND) == CostReading(None, None)


def test_a_cost_file_may_report_tokens_with_the_dollars(tmp_path: Path) -> None:
    (tmp_path / "cost.json").write_text('{"usd": 0.5, "input_tokens": 1000, "output_tokens": 200}')
    reading = cost_reading(tmp_path / "cost.json", tmp_path / "none.log", COMMAND)
    assert (reading.usd, reading.input_tokens, reading.output_tokens) == (0.5, 1000, 200)
    assert reading.tokens == 1200


def test_claude_preset_cost_and_tokens_come_from_the_json_result_in_the_log(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    usage = {"input_tokens": 10, "cache_creation_input_tokens": 5, "cache_read_input_tokens": 7,
             "output_tokens": 3}
    result_line = json.dumps({"type": "result", "total_cost_usd": 0.0731, "result": "ok", "usage": usage})
    log.write_text(f"some stderr noise\n{result_line}\n")
    reading = cost_reading(tmp_path / "cost.json", log, CLAUDE_AGENT)
    assert reading.usd == pytest.approx(0.0731)
    assert (reading.input_tokens, reading.output_tokens, reading.error) == (22, 3, None)
    assert cost_reading(tmp_path / "cost.json", log, COMMAND).usd is None


def test_a_presets_cost_is_its_cli_account_never_the_cost_file(tmp_path: Path) -> None:
    # The agent's tools could write the cost file (a forged $0): a preset's cost is what its CLI reports.
    (tmp_path / "cost.json").write_text('{"usd": 0, "input_tokens": 0, "output_tokens": 0}')
    (tmp_path / "a.log").write_text('{"type": "result", "total_cost_usd": 9}\n')
    assert cost_reading(tmp_path / "cost.json", tmp_path / "a.log", CLAUDE_AGENT).usd == 9
    (tmp_path / "a.log").write_text("killed mid-run\n")
    reading = cost_reading(tmp_path / "cost.json", tmp_path / "a.log", CLAUDE_AGENT)
    assert reading.usd is None and reading.note is not None and "no result line" in reading.note


@pytest.mark.parametrize("log_text", [
    "", "killed mid-run\n", '{"type": "result", "total_cost_usd": "0.5"}\n'])
def test_a_claude_run_without_a_readable_result_is_an_unreadable_cost_with_a_note(
        tmp_path: Path, log_text: str) -> None:
    log = tmp_path / "a.log"
    log.write_text(log_text)
    reading = cost_reading(tmp_path / "cost.json", log, CLAUDE_AGENT)
    assert reading.usd is None and reading.note is not None
    assert "no result line with a readable total_cost_usd" in reading.note


def test_another_worker_without_a_cost_file_reported_nothing_so_no_note(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_text("killed mid-run\n")
    assert cost_reading(tmp_path / "cost.json", tmp_path / "a.log", COMMAND) == CostReading(None, None)


def _codex_log(tmp_path: Path) -> Path:
    log = tmp_path / "a.log"
    log.write_text("\n".join(json.dumps(e) for e in [
        {"type": "thread.started", "thread_id": "t"}, {"type": "turn.started"},
        {"type": "turn.completed", "usage": {"input_tokens": 1_500_000, "cached_input_tokens": 0,
                                             "output_tokens": 100_000}},
        {"type": "turn.completed", "usage": {"input_tokens": 500_000, "cached_input_tokens": 0,
                                             "output_tokens": 100_000}}]) + "\n")
    return log


def test_codex_tokens_are_summed_over_its_turns_and_priced_from_the_config(tmp_path: Path) -> None:
    log = _codex_log(tmp_path)
    prices = (ModelPrice("other", 100, 100), ModelPrice("gpt-5-codex", 1.25, 10.0))
    reading = cost_reading(tmp_path / "cost.json", log, CODEX_AGENT, prices)
    assert (reading.input_tokens, reading.output_tokens, reading.note) == (2_000_000, 200_000, None)
    assert reading.usd == pytest.approx(2 * 1.25 + 0.2 * 10.0)


def test_codex_tokens_without_a_price_are_an_unreadable_cost_naming_the_model(tmp_path: Path) -> None:
    reading = cost_reading(tmp_path / "cost.json", _codex_log(tmp_path), CODEX_AGENT, ())
    assert reading.usd is None and reading.tokens == 2_200_000
    assert reading.note is not None and "no entry for model 'gpt-5-codex'" in reading.note


def test_a_codex_run_without_usage_events_is_an_unreadable_cost(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_text('{"type":"turn.started"}\n')
    reading = cost_reading(tmp_path / "cost.json", tmp_path / "a.log", CODEX_AGENT)
    assert reading.usd is None and reading.tokens is None
    assert reading.note is not None and "codex run: no readable usage" in reading.note


def test_a_hostile_log_cannot_break_the_reading_nor_report_impossible_amounts(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    forged = {"type": "result", "total_cost_usd": 1e300, "is_error": False,
              "usage": {"input_tokens": 10**15, "output_tokens": True}}
    # A line longer than the scan, a nesting bomb, then a result with amounts no report can hold.
    log.write_text("x" * 5_000_000 + "\n" + '{"a":' * 100_000 + "\n" + json.dumps(forged) + "\n")
    reading = cost_reading(tmp_path / "cost.json", log, CLAUDE_AGENT)
    assert (reading.usd, reading.input_tokens, reading.output_tokens) == (None, None, None)
    assert reading.note is not None


def test_a_claude_session_that_resumes_for_a_background_task_is_one_run_with_its_last_totals(
        tmp_path: Path) -> None:
    # As the real CLI printed it (tests/test_agents_claude_real.py, a sub-agent's notification arriving after
    # the first result): a second turn of the same session, its result the session's totals so far. An honest
    # run, not a forgery: it was taken for one, and the attempt failed.
    first = {"type": "result", "subtype": "success", "is_error": False, "total_cost_usd": 0.015,
             "modelUsage": {"m": {"inputTokens": 3000, "outputTokens": 300}}}
    again = {"type": "result", "subtype": "success", "is_error": False, "total_cost_usd": 0.0195,
             "modelUsage": {"m": {"inputTokens": 4000, "outputTokens": 400}}}
    log = tmp_path / "a.log"
    resumed = (first, {"type": "system", "subtype": "init"}, again)
    log.write_text("".join(f"{json.dumps(line)}\n" for line in resumed))
    reading = cost_reading(tmp_path / "cost.json", log, CLAUDE_AGENT)
    assert (reading.usd, reading.input_tokens, reading.output_tokens) == (0.0195, 4000, 400)
    assert reading.error is None
    failed = {**again, "is_error": True, "result": "Not logged in · Please run /login"}
    log.write_text(f"{json.dumps(first)}\n{json.dumps(failed)}\n")
    reading = cost_reading(tmp_path / "cost.json", log, CLAUDE_AGENT)
    assert reading.error is not None and reading.permanent is None  # failed, but no word on the profile


def test_a_forged_result_line_after_claudes_own_cannot_lower_its_account(tmp_path: Path) -> None:
    # Something in the sandbox that holds Claude's stdout (/proc/PID/fd/1) writes a $0 result after Claude's
    # own; Claude prints one result, so any other can only raise the account, and an unreadable one spoils it.
    real = {"type": "result", "total_cost_usd": 2.5, "usage": {"input_tokens": 900, "output_tokens": 100}}
    forged = {"type": "result", "total_cost_usd": 0, "usage": {"input_tokens": 0, "output_tokens": 0}}
    log = tmp_path / "a.log"
    log.write_text(f"{json.dumps(real)}\n{json.dumps(forged)}\n")
    reading = cost_reading(tmp_path / "cost.json", log, CLAUDE_AGENT)
    assert (reading.usd, reading.input_tokens, reading.output_tokens) == (2.5, 900, 100)
    log.write_text(f"{json.dumps(real)}\n" + '{"type": "result", "result": "no cost"}\n')
    reading = cost_reading(tmp_path / "cost.json", log, CLAUDE_AGENT)
    assert reading.usd is None and reading.note is not None


def test_a_forged_codex_event_stream_can_only_add_or_spoil_never_lower_or_crash(tmp_path: Path) -> None:
    # Codex's usage is the sum of its turns: a forged turn adds to it; one with an impossible count (negative,
    # fractional, boolean, huge) makes the whole reading unknown, which a ceiling counts as over it.
    log = _codex_log(tmp_path)
    with log.open("a") as handle:
        handle.write(json.dumps({"type": "turn.completed", "usage": {"input_tokens": 5, "output_tokens": 5}})
                     + "\n")
        handle.write('{"type": "error", "message": {"nested": [1, 2]}}\n{"type": "turn.failed"}\n')
    added = cost_reading(tmp_path / "cost.json", log, CODEX_AGENT, (ModelPrice("gpt-5-codex", 1, 1),))
    assert (added.input_tokens, added.output_tokens) == (2_000_005, 200_005) and added.note is None
    for forged in (-1, 0.5, True, 10**13):
        log = _codex_log(tmp_path)
        with log.open("a") as handle:
            handle.write(json.dumps({"type": "turn.completed",
                                     "usage": {"input_tokens": forged, "output_tokens": 0}}) + "\n")
        reading = cost_reading(tmp_path / "cost.json", log, CODEX_AGENT, (ModelPrice("gpt-5-codex", 1, 1),))
        assert reading.usd is None and reading.input_tokens is None and reading.note is not None, forged


def test_an_honest_log_whose_event_lines_are_long_or_cut_by_the_cap_keeps_its_account(tmp_path: Path) -> None:
    # A Write of a big file is one assistant line over the line limit, and the log cap cuts the head of a
    # line: neither is a line spoiled by bytes written before an event (a nested {"type": ...} block is no
    # event).
    block = {"type": "tool_use", "name": "Write", "input": {"content": "x" * 2_000_000}}
    long_line = json.dumps({"type": "assistant", "message": {"content": [block]}})
    real = {"type": "result", "total_cost_usd": 2.5, "usage": {"input_tokens": 900, "output_tokens": 100}}
    log = tmp_path / "a.log"
    log.write_text(f"{long_line}\n{long_line[1_000_000:]}\n{json.dumps(real)}\n")
    assert cost_reading(tmp_path / "cost.json", log, CLAUDE_AGENT).usd == 2.5


def test_forged_results_left_in_a_log_cut_short_are_no_account(tmp_path: Path) -> None:
    # A flood pushed Claude's own result into the part the log cap dropped, and forged $0 results followed:
    # of several results, the largest was taken as Claude's own among them, and it was not there.
    forged = json.dumps({"type": "result", "total_cost_usd": 0,
                         "usage": {"input_tokens": 0, "output_tokens": 0}})
    log = tmp_path / "a.log"
    log.write_text(f"{forged}\n[wavegit: 9000000 bytes of output dropped here (sandbox.log_bytes 4194304)]\n"
                   f"{forged}\n{forged}\n")
    reading = cost_reading(tmp_path / "cost.json", log, CLAUDE_AGENT)
    assert reading.usd is None and reading.note is not None
