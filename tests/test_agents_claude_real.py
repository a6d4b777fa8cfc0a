"""Real waves with the real Claude Code CLI (the version CI and the Action install, ``.ci/install-agents``)
against a local Anthropic Messages API (tests/helpers/anthropic_server.py) that scripts what the model says:
sandboxed and unsandboxed, as root and as an ordinary user, and the API's failures (401, 404, 429, 500, 529, a
hang, a stream slower than the idle limit, a dropped connection), sub-agents and the CLI's own limits."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers import anthropic_server as api
from tests.helpers.agents_real import IS_ROOT, ROOT, User, agent_bin, ordinary_user, python_for
from tests.helpers.repos import REPO_ROOT, RemoteRepo, git
from tests.helpers.wave import check, item, make_wave_repo, origin_tracker
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
    (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n[protocol \"file\"]\n\tallow = always\n")
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
    assert git(wave.remote.origin, "show", f"{report.branch}:src/a.txt") == "ok" if report else False
    # The profile's base_url reached the CLI (it had no ANTHROPIC_BASE_URL of its own): every main turn came.
    assert [r["role"] for r in server.requests] == ["main", "main"]
    assert record.worker == ("deep (claude, claude-sonnet-4-5)" if mode == "bwrap"
                             else "deep (claude, claude-sonnet-4-5, edits only: unsandboxed)")
