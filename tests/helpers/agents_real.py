"""The real agent CLIs for ``@pytest.mark.real`` tests, and an ordinary user to run waves as.

``.ci/install-agents`` installs the versions pinned in ``wavegit/github/agent.py`` into
``$WAVEGIT_AGENTS_DIR`` (default: ``.agents/`` in the checkout). :func:`agent_bin` finds an executable
there at its pinned version and FAILS the test when it is missing or another version, naming the fix; only
``WAVEGIT_SKIP_REAL_AGENTS=1`` turns that into a skip.

Run as root, :func:`ordinary_user` makes the user :data:`TEST_USER` once (``useradd``) and the waves of the
"user" rows run as it with ``runuser``; run as an ordinary user, that user is the one running the tests.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.repos import REPO_ROOT, CliResult
from wavegit.github.agent import AGENT_PACKAGES

SKIP_VAR = "WAVEGIT_SKIP_REAL_AGENTS"
AGENTS_DIR = Path(os.environ.get("WAVEGIT_AGENTS_DIR") or REPO_ROOT / ".agents")
TEST_USER = "wavegit-agent-test"
IS_ROOT = os.geteuid() == 0


def agent_bin(preset: str) -> Path:
    """The directory holding ``preset``'s installed executable (for PATH); fails the test when it is not
    installed at its pinned version, unless WAVEGIT_SKIP_REAL_AGENTS=1."""
    executable, package, pinned = AGENT_PACKAGES[preset]
    found = AGENTS_DIR / "node_modules" / ".bin" / executable
    manifest = AGENTS_DIR / "node_modules" / package / "package.json"
    version = json.loads(manifest.read_text())["version"] if manifest.is_file() else None
    if found.is_file() and os.access(found, os.X_OK) and version == pinned:
        return found.parent
    why = (f"{package}@{pinned} is not installed in {AGENTS_DIR} (found {version or 'nothing'}): run "
           f".ci/install-agents, or set {SKIP_VAR}=1 to skip the tests of the real agent CLIs")
    if os.environ.get(SKIP_VAR) == "1":
        pytest.skip(why)
    pytest.fail(why)


@dataclass(frozen=True)
class User:
    """Who runs a wave: root (``name`` None) or an ordinary user."""

    name: str | None
    uid: int
    gid: int

    def own(self, path: Path) -> None:
        """Give ``path`` and everything under it to this user (nothing to do for the tests' own user)."""
        if self.uid == os.geteuid():
            return
        for folder, dirs, files in os.walk(path):
            for entry in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
                os.lchown(entry, self.uid, self.gid)

    def run(self, argv: list[str], cwd: Path, env: dict[str, str], timeout: float) -> CliResult:
        """``argv`` as this user with exactly ``env``."""
        prefix = ["runuser", "-u", self.name, "--"] if self.name and self.uid != os.geteuid() else []
        proc = subprocess.run([*prefix, "env", "-i", *(f"{k}={v}" for k, v in env.items()), *argv], cwd=cwd,
                              capture_output=True, text=True, timeout=timeout, check=False)
        return CliResult(proc.returncode, proc.stdout, proc.stderr)


ROOT = User(None, 0, 0)


def ordinary_user() -> User:
    """An ordinary user: the one running the tests, or (as root) :data:`TEST_USER`, made once."""
    if not IS_ROOT:
        entry = pwd.getpwuid(os.geteuid())
        return User(entry.pw_name, entry.pw_uid, entry.pw_gid)
    try:
        entry = pwd.getpwnam(TEST_USER)
    except KeyError:
        useradd = shutil.which("useradd")
        if useradd is None:
            pytest.fail(f"running as root, the tests need `useradd` to make the user {TEST_USER}")
        subprocess.run([useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", TEST_USER],
                       check=True, capture_output=True)
        entry = pwd.getpwnam(TEST_USER)
    return User(entry.pw_name, entry.pw_uid, entry.pw_gid)


def python_for(user: User) -> str:
    """A Python with wavegit's dependencies that ``user`` may run: the tests' own, else the system's (the
    tests' may live in root's home, which no other user may enter)."""
    for candidate in (sys.executable, "/usr/bin/python3"):
        tried = user.run([candidate, "-c", "import yaml"], Path("/"), {"PATH": "/usr/bin:/bin"}, timeout=60)
        if tried.returncode == 0:
            return candidate
    pytest.fail(f"no Python with PyYAML that the user {user.name} may run (tried {sys.executable} and "
                "/usr/bin/python3)")
