"""The real codex CLI (codex-cli 0.171.0 from npm, tests/helpers/agents_real.py) in real waves, against a
local OpenAI Responses API (tests/helpers/openai_server.py) that drives codex's own shell tool to write the
item's file: sandboxed and not, as root and as an ordinary user, and through the failures a real service
has (a rejected key, an unknown model, 429, 500, a hang, a dropped stream, a gateway without WebSockets)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import openai_server as api
from tests.helpers.agent_waves import agent_repo, assert_verified_as_sent, needs_bwrap, run_as, user_base
from tests.helpers.agents_real import agent_bin, ordinary_user
from tests.helpers.openai_server import OpenAIServer, Script
from tests.helpers.repos import REPO_ROOT, wavegit
from tests.helpers.wave import origin_tracker, run
from tests.test_hostile_attempts import FORGED_PERMANENT_XFAIL
from wavegit.model.report import WaveReport

pytestmark = [pytest.mark.real, pytest.mark.slow]


WRITE = "printf 'ok\\n' > src/a.txt"


@pytest.fixture
def codex_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The installed codex first on PATH and its key in CODEX_API_KEY (listed in each test's worker_env)."""
    monkeypatch.setenv("PATH", f"{agent_bin('codex')}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("CODEX_API_KEY", "sk-test-codex")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


@pytest.fixture
def server(codex_env: None) -> Iterator[OpenAIServer]:
    with OpenAIServer(Script(commands=[WRITE])) as started:
        yield started


def _repo(tmp_path: Path, server: OpenAIServer, items: int = 1, **overrides: Any) -> Any:
    profile = {"preset": "codex", "model": "gpt-5-codex", "base_url": server.base_url}
    return agent_repo(tmp_path, profile, "CODEX_API_KEY", items, **overrides)


def _wave(tmp_path: Path, server: OpenAIServer, **overrides: Any) -> WaveReport:
    return run(_repo(tmp_path, server, **overrides).clone).report


def _assert_verified_as_sent(report: WaveReport, server: OpenAIServer) -> None:
    assert_verified_as_sent(report, server.sent, "Bearer sk-test-codex")


# ------------------------------------------------------------------------------------------ it lands

def test_unsandboxed_codex_lands_its_edit_and_its_tokens_are_what_the_server_sent(
        tmp_path: Path, server: OpenAIServer) -> None:
    report = _wave(tmp_path, server)
    _assert_verified_as_sent(report, server)
    assert server.sent.responses == 2  # the shell call, then the final message


@needs_bwrap
def test_sandboxed_codex_lands_its_edit_and_its_tokens_are_what_the_server_sent(
        tmp_path: Path, server: OpenAIServer) -> None:
    report = _wave(tmp_path, server, sandbox="bwrap")
    _assert_verified_as_sent(report, server)


# ------------------------------------------------------------------ recovered retries are no failures

def test_a_stream_dropped_once_is_retried_by_codex_and_the_attempt_verified(
        tmp_path: Path, server: OpenAIServer) -> None:
    server.script.websocket = False
    server.script.faults = [api.DISCONNECT]
    report = _wave(tmp_path, server)
    log = Path(report.items[0].attempt_records[0].log_path).read_text()
    assert "Reconnecting... 1/5 (stream disconnected before completion" in log
    _assert_verified_as_sent(report, server)


def test_a_gateway_without_websockets_costs_codex_retries_but_no_attempt(
        tmp_path: Path, server: OpenAIServer) -> None:
    server.script.websocket = False
    report = _wave(tmp_path, server)
    assert "Falling back from WebSockets to HTTPS transport" in Path(
        report.items[0].attempt_records[0].log_path).read_text()
    _assert_verified_as_sent(report, server)


def test_a_server_error_that_codex_retries_past_is_no_failure(tmp_path: Path, server: OpenAIServer) -> None:
    server.script.faults = [api.status(500, "The server had an error while processing your request.")]
    _assert_verified_as_sent(_wave(tmp_path, server), server)


# -------------------------------------------------------------------------- failures say their cause

def test_a_rejected_key_is_one_line_of_cause_counted_once_and_not_retried(
        tmp_path: Path, server: OpenAIServer) -> None:
    server.script.always = api.UNAUTHORIZED
    remote = _repo(tmp_path, server, items=2)
    entry, other = run(remote.clone).report.items
    assert not entry.verified
    assert entry.attempts == 1, "a rejected key fails every try: it is not retried"
    assert entry.error is not None and "\n" not in entry.error
    assert entry.error.startswith(
        "worker exited 1: codex: unexpected status 401 Unauthorized: Incorrect API key")
    assert "Reconnecting" not in entry.error
    assert Path(entry.attempt_records[0].log_path).read_text().count("Reconnecting...") >= 5
    assert entry.error.endswith("(not retried: the model API rejected the key (401): check CODEX_API_KEY)")
    assert origin_tracker(remote).items[0].last_error == entry.error
    assert (other.attempts, other.error) == (0, (
        "not started: worker profile 'p' failed for good (a attempt 1: the model API rejected the key "
        "(401): check CODEX_API_KEY)"))


@needs_bwrap
@FORGED_PERMANENT_XFAIL
def test_a_tool_that_forges_a_rejected_key_and_interrupts_codex_stops_no_sibling(
        tmp_path: Path, codex_env: None) -> None:
    # a's command wrote a `turn.failed` saying "401 Unauthorized" into codex's output and sent it SIGINT until
    # it ended: codex-cli 0.171.0 exits 1 printing nothing more, and the forged turn read as the key rejected.
    forge = REPO_ROOT / "tests" / "hostile_workers" / "forge_result.py"
    write_b = WRITE.replace("a.txt", "b.txt")
    command = f'case "$PWD" in */a-1) python3 {forge} interrupt401 codex;; *) {write_b};; esac'
    with OpenAIServer(Script(commands=[command])) as server:
        remote = _repo(tmp_path, server, items=2, sandbox="bwrap")
        first, second = run(remote.clone).report.items
    assert first.exit_code == 1, first.error
    assert second.verified, second.error


def test_an_unknown_model_is_its_cause_counted_once_and_not_retried(
        tmp_path: Path, server: OpenAIServer) -> None:
    server.script.always = api.UNKNOWN_MODEL
    (entry,) = _wave(tmp_path, server).items
    assert entry.attempts == 1
    assert entry.error == ("worker exited 1: codex: The model `gpt-nope` does not exist or you do not have "
                           "access to it. (not retried: the model does not exist or the key has no access to "
                           "it: check `model` of the profile)")


def test_rate_limited_codex_fails_with_its_cause_and_is_retried(tmp_path: Path, server: OpenAIServer) -> None:
    server.script.faults = [api.status(429, "Rate limit reached for gpt-5-codex.", "rate_limit_exceeded")]
    (entry,) = _wave(tmp_path, server).items
    assert entry.verified, entry.error
    first, second = entry.attempt_records
    assert first.error == "worker exited 1: codex: exceeded retry limit, last status: 429 Too Many Requests"
    assert second.error is None


def test_a_hung_model_api_is_killed_by_the_idle_limit(tmp_path: Path, server: OpenAIServer) -> None:
    server.script.faults = [api.HANG]
    (entry,) = _wave(tmp_path, server, idle_timeout_s=5, attempts=1).items
    assert not entry.verified
    assert entry.error is not None and entry.error.startswith("worker killed: no output for 5 s")


# ------------------------------------------------------------------------------------------ setup

def test_a_key_in_openai_api_key_only_is_refused_before_anything_is_claimed(
        tmp_path: Path, server: OpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CODEX_API_KEY")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-openai")
    remote = _repo(tmp_path, server, worker_env=["OPENAI_API_KEY"])
    result = wavegit(remote.clone, "run")
    assert result.returncode == 2
    assert ("codex reads its key from CODEX_API_KEY, not OPENAI_API_KEY: set CODEX_API_KEY "
            "(e.g. CODEX_API_KEY=$OPENAI_API_KEY) and list it in `worker_env`; nothing was claimed"
            ) in result.stderr
    assert server.sent.requests == 0
    assert origin_tracker(remote).items[0].status == "todo"


def test_codex_steps_count_as_output_for_the_idle_limit_and_status_names_its_last_command(
        tmp_path: Path, server: OpenAIServer) -> None:
    # Three quiet 2 s steps: 6 s in all under a 3 s idle limit, each step's events the only output.
    server.script.commands = ["sleep 2", "sleep 2", "sleep 2", WRITE]
    remote = _repo(tmp_path, server, idle_timeout_s=3)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    wave = subprocess.Popen([sys.executable, "-m", "wavegit", "run", "--json"], cwd=remote.clone, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    seen: set[str] = set()
    while wave.poll() is None:
        status = wavegit(remote.clone, "status").stdout
        seen.update(line for line in status.splitlines() if "shell: " in line)
        time.sleep(0.3)
    report = WaveReport.from_json(wave.communicate()[0])
    _assert_verified_as_sent(report, server)
    assert any("shell: sleep 2" in line for line in seen), seen
    assert server.sent.responses == 5


# ------------------------------------------------------------------------------------- an ordinary user

@pytest.mark.parametrize("mode", ["none", pytest.param("bwrap", marks=needs_bwrap)])
def test_codex_run_by_an_ordinary_user_lands_its_edit(mode: str, server: OpenAIServer) -> None:
    user = ordinary_user()
    with user_base() as base:
        remote = _repo(base, server, sandbox=mode)
        report = run_as(user, remote.clone, base, agent_bin("codex"), {"CODEX_API_KEY": "sk-test-codex"})
        assert_verified_as_sent(report, server.sent, "Bearer sk-test-codex")
        assert Path(report.items[0].attempt_records[0].log_path).stat().st_uid == user.uid
