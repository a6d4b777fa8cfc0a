"""Agent presets and worker profiles (wavegit.attempts.agents) in real waves, against fake ``claude`` and
``codex`` executables (tests/agents/) that print exactly what Claude Code 2.1.197 and codex-cli 0.171.0
print."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.reliability import wavegit_in_process as wavegit_here
from tests.helpers.repos import TESTS, git, wavegit
from tests.helpers.wave import WORKER, item, make_wave_repo, origin_tracker, run
from wavegit.attempts import agents, sandbox
from wavegit.attempts.agents import CLAUDE, CODEX, Agent
from wavegit.attempts.preset import Launch
from wavegit.core.errors import ValidationError
from wavegit.core.repo import discover
from wavegit.engine import attempt as attempt_engine
from wavegit.model import config
from wavegit.model.report import AttemptRecord, WaveReport

AGENTS = TESTS / "agents"
BWRAP = shutil.which(sandbox.BWRAP)
PROBLEM = sandbox.probe(BWRAP) if BWRAP else "bwrap is not installed"
needs_bwrap = pytest.mark.skipif(PROBLEM is not None, reason=f"bwrap cannot run: {PROBLEM}")

PROFILES = {"deep": {"preset": "claude", "model": "opus"},
            "gpt": {"preset": "codex", "model": "gpt-5-codex", "args": ["--skip-git-repo-check"]},
            "plain": {"command": WORKER}}
KEYS = ["ANTHROPIC_API_KEY", "CODEX_API_KEY"]
PRICES = {"gpt-5-codex": {"input_per_mtok": 1.25, "output_per_mtok": 10.0}}
# What the fake codex reports over its two turns, and that at PRICES.
CODEX_INPUT, CODEX_OUTPUT = 24763 + 1237, 122 + 878
CODEX_USD = (CODEX_INPUT * 1.25 + CODEX_OUTPUT * 10.0) / 1e6


@pytest.fixture
def fake_agents(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fake CLIs first on PATH, with credentials set (each test's config lists them in worker_env)."""
    monkeypatch.setenv("PATH", f"{AGENTS}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("CODEX_API_KEY", "sk-test")


def _repo(tmp_path: Path, items: list[dict[str, Any]], **overrides: Any) -> Any:
    settings: dict[str, Any] = {"workers": PROFILES, "prices": PRICES, "worker_env": KEYS, "sandbox": "none",
                                "attempts": 1, "concurrency": 1}
    settings.update(overrides)
    return make_wave_repo(tmp_path, items, **settings)


def _one_verified(tmp_path: Path, worker: str, actions: tuple[str, ...] = (),
                  **overrides: Any) -> tuple[WaveReport, AttemptRecord]:
    """A wave of one item run by ``worker`` (its ``actions``, then a write), verified: its report and
    attempt."""
    remote = _repo(tmp_path, [item("A", [*actions, "write src/a.txt ok"], ["src/a.txt"], worker=worker)],
                   **overrides)
    rep = run(remote.clone).report
    (entry,) = rep.items
    assert entry.verified, entry.error
    return rep, entry.attempt_records[0]


def _argv(report: WaveReport, item_index: int = 0) -> list[str]:
    """The arguments the fake CLI was started with, from the attempt's log."""
    log = Path(report.items[item_index].attempt_records[0].log_path).read_text()
    (line,) = [line for line in log.splitlines() if line.startswith("fake-")]
    parsed: list[str] = json.loads(line.split(" argv: ", 1)[1])
    return parsed


# ------------------------------------------------------------------------------------------ presets (unit)

def test_the_claude_preset_grants_full_permissions_only_inside_the_sandbox() -> None:
    assert CLAUDE.argv(Launch("opus", sandboxed=True), ["--max-turns", "3"]) == [
        "claude", "-p", "--output-format", "stream-json", "--verbose", "--permission-mode",
        "bypassPermissions", "--model", "opus", "--max-turns", "3"]
    assert CLAUDE.argv(Launch("", sandboxed=False), []) == [
        "claude", "-p", "--output-format", "stream-json", "--verbose", "--permission-mode", "acceptEdits"]
    deep = Agent("deep", CLAUDE, "opus")
    assert deep.label(sandboxed=False) == "deep (claude, opus, edits only: unsandboxed)"
    assert Agent("deep", CLAUDE, "opus").label(sandboxed=True) == "deep (claude, opus)"


def test_the_codex_preset_leaves_sandboxing_to_bwrap_inside_it_and_reads_the_prompt_from_stdin() -> None:
    assert CODEX.argv(Launch("gpt-5", sandboxed=True), ["--skip-git-repo-check"]) == [
        "codex", "exec", "--json", "--dangerously-bypass-approvals-and-sandbox", "-m", "gpt-5",
        "--skip-git-repo-check", "-"]
    assert CODEX.argv(Launch("", sandboxed=False), []) == [
        "codex", "exec", "--json", "-s", "workspace-write", "-"]
    # codex ignores OPENAI_BASE_URL: a gateway goes in its config, as a TOML string.
    assert CODEX.argv(Launch("", sandboxed=True, base_url="http://127.0.0.1:8080/v1"), [])[4:6] == [
        "-c", 'openai_base_url="http://127.0.0.1:8080/v1"']


def test_an_item_without_a_worker_runs_the_config_worker_a_preset_a_profile_or_a_command() -> None:
    profiles = config.Config(workers=(config.WorkerProfile("deep", "claude", "opus"),))
    assert agents.resolve(profiles, None).label(True) == "worker (claude)"
    assert agents.resolve(profiles._replace(worker="deep"), None).label(True) == "deep (claude, opus)"
    command = agents.resolve(profiles._replace(worker="./agent --fast"), None)
    assert command.argv(True) == ["./agent", "--fast"]
    assert agents.resolve(profiles, "deep").model == "opus"


def test_worker_profiles_are_checked_where_they_are_written() -> None:
    text = ("workers:\n  both: {preset: claude, command: x}\n  neither: {model: opus}\n  scalar: claude\n"
            "  odd: {preset: aider}\n  cmd: {command: x, model: m}\n  gw: {preset: claude, base_url: ftp://x}\n")
    with pytest.raises(ValidationError) as raised:
        config.parse_config_text(text)
    assert [str(p).split(" (hint")[0] for p in raised.value.problems] == [
        ".wavegit/config.yaml:2:9: 'workers.both' needs either `preset` or `command`",
        ".wavegit/config.yaml:3:12: 'workers.neither' needs either `preset` or `command`",
        ".wavegit/config.yaml:4:11: 'workers.scalar' must be a mapping, got a string",
        ".wavegit/config.yaml:5:17: 'preset' must be one of claude, codex, gemini, got 'aider'",
        ".wavegit/config.yaml:6:8: 'workers.cmd' takes `model`, `args` and `base_url` only with a `preset` "
        "(put them in the command)",
        ".wavegit/config.yaml:7:34: 'base_url' is 'ftp://x': it must be an http:// or https:// URL"]


# ----------------------------------------------------------------------------------------- claude in waves

def test_a_claude_profile_runs_its_model_and_the_report_and_commit_name_profile_cost_and_tokens(
        tmp_path: Path, fake_agents: None) -> None:
    rep, record = _one_verified(tmp_path, "deep")
    assert record.worker == "deep (claude, opus, edits only: unsandboxed)"
    assert (record.cost, record.input_tokens, record.output_tokens) == (0.0123, 150, 50)
    assert rep.items[0].tokens == 200
    assert _argv(rep) == ["-p", "--output-format", "stream-json", "--verbose", "--permission-mode",
                          "acceptEdits", "--model", "opus"]
    trailers = git(tmp_path / "origin.git", "log", "--format=%(trailers:key=Wavegit-Worker,valueonly)",
                   rep.branch)
    assert [t for t in trailers.splitlines() if t] == ["deep (claude, opus, edits only: unsandboxed)"]


def test_claude_not_logged_in_is_the_attempts_error_not_a_bare_exit_code(
        tmp_path: Path, fake_agents: None) -> None:
    remote = _repo(tmp_path, [item("A", ["write src/a.txt ok", "agent not-logged-in"], ["src/a.txt"],
                                   worker="deep")])
    (entry,) = run(remote.clone).report.items
    assert not entry.verified
    assert entry.error == ("worker exited 1: claude: Not logged in · Please run /login (not retried: no "
                           "credentials reached the CLI)")
    assert origin_tracker(remote).items[0].last_error == entry.error


def test_a_failure_that_will_repeat_stops_its_profile_before_the_freed_slot_lets_the_sibling_start(
        tmp_path: Path, fake_agents: None, monkeypatch: pytest.MonkeyPatch) -> None:
    # The slot is given back when the worker exits, before its verdict: a verdict slower than the sibling's
    # launch (a loaded machine) let the sibling of the same profile start and fail the same way.
    judge = attempt_engine.verify

    def slow_verdict(*args: Any, **kwargs: Any) -> None:
        time.sleep(1)
        judge(*args, **kwargs)

    monkeypatch.setattr(attempt_engine, "verify", slow_verdict)
    remote = _repo(tmp_path, [item("A", ["agent not-logged-in"], ["src/a.txt"], worker="deep"),
                              item("B", ["write src/b.txt ok"], ["src/b.txt"], worker="deep")])
    first, second = run(remote.clone).report.items
    assert (first.attempts, second.attempts) == (1, 0), second.error
    assert second.error == ("not started: worker profile 'deep' failed for good (A attempt 1: no credentials "
                            "reached the CLI)")


def test_unsandboxed_claude_keeps_edits_only_and_a_denied_command_says_why_an_attempt_failed(
        tmp_path: Path, fake_agents: None) -> None:
    remote = _repo(tmp_path, [item("A", ["agent bash true"], ["src/a.txt"], worker="deep"),
                              item("B", ["agent bash true", "write src/b.txt ok"], ["src/b.txt"],
                                   worker="deep")])
    failed, verified = run(remote.clone).report.items
    assert failed.error == "the worker changed nothing; claude was denied permission for Bash (1 denial)"
    # Denied but done: wavegit runs the item's test itself.
    assert verified.verified, verified.error


def test_the_last_streamed_action_is_logged_for_status_with_the_path_it_names(
        tmp_path: Path, fake_agents: None) -> None:
    rep, _ = _one_verified(tmp_path, "deep")
    states = [json.loads(line) for line in (discover(tmp_path / "work").events_dir / f"{rep.wave_id}.jsonl")
              .read_text().splitlines()]
    working = [s["detail"] for s in states if s.get("state") == "working"]
    assert len(working) == 1 and working[0].startswith("Write /") and working[0].endswith("/src/a.txt")


def test_attack_a_flood_of_streamed_actions_is_bounded_and_cannot_reach_a_terminal(
        tmp_path: Path, fake_agents: None) -> None:
    # 20000 actions naming paths with an OSC 52 (clipboard) sequence, then 2 MB without a newline: a few
    # throttled events, escaped, and the wave goes on.
    rep, _ = _one_verified(tmp_path, "deep", ("agent flood 20000",))
    log = (discover(tmp_path / "work").events_dir / f"{rep.wave_id}.jsonl").read_text()
    working = [json.loads(line)["detail"] for line in log.splitlines() if '"working"' in line]
    assert 1 <= len(working) <= 10
    assert all("\x1b" not in detail and "\x07" not in detail for detail in working)
    assert any(detail.startswith("Write \\x1b]52;c;evil\\x07/src/") for detail in working), working


@needs_bwrap
def test_sandboxed_claude_gets_full_permissions_and_may_run_commands(tmp_path: Path,
                                                                    fake_agents: None) -> None:
    rep, record = _one_verified(tmp_path, "deep", ("agent bash true",), sandbox="bwrap")
    assert record.worker == "deep (claude, opus)"
    assert _argv(rep)[4:6] == ["--permission-mode", "bypassPermissions"]


# ------------------------------------------------------------------------------------------ codex in waves

def test_a_codex_profile_reads_stdin_and_its_tokens_are_priced_from_the_config(
        tmp_path: Path, fake_agents: None) -> None:
    rep, record = _one_verified(tmp_path, "gpt")
    assert (record.worker, record.profile, record.model) == ("gpt (codex, gpt-5-codex)", "gpt", "gpt-5-codex")
    assert (record.input_tokens, record.output_tokens) == (CODEX_INPUT, CODEX_OUTPUT)
    assert record.cost == pytest.approx(CODEX_USD)
    assert _argv(rep) == ["exec", "--json", "-s", "workspace-write", "-m", "gpt-5-codex",
                          "--skip-git-repo-check", "-"]


@needs_bwrap
def test_sandboxed_codex_leaves_the_sandbox_to_bwrap(tmp_path: Path, fake_agents: None) -> None:
    rep, _ = _one_verified(tmp_path, "gpt", sandbox="bwrap")
    assert _argv(rep)[:3] == ["exec", "--json", "--dangerously-bypass-approvals-and-sandbox"]
    assert "-s" not in _argv(rep)


def test_a_failed_codex_turn_is_the_attempts_error(tmp_path: Path, fake_agents: None) -> None:
    remote = _repo(tmp_path, [item("A", ["agent fail stream disconnected before completion"], ["src/a.txt"],
                                   worker="gpt")])
    (entry,) = run(remote.clone).report.items
    assert entry.error == "worker exited 1: codex: stream disconnected before completion"


# ------------------------------------------------------------------------------------------------ budgets

def test_codex_tokens_without_a_price_under_a_dollar_ceiling_fail_closed(tmp_path: Path,
                                                                        fake_agents: None) -> None:
    remote = _repo(tmp_path, [item(n, [f"write src/{n}.txt ok"], [f"src/{n}.txt"], worker="gpt")
                              for n in ("a", "b")], prices={}, budget={"wave_usd": 100.0})
    rep = run(remote.clone).report
    assert [i.attempts for i in rep.items] == [1, 0] and rep.budget.exceeded
    (note,) = [n for n in rep.notes if n.startswith("unreadable cost")]
    assert "counted as over the ceiling: a attempt 1: codex run: 27000 tokens but no dollars" in note
    assert "no entry for model 'gpt-5-codex'" in note


def test_a_token_ceiling_stops_new_attempts_once_reached(tmp_path: Path, fake_agents: None) -> None:
    remote = _repo(tmp_path, [item(n, [f"write src/{n}.txt ok"], [f"src/{n}.txt"], worker="deep")
                              for n in ("a", "b")], budget={"wave_tokens": 150})
    rep = run(remote.clone).report
    assert [i.attempts for i in rep.items] == [1, 0]
    assert rep.items[1].error is not None and "wave budget reached" in rep.items[1].error
    spent = rep.budget
    assert (spent.wave_tokens_limit, spent.wave_spent_tokens, spent.exceeded) == (150, 200, True)
    assert rep.ceiling_reason == "wave token budget: used 200 of 150 tokens"


@pytest.mark.parametrize(("ceiling", "missing"), [({"wave_usd": 5.0}, "no dollars"),
                                                  ({"wave_tokens": 10**6}, "no tokens")])
def test_a_worker_that_reports_nothing_under_a_ceiling_counts_as_over_it_never_as_zero(
        tmp_path: Path, ceiling: dict[str, float], missing: str) -> None:
    # The scripted worker writes no cost file: an unknown amount, which a ceiling must not read as $0.
    remote = _repo(tmp_path, [item(n, [f"write src/{n}.txt ok"], [f"src/{n}.txt"], worker="plain")
                              for n in ("a", "b")], budget=ceiling)
    rep = run(remote.clone).report
    assert [i.attempts for i in rep.items] == [1, 0] and rep.budget.exceeded
    (note,) = [n for n in rep.notes if n.startswith("unreadable cost")]
    assert f"a attempt 1: the worker reported {missing}" in note


def test_without_a_ceiling_a_worker_that_reports_nothing_is_no_note(tmp_path: Path) -> None:
    remote = _repo(tmp_path, [item(n, [f"write src/{n}.txt ok"], [f"src/{n}.txt"], worker="plain")
                              for n in ("a", "b")])
    rep = run(remote.clone).report
    assert [i.verified for i in rep.items] == [True, True] and not rep.budget.exceeded
    assert not [n for n in rep.notes if "unreadable" in n]


# ------------------------------------------------------------------------ unknown profiles, credentials

def _ghost_repo(tmp_path: Path) -> Any:
    return _repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"]),
                            item("B", ["write src/b.txt ok"], ["src/b.txt"], worker="deeep")])


