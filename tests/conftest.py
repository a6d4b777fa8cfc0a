from __future__ import annotations

import compileall
import os
import sys
import tempfile
from pathlib import Path

import pytest

from tests.helpers.repos import REPO_ROOT, RemoteRepo, make_remote_repo

# A third-party library copied in as test data (tests/fixtures/six/README.md): its own tests are not ours.
collect_ignore_glob = ["fixtures/*"]


# Bytecode, compiled once and kept in a cache outside the source tree that every process of the session
# (the xdist workers, each ``python -m wavegit``, the git hooks) inherits through PYTHONPYCACHEPREFIX:
# under PYTHONDONTWRITEBYTECODE=1 each of the thousands of ``python -m wavegit`` subprocesses would
# otherwise compile every module it imports from source again. The test processes themselves write to it
# whatever that variable says (it is there to keep the tree clean, and the cache is not the tree): each
# xdist worker then imports the test modules, rewritten by pytest, without compiling them again.
os.environ.setdefault("PYTHONPYCACHEPREFIX",
                      str(Path(tempfile.gettempdir()) / f"wavegit-test-bytecode-{os.getuid()}"))
sys.pycache_prefix = os.environ["PYTHONPYCACHEPREFIX"]  # read at startup only: this process uses it too
sys.dont_write_bytecode = False


def pytest_configure(config: pytest.Config) -> None:
    """wavegit's bytecode compiled once per session, before the xdist workers start and any subprocess
    imports it."""
    if not hasattr(config, "workerinput"):  # an xdist worker: its controller did it
        compileall.compile_dir(REPO_ROOT / "wavegit", quiet=1)


@pytest.fixture(autouse=True)
def deterministic_git(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Fixed identity and dates, no user or system git config, no token leaking in from outside."""
    home = tmp_path_factory.mktemp("home")
    gitconfig = home / ".gitconfig"
    gitconfig.write_text("[init]\n\tdefaultBranch = main\n[protocol \"file\"]\n\tallow = always\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{role}_NAME", "Wave Tester")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", "tester@example.com")
        monkeypatch.setenv(f"GIT_{role}_DATE", "2026-01-01T00:00:00+0000")
    for name in ("GITHUB_TOKEN", "GITHUB_REPOSITORY", "GITHUB_API_URL", "GITHUB_EVENT_PATH"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def remote_repo(tmp_path: Path) -> RemoteRepo:
    """A bare origin plus a clone with one commit on main, both under tmp_path."""
    return make_remote_repo(tmp_path)
