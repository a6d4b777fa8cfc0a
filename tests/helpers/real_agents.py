"""The real agent CLIs for the ``real`` tests: installed by ``.ci/install-agents`` at the versions pinned in
wavegit/github/agent.py, into ``$WAVEGIT_AGENTS_DIR`` (default ``.agents/`` in the checkout).

A test that needs one and cannot get it fails; ``WAVEGIT_SKIP_REAL_AGENTS=1`` makes it skip instead (for a
machine without npm).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.helpers.repos import TESTS

CHECKOUT = TESTS.parent
SKIP_VARIABLE = "WAVEGIT_SKIP_REAL_AGENTS"


def agents_bin() -> Path:
    """The folder holding the installed CLIs (``codex``, ``claude``), installing them when missing."""
    folder = Path(os.environ.get("WAVEGIT_AGENTS_DIR") or CHECKOUT / ".agents")
    bin_dir = folder / "node_modules" / ".bin"
    if os.environ.get(SKIP_VARIABLE) == "1":
        pytest.skip(f"{SKIP_VARIABLE}=1: the real agent CLIs are not run")
    if not (bin_dir / "codex").exists():
        result = subprocess.run([str(CHECKOUT / ".ci" / "install-agents")], cwd=CHECKOUT, capture_output=True,
                                text=True, timeout=600, check=False)
        if result.returncode != 0:
            pytest.fail(f".ci/install-agents failed (set {SKIP_VARIABLE}=1 to skip the real agent tests):\n"
                        f"{result.stdout}{result.stderr}")
    return bin_dir
