from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.repos import RemoteRepo, make_remote_repo

# A third-party library copied in as test data (tests/fixtures/six/README.md): its own tests are not ours.
collect_ignore_glob = ["fixtures/*"]


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
