"""The real Gemini CLI (gemini-cli 0.61.0 from npm, tests/helpers/agents_real.py) in real waves, against a
local Gemini API (tests/helpers/gemini_server.py) that drives the CLI's own shell and file tools: sandboxed
(every tool) and not (edits only), as root and as an ordinary user, and through a rejected key and a server
error it retries past."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import gemini_server
from tests.helpers.agent_waves import agent_repo, assert_verified_as_sent, needs_bwrap, run_as, user_base
from tests.helpers.agents_real import agent_bin, ordinary_user
from tests.helpers.gemini_server import GeminiServer
from tests.helpers.model_server import Script, status
from tests.helpers.repos import REPO_ROOT
from tests.helpers.wave import run

pytestmark = [pytest.mark.real, pytest.mark.slow]


KEY = "gemini-test-key"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[GeminiServer]:
    """The installed gemini first on PATH, its key in GEMINI_API_KEY, and the API it talks to."""
    monkeypatch.setenv("PATH", f"{agent_bin('gemini')}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    with GeminiServer(Script(commands=["write_file src/a.txt ok"])) as started:
        yield started


def _repo(base: Path, server: GeminiServer, items: int = 1, **overrides: Any) -> Any:
    profile = {"preset": "gemini", "model": "gemini-2.5-flash", "base_url": server.base_url}
    return agent_repo(base, profile, "GEMINI_API_KEY", items, **overrides)


@needs_bwrap
def test_sandboxed_gemini_runs_its_shell_tool_and_lands_the_edit_with_the_tokens_sent(
        tmp_path: Path, server: GeminiServer) -> None:
    server.script.commands = ["printf 'ok\\n' > src/a.txt"]
    report = run(_repo(tmp_path, server, sandbox="bwrap").clone).report
    assert_verified_as_sent(report, server.sent, KEY)
    assert server.sent.responses == 2


@pytest.mark.parametrize("mode", ["none", pytest.param("bwrap", marks=needs_bwrap)])
def test_gemini_run_by_an_ordinary_user_lands_its_edit(mode: str, server: GeminiServer) -> None:
    user = ordinary_user()
    with user_base() as base:
        remote = _repo(base, server, sandbox=mode)
        report = run_as(user, remote.clone, base, agent_bin("gemini"), {"GEMINI_API_KEY": KEY})
        assert_verified_as_sent(report, server.sent, KEY)
        assert Path(report.items[0].attempt_records[0].log_path).stat().st_uid == user.uid


def test_unsandboxed_gemini_edits_with_its_file_tool_and_a_server_error_it_retries_past_is_no_failure(
        tmp_path: Path, server: GeminiServer) -> None:
    # One launch proves both (the CLI costs ~5 s of CPU a run); the ordinary user's run has no fault.
    server.script.faults = [status(500, "Internal error encountered.", "INTERNAL")]
    report = run(_repo(tmp_path, server, sandbox="none").clone).report
    assert_verified_as_sent(report, server.sent, KEY)
    label = report.items[0].attempt_records[0].worker
    assert label == "p (gemini, gemini-2.5-flash, edits only: unsandboxed)"


def test_a_rejected_gemini_key_is_its_cause_counted_once_and_not_retried(
        tmp_path: Path, server: GeminiServer) -> None:
    server.script.always = gemini_server.API_KEY_INVALID
    entry, other = run(_repo(tmp_path, server, items=2).clone).report.items
    assert entry.attempts == 1 and other.attempts == 0
    assert entry.error is not None and "\n" not in entry.error
    assert "gemini: [API Error: " in entry.error and "API key not valid" in entry.error
    assert entry.error.endswith("(not retried: the model API rejected the key: check GEMINI_API_KEY)")


@needs_bwrap
def test_a_tool_that_forges_a_rejected_key_and_interrupts_gemini_stops_no_sibling(
        tmp_path: Path, server: GeminiServer) -> None:
    # a's command wrote "API key not valid" into gemini's output and sent it SIGINT until it ended: gemini-cli
    # 0.61.0 exits 0 with no result, so the forged line was its last word, read as the key rejected, and b
    # was never started. A failure that will repeat ends the CLI with an error.
    forge = REPO_ROOT / "tests" / "hostile_workers" / "forge_result.py"
    server.script.commands = [f'case "$PWD" in */a-1) python3 {forge} interrupt400 gemini;; '
                              '*) printf "ok\\n" > src/b.txt;; esac']
    first, second = run(_repo(tmp_path, server, items=2, sandbox="bwrap").clone).report.items
    assert first.exit_code == 0 and "not retried" not in (first.error or ""), first.error
    assert second.verified, second.error
