"""The real agent CLIs for the ``real`` tests: installed by ``.ci/install-agents`` at the versions pinned in
wavegit/github/agent.py, into ``$WAVEGIT_AGENTS_DIR`` (default ``.agents/`` in the checkout).

A test that needs one and cannot get it fails; ``WAVEGIT_SKIP_REAL_AGENTS=1`` makes it skip instead (for a
machine without npm).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.openai_server import Sent
from tests.helpers.repos import TESTS
from tests.helpers.wave import item, make_wave_repo
from wavegit.model.report import WaveReport

CHECKOUT = TESTS.parent
SKIP_VARIABLE = "WAVEGIT_SKIP_REAL_AGENTS"


def agents_bin(executable: str) -> Path:
    """The folder holding the installed CLIs (``codex``, ``claude``, ``gemini``), installing them when
    ``executable`` is missing."""
    folder = Path(os.environ.get("WAVEGIT_AGENTS_DIR") or CHECKOUT / ".agents")
    bin_dir = folder / "node_modules" / ".bin"
    if os.environ.get(SKIP_VARIABLE) == "1":
        pytest.skip(f"{SKIP_VARIABLE}=1: the real agent CLIs are not run")
    if not (bin_dir / executable).exists():
        result = subprocess.run([str(CHECKOUT / ".ci" / "install-agents")], cwd=CHECKOUT, capture_output=True,
                                text=True, timeout=600, check=False)
        if result.returncode != 0:
            pytest.fail(f".ci/install-agents failed (set {SKIP_VARIABLE}=1 to skip the real agent tests):\n"
                        f"{result.stdout}{result.stderr}")
    return bin_dir


PRICE = {"input_per_mtok": 1.25, "output_per_mtok": 10.0}


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
