"""What the real-agent tests of codex and gemini share (tests/helpers/agents_real.py installs the CLIs and
makes the ordinary user): a wave repository run by one preset profile against a local model API, run by a
given user, and the check that it landed the edit with exactly the tokens the server sent."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.agents_real import User, python_for
from tests.helpers.model_server import Sent
from tests.helpers.repos import REPO_ROOT
from tests.helpers.wave import item, make_wave_repo
from wavegit.attempts import sandbox
from wavegit.model.report import WaveReport

PRICE = {"input_per_mtok": 1.25, "output_per_mtok": 10.0}
_BWRAP = shutil.which(sandbox.BWRAP)
_PROBLEM = sandbox.probe(_BWRAP) if _BWRAP else "bwrap is not installed"
needs_bwrap = pytest.mark.skipif(_PROBLEM is not None, reason=f"bwrap cannot run: {_PROBLEM}")


def agent_repo(base: Path, profile: dict[str, Any], key: str, items: int = 1, **overrides: Any) -> Any:
    """A wave repository whose items ``a`` (and ``b``) the preset ``profile`` runs (as profile ``p``),
    with ``key`` in worker_env and :data:`PRICE` for its model."""
    settings: dict[str, Any] = {"workers": {"p": profile}, "worker": "p", "prices": {profile["model"]: PRICE},
                                "worker_env": [key], "sandbox": "none", "attempts": 2, "concurrency": 1,
                                "timeout_s": 120, "idle_timeout_s": 60}
    settings.update(overrides)
    # The item's test is a program any user may run (this test's interpreter may be under root's HOME).
    tracker = [item(name, ["write ok to src/a.txt"], [f"src/{name}.txt"], f"grep -qx ok src/{name}.txt")
               for name in "ab"[:items]]
    return make_wave_repo(base, tracker, **settings)


def assert_verified_as_sent(report: WaveReport, sent: Sent, key: str) -> None:
    """One attempt landed the edit, wavegit read exactly the tokens the server sent (priced at
    :data:`PRICE`), and every request carried ``key``."""
    (entry,) = report.items
    assert entry.verified, entry.error
    (record,) = entry.attempt_records
    assert (record.input_tokens, record.output_tokens) == (sent.input_tokens, sent.output_tokens)
    usd = (sent.input_tokens * PRICE["input_per_mtok"] + sent.output_tokens * PRICE["output_per_mtok"]) / 1e6
    assert record.cost == pytest.approx(usd)
    assert sent.authorization and set(sent.authorization) == {key}


@contextmanager
def user_base() -> Iterator[Path]:
    """A folder every user may enter (pytest's tmp_path is root's alone), removed afterwards."""
    base = Path(tempfile.mkdtemp(prefix="wavegit-real-"))
    os.chmod(base, 0o755)
    (base / "home").mkdir()
    (base / "home" / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def run_as(user: User, clone: Path, base: Path, agent_bin: Path, env: dict[str, str]) -> WaveReport:
    """``wavegit run --json`` in ``clone`` as ``user`` (HOME in ``base``), the agent CLIs of ``agent_bin``
    on PATH and ``env``; its report."""
    python = python_for(user)
    home = base / "home"
    path = os.pathsep.join([str(agent_bin), os.path.dirname(python), "/usr/local/bin:/usr/bin:/bin"])
    full = {"PATH": path, "HOME": str(home), "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
            "GIT_CONFIG_NOSYSTEM": "1", "PYTHONPATH": str(REPO_ROOT), "PYTHONDONTWRITEBYTECODE": "1",
            "LANG": "C.UTF-8",
            **{k: v for k, v in os.environ.items() if k.startswith(("GIT_AUTHOR_", "GIT_COMMITTER_"))}, **env}
    user.own(base)
    result = user.run([python, "-m", "wavegit", "run", "--json"], clone, full, timeout=300)
    assert result.stdout.strip(), result.stderr
    return WaveReport.from_json(result.stdout)
