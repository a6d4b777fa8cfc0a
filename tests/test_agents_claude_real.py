"""Real waves with the real Claude Code CLI (the version CI and the Action install, ``.ci/install-agents``)
against a local Anthropic Messages API (tests/helpers/anthropic_server.py) that scripts what the model says:
sandboxed and unsandboxed, as root and as an ordinary user, and the API's failures (401, 404, 429, 500, 529, a
hang, a stream slower than the idle limit, a dropped connection), sub-agents and the CLI's own limits."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import anthropic_server as api
from tests.helpers.agents_real import IS_ROOT, ROOT, User, agent_bin, ordinary_user, python_for
from tests.helpers.repos import REPO_ROOT, RemoteRepo, git
from tests.helpers.wave import check, item, make_wave_repo
from wavegit.attempts import sandbox
from wavegit.model.report import AttemptRecord, WaveReport

pytestmark = pytest.mark.real

BWRAP = shutil.which(sandbox.BWRAP)
PROBLEM = sandbox.probe(BWRAP) if BWRAP else "bwrap is not installed"
MODEL = "claude-sonnet-4-5"
SUBAGENT_MODEL = "claude-haiku-4-5"
KEY = "sk-ant-test-key"
WRITE = [[api.text("Writing it."), api.write("{cwd}/src/a.txt", "ok\n")], [api.text("Done.")]]
"""The model writes the item's file with the CLI's Write tool, then ends its turn."""
SANDBOXES = ["bwrap", "none"]


def _sandbox_param(mode: str) -> Any:
    return pytest.param(mode, marks=pytest.mark.skipif(mode == "bwrap" and PROBLEM is not None,
                                                       reason=f"bwrap cannot run here: {PROBLEM}"))


def _user_param(who: str) -> Any:
    return pytest.param(who, marks=pytest.mark.skipif(who == "root" and not IS_ROOT,
                                                      reason="the root rows need the tests to run as root"))


@pytest.fixture
def claude_bin() -> Path:
    return agent_bin("claude")


@dataclass
class Wave:
    """A wave repository for the real CLI, owned by the user who runs it."""

    remote: RemoteRepo
    user: User
    home: Path
    python: str

    def run(self, server: api.AnthropicServer | None = None, timeout: float = 180,
            extra: dict[str, str] | None = None) -> tuple[int, WaveReport | None, str]:
        """``wavegit run --json`` as its user: exit code, report (None when it printed none), stderr."""
        result = self.user.run([self.python, "-m", "wavegit", "run", "--json"], self.remote.clone,
                               self.env(server, extra), timeout)
        report = WaveReport.from_json(result.stdout) if result.stdout.strip() else None
        return result.returncode, report, result.stderr

    def env(self, server: api.AnthropicServer | None, extra: dict[str, str] | None = None) -> dict[str, str]:
        del server
        path = os.pathsep.join([str(agent_bin("claude")), os.path.dirname(self.python),
                                "/usr/local/bin:/usr/bin:/bin"])
        env = {"PATH": path, "HOME": str(self.home), "GIT_CONFIG_GLOBAL": str(self.home / ".gitconfig"),
               "GIT_CONFIG_NOSYSTEM": "1", "PYTHONPATH": str(REPO_ROOT), "PYTHONDONTWRITEBYTECODE": "1",
               "LANG": "C.UTF-8", "ANTHROPIC_API_KEY": KEY, "CLAUDE_CODE_MAX_RETRIES": "2",
               "CLAUDE_CODE_SUBAGENT_MODEL": SUBAGENT_MODEL}
        env.update({k: v for k, v in os.environ.items() if k.startswith(("GIT_AUTHOR_", "GIT_COMMITTER_"))})
        env.update(extra or {})
        return env


@pytest.fixture
def wave_base(tmp_path: Path) -> Iterator[Path]:
    """A folder every user may enter (tmp_path's parents are root's alone), removed afterwards."""
    base = Path(tempfile.mkdtemp(prefix="wavegit-real-", dir=os.environ.get("TMPDIR", "/tmp")))
    os.chmod(base, 0o755)
    # The test process (root) reads the origin an ordinary user owns.
    with open(os.environ["GIT_CONFIG_GLOBAL"], "a", encoding="utf-8") as config:
        config.write("[safe]\n\tdirectory = *\n")
    yield base
    shutil.rmtree(base, ignore_errors=True)


def _wave(base: Path, user: User, items: list[dict[str, Any]], **config: Any) -> Wave:
    python = python_for(user)
    for entry in items:  # the item's test runs with a Python its user may run
        entry["test"] = entry["test"].replace(sys.executable, python)
    settings: dict[str, Any] = {
        "worker": "deep", "workers": {"deep": {"preset": "claude", "model": MODEL,
                                               "base_url": config.pop("base_url", "")}},
        "worker_env": ["ANTHROPIC_API_KEY", "CLAUDE_CODE_MAX_RETRIES", "CLAUDE_CODE_SUBAGENT_MODEL"],
        "sandbox": "none", "attempts": 1, "concurrency": 1, "timeout_s": 120, "idle_timeout_s": 60}
    settings.update(config)
    (base / "repo").mkdir()
    remote = make_wave_repo(base / "repo", items, **settings)
    home = base / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
    user.own(base)
    return Wave(remote, user, home, python)


def _item(item_id: str = "A", path: str = "src/a.txt", **extra: Any) -> dict[str, Any]:
    return item(item_id, [f"write {path}"], [path], test=check(path, "ok"), **extra)


def _profile(server: api.AnthropicServer, **more: Any) -> dict[str, Any]:
    return {"deep": {"preset": "claude", "model": MODEL, "base_url": server.url, **more}}


def _only(report: WaveReport | None, stderr: str = "") -> tuple[Any, AttemptRecord]:
    assert report is not None, stderr
    (entry,) = report.items
    return entry, entry.attempt_records[-1]


def _table_row(what: str, record: AttemptRecord, server: api.AnthropicServer, verified: bool) -> None:
    """One row of the closing note's table, printed (``pytest -s`` shows it)."""
    sent = server.total_sent()
    print(f"\nTABLE claude | {what} | {'verified' if verified else 'failed'} | read "
          f"{record.input_tokens}/{record.output_tokens} | sent {sent[0]}/{sent[1]} | ${record.cost}")