def _ghost_line(remote: Any) -> str:
    """Where ``worker: deeep`` is in the tracker: ``path:line:col``."""
    return _ghost_line_of(remote, "B")


def _ghost_line_of(remote: Any, item_id: str) -> str:
    """Where item ``item_id``'s ``worker: deeep`` is in the tracker: ``path:line:col``."""
    lines = (remote.clone / ".wavegit/tracker.yaml").read_text().splitlines()
    start = lines.index(f"- id: {item_id}")
    number = next(n for n, line in enumerate(lines, 1) if n > start and "worker: deeep" in line)
    return f".wavegit/tracker.yaml:{number}:{lines[number - 1].index('deeep') + 1}"


def test_an_unknown_profile_is_located_by_validate_and_plan(tmp_path: Path) -> None:
    remote = _ghost_repo(tmp_path)
    where = _ghost_line(remote)
    result = wavegit(remote.clone, "validate")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"{where}: item B: worker 'deeep' is no profile of the config (config workers has 'deep', 'gpt', "
        "'plain') (hint: did you mean 'deep'?)"]
    plan = wavegit_here(remote.clone, "plan", "--json")
    assert plan.returncode == 2
    assert json.loads(plan.stdout)["reason"].startswith(f"{where}: item B: worker 'deeep'")


