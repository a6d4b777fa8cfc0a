"""``wavegit run`` with GitHub configured: the PR, the report comment, the gate status, through real PyGithub
against tests/helpers/ghserver.py backed by the same bare origin the wave pushes to."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.fake_github import MemoryGitHub
from tests.helpers.ghserver import APP, APP_TOKEN, BOT, BOT_TOKEN, Running, github_env, running
from tests.helpers.published_once import published_wave
from tests.helpers.reliability import GATE_TRACKER, GATE_WAVE, sample_report, wavegit_in_process
from tests.helpers.repos import RemoteRepo, git, wavegit
from tests.helpers.wave import item, make_wave_repo, origin_item
from wavegit.core.repo import discover
from wavegit.github import api, publish
from wavegit.github.store import GitHubStore
from wavegit.model import report, report_markdown
from wavegit.model.config import Config, load_config
from wavegit.trackerbranch.store import GitStore

# A whole-flow suite (real waves, the test GitHub server): `.ci/run` runs it after the README's command.
pytestmark = pytest.mark.slow

CONFIG = Config()
PUBLISH_PATHS = ("/pulls", "/issues/", "/statuses/", "/user")
"""Requests of the PR, the comment and the status (the gate's reads included); not the tracker's."""


def items(n: int) -> list[dict[str, object]]:
    return [item(f"IT-{i}", [f"write src/f{i}.txt ok"], [f"src/f{i}.txt"]) for i in range(n)]


@pytest.fixture
def wave_repo(tmp_path: Path) -> RemoteRepo:
    return make_wave_repo(tmp_path, items(2))


@pytest.fixture
def gh(wave_repo: RemoteRepo) -> Iterator[Running]:
    with running(wave_repo.origin) as server:
        yield server


@pytest.fixture
def published(tmp_path: Path) -> Iterator[tuple[RemoteRepo, Running, report.WaveReport]]:
    """What ``wavegit run --json`` with the bot's token left of a wave of two items (exit code 0): run once
    per process, each test given a copy of the repos and of the server's state."""
    with published_wave(tmp_path, items(2)) as world:
        yield world


def run_json(clone: Path, env: dict[str, str]) -> tuple[int, report.WaveReport]:
    result = wavegit(clone, "run", "--json", env=env)
    assert result.stdout, result.stderr
    return result.returncode, report.WaveReport.from_json(result.stdout)


def publish_requests(gh: Running) -> int:
    return sum(1 for r in gh.fake.requests
               if r.path in ("/user", "/graphql") or any(p in r.path for p in PUBLISH_PATHS))


def test_run_opens_one_pr_posts_one_comment_and_records_review_with_pr_in_the_record_commit(
        published: tuple[RemoteRepo, Running, report.WaveReport]) -> None:
    wave_repo, gh, rep = published
    assert list(gh.fake.pulls) == [rep.pr]
    pr = gh.fake.pulls[rep.pr]
    assert (pr.head, pr.base, pr.state) == (f"wavegit/{rep.wave_id}", "main", "open")
    assert rep.wave_id in pr.title and "`IT-0`" in pr.body and "`IT-1`" in pr.body
    comments = gh.fake.issue_comments(rep.pr)
    assert len(comments) == 1 and comments[0].user == BOT
    posted = report_markdown.parse_markdown(comments[0].body)
    assert (posted.pr, posted.head_sha, posted.success) == (rep.pr, rep.head_sha, True)
    assert posted.head_sha == git(wave_repo.origin, "rev-parse", f"wavegit/{rep.wave_id}")
    for item_id in ("IT-0", "IT-1"):
        recorded = origin_item(wave_repo, item_id)
        assert (recorded.status, recorded.pr) == ("review", rep.pr)
    # Claim and record: two tracker commits, the PR number in the second (no third commit just for `pr`).
    subjects = git(wave_repo.origin, "log", "--format=%s", "main", "--", ".wavegit/tracker.yaml").splitlines()
    assert [s.split(":")[1].split()[0] for s in subjects[:2]] == ["record", "claim"]
    assert len(subjects) == 3
    status = gh.fake.latest_status(rep.head_sha or "", api.STATUS_CONTEXT)
    assert status is not None and status.state == "success"


@pytest.mark.parametrize("n_items", [1, 6])
def test_pr_comment_and_status_take_at_most_ten_requests_whatever_the_item_count(
        tmp_path: Path, n_items: int) -> None:
    remote = make_wave_repo(tmp_path, items(n_items), max_items=n_items)
    with running(remote.origin) as gh:
        code, rep = run_json(remote.clone, github_env(gh))
        assert code == 0 and len(rep.items) == n_items
        assert publish_requests(gh) == len(gh.fake.requests) <= 10
        assert gh.fake.count("POST", "/statuses/") == 1


def test_publishing_again_edits_the_same_comment_and_finds_the_same_pr(
        published: tuple[RemoteRepo, Running, report.WaveReport], monkeypatch: pytest.MonkeyPatch) -> None:
    wave_repo, gh, rep = published
    first = gh.fake.issue_comments(rep.pr or 0)[0]
    for name, value in github_env(gh).items():
        monkeypatch.setenv(name, value)
    repo = discover(wave_repo.clone)
    config = load_config(repo.root)
    publisher = publish.from_env(config, GitStore(repo, config))
    assert publisher is not None
    rep.notes.append("published again")
    before = len(gh.fake.requests)
    assert publisher.post_report(rep) == rep.pr
    assert len(gh.fake.requests) - before <= 10
    comments = gh.fake.issue_comments(rep.pr or 0)
    assert [c.id for c in comments] == [first.id] and "published again" in comments[0].body
    rep.pr = None
    assert publisher.post_report(rep) == first.issue and len(gh.fake.pulls) == 1


def test_without_github_settings_nothing_github_related_happens(wave_repo: RemoteRepo, gh: Running) -> None:
    code, rep = run_json(wave_repo.clone, {})
    assert code == 0 and rep.pr is None and rep.branch
    assert gh.fake.requests == []
    assert (origin_item(wave_repo, "IT-0").status, origin_item(wave_repo, "IT-0").pr) == ("review", None)


def test_a_local_only_wave_opens_no_pr_even_with_github_configured(wave_repo: RemoteRepo,
                                                                    gh: Running) -> None:
    result = wavegit(wave_repo.clone, "run", "--json", "--no-push", env=github_env(gh))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["pr"] is None and gh.fake.requests == []


def test_twenty_percent_injected_faults_still_give_exactly_one_pr_and_one_comment_per_wave(
        tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, items(3))
    with running(remote.origin, fault_rate=0.2, fault_kinds=("5xx", "secondary"), seed=11) as gh:
        code, rep = run_json(remote.clone, github_env(gh))
        assert code == 0, rep.notes
        assert any(r.fault for r in gh.fake.requests), "no fault was injected: the test proves nothing"
        assert list(gh.fake.pulls) == [rep.pr]
        assert len(gh.fake.issue_comments(rep.pr or 0)) == 1
        assert origin_item(remote, "IT-2").pr == rep.pr


def test_a_github_failure_still_records_the_wave_and_says_publishing_failed(wave_repo: RemoteRepo,
                                                                          gh: Running) -> None:
    env = {**github_env(gh), "GITHUB_TOKEN": "ghp_not_a_known_token"}
    code, rep = run_json(wave_repo.clone, env)
    assert code == 1 and rep.pr is None and rep.tracker_updated
    assert any("opening the pull request failed" in note for note in rep.notes)
    assert any("publishing failed" in note for note in rep.notes)
    assert origin_item(wave_repo, "IT-0").status == "review"
    assert gh.fake.pulls == {}


def test_actions_not_allowed_to_open_prs_is_named_with_the_setting_that_allows_it(wave_repo: RemoteRepo,
                                                                                  gh: Running) -> None:
    # The repository setting is off by default on GitHub: GITHUB_TOKEN gets 403 on POST /pulls.
    gh.fake.actions_may_open_prs = False
    code, rep = run_json(wave_repo.clone, github_env(gh))
    assert code == 1 and rep.pr is None and gh.fake.pulls == {}
    [note] = [note for note in rep.notes if note.startswith("opening the pull request failed")]
    assert "403" in note and "Allow GitHub Actions to create and approve pull requests" in note
    assert "Settings > Actions > General > Workflow permissions" in note


def test_a_token_without_pull_requests_write_leaves_the_items_in_review_naming_the_permission(
        wave_repo: RemoteRepo, gh: Running) -> None:
    gh.fake.token_permissions[BOT_TOKEN] = {"contents": "write", "pull_requests": "read", "issues": "write",
                                            "statuses": "write"}
    code, rep = run_json(wave_repo.clone, github_env(gh))
    assert code == 1 and rep.pr is None and gh.fake.pulls == {}
    [note] = [note for note in rep.notes if note.startswith("opening the pull request failed")]
    assert "403" in note and "pull-requests: write" in note
    assert origin_item(wave_repo, "IT-0").status == "review"


def test_a_gate_with_a_read_only_token_fails_in_one_line_naming_the_permission(
        published: tuple[RemoteRepo, Running, report.WaveReport]) -> None:
    wave_repo, gh, rep = published
    assert rep.pr is not None
    statuses = list(gh.fake.statuses)
    gh.fake.token_permissions[BOT_TOKEN] = dict.fromkeys(
        ("contents", "pull_requests", "issues", "statuses"), "read")
    judged = wavegit_in_process(wave_repo.clone, "gate", "--pr", str(rep.pr), env=github_env(gh))
    assert judged.returncode == 1 and "Traceback" not in judged.stderr
    [line] = judged.stderr.strip().splitlines()
    assert "403" in line and "statuses: write" in line
    assert gh.fake.statuses == statuses


def test_pr_title_names_verified_items_and_counts_the_rest() -> None:
    rep = report.WaveReport(wave_id="w-1", base_sha="0" * 40, started_at="2026-01-01T00:00:00Z",
                            items=[report.ItemReport(id=f"X{i}", status="review", verified=i != 3)
                                   for i in range(8)])
    assert publish.pr_title(rep) == "wavegit w-1: X0, X1, X2, X4, X5 and 2 more"
    assert "- `X3`: not verified, 0 files" in publish.pr_body(rep)


# --- big waves (issue 11, point 6): the comment always fits, nothing leaves a PR without its report ------


def test_a_wave_of_2500_changed_files_and_2400_skipped_items_posts_its_report_within_github_s_limit(
        tmp_path: Path) -> None:
    writes = [f"write src/gen/f{i:04}.txt ok" for i in range(2500)]
    backlog = [item(f"BACKLOG-{i:04}", ["write src/later.txt ok"], [f"src/backlog/b{i:04}.txt"])
               for i in range(2400)]
    remote = make_wave_repo(tmp_path, [item("GEN", writes, ["src/gen/"], test="true"), *backlog], max_items=1)
    with running(remote.origin) as gh:
        code, rep = run_json(remote.clone, github_env(gh))
        assert code == 0, rep.notes
        assert len(rep.items[0].files_changed) == 2500 and len(rep.skipped) == 2400
        assert len(rep.to_json(indent=None)) > api.MAX_BODY_CHARS
        (comment,) = gh.fake.issue_comments(rep.pr or 0)
        assert len(comment.body) <= api.MAX_BODY_CHARS
        posted = report_markdown.parse_markdown(comment.body)
        assert posted.omitted.skipped > 0 and posted.omitted.files_changed["GEN"] > 0
        assert posted.omitted.full_report == f"<git dir>/wavegit/reports/{rep.wave_id}.json"
        whole = discover(remote.clone).report_file(rep.wave_id, ".json")
        assert report.WaveReport.from_json(whole.read_text()).skipped == rep.skipped
        status = gh.fake.latest_status(rep.head_sha or "", api.STATUS_CONTEXT)
        assert status is not None and status.state == "success", status


def test_a_report_that_cannot_be_rendered_still_gets_a_minimal_failing_report_comment() -> None:
    gh = MemoryGitHub()
    gh.seed_branch("main", {CONFIG.tracker_path: GATE_TRACKER})
    gh.open_pr(f"wavegit/{GATE_WAVE}", "ab" * 20, ["src/a/x.py"])
    broken = sample_report("ab" * 20)
    broken.items[0].cost = float("nan")  # JSON has no NaN: rendering the whole report raises
    with pytest.raises(ValueError):
        report_markdown.to_markdown(broken)
    assert publish.Publisher(gh, CONFIG, GitHubStore(gh, CONFIG)).post_report(broken) == 1
    (comment,) = gh.comments[1]
    posted = report_markdown.parse_markdown(comment.body)
    assert (posted.wave_id, posted.head_sha, posted.success) == (GATE_WAVE, "ab" * 20, False)
    assert posted.items == []
    assert "the full report could not be rendered (ValueError" in posted.notes[0]
    status = gh.latest_status("ab" * 20)
    assert status is not None and status.state == "failure" and "did not succeed" in status.description


# --- a dedicated GitHub App identity (issue 11, point 2) -------------------------------------------------


@pytest.mark.parametrize("login_configured", [True, False])
def test_a_github_app_identity_posts_the_report_and_the_status_and_only_its_report_is_believed(
        tmp_path: Path, login_configured: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    remote = make_wave_repo(tmp_path, items(2), report_authors=[APP], sandbox="none")
    with running(remote.origin) as gh:
        # An App's installation token cannot read GET /user: its login is configured, or learnt from the
        # comment it creates.
        env = {**github_env(gh, APP_TOKEN), "GITHUB_ACTIONS": "true"}
        if login_configured:
            env["WAVEGIT_GITHUB_LOGIN"] = APP
        code, rep = run_json(remote.clone, env)
        assert code == 0, rep.notes
        (comment,) = gh.fake.issue_comments(rep.pr or 0)
        assert comment.user == APP and gh.fake.pulls[rep.pr or 0].user == APP
        status = gh.fake.latest_status(rep.head_sha or "", api.STATUS_CONTEXT)
        assert status is not None and (status.state, status.user) == ("success", APP)
        # Any workflow of the repository posts as github-actions[bot]: its "report" is not believed.
        forged = dataclasses.replace(rep, items=rep.items[:1])
        gh.fake.add_comment(rep.pr or 0, BOT, report_markdown.to_markdown(forged))
        judged = wavegit(remote.clone, "gate", "--pr", str(rep.pr), env=env)
        assert judged.returncode == 0, judged.stdout + judged.stderr
        # Publishing again edits the App's comment in place.
        rep.notes.append("again")
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        repo = discover(remote.clone)
        publisher = publish.from_env(load_config(repo.root), GitStore(repo, load_config(repo.root)))
        assert publisher is not None and publisher.post_report(rep) == rep.pr
        app_comments = [c for c in gh.fake.issue_comments(rep.pr or 0) if c.user == APP]
        assert len(app_comments) == 1 and "again" in app_comments[0].body


# --- one rule for trusted report authors (issue 20, point 3) ---------------------------------------------


def test_a_wave_run_with_an_app_token_passes_its_own_gate_and_merge_group_with_no_setting(
        tmp_path: Path) -> None:
    """The default ``report_authors`` names only github-actions[bot]; the App that posts the report is
    believed by ``run``'s own gate and by the ``merge_group`` path, learned from the token itself."""
    from tests.helpers.ghserver import merge_group_event, queue_branch

    remote = make_wave_repo(tmp_path, items(1), sandbox="none")
    with running(remote.origin) as gh:
        env = {**github_env(gh, APP_TOKEN), "GITHUB_ACTIONS": "true"}
        code, rep = run_json(remote.clone, env)
        assert code == 0, rep.notes
        status = gh.fake.latest_status(rep.head_sha or "", api.STATUS_CONTEXT)
        assert status is not None and (status.state, status.user) == ("success", APP), status
        person = remote.new_clone("person")
        git(person, "fetch", "-q", "origin")
        git(person, "checkout", "-q", "-B", "queue", "origin/main")
        git(person, "merge", "-q", "--no-ff", "--no-edit", rep.head_sha or "")
        head, base = git(person, "rev-parse", "HEAD"), git(person, "rev-parse", "origin/main")
        queued = queue_branch(rep.pr or 0, rep.head_sha or "")
        git(person, "push", "-q", "origin", f"HEAD:refs/heads/{queued}")
        event = tmp_path / "merge_group.json"
        event.write_text(json.dumps(merge_group_event(head, rep.pr or 0, rep.head_sha or "", base)))
        judged = wavegit(remote.clone, "gate", "--event", env={**env, "GITHUB_EVENT_PATH": str(event)})
        assert judged.returncode == 0, judged.stdout + judged.stderr
        group = gh.fake.latest_status(head, api.STATUS_CONTEXT)
        assert group is not None and group.state == "success", group


# --- GITHUB_TOKEN's pull requests start no workflow: the wave starts the CI (issue 20, point 5) -----------

CI_WORKFLOW = "name: ci\non:\n  pull_request:\n  workflow_dispatch:\njobs: {}\n"


def ci_repo(tmp_path: Path, workflows: list[str]) -> RemoteRepo:
    from tests.helpers.wave import write_and_push

    remote = make_wave_repo(tmp_path, items(1), sandbox="none", ci_workflows=workflows)
    write_and_push(remote.clone, {".github/workflows/ci.yml": CI_WORKFLOW,
                                  ".github/workflows/lint.yml": "on: [pull_request]\njobs: {}\n"}, "CI")
    return remote


def test_a_wave_published_with_github_token_starts_its_ci_workflows_on_its_branch(tmp_path: Path) -> None:
    remote = ci_repo(tmp_path, ["ci.yml"])
    with running(remote.origin) as gh:
        code, rep = run_json(remote.clone, github_env(gh))
        assert code == 0, rep.notes
        assert gh.fake.dispatches == [("ci.yml", rep.branch, BOT)]


def test_an_apps_pull_request_starts_the_ci_itself_so_nothing_is_dispatched(tmp_path: Path) -> None:
    remote = ci_repo(tmp_path, ["ci.yml"])
    with running(remote.origin) as gh:
        code, rep = run_json(remote.clone, {**github_env(gh, APP_TOKEN), "GITHUB_ACTIONS": "true"})
        assert code == 0, rep.notes
        assert gh.fake.dispatches == [] and gh.fake.count("POST", "/dispatches") == 0


def test_a_ci_workflow_that_cannot_start_is_a_note_of_the_report_not_a_failed_wave(tmp_path: Path) -> None:
    remote = ci_repo(tmp_path, ["missing.yml", "lint.yml", "ci.yml"])
    with running(remote.origin) as gh:
        code, rep = run_json(remote.clone, github_env(gh))
        assert code == 0 and rep.success, rep.notes
        assert gh.fake.dispatches == [("ci.yml", rep.branch, BOT)]
        notes = [note for note in rep.notes if "was not started" in note]
        assert len(notes) == 2 and "missing.yml" in notes[0] and "404" in notes[0], notes
        assert "lint.yml" in notes[1] and "does not have 'workflow_dispatch' trigger" in notes[1], notes
        (comment,) = gh.fake.issue_comments(rep.pr or 0)
        assert "missing.yml" in comment.body and "lint.yml" in comment.body
        status = gh.fake.latest_status(rep.head_sha or "", api.STATUS_CONTEXT)
        assert status is not None and status.state == "success"
        # A job whose token lacks `actions: write` is told what to grant.
        gh.fake.token_permissions[BOT_TOKEN] = {"contents": "write", "pull_requests": "write",
                                                "issues": "write", "statuses": "write"}
        publisher = publish.Publisher(publish.connect(api.settings_from_env(github_env(gh))),
                                      load_config(remote.clone), GitStore(discover(remote.clone),
                                                                          load_config(remote.clone)))
        publisher.start_ci(rep)
        assert "actions: write" in rep.notes[-1], rep.notes[-1]
