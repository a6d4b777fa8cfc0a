"""The shipped workflows (examples/workflows/) run in a real Actions engine, act, for every event they
handle; with the composite action of this repository, stand-ins for third-party actions (tests/actions/),
the strict test server for GitHub and a bare origin for git. See tests/helpers/act.py."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.act import WORKFLOWS, Engine, cache_store
from tests.helpers.ghapp import FakeApp, app_key_pair
from tests.helpers.ghserver import (
    ALICE,
    ALICE_TOKEN,
    APP,
    BOT,
    MALLORY,
    FakeGitHub,
    github_env,
    merge_group_event,
    queue_branch,
    running,
    served,
)
from tests.helpers.repos import git, wavegit
from tests.helpers.wave import check, item, make_wave_repo, write_and_push
from wavegit.model import tracker
from wavegit.model.report_markdown import MARKER

pytestmark = [pytest.mark.real, pytest.mark.slow]


@pytest.fixture(scope="session")
def session_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The cache stand-in's store, kept from one session to the next (:func:`cache_store`); the action's
    copy, fresh per session."""
    folder = tmp_path_factory.mktemp("engine-session")
    (folder / "cache").symlink_to(cache_store(tmp_path_factory.getbasetemp()))
    return folder


@pytest.fixture(params=[False, True], ids=["self-hosted", "hosted"])
def hosted(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


# The runner of a test whose jobs build no sandbox for worker or pull request code, or whose job's sandbox
# another test proves on both runners (the waves job: its dispatch test): the two runners differ only in
# the sandbox (bwrap fails on the hosted one until a step lifts AppArmor's setting), so one run proves the
# rest; hosted-runner mode, as GitHub's ubuntu-latest is. The tests that build the sandbox run on both.
ONE_RUNNER = True


def engine_for(tmp_path: Path, session_dir: Path, hosted: bool, items: list[dict[str, object]],
               files: dict[str, str] | None = None, **config: object) -> Iterator[Engine]:
    remote = make_wave_repo(tmp_path, items, **config)
    if files:
        write_and_push(remote.clone, files, "more files")
    with running(remote.origin) as server:
        yield Engine(remote.origin, server, tmp_path / "engine", session_dir, hosted=hosted)


CI = "on:\n  workflow_dispatch:\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - run: true\n"


def origin_tracker_items(origin: Path) -> tuple[tracker.Item, ...]:
    return tracker.loads(git(origin, "show", "main:.wavegit/tracker.yaml")).items


def test_waves_on_dispatch_runs_a_wave_opens_its_pr_and_gates_it(tmp_path: Path, session_dir: Path,
                                                                  hosted: bool) -> None:
    items = [item("A", ["write src/a.txt ok"], ["src/a.txt"])]
    # The repository's CI, which GitHub would not start for a PR of GITHUB_TOKEN: the wave dispatches it.
    for engine in engine_for(tmp_path, session_dir, hosted, items, files={".github/workflows/ci.yml": CI},
                             ci_workflows=["ci.yml"]):
        result = engine.run("wavegit-waves.yml", "workflow_dispatch",
                            {"inputs": {"max-items": "", "dry-run": "false"}})
        assert result.succeeded("wave"), result.explain()
        [pr] = engine.server.fake.pulls.values()
        assert pr.head.startswith("wavegit/")
        status = engine.server.fake.latest_status(git(engine.origin, "rev-parse", pr.head), "wavegit/gate")
        assert status is not None and status.state == "success", result.explain()
        assert engine.server.fake.dispatches == [("ci.yml", pr.head, BOT)]


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


# ---- review commands (issue_comment) ----

@dataclass
class WavePR:
    engine: Engine
    pr: int


@dataclass
class PublishedWave:
    """The world after a wave was published: its bare origin, the test server's state, its PR's number."""

    origin: Path
    fake: FakeGitHub
    pr: int


@pytest.fixture(scope="module")
def published_wave(tmp_path_factory: pytest.TempPathFactory) -> PublishedWave:
    """A wave of two items published on the test server by ``wavegit run`` (its PR open for review), built
    once: each test works on a copy (:func:`wave_pr`)."""
    remote = make_wave_repo(tmp_path_factory.mktemp("published-wave"), FANOUT_ITEMS)
    with running(remote.origin) as server:
        result = wavegit(remote.clone, "run", "--json", env=github_env(server))
        assert result.returncode == 0, result.stderr
        [pr] = server.fake.pulls
    return PublishedWave(remote.origin, server.fake, pr)


@contextmanager
def wave_pr(tmp_path: Path, session_dir: Path, hosted: bool, published: PublishedWave) -> Iterator[WavePR]:
    """This test's own copy of the published wave: its origin and the test server's state, served anew."""
    origin = tmp_path / "origin.git"
    shutil.copytree(published.origin, origin, symlinks=True)
    with served(published.fake.copy_onto(origin)) as server:
        yield WavePR(Engine(origin, server, tmp_path / "engine", session_dir, hosted=hosted), published.pr)


def comment_event(wave: WavePR, author: str, body: str, association: str) -> dict[str, object]:
    """The issue_comment event of a new comment by ``author`` on the wave's PR (``association``: what GitHub
    puts in author_association, e.g. CONTRIBUTOR for a private member of the organisation)."""
    comment = wave.engine.server.fake.add_comment(wave.pr, author, body)
    return {"action": "created",
            "issue": {"number": wave.pr, "pull_request": {"url": f"{wave.engine.server.url}/pull/{wave.pr}"}},
            "comment": {"id": comment.id, "body": body, "user": {"login": author},
                        "author_association": association}}


def replies(wave: WavePR) -> list[str]:
    return [c.body for c in wave.engine.server.fake.issue_comments(wave.pr)
            if c.user == BOT and not c.body.startswith(MARKER)]


def test_review_retry_by_a_private_org_member_reruns_the_item_in_the_sandbox(
        tmp_path: Path, session_dir: Path, hosted: bool, published_wave: PublishedWave) -> None:
    # alice may write, but her organisation membership is private: GitHub says CONTRIBUTOR.
    with wave_pr(tmp_path, session_dir, hosted, published_wave) as wave:
        event = comment_event(wave, ALICE, "/wavegit retry A", "CONTRIBUTOR")
        result = wave.engine.run("review.yml", "issue_comment", event)
        assert result.job_results() == {"check": ["success"], "review": ["success"]}, result.explain()
        assert "obey" in result.output_of("check")
        [reply] = replies(wave)
        assert "retried" in reply.lower() or "A" in reply, reply
        assert origin_tracker_items(wave.engine.origin)[0].attempts == 2


def test_review_ignores_a_reader_in_the_job_without_secrets(
        tmp_path: Path, session_dir: Path, published_wave: PublishedWave) -> None:
    with wave_pr(tmp_path, session_dir, ONE_RUNNER, published_wave) as wave:
        event = comment_event(wave, MALLORY, "/wavegit drop A", "MEMBER")
        result = wave.engine.run("review.yml", "issue_comment", event)
        assert result.job_results() == {"check": ["success"]}, result.explain()
        assert "ignore" in result.output_of("check")
        assert [item.status for item in origin_tracker_items(wave.engine.origin)] == ["review", "review"]


def test_review_answers_a_command_that_a_later_one_superseded_while_it_waited(
        tmp_path: Path, session_dir: Path, published_wave: PublishedWave) -> None:
    with wave_pr(tmp_path, session_dir, ONE_RUNNER, published_wave) as wave:
        # The concurrency group cancelled the pending run of the first command: only the second runs.
        comment_event(wave, ALICE, "/wavegit drop A", "CONTRIBUTOR")
        event = comment_event(wave, ALICE, "/wavegit drop B", "CONTRIBUTOR")
        result = wave.engine.run("review.yml", "issue_comment", event)
        assert result.succeeded("review"), result.explain()
        assert len(replies(wave)) == 2, replies(wave)


# ---- the gate (pull_request_target, merge_group, issue_comment) ----

def pr_event(wave: WavePR, number: int, action: str = "opened") -> dict[str, object]:
    fake = wave.engine.server.fake
    pull = fake.pulls[number]
    head_sha = git(wave.engine.origin, "rev-parse", pull.head)
    return {"action": action, "number": number,
            "pull_request": {"number": number, "merged": pull.merged, "state": pull.state,
                             "head": {"ref": pull.head, "sha": head_sha,
                                      "repo": {"full_name": pull.head_repo or fake.repo}},
                             "base": {"ref": pull.base, "repo": {"full_name": fake.repo}}}}


def gate_status(wave: WavePR, sha: str) -> str:
    status = wave.engine.server.fake.latest_status(sha, "wavegit/gate")
    return status.state if status else "none"


def test_gate_on_pull_request_target_tests_a_wave_pr_in_the_sandbox_and_passes_it(
        tmp_path: Path, session_dir: Path, hosted: bool, published_wave: PublishedWave) -> None:
    with wave_pr(tmp_path, session_dir, hosted, published_wave) as wave:
        event = pr_event(wave, wave.pr, "synchronize")
        result = wave.engine.run("wavegit-gate.yml", "pull_request_target", event)
        assert result.job_results() == {"merged-test": ["success"], "gate": ["success"]}, result.explain()
        head = git(wave.engine.origin, "rev-parse", wave.engine.server.fake.pulls[wave.pr].head)
        assert gate_status(wave, head) == "success"


def test_gate_on_an_ordinary_pr_says_it_is_not_a_wave_and_runs_nothing_from_it(
        tmp_path: Path, session_dir: Path, published_wave: PublishedWave) -> None:
    with wave_pr(tmp_path, session_dir, ONE_RUNNER, published_wave) as wave:
        person = tmp_path / "person"
        git(tmp_path, "clone", "-q", str(wave.engine.origin), str(person))
        (person / "README.md").write_text("a person's change\n")
        git(person, "commit", "-qam", "docs")
        git(person, "push", "-q", "origin", "HEAD:refs/heads/docs")
        number = wave.engine.server.fake.pulls[wave.pr].number + 1
        opened = github_pull(wave, "docs")
        assert opened == number
        result = wave.engine.run("wavegit-gate.yml", "pull_request_target", pr_event(wave, number))
        assert result.job_results() == {"gate": ["success"]}, result.explain()
        status = wave.engine.server.fake.latest_status(git(person, "rev-parse", "HEAD"), "wavegit/gate")
        assert status is not None and status.state == "success" and "not a wavegit" in status.description


def github_pull(wave: WavePR, head: str) -> int:
    """A pull request opened by alice through the API, as GitHub's web page would."""
    from github import Auth, Github

    client = Github(auth=Auth.Token(ALICE_TOKEN), base_url=wave.engine.server.url)
    repo = client.get_repo(wave.engine.server.fake.repo)
    return int(repo.create_pull(title="docs", body="", head=head, base="main").number)


def test_gate_on_merge_group_sets_the_status_on_the_groups_head(
        tmp_path: Path, session_dir: Path, published_wave: PublishedWave) -> None:
    with wave_pr(tmp_path, session_dir, ONE_RUNNER, published_wave) as wave:
        fake = wave.engine.server.fake
        pr_head = git(wave.engine.origin, "rev-parse", fake.pulls[wave.pr].head)
        person = tmp_path / "queue"
        git(tmp_path, "clone", "-q", str(wave.engine.origin), str(person))
        git(person, "merge", "-q", "--no-ff", "--no-edit", pr_head)
        head, base = git(person, "rev-parse", "HEAD"), git(person, "rev-parse", "origin/main")
        git(person, "push", "-q", "origin", f"HEAD:refs/heads/{queue_branch(wave.pr, pr_head)}")
        event = merge_group_event(head, wave.pr, pr_head, base)
        result = wave.engine.run("wavegit-gate.yml", "merge_group", event)
        assert result.job_results() == {"gate": ["success"]}, result.explain()
        assert gate_status(wave, head) == "success"


def test_gate_on_a_gate_comment_checks_the_pr_again(tmp_path: Path, session_dir: Path,
                                                   published_wave: PublishedWave) -> None:
    with wave_pr(tmp_path, session_dir, ONE_RUNNER, published_wave) as wave:
        event = comment_event(wave, ALICE, "/wavegit gate", "CONTRIBUTOR")
        result = wave.engine.run("wavegit-gate.yml", "issue_comment", event)
        assert result.job_results() == {"gate": ["success"]}, result.explain()
        head = git(wave.engine.origin, "rev-parse", wave.engine.server.fake.pulls[wave.pr].head)
        assert gate_status(wave, head) == "success"


# ---- sync (pull_request closed, schedule) and the waves workflow's other events ----

def test_sync_on_a_merged_wave_pr_marks_its_items_done(
        tmp_path: Path, session_dir: Path, published_wave: PublishedWave) -> None:
    with wave_pr(tmp_path, session_dir, ONE_RUNNER, published_wave) as wave:
        wave.engine.server.fake.merge(wave.pr)
        result = wave.engine.run("wavegit-sync.yml", "pull_request", pr_event(wave, wave.pr, "closed"))
        assert result.succeeded("sync"), result.explain()
        assert [item.status for item in origin_tracker_items(wave.engine.origin)] == ["done", "done"]


def test_sync_on_schedule_returns_a_closed_waves_items_to_todo(
        tmp_path: Path, session_dir: Path, published_wave: PublishedWave) -> None:
    with wave_pr(tmp_path, session_dir, ONE_RUNNER, published_wave) as wave:
        wave.engine.server.fake.close(wave.pr)
        result = wave.engine.run("wavegit-sync.yml", "schedule", {"schedule": "41 * * * *"})
        assert result.succeeded("sync"), result.explain()
        assert [item.status for item in origin_tracker_items(wave.engine.origin)] == ["todo", "todo"]


def test_waves_on_schedule_takes_a_labelled_issue_and_runs_it(
        tmp_path: Path, session_dir: Path) -> None:
    for engine in engine_for(tmp_path, session_dir, ONE_RUNNER, []):
        fake = engine.server.fake
        fake.open_issue("Say hi", intake_body(), ALICE, labels=("wavegit",))
        result = engine.run("wavegit-waves.yml", "schedule", {"schedule": "17 */4 * * *"})
        assert result.succeeded("wave"), result.explain()
        [item_] = origin_tracker_items(engine.origin)
        assert item_.status == "review" and engine.server.fake.pulls


def intake_body() -> str:
    """An issue filed with the form of `wavegit init --github`, as GitHub renders it."""
    return (f"### Prompt\n\nwrite src/hi.txt ok\n\n### Owned paths\n\nsrc/hi.txt\n\n"
            f"### Test command\n\n{check('src/hi.txt')}\n\n### Priority\n\nP1\n")


def test_review_retry_without_the_sandbox_loses_the_retry_on_a_hosted_runner(
        tmp_path: Path, session_dir: Path, published_wave: PublishedWave) -> None:
    # What review.yml's job did before it asked the action for the sandbox: retry runs the worker.
    shipped = (WORKFLOWS / "review.yml").read_text(encoding="utf-8")
    unsandboxed = shipped.replace("sandbox: true", "sandbox: false")
    with wave_pr(tmp_path, session_dir, True, published_wave) as wave:
        event = comment_event(wave, ALICE, "/wavegit retry A", "CONTRIBUTOR")
        result = wave.engine.run("review.yml", "issue_comment", event, text=unsandboxed)
        assert result.job_results()["review"] == ["failure"], result.explain()
        assert "bwrap" in result.output_of("review")
        assert origin_tracker_items(wave.engine.origin)[0].attempts == 1


def test_waves_dry_run_on_dispatch_plans_and_claims_nothing(tmp_path: Path, session_dir: Path) -> None:
    # Hosted: a dry run runs no worker, so it needs no sandbox. GitHub's workflow_dispatch payload carries
    # every input as a string, a boolean's too ("true"), which `inputs.dry-run` reads as true.
    for engine in engine_for(tmp_path, session_dir, True, FANOUT_ITEMS):
        before = git(engine.origin, "for-each-ref")
        result = engine.run("wavegit-waves.yml", "workflow_dispatch",
                            {"inputs": {"max-items": "1", "dry-run": "true"}})
        assert result.succeeded("wave"), result.explain()
        assert "wavegit plan: 1 selected" in result.log
        assert git(engine.origin, "for-each-ref") == before and engine.server.fake.pulls == {}


def test_waves_dispatched_continuous_runs_rolling_waves_each_opened_as_its_own_pr(
        tmp_path: Path, session_dir: Path) -> None:
    # max_items 1: every item its own rolling wave, each pushed, opened and recorded as it ends; the job's
    # outputs name the last one, which the workflow's gate step checks. One run without it opens one PR.
    for engine in engine_for(tmp_path, session_dir, True, FANOUT_ITEMS, max_items=1):
        result = engine.run("wavegit-waves.yml", "workflow_dispatch",
                            {"inputs": {"max-items": "", "dry-run": "false", "continuous": "true"}})
        assert result.succeeded("wave"), result.explain()
        pulls = list(engine.server.fake.pulls.values())
        assert len(pulls) == 2 and len({pr.head for pr in pulls}) == 2, result.explain()
        assert [item.status for item in origin_tracker_items(engine.origin)] == ["review", "review"]


# ---- a GitHub App: the variable WAVEGIT_APP_ID and the one secret WAVEGIT_APP_PRIVATE_KEY ----

APP_ID = 31337


def test_waves_and_gate_publish_and_believe_as_the_app_given_its_id_and_key(
        tmp_path: Path, session_dir: Path) -> None:
    remote = make_wave_repo(tmp_path, FANOUT_ITEMS)
    with running(remote.origin, app=FakeApp(APP_ID, APP, app_key_pair()[1])) as server:
        engine = Engine(remote.origin, server, tmp_path / "engine", session_dir,
                        secrets={"WAVEGIT_APP_PRIVATE_KEY": app_key_pair()[0]},
                        variables={"WAVEGIT_APP_ID": str(APP_ID)})
        result = engine.run("wavegit-waves.yml", "workflow_dispatch",
                            {"inputs": {"max-items": "", "dry-run": "false"}})
        assert result.succeeded("wave"), result.explain()
        [pr] = server.fake.pulls.values()
        assert pr.user == APP and {c.user for c in server.fake.issue_comments(pr.number)} == {APP}
        head = git(remote.origin, "rev-parse", pr.head)
        status = server.fake.latest_status(head, "wavegit/gate")
        assert status is not None and (status.state, status.user) == ("success", APP)
        # The gate workflow, run with the App too, believes the App's report with no report_authors set.
        wave = WavePR(engine, pr.number)
        gate = engine.run("wavegit-gate.yml", "pull_request_target", pr_event(wave, pr.number, "synchronize"))
        assert gate.succeeded("gate"), gate.explain()
        latest = server.fake.latest_status(head, "wavegit/gate")
        assert latest is not None and latest.user == APP