def test_plan_names_the_first_unknown_profile_and_counts_the_rest_not_every_one_in_a_line(
        tmp_path: Path) -> None:
    # Before, its one line joined every problem with "; " (20 items of a 2,000-item backlog: 3,000 chars).
    remote = _repo(tmp_path, [item(n, [f"write src/{n}.txt ok"], [f"src/{n}.txt"], worker="deeep")
                              for n in ("A", "B", "C")])
    where = _ghost_line_of(remote, "A")
    plan = wavegit_here(remote.clone, "plan")
    assert plan.returncode == 2
    assert plan.stdout.splitlines()[1] == (
        f"the next wave will not start (`wavegit run` would exit 2): {where}: item A: worker 'deeep' is no "
        "profile of the config (config workers has 'deep', 'gpt', 'plain') (hint: did you mean 'deep'?) "
        "(and 2 more: `wavegit validate` lists them)")
    assert len(wavegit_here(remote.clone, "validate").stderr.splitlines()) == 3


def test_an_unknown_profile_is_exit_2_at_run_and_nothing_is_claimed(tmp_path: Path) -> None:
    remote = _ghost_repo(tmp_path)
    before = git(remote.origin, "for-each-ref", "--format=%(refname) %(objectname)")
    result = wavegit(remote.clone, "run")
    assert result.returncode == 2
    assert result.stderr.splitlines()[0].startswith(f"{_ghost_line(remote)}: item B: worker 'deeep'")
    assert git(remote.origin, "for-each-ref", "--format=%(refname) %(objectname)") == before