# ---------------------------------------------------------------------------- the matrix: lands its edit

@pytest.mark.parametrize("mode", [_sandbox_param(m) for m in SANDBOXES])
@pytest.mark.parametrize("who", [_user_param("root"), _user_param("user")])
def test_a_real_claude_wave_lands_its_edit_and_reads_what_the_server_sent(
        claude_bin: Path, wave_base: Path, mode: str, who: str) -> None:
    user = ROOT if who == "root" else ordinary_user()
    with api.AnthropicServer(api.Script(WRITE, model=MODEL)) as server:
        wave = _wave(wave_base, user, [_item()], sandbox=mode, workers=_profile(server))
        code, report, stderr = wave.run(server)
    entry, record = _only(report, stderr)
    _table_row(f"sandbox {mode} | {who}", record, server, entry.verified)
    assert (code, entry.verified) == (0, True), (entry.error, stderr)
    # Tokens and dollars: what the server reported, and the CLI's own price of it.
    assert (record.input_tokens, record.output_tokens) == server.total_sent() == (2000, 200)
    assert record.cost == pytest.approx(2000 * 3e-6 + 200 * 15e-6)
    assert report is not None and git(wave.remote.origin, "show", f"{report.branch}:src/a.txt") == "ok"
    # The profile's base_url reached the CLI (it had no ANTHROPIC_BASE_URL of its own): every main turn came.
    assert [r["role"] for r in server.requests] == ["main", "main"]
    assert record.worker == ("deep (claude, claude-sonnet-4-5)" if mode == "bwrap"
                             else "deep (claude, claude-sonnet-4-5, edits only: unsandboxed)")


# ------------------------------------------------------------------------------------ the API's failures

ME = ROOT if IS_ROOT else None
"""Who runs the error-mode waves: the user running the tests."""


def _me() -> User:
    return ME or ordinary_user()


def _run(wave_base: Path, script: api.Script, items: list[dict[str, Any]] | None = None,
         profile: dict[str, Any] | None = None, extra: dict[str, str] | None = None,
         **config: Any) -> tuple[int, WaveReport | None, str, api.AnthropicServer]:
    with api.AnthropicServer(script) as server:
        wave = _wave(wave_base, _me(), items or [_item()], workers=_profile(server, **(profile or {})),
                     **config)
        code, report, stderr = wave.run(server, extra=extra)
    return code, report, stderr, server


