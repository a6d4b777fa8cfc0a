"""The shipped workflows (examples/workflows/) run in a real Actions engine, act, for every event they
handle; with the composite action of this repository, stand-ins for third-party actions (tests/actions/),
the strict test server for GitHub and a bare origin for git. See tests/helpers/act.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.act import WORKFLOWS, Engine
from tests.helpers.ghserver import running
from tests.helpers.repos import git
from tests.helpers.wave import check, item, make_wave_repo
from wavegit.model import tracker

pytestmark = [pytest.mark.real, pytest.mark.slow]


@pytest.fixture(scope="session")
def session_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The cache stand-in's store, kept beside pytest's temporary folders from one session to the next
    (as a repository's Actions cache outlives a run); the action's copy, fresh per session."""
    shared = tmp_path_factory.getbasetemp().parent / "wavegit-engine-cache"
    shared.mkdir(exist_ok=True)
    folder = tmp_path_factory.mktemp("engine-session")
    (folder / "cache").symlink_to(shared)
    return folder


@pytest.fixture(params=[False, True], ids=["self-hosted", "hosted"])
def hosted(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


def engine_for(tmp_path: Path, session_dir: Path, hosted: bool, items: list[dict[str, object]],
               **config: object) -> Iterator[Engine]:
    remote = make_wave_repo(tmp_path, items, **config)
    with running(remote.origin) as server:
        yield Engine(remote.origin, server, tmp_path / "engine", session_dir, hosted=hosted)


def origin_tracker_items(origin: Path) -> tuple[tracker.Item, ...]:
    return tracker.loads(git(origin, "show", "main:.wavegit/tracker.yaml")).items


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


FANOUT_ITEMS = [item("A", ["write src/a.txt ok"], ["src/a.txt"]),
                item("B", ["write src/b.txt ok"], ["src/b.txt"])]
# collect runs `wave_test` on the combined result: code of the agents, beside the write token.
FANOUT_CONFIG = {"wave_test": check("src/b.txt")}


def test_fanout_claims_works_each_item_in_its_own_job_and_collects_them_into_one_pr(
        tmp_path: Path, session_dir: Path, hosted: bool) -> None:
    for engine in engine_for(tmp_path, session_dir, hosted, FANOUT_ITEMS, **FANOUT_CONFIG):
        result = engine.run("fanout.yml", "workflow_dispatch", {"inputs": {"max-items": "8"}})
        assert result.job_results() == {"claim": ["success"], "work": ["success", "success"],
                                        "collect": ["success"]}, result.explain()
        [pr] = engine.server.fake.pulls.values()
        assert git(engine.origin, "diff", "--name-only", f"main...{pr.head}").split() == ["src/a.txt",
                                                                                         "src/b.txt"]
        assert [item.status for item in origin_tracker_items(engine.origin)] == ["review", "review"]


def test_fanout_collect_without_the_sandbox_loses_the_work_on_a_hosted_runner(
        tmp_path: Path, session_dir: Path) -> None:
    # What fanout.yml's collect job did before it asked the action for the sandbox.
    shipped = (WORKFLOWS / "fanout.yml").read_text(encoding="utf-8")
    collect = shipped.index("command: collect")
    unsandboxed = shipped[:collect] + shipped[collect:].replace("sandbox: true", "sandbox: false", 1)
    for engine in engine_for(tmp_path, session_dir, True, FANOUT_ITEMS, **FANOUT_CONFIG):
        result = engine.run("fanout.yml", "workflow_dispatch", {"inputs": {"max-items": "8"}},
                            text=unsandboxed)
        assert result.job_results()["collect"] == ["failure"], result.explain()
        assert "bwrap" in result.output_of("collect")
        # Nothing was published: every item went back to todo, its runner's work lost.
        assert engine.server.fake.pulls == {}
        assert [item.status for item in origin_tracker_items(engine.origin)] == ["todo", "todo"]