def test_add_and_edit_refuse_an_unknown_worker_naming_the_option_and_write_nothing(tmp_path: Path) -> None:
    remote = _ghost_repo(tmp_path)
    before = git(remote.origin, "rev-parse", "main")
    refusal = "--worker 'nope': no such profile in `workers` of the config (deep, gpt, plain)"
    result = wavegit_here(remote.clone, "add", "C", "--prompt", "p", "--owns", "src/c.txt", "--test", "true",
                     "--worker", "nope")
    assert (result.returncode, result.stderr.splitlines()) == (2, [f"wavegit add: {refusal}"])
    edited = wavegit_here(remote.clone, "edit", "A", "--worker", "nope")
    assert (edited.returncode, edited.stderr.splitlines()) == (2, [f"wavegit edit: {refusal}"])
    assert git(remote.origin, "rev-parse", "main") == before
    typo = wavegit_here(remote.clone, "add", "C", "--prompt", "p", "--owns", "src/c.txt", "--test", "true",
                   "--worker", "deeep")  # as validate and import do, a near miss is named
    assert typo.returncode == 2 and typo.stderr.rstrip().endswith("(deep, gpt, plain); did you mean 'deep'?")
    added = wavegit_here(remote.clone, "add", "C", "--prompt", "p", "--owns", "src/c.txt", "--test", "true",
                    "--worker", "gpt")
    assert added.returncode == 0, added.stderr
    edited = wavegit_here(remote.clone, "edit", "A", "--worker", "deep")
    assert edited.returncode == 0, edited.stderr
    assert [i.worker for i in origin_tracker(remote).items] == ["deep", "deeep", "gpt"]
    # An empty one takes the profile off: the item runs config `worker` again (there was no other way back).
    cleared = wavegit_here(remote.clone, "edit", "A", "--worker", "")
    assert cleared.returncode == 0, cleared.stderr
    assert [i.worker for i in origin_tracker(remote).items] == [None, "deeep", "gpt"]


