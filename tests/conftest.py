from __future__ import annotations

import compileall
import sys
from pathlib import Path

import pytest
from hypothesis import settings

from tests.helpers.repos import REPO_ROOT, RemoteRepo, make_remote_repo

# A third-party library copied in as test data (tests/fixtures/six/README.md): its own tests are not ours.
collect_ignore_glob = ["fixtures/*"]


# Bytecode written beside the sources (in git-ignored __pycache__ folders), whatever PYTHONDONTWRITEBYTECODE
# says: under it, each of the thousands of ``python -m wavegit`` subprocesses of a session would compile every
# module it imports from source again (~120 ms each time). A prefix cache (PYTHONPYCACHEPREFIX) would not do:
# it moves every module's bytecode there, the standard library's too, which then compiles in every process.
sys.dont_write_bytecode = False  # the test processes: each xdist worker writes the rewritten test modules

# No per-example deadline: it is a timed assertion, and on two shared cores an example of a pure function
# took 540 ms against hypothesis's 200 ms (three full runs failed on it this way, each passing alone).
settings.register_profile("untimed", deadline=None)
settings.load_profile("untimed")


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
    # No automatic maintenance: every commit, fetch and push into a test repository would otherwise start a
    # `git maintenance run --auto` or `git gc --auto` process that finds nothing to do in repositories this
    # small (some four per test).
    gitconfig.write_text("[init]\n\tdefaultBranch = main\n[protocol \"file\"]\n\tallow = always\n"
                         "[maintenance]\n\tauto = false\n[receive]\n\tautoGc = false\n")
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


def run_order(item: pytest.Item) -> int:
    """0 for a test that runs a real program and is slow (an Actions engine run: the longest, 10-35 s each),
    1 for the other real or slow ones, 2 for the rest."""
    slow, real = (item.get_closest_marker(name) is not None for name in ("slow", "real"))
    return 0 if slow and real else 1 if slow or real else 2


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest tests first, in their files' order: in a session that selects them with the fast ones
    (`.ci/run`, whose workers take the tests one by one in this order: ``--dist load --maxschedchunk 1``),
    the long tests start early and the short ones fill every worker at the end."""
    items.sort(key=run_order)