def test_a_15_s_run_that_streams_progress_outlives_an_idle_limit_of_5_s_and_status_shows_its_action(
        claude_bin: Path, wave_base: Path) -> None:
    # Five model turns of 3 s each: the CLI streams a line per turn, never 5 s of silence, 15 s in all.
    reads = [[api.tool("Read", file_path="{cwd}/src/a.txt")]] * 3
    script = api.Script([[api.write("{cwd}/src/a.txt", "ok\n")], *reads, [api.text("Done.")]], delay=3.0)
    with api.AnthropicServer(script) as server:
        wave = _wave(wave_base, _me(), [_item()], workers=_profile(server), idle_timeout_s=5)
        env = wave.env(server)
        running = subprocess.Popen([wave.python, "-m", "wavegit", "run", "--json"], cwd=wave.remote.clone,
                                   env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        seen: set[str] = set()
        while running.poll() is None:
            status = wave.user.run([wave.python, "-m", "wavegit", "status", "--json"], wave.remote.clone, env,
                                   timeout=60)
            for state in json.loads(status.stdout or "[]"):
                seen |= {f"{i['state']}: {i['detail']}" for i in state["items"].values()}
            time.sleep(0.5)
        out, err = running.communicate()
    entry, record = _only(WaveReport.from_json(out), err)
    assert entry.verified, entry.error
    assert record.killed is None and len(server.main_requests) == 5
    started, finished = (datetime.fromisoformat(t) for t in (record.started_at, record.finished_at))
    assert (finished - started).total_seconds() >= 15
    # What `wavegit status` showed while it ran: the tool and the path of its last action.
    assert any(s.startswith("working: Write /") and s.endswith("/src/a.txt") for s in seen), seen
    assert any(s.startswith("working: Read /") for s in seen), seen


def test_a_stream_slower_than_the_idle_limit_is_killed_and_a_token_ceiling_says_the_cost_is_unknown(
        claude_bin: Path, wave_base: Path) -> None:
    # The model's answer trickles (SSE pings) for 20 s: the CLI prints nothing meanwhile, the idle limit
    # of 5 s kills it, and with only `wave_tokens` set the report still names the ceiling.
    code, report, stderr, _ = _run(wave_base, api.Script([api.Fault(trickle=20)]), idle_timeout_s=5,
                                   budget={"wave_tokens": 10**6})
    entry, record = _only(report, stderr)
    assert (code, record.killed) == (1, "idle")
    assert entry.error == "worker killed: no output for 5 s (idle_timeout_s)"
    assert report is not None and report.budget.exceeded
    assert report.ceiling_reason == "a cost that could not be read counts as over the ceiling"


def test_a_hang_is_killed_at_the_idle_limit_and_the_next_attempt_lands(claude_bin: Path,
                                                                      wave_base: Path) -> None:
    code, report, stderr, server = _run(wave_base, api.Script([api.Fault(hang=30), *WRITE]), attempts=2,
                                        idle_timeout_s=5)
    entry, record = _only(report, stderr)
    assert (code, entry.verified, entry.attempts) == (0, True, 2), entry.error
    assert entry.attempt_records[0].killed == "idle"
    assert (record.input_tokens, record.output_tokens) == server.total_sent()


def test_the_clis_own_retries_of_a_busy_api_are_not_a_failure(claude_bin: Path, wave_base: Path) -> None:
    # Each busy status once, in one run (one launch of the CLI, not one per status): three retries, whose
    # backoffs (~0.5, 1 and 2 s, silent) stay well inside the idle limit on a loaded machine too.
    busy = [429, 500, 529]
    code, report, stderr, server = _run(wave_base, api.Script([*(api.Fault(status=s) for s in busy), *WRITE]),
                                        extra={"CLAUDE_CODE_MAX_RETRIES": str(len(busy))}, idle_timeout_s=15)
    entry, record = _only(report, stderr)
    assert (code, entry.verified, entry.attempts) == (0, True, 1), entry.error
    assert [r["fault"].status if r["fault"] else None for r in server.main_requests] == [*busy, None, None]
    assert (record.input_tokens, record.output_tokens) == server.total_sent()


def test_a_connection_dropped_mid_stream_is_retried_by_the_cli(claude_bin: Path, wave_base: Path) -> None:
    code, report, stderr, server = _run(wave_base, api.Script([api.Fault(drop=True), *WRITE]))
    entry, record = _only(report, stderr)
    assert (code, entry.verified, entry.attempts) == (0, True, 1), entry.error
    assert (record.input_tokens, record.output_tokens) == server.total_sent() == (2000, 200)


def test_the_tokens_and_dollars_of_sub_agents_are_counted(claude_bin: Path, wave_base: Path) -> None:
    # The main model starts a sub-agent (the CLI's Agent tool) on another model, then writes the file.
    helper = api.tool("Agent", description="helper", prompt="Look around.", subagent_type="general-purpose")
    script = api.Script([[helper], *WRITE], subagent=[[api.text("Looked around.")]],
                        subagent_model=SUBAGENT_MODEL)
    code, report, stderr, server = _run(wave_base, script)
    entry, record = _only(report, stderr)
    assert (code, entry.verified) == (0, True), entry.error
    assert set(server.sent) == {MODEL, SUBAGENT_MODEL}
    assert (record.input_tokens, record.output_tokens) == server.total_sent()
    main, sub = server.sent[MODEL], server.sent[SUBAGENT_MODEL]
    assert record.cost == pytest.approx((main["input"] * 3 + main["output"] * 15
                                         + sub["input"] * 1 + sub["output"] * 5) / 1e6)


# ------------------------------------------------------------------------------- failures that repeat

@pytest.mark.parametrize(("script", "args", "said", "why"), [
    (api.Script([api.Fault(status=401, times=100)]), [], "claude: Failed to authenticate. API Error: 401",
     "the API rejected the credentials"),
    (api.Script([api.Fault(status=404, times=100)]), [], "claude: There's an issue with the selected model",
     "the model does not exist or is not available"),
], ids=["401", "404"])
def test_a_failure_that_will_repeat_is_counted_once_and_stops_its_profile_for_the_wave(
        claude_bin: Path, wave_base: Path, script: api.Script, args: list[str], said: str, why: str) -> None:
    items = [_item("A"), _item("B", "src/b.txt")]
    code, report, stderr, _ = _run(wave_base, script, items, profile={"args": args}, attempts=2)
    assert code == 1 and report is not None, stderr
    first, second = report.items
    assert first.attempts == 1 and first.error is not None
    assert first.error.startswith(f"worker exited 1: {said}")
    assert first.error.endswith(f"(not retried: {why})")
    assert second.attempts == 0
    assert second.error == f"not started: worker profile 'deep' failed for good (A attempt 1: {why})"
    assert f"worker profile 'deep' failed for good (A attempt 1: {why}): no further attempt of it started " \
           "in this wave" in report.notes


def test_a_run_out_of_turns_is_not_retried_and_its_profiles_other_items_still_start(
        claude_bin: Path, wave_base: Path) -> None:
    # The item's own maximum of turns: another item may need fewer. A prompt that kept the agent busy past
    # --max-turns stopped every other item of its profile in the wave.
    script = api.Script([[api.tool("Read", file_path="{cwd}/README.md")]])
    items = [_item("A"), _item("B", "src/b.txt")]
    code, report, stderr, _ = _run(wave_base, script, items, profile={"args": ["--max-turns", "1"]},
                                   attempts=2)
    assert code == 1 and report is not None, stderr
    said = "worker exited 1: claude: Reached maximum number of turns (1)"
    assert [(i.attempts, i.error) for i in report.items] == [
        (1, f"{said} (not retried: the run reached its maximum number of turns)")] * 2
    assert not any("failed for good" in note for note in report.notes)


def test_without_a_result_the_clis_last_words_on_stderr_are_the_error(claude_bin: Path,
                                                                     wave_base: Path) -> None:
    _, report, stderr, server = _run(wave_base, api.Script(WRITE), profile={"args": ["--no-such-option"]})
    entry, _ = _only(report, stderr)
    assert entry.error == "worker exited 1: claude: error: unknown option '--no-such-option'"
    assert server.requests == []


@pytest.mark.skipif(PROBLEM is not None, reason=f"bwrap cannot run here: {PROBLEM}")
def test_a_tool_that_forges_a_last_word_and_interrupts_the_cli_stops_no_sibling_of_its_profile(
        claude_bin: Path, wave_base: Path) -> None:
    # A's Bash tool wrote "Not logged in" into Claude's output and sent it SIGINT: Claude Code 2.1.332 ends
    # with exit 0 and no result, so the forged line was its last word, read as a failure that will repeat:
    # B, of the same profile, was never started. A failure that will repeat ends the CLI with an error.
    forge = REPO_ROOT / "tests" / "hostile_workers" / "forge_result.py"
    # A's second turn, which the forger interrupts, is the model thinking (3 s); B writes its file.
    script = api.Script([[api.tool("Bash", command=f"python3 {forge} interrupt")], [api.text("Thinking.")],
                         [api.write("{cwd}/src/b.txt", "ok\n")], [api.text("Done.")]], delay=3.0)
    items = [_item("A"), _item("B", "src/b.txt")]
    _, report, stderr, _ = _run(wave_base, script, items, sandbox="bwrap")
    assert report is not None, stderr
    first, second = report.items
    assert first.attempts == 1 and "not retried" not in (first.error or ""), first.error
    assert second.verified, second.error


@pytest.mark.skipif(PROBLEM is not None, reason=f"bwrap cannot run here: {PROBLEM}")
def test_a_tool_that_spoils_the_clis_own_result_line_cannot_dodge_the_budget(
        claude_bin: Path, wave_base: Path) -> None:
    # A's Bash tool wrote a $0 result into Claude's output, then left a process writing bytes without a
    # newline: Claude's own result line, written after them, was no JSON, and a spoiled line was looked for
    # only as `{"type":"result"` (the fake CLI's order), while Claude Code 2.1.332 starts its result with
    # `{"duration_api_ms"`. The forged result was the account: $0, under the ceiling, and B started.
    forge = REPO_ROOT / "tests" / "hostile_workers" / "forge_result.py"
    script = api.Script([[api.tool("Bash", command=f"python3 {forge} spoil")], [api.text("Done.")],
                         [api.write("{cwd}/src/b.txt", "ok\n")], [api.text("Done.")]])
    items = [_item("A"), _item("B", "src/b.txt")]
    _, report, stderr, _ = _run(wave_base, script, items, sandbox="bwrap", budget={"wave_usd": 0.001})
    assert report is not None, stderr
    first, second = report.items
    assert first.attempt_records[0].cost is None, first.attempt_records[0]
    assert second.attempts == 0 and report.budget.exceeded, second.error


# ------------------------------------------------------------------------------ root, credentials, gateway

@pytest.mark.skipif(not IS_ROOT, reason="the root refusal needs the tests to run as root")
def test_as_root_outside_the_sandbox_a_profile_asking_for_every_permission_is_refused_before_the_claim(
        claude_bin: Path, wave_base: Path) -> None:
    with api.AnthropicServer(api.Script(WRITE)) as server:
        wave = _wave(wave_base, ROOT, [_item()],
                     workers=_profile(server, args=["--dangerously-skip-permissions"]))
        before = git(wave.remote.origin, "for-each-ref", "--format=%(refname) %(objectname)")
        code, _, stderr = wave.run(server)
    assert code == 2 and server.requests == []
    (line,) = stderr.splitlines()
    assert line.startswith("wavegit run: worker 'deep': claude refuses every permission") or \
        line.startswith("wavegit run: worker profile 'deep': claude refuses every permission"), line
    assert "run wavegit as another user, or use `sandbox: bwrap`; nothing was claimed" in line
    assert git(wave.remote.origin, "for-each-ref", "--format=%(refname) %(objectname)") == before


def test_an_auth_token_alone_is_credentials_enough_and_none_at_all_is_refused_naming_the_fix(
        claude_bin: Path, wave_base: Path) -> None:
    with api.AnthropicServer(api.Script(WRITE)) as server:
        wave = _wave(wave_base, _me(), [_item()], workers=_profile(server),
                     worker_env=["ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_API_KEY"])
        env = {k: v for k, v in wave.env(server).items() if k != "ANTHROPIC_API_KEY"}
        refused = wave.user.run([wave.python, "-m", "wavegit", "run", "--json"], wave.remote.clone, env, 120)
        assert refused.returncode == 2
        assert "claude needs ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN or CLAUDE_CODE_OAUTH_TOKEN set and " \
               "listed in `worker_env`" in refused.stdout + refused.stderr
        code, report, stderr = wave.run(server, extra={"ANTHROPIC_AUTH_TOKEN": KEY})
    assert code == 0 and report is not None and report.items[0].verified, stderr