@pytest.mark.parametrize(("env", "listed", "message"), [
    ({}, KEYS, "worker profile 'deep': claude needs ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN or "
               "CLAUDE_CODE_OAUTH_TOKEN set and listed in `worker_env`"),
    ({"ANTHROPIC_API_KEY": "sk"}, [], "worker profile 'deep': ANTHROPIC_API_KEY is set but not listed in "
                                      "`worker_env`, so the worker would not get it"),
])
def test_a_preset_without_credentials_that_reach_the_worker_is_exit_2_before_the_claim(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str], listed: list[str],
        message: str) -> None:
    for name in (*CLAUDE.credentials, *CODEX.credentials):
        monkeypatch.delenv(name, raising=False)
    remote = _repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"], worker="deep")],
                   worker_env=listed)
    before = git(remote.origin, "for-each-ref", "--format=%(refname) %(objectname)")
    result = wavegit(remote.clone, "run", env={**env, "PATH": f"{AGENTS}{os.pathsep}{os.environ['PATH']}"})
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"wavegit run: {message}") and line.endswith("nothing was claimed")
    assert git(remote.origin, "for-each-ref", "--format=%(refname) %(objectname)") == before


def test_a_profile_whose_program_is_missing_is_exit_2_naming_the_profile(tmp_path: Path) -> None:
    remote = _repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"], worker="gpt")])
    env = {"PATH": os.path.dirname(sys.executable) + os.pathsep + "/usr/bin:/bin", "CODEX_API_KEY": "sk"}
    result = wavegit(remote.clone, "run", env=env)
    assert result.returncode == 2
    config_lines = (remote.clone / ".wavegit" / "config.yaml").read_text().splitlines()
    line = next(n for n, text in enumerate(config_lines, 1) if text.strip().startswith("preset: codex"))
    column = config_lines[line - 1].index("codex") + 1
    assert result.stderr.splitlines() == [  # located at the profile's preset, as plan's warning is
        f"wavegit run: .wavegit/config.yaml:{line}:{column}: "
        "worker profile 'gpt': 'codex' is not on PATH; install it (`npm install -g "
        f"@openai/codex@{CODEX.npm[1]}`), or change `workers.gpt` in .wavegit/config.yaml; nothing was "
        "claimed"]  # the item's own profile: `worker` would not change it


