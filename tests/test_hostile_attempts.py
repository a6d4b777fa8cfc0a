"""Hostile workers against attempt accounting: whatever an attempt's worker did that made it fail is charged
to that attempt (counted towards ``max_attempts``), never to the setup or to nobody. Real waves."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.repos import TESTS, RemoteRepo, wavegit
from tests.helpers.wave import item, make_wave_repo, origin_item, run, write_and_push
from tests.test_hostile_env import BWRAP_PROBLEM

pytestmark = pytest.mark.slow  # whole waves

HOSTILE = Path(__file__).resolve().parent / "hostile_workers"


@pytest.mark.parametrize("way", ["delete", "chmod", "shebang", "loop", "attributes"])
def test_attack_a_worker_that_breaks_its_own_test_program_has_its_attempt_counted(
        tmp_path: Path, way: str) -> None:
    # The test `tests/run.sh` is a file of the tree the item owns: a worker that deleted it (or made it
    # unrunnable) had its test "not launch", the setup's fault in wavegit's eyes: no attempt counted, the item
    # back to todo, and every later wave paid its agent again, max_attempts never reached.
    worker = shlex.join([sys.executable, str(HOSTILE / "break_own_test_program.py"), way, "tests/run.sh"])
    # `attributes`: only a `.gitattributes` beside the program changed, which its checkout obeys.
    owns = ["src/a.txt", "tests/run.sh", "tests/.gitattributes"]
    remote = make_wave_repo(tmp_path, [item("A", ["break"], owns, "tests/run.sh")],
                            worker=worker, sandbox="none", attempts=1, max_attempts=1, concurrency=1)
    write_and_push(remote.clone, {"tests/run.sh": "#!/bin/sh\nexit 0\n"}, "the item's test", executable=True)
    result = wavegit(remote.clone, "run", "--json")
    attempt = json.loads(result.stdout)["items"][0]["attempt_records"][0]
    # `attributes`: the program passes the look before launch (`#!/bin/sh\r` reads as /bin/sh), and the
    # kernel's ENOENT is the launcher's exit 127: a failed test, counted.
    said = "exited 127" if way == "attributes" else "cannot launch"
    assert said in attempt["error"] and attempt["counted"], attempt
    found = origin_item(remote, "A")
    assert (found.status, found.attempts) == ("failed", 1)


FORGE = HOSTILE / "forge_result.py"
BWRAP_SKIP = pytest.mark.skipif(BWRAP_PROBLEM is not None, reason=f"bwrap cannot run: {BWRAP_PROBLEM}")


@BWRAP_SKIP
def test_attack_a_tool_that_forges_claudes_result_and_kills_it_cannot_dodge_the_budget(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The agent's tool wrote a $0 result into Claude's stdout (its sandbox shares the CLI's /proc) and
    # killed Claude before its own: the only result line was the forged one, and the attempt cost $0, so the
    # wave's ceiling let the next item start. A CLI that did not end by itself has no account of its own.
    _fake_agents(monkeypatch)
    remote = _claude_repo(tmp_path, [["agent", "bash", "python3", str(FORGE), "cost"], []],
                          budget={"wave_usd": 0.01})
    rep = run(remote.clone).report
    assert [i.attempts for i in rep.items] == [1, 0] and rep.budget.exceeded
    assert rep.items[0].attempt_records[0].cost is None, rep.items[0].attempt_records[0]


@BWRAP_SKIP
@pytest.mark.parametrize("way", ["login", "trail", "interrupt"])
def test_attack_a_tool_that_forges_claudes_last_words_stops_no_sibling(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, way: str) -> None:
    # "Not logged in" as the killed CLI's last line (login), or a result saying so written again and again
    # from a process left behind until one followed Claude's own (trail), or as the last line of a Claude
    # that a process left behind interrupted (SIGINT: exit 0, no result) while it waited for the model
    # (interrupt), read as Claude's own word: the profile failed for good, and the sibling item of that
    # profile was not started in the wave.
    _fake_agents(monkeypatch)
    # interrupt: the tool's line, then a line of the model thinking for 5 s (the prompt is one action a line).
    remote = _claude_repo(tmp_path, [["agent", "bash", "python3", str(FORGE), way,
                                      *(["\nsleep", "5"] if way == "interrupt" else [])], []])
    rep = run(remote.clone).report
    assert rep.items[1].verified, rep.items[1].error


def _fake_agents(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{TESTS / 'agents'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")


def _claude_repo(tmp_path: Path, attacks: list[list[str]], **config: Any) -> RemoteRepo:
    """Items a and b, run one after the other by the fake Claude in the sandbox, with ``attacks`` (a tool
    command line, or none) before each writes its file."""
    items = [item(n, [*([" ".join(a)] if a else []), f"write src/{n}.txt ok"], [f"src/{n}.txt"],
                  worker="claude") for n, a in zip("ab", attacks, strict=True)]
    return make_wave_repo(tmp_path, items, workers={"claude": {"preset": "claude"}},
                          worker_env=["ANTHROPIC_API_KEY"], sandbox="bwrap", attempts=1, concurrency=1,
                          **config)


@BWRAP_SKIP
def test_attack_a_tool_that_spoils_claudes_own_result_line_cannot_dodge_the_budget(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A $0 result, then bytes without a newline from a process left running in the sandbox: Claude's own
    # result line, written after them, was no JSON, and Claude ended by itself with the forged one its only
    # result. Claude's result is its last line: a log ending otherwise holds no account of its own.
    _fake_agents(monkeypatch)
    remote = _claude_repo(tmp_path, [["agent", "bash", "python3", str(FORGE), "spoil"], []],
                          budget={"wave_usd": 0.01})
    rep = run(remote.clone).report
    assert [i.attempts for i in rep.items] == [1, 0] and rep.budget.exceeded
    # Unknown when the bytes spoiled Claude's line; Claude's own $0.0123 when they came too late to.
    cost = rep.items[0].attempt_records[0].cost
    assert cost is None or cost == pytest.approx(0.0123), rep.items[0].attempt_records[0]


@BWRAP_SKIP
def test_attack_a_tool_that_forges_a_failed_turn_in_codexs_stream_stops_no_sibling(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A `turn.failed` saying "401 Unauthorized" in codex's output, codex running on to complete its turns:
    # the key looked rejected, the profile failed for good, and the sibling was not started. A key the API
    # rejects completes no turn.
    _fake_agents(monkeypatch)
    monkeypatch.setenv("CODEX_API_KEY", "sk-test")
    items = [item(n, [*(["run python3 " + f"{FORGE} codex401 codex"] if n == "a" else []),
                      f"write src/{n}.txt ok"], [f"src/{n}.txt"], worker="gpt") for n in "ab"]
    remote = make_wave_repo(tmp_path, items, workers={"gpt": {"preset": "codex"}},
                            worker_env=["CODEX_API_KEY"], sandbox="bwrap", attempts=1, concurrency=1)
    rep = run(remote.clone).report
    assert "401 Unauthorized" in (rep.items[0].error or ""), rep.items[0]
    assert rep.items[1].verified, rep.items[1].error


FORGED_PERMANENT_XFAIL = pytest.mark.xfail(strict=True, reason=(
    "a tool shares its CLI's /proc: it writes the CLI's failure that will repeat into its output and ends it "
    "with SIGINT (codex-cli 0.171.0 exits 1 and prints nothing more), and nothing in the log tells the "
    "forgery from the CLI's own 401; fixing it needs a second witness (a sibling item's attempt of the "
    "profile failing for good the same way) before the profile stops"))


@BWRAP_SKIP
@FORGED_PERMANENT_XFAIL
def test_attack_a_tool_that_forges_a_failed_turn_and_interrupts_codex_stops_no_sibling(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A `turn.failed` saying "401 Unauthorized" in codex's output, then SIGINT before its turn completed:
    # codex exits 1 with no usage, so the forged turn was its account: the key looked rejected, and the
    # sibling of the profile was not started.
    _fake_agents(monkeypatch)
    monkeypatch.setenv("CODEX_API_KEY", "sk-test")
    items = [item(n, [*([f"run python3 {FORGE} interrupt401 codex", "sleep 5"] if n == "a" else []),
                      f"write src/{n}.txt ok"], [f"src/{n}.txt"], worker="gpt") for n in "ab"]
    remote = make_wave_repo(tmp_path, items, workers={"gpt": {"preset": "codex"}},
                            worker_env=["CODEX_API_KEY"], sandbox="bwrap", attempts=1, concurrency=1)
    rep = run(remote.clone).report
    assert rep.items[1].verified, rep.items[1].error


@BWRAP_SKIP
def test_attack_a_tool_that_floods_codexs_output_cannot_cut_its_spent_turns_from_the_account(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Codex's account is the sum of its turns; the log keeps the head and tail of sandbox.log_bytes, so 6 MiB
    # written into codex's output before and after an expensive turn cut that turn from the log: $11.25 read
    # as $0.04, under the wave's ceiling, and the next item started. A log cut short sums nothing.
    _fake_agents(monkeypatch)
    monkeypatch.setenv("CODEX_API_KEY", "sk-test")
    flood = f"run python3 {FORGE} flood codex"
    attack = [flood, "agent turn", flood]
    items = [item(n, [*(attack if n == "a" else []), f"write src/{n}.txt ok"], [f"src/{n}.txt"], worker="gpt")
             for n in "ab"]
    remote = make_wave_repo(tmp_path, items, workers={"gpt": {"preset": "codex", "model": "gpt-5-codex"}},
                            prices={"gpt-5-codex": {"input_per_mtok": 1.25, "output_per_mtok": 10.0}},
                            worker_env=["CODEX_API_KEY"], sandbox="bwrap", attempts=1, concurrency=1,
                            budget={"wave_usd": 1.0})
    rep = run(remote.clone).report
    assert [i.attempts for i in rep.items] == [1, 0] and rep.budget.exceeded
    cost = rep.items[0].attempt_records[0].cost
    assert cost is None or cost > 11, cost
