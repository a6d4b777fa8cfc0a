"""The shipped workflows (examples/workflows/) run in a real Actions engine, act, for every event they
handle; with the composite action of this repository, stand-ins for third-party actions (tests/actions/),
the strict test server for GitHub and a bare origin for git. See tests/helpers/act.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.act import Engine
from tests.helpers.ghserver import running
from tests.helpers.repos import git
from tests.helpers.wave import item, make_wave_repo

pytestmark = [pytest.mark.real, pytest.mark.slow]


@pytest.fixture(scope="session")
def session_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("engine-session")


@pytest.fixture(params=[False, True], ids=["self-hosted", "hosted"])
def hosted(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


def engine_for(tmp_path: Path, session_dir: Path, hosted: bool, items: list[dict[str, object]],
               **config: object) -> Iterator[Engine]:
    remote = make_wave_repo(tmp_path, items, **config)
    with running(remote.origin) as server:
        yield Engine(remote.origin, server, tmp_path / "engine", session_dir, hosted=hosted)


def test_waves_on_dispatch_runs_a_wave_opens_its_pr_and_gates_it(tmp_path: Path, session_dir: Path,
                                                                  hosted: bool) -> None:
    items = [item("A", ["write src/a.txt ok"], ["src/a.txt"])]
    for engine in engine_for(tmp_path, session_dir, hosted, items):
        result = engine.run("wavegit-waves.yml", "workflow_dispatch",
                            {"inputs": {"max-items": "", "dry-run": False}})
        assert result.succeeded("wave"), result.explain()
        [pr] = engine.server.fake.pulls.values()
        assert pr.head.startswith("wavegit/")
        status = engine.server.fake.latest_status(git(engine.origin, "rev-parse", pr.head), "wavegit/gate")
        assert status is not None and status.state == "success", result.explain()