# ------------------------------------------------------------------------ hostile cost reports (attack)

def test_an_agent_cannot_lower_its_own_cost_below_its_cli_account_with_the_cost_file(
        tmp_path: Path, fake_agents: None) -> None:
    # The agent's tools (prompt-injected) write $WAVEGIT_COST_FILE with $0 and no tokens; Claude's own
    # result line says $0.0123 and 200 tokens. The CLI's account is what was spent, not the file.
    forged = "cost-text {\"usd\": 0, \"input_tokens\": 0, \"output_tokens\": 0}"
    remote = _repo(tmp_path, [item(n, [forged, f"write src/{n}.txt ok"], [f"src/{n}.txt"], worker="deep")
                              for n in ("a", "b")], budget={"wave_usd": 0.01, "wave_tokens": 150})
    rep = run(remote.clone).report
    assert [i.attempts for i in rep.items] == [1, 0] and rep.budget.exceeded
    record = rep.items[0].attempt_records[0]
    assert (record.cost, record.input_tokens, record.output_tokens) == (pytest.approx(0.0123), 150, 50)


def test_a_cost_file_cannot_stand_in_for_a_missing_claude_result(tmp_path: Path, fake_agents: None) -> None:
    # Killed before its result line, the run's spend is unknown: a $0 cost file does not make it known.
    actions = ["cost 0", "write src/{}.txt ok", "agent no-result"]
    remote = _repo(tmp_path, [item(n, [a.format(n) for a in actions], [f"src/{n}.txt"], worker="deep")
                              for n in ("a", "b")], budget={"wave_usd": 5.0})
    rep = run(remote.clone).report
    assert [i.attempts for i in rep.items] == [1, 0] and rep.budget.exceeded
    (note,) = [n for n in rep.notes if n.startswith("unreadable cost")]
    assert "no result line with a readable total_cost_usd" in note


