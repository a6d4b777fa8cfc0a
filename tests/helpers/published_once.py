"""A wave run through tests/helpers/ghserver.py once per process, then copied for each test that starts from
it: its origin, clone and the server's state, so the test pays only for the commands it is about."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.helpers.ghserver import FakeGitHub, Running, github_env, running, served
from tests.helpers.repos import RemoteRepo, git, wavegit
from tests.helpers.wave import make_wave_repo
from wavegit.model import report


@dataclass(frozen=True)
class _Built:
    base: Path
    fake: FakeGitHub
    stdout: str


_BUILT: dict[str, _Built] = {}


@contextmanager
def published_wave(base: Path, items: list[dict[str, Any]], **config: Any
                   ) -> Iterator[tuple[RemoteRepo, Running, report.WaveReport]]:
    """The repos of ``wavegit run --json`` on ``items`` (published through the test server) under ``base``,
    the server serving the state that run left, and the run's report."""
    built = _built(items, config)
    shutil.copytree(built.base, base, symlinks=True, dirs_exist_ok=True)
    remote = RemoteRepo(origin=base / "origin.git", clone=base / "work", base=base)
    git(remote.clone, "remote", "set-url", "origin", str(remote.origin))
    git(remote.clone, "update-index", "-q", "--refresh")  # new inodes: the files are unmodified again
    with served(built.fake.copy_onto(remote.origin)) as server:
        yield remote, server, report.WaveReport.from_json(built.stdout)


def _built(items: list[dict[str, Any]], config: dict[str, Any]) -> _Built:
    """The run for ``items`` and ``config`` under the current git identity, dates and global config, made
    once per process (and removed at its exit)."""
    gitconfig = Path(os.environ.get("GIT_CONFIG_GLOBAL", os.devnull))
    settings = sorted((k, v) for k, v in os.environ.items()
                      if k.startswith("GIT_") and k != "GIT_CONFIG_GLOBAL")
    key = repr((items, sorted(config.items()), settings,
                gitconfig.read_bytes() if gitconfig.is_file() else None))
    if key not in _BUILT:
        base = Path(tempfile.mkdtemp(prefix="wavegit-test-wave-"))
        atexit.register(shutil.rmtree, base, True)
        remote = make_wave_repo(base, items, **config)
        with running(remote.origin) as gh:
            result = wavegit(remote.clone, "run", "--json", env=github_env(gh))
        assert result.returncode == 0, result.stderr
        _BUILT[key] = _Built(base, gh.fake, result.stdout)
    return _BUILT[key]