@pytest.mark.parametrize("name", ["claude", "--dangerously-skip-permissions", "deep --permission-mode x"])
def test_attack_an_items_worker_can_name_only_a_profile_never_a_preset_or_flags(
        tmp_path: Path, fake_agents: None, name: str) -> None:
    # An item's text picks a profile by name, nothing else: a preset's bare name (which would run it with
    # no model the config reviewed) or flag-shaped text never reaches a command line.
    remote = _repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"], worker=name)])
    before = git(remote.origin, "for-each-ref", "--format=%(refname) %(objectname)")
    result = wavegit(remote.clone, "run")
    assert result.returncode == 2 and f"worker '{name}' is no profile of the config" in result.stderr
    assert git(remote.origin, "for-each-ref", "--format=%(refname) %(objectname)") == before


def test_a_profiles_model_stays_the_value_of_its_option_whatever_it_says() -> None:
    # The model is config (committed, reviewed) text: even flag-shaped it is one argument, the option's value.
    assert CLAUDE.argv(Launch("--dangerously-skip-permissions", sandboxed=False), [])[-2:] == [
        "--model", "--dangerously-skip-permissions"]
    assert CODEX.argv(Launch("-s danger-full-access", sandboxed=False), [])[-3:] == [
        "-m", "-s danger-full-access", "-"]
