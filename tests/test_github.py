"""wavegit.github.client through real PyGithub against the fake server: PRs, the report comment, retries,
request counts, malformed answers and token scrubbing."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import replace

import pytest

from tests.helpers.ghserver import (
    ALICE,
    ALICE_TOKEN,
    APP,
    APP_TOKEN,
    BOT,
    BOT_TOKEN,
    MALLORY,
    Fault,
    Running,
    github_env,
    running,
)
from tests.helpers.repos import RemoteRepo, git
from wavegit.core.errors import UsageError
from wavegit.github import api, identity
from wavegit.github.api import GitHubConflict, GitHubError, GitHubNotFound, Settings
from wavegit.github.client import PyGithubClient, connect
from wavegit.github.retry import RetryPolicy
from wavegit.model.report import ItemReport, WaveReport
from wavegit.model.report_markdown import MARKER, to_markdown

# A whole-flow suite (real waves, the test GitHub server): `.ci/run` runs it after the README's command.
pytestmark = pytest.mark.slow

FAST = RetryPolicy(deadline_s=20.0, backoff_s=0.01, max_backoff_s=0.05)


@pytest.fixture
def gh(remote_repo: RemoteRepo) -> Iterator[Running]:
    with running(remote_repo.origin) as server:
        yield server


def client(gh: Running, token: str = BOT_TOKEN, policy: RetryPolicy = FAST) -> PyGithubClient:
    return PyGithubClient(Settings(token, gh.fake.repo, gh.url), policy)


def push_wave(remote_repo: RemoteRepo, branch: str = "wavegit/w1", n_files: int = 1) -> str:
    clone = remote_repo.clone
    git(clone, "checkout", "-q", "-B", branch, "origin/main")
    for i in range(n_files):
        (clone / "src").mkdir(exist_ok=True)
        (clone / f"src/f{i}.py").write_text(f"{i}\n")
    git(clone, "add", "-A")
    git(clone, "commit", "-q", "-m", "wave work")
    git(clone, "push", "-q", "-f", "origin", f"{branch}:refs/heads/{branch}")
    return git(clone, "rev-parse", "HEAD")


def wave_report(head: str, n_items: int = 2) -> WaveReport:
    items = [ItemReport(id=f"IT-{i}", status="review", verified=True, attempts=1, test_exit=0,
                        files_changed=[f"src/f{i}.py"], log_tail="ok\n" * 20) for i in range(n_items)]
    return WaveReport(wave_id="w1", base_sha="0" * 40, head_sha=head, branch="wavegit/w1", success=True,
                      items=items, tracker_updated=True, started_at="2026-01-01T00:00:00Z",
                      finished_at="2026-01-01T00:10:00Z")


def test_settings_come_from_the_environment_and_never_show_the_token() -> None:
    assert api.settings_from_env({"GITHUB_TOKEN": "t"}) is None
    settings = api.settings_from_env({"GITHUB_TOKEN": "sekrit", "GITHUB_REPOSITORY": "o/r"})
    assert settings is not None and settings.api_url == api.DEFAULT_API_URL
    assert "sekrit" not in repr(settings)
    with pytest.raises(UsageError, match="owner/name"):
        api.settings_from_env({"GITHUB_TOKEN": "t", "GITHUB_REPOSITORY": "just-a-name"})
    with pytest.raises(UsageError, match=r"GITHUB_TOKEN \(or .*_APP_PRIVATE_KEY\) and GITHUB_REPOSITORY"):
        api.require_settings({})


def test_the_gate_status_links_to_the_actions_run_it_came_from(gh: Running, remote_repo: RemoteRepo) -> None:
    settings = api.settings_from_env({"GITHUB_TOKEN": BOT_TOKEN, "GITHUB_REPOSITORY": gh.fake.repo,
                                      "GITHUB_API_URL": gh.url, "GITHUB_SERVER_URL": "https://github.example",
                                      "GITHUB_RUN_ID": "4242"})
    assert settings is not None
    head = push_wave(remote_repo)
    PyGithubClient(settings, FAST).set_status(head, "success", "ok")
    status = gh.fake.latest_status(head, api.STATUS_CONTEXT)
    assert status is not None
    assert status.target_url == f"https://github.example/{gh.fake.repo}/actions/runs/4242"
    client(gh).set_status(head, "success", "ok")  # outside Actions: no link
    assert gh.fake.latest_status(head, api.STATUS_CONTEXT).target_url is None  # type: ignore[union-attr]


def test_the_report_comment_is_never_a_reply_of_ours_that_quotes_the_marker(
        gh: Running, remote_repo: RemoteRepo) -> None:
    head = push_wave(remote_repo)
    wg = client(gh)
    pr = wg.find_or_create_pr("wavegit/w1", "main", "wave", "")
    reply = gh.fake.add_comment(pr.number, BOT, f"<!-- wavegit:reply 1 -->\nnot verified ({MARKER})\n")
    posted = wg.upsert_report_comment(pr.number, to_markdown(wave_report(head)), MARKER)
    assert posted.id != reply.id and gh.fake.comments[reply.id].body == reply.body
    assert api.mark_report_outcome(wg, pr.number, MARKER, "merged") is not None
    assert gh.fake.comments[reply.id].body == reply.body


def test_a_fork_pr_names_the_fork_as_its_head_repository(gh: Running, remote_repo: RemoteRepo) -> None:
    push_wave(remote_repo, "patch-1")
    number = gh.fake.open_fork_pr("mallory/widgets", "patch-1", "main", MALLORY)
    assert client(gh).pr_info(number).head_repo == "mallory/widgets"
    own = client(gh).find_or_create_pr("patch-1", "main", "ours", "")
    assert own.number != number and client(gh).pr_info(own.number).head_repo == gh.fake.repo


def test_an_app_installation_token_learns_its_login_from_graphql(gh: Running) -> None:
    assert client(gh, APP_TOKEN).whoami() == APP
    assert gh.fake.count("POST", "/graphql") == 1


def test_find_or_create_pr_opens_one_pr_and_then_finds_and_updates_it(
        gh: Running, remote_repo: RemoteRepo) -> None:
    head = push_wave(remote_repo)
    wg = client(gh)
    first = wg.find_or_create_pr("wavegit/w1", "main", "wave w1", "body 1")
    second = wg.find_or_create_pr("wavegit/w1", "main", "wave w1 (2 items)", "body 2")
    assert first.number == second.number and first.head_sha == head
    assert len(gh.fake.pulls) == 1
    stored = gh.fake.pulls[first.number]
    assert (stored.title, stored.body) == ("wave w1 (2 items)", "body 2")


def test_report_comment_is_edited_in_place_and_others_marked_comments_are_left_alone(
        gh: Running, remote_repo: RemoteRepo) -> None:
    head = push_wave(remote_repo)
    wg = client(gh)
    pr = wg.find_or_create_pr("wavegit/w1", "main", "wave", "")
    gh.fake.add_comment(pr.number, MALLORY, f"{MARKER}\nforged")
    first = wg.upsert_report_comment(pr.number, to_markdown(wave_report(head)), MARKER)
    second = wg.upsert_report_comment(pr.number, to_markdown(wave_report(head, 3)), MARKER)
    ours = [c for c in gh.fake.issue_comments(pr.number) if c.user == BOT]
    assert first.id == second.id and len(ours) == 1
    assert "IT-2" in ours[0].body
    assert [c.body for c in gh.fake.issue_comments(pr.number) if c.user == MALLORY] == [f"{MARKER}\nforged"]


@pytest.mark.parametrize("kinds", [("5xx", "secondary"), ("secondary-bare", "429", "5xx")])
def test_twenty_percent_injected_faults_still_leave_exactly_one_pr_and_one_comment(
        remote_repo: RemoteRepo, kinds: tuple[str, ...]) -> None:
    head = push_wave(remote_repo)
    with running(remote_repo.origin, fault_rate=0.2, fault_kinds=kinds, seed=5) as gh:
        # Secondary limits without Retry-After (403 or 429) wait secondary_wait_s: short here.
        wg = client(gh, policy=replace(FAST, secondary_wait_s=0.01))
        for round_ in range(8):
            pr = wg.find_or_create_pr("wavegit/w1", "main", f"wave round {round_}", "")
            wg.upsert_report_comment(pr.number, to_markdown(wave_report(head, round_ + 1)), MARKER)
            wg.set_status(head, "pending", f"round {round_}")
        faults = [r for r in gh.fake.requests if r.fault]
        assert len(faults) >= 5, "the fault injection did not fire often enough to prove anything"
        assert any(r.method in ("POST", "PATCH") for r in faults), "no write was hit by a fault"
        assert len(gh.fake.pulls) == 1
        comments = gh.fake.issue_comments(pr.number)
        assert len(comments) == 1 and "IT-7" in comments[0].body


def test_a_comment_whose_answer_was_lost_is_found_not_posted_twice(
        gh: Running, remote_repo: RemoteRepo) -> None:
    head = push_wave(remote_repo)
    wg = client(gh)
    pr = wg.find_or_create_pr("wavegit/w1", "main", "wave", "")
    wg.whoami()
    gh.fake.set_faults([None, Fault("5xx", after=True)])  # the listing passes, the POST lands but fails
    comment = wg.upsert_report_comment(pr.number, to_markdown(wave_report(head)), MARKER)
    assert [c.id for c in gh.fake.issue_comments(pr.number)] == [comment.id]
    assert gh.fake.count("POST", "/comments") == 1


def test_a_pr_whose_answer_was_lost_is_found_not_opened_twice(
        gh: Running, remote_repo: RemoteRepo) -> None:
    push_wave(remote_repo)
    gh.fake.set_faults([None, Fault("5xx", after=True)])
    pr = client(gh).find_or_create_pr("wavegit/w1", "main", "wave", "")
    assert list(gh.fake.pulls) == [pr.number]
    assert gh.fake.count("POST", "/pulls") == 1


@pytest.mark.parametrize("n_items", [1, 60])
def test_pr_comment_and_status_of_a_wave_take_at_most_ten_requests(
        gh: Running, remote_repo: RemoteRepo, n_items: int) -> None:
    head = push_wave(remote_repo)
    wg = client(gh)
    before = len(gh.fake.requests)
    pr = wg.find_or_create_pr("wavegit/w1", "main", "wave", "summary")
    wg.upsert_report_comment(pr.number, to_markdown(wave_report(head, n_items)), MARKER)
    wg.set_status(head, "pending", "waiting for the gate")
    first_wave = len(gh.fake.requests) - before
    wg.find_or_create_pr("wavegit/w1", "main", "wave", "summary 2")
    wg.upsert_report_comment(pr.number, to_markdown(wave_report(head, n_items + 1)), MARKER)
    wg.set_status(head, "success", "done")
    assert first_wave <= 10
    assert len(gh.fake.requests) - before - first_wave <= 10


def test_secondary_rate_limit_waits_for_retry_after(gh: Running) -> None:
    gh.fake.set_faults([Fault("secondary", wait_s=1)])
    started = time.monotonic()
    assert client(gh).permission(ALICE) == "write"
    assert time.monotonic() - started >= 1.0
    assert [r.fault for r in gh.fake.requests] == ["secondary", None]


@pytest.mark.parametrize("kind", ["secondary-bare", "429"])
def test_secondary_rate_limit_without_retry_after_waits_a_minute_not_a_server_error_backoff(
        gh: Running, kind: str) -> None:
    # GitHub: "wait for at least one minute before retrying"; FAST's 5xx backoff is 10 ms.
    assert RetryPolicy().secondary_wait_s >= 60
    gh.fake.set_faults([Fault(kind)])
    started = time.monotonic()
    assert client(gh, policy=replace(FAST, secondary_wait_s=1.0)).permission(ALICE) == "write"
    assert time.monotonic() - started >= 1.0
    assert [r.fault for r in gh.fake.requests] == [kind, None]


def test_a_validation_error_on_a_path_that_says_sha_is_an_error_not_a_lost_race(gh: Running) -> None:
    gh.fake.set_faults([Fault("status", status=422, message="Validation Failed")])
    with pytest.raises(GitHubError, match="422: Validation Failed") as raised:
        client(gh).put_contents("docs/sha.txt", "x\n", "add", "main", None)
    assert not isinstance(raised.value, GitHubConflict)


def test_creating_a_file_that_appeared_since_it_was_read_is_a_lost_race(gh: Running) -> None:
    wg = client(gh)
    wg.put_contents("docs/new.txt", "first\n", "add", "main", None)
    # GitHub's answer: 422 'Invalid request.\n\n"sha" wasn't supplied.' (the reason is on its third line).
    with pytest.raises(GitHubConflict):
        wg.put_contents("docs/new.txt", "second\n", "add", "main", None)


def test_primary_rate_limit_waits_until_the_reset_time(gh: Running) -> None:
    gh.fake.set_faults([Fault("primary", wait_s=1)])
    started = time.monotonic()
    assert client(gh).permission(MALLORY) == "read"
    assert time.monotonic() - started >= 0.5
    assert len(gh.fake.requests) == 2


def test_persistent_server_errors_give_up_at_the_deadline_with_a_clear_error(gh: Running) -> None:
    gh.fake.fault_rate, gh.fake.fault_kinds = 1.0, ("5xx",)
    policy = RetryPolicy(deadline_s=0.5, backoff_s=0.05, max_backoff_s=0.1)
    with pytest.raises(GitHubError, match=r"502.*gave up after \d+ attempts") as raised:
        client(gh, policy=policy).permission(ALICE)
    # Every wait is at least half the first backoff, so staying within the deadline bounds the attempts.
    most = 1 + int(policy.deadline_s / (policy.backoff_s / 2))
    assert 3 <= len(gh.fake.requests) <= most
    assert f"gave up after {len(gh.fake.requests)} attempts" in str(raised.value)


def test_the_token_never_appears_in_errors_or_logs(gh: Running, caplog: pytest.LogCaptureFixture) -> None:
    gh.fake.fault_rate, gh.fake.fault_kinds = 1.0, ("echo-auth",)
    caplog.set_level(logging.DEBUG)
    policy = RetryPolicy(deadline_s=0.2, backoff_s=0.05, max_backoff_s=0.05)
    with pytest.raises(GitHubError) as caught:
        client(gh, ALICE_TOKEN, policy).pr_info(1)
    assert "upstream refused header" in str(caught.value)
    assert ALICE_TOKEN not in str(caught.value)
    assert caplog.records and all(ALICE_TOKEN not in r.getMessage() for r in caplog.records)


def test_pr_files_fail_closed_when_github_lists_fewer_files_than_the_pr_changes(
        gh: Running, remote_repo: RemoteRepo) -> None:
    push_wave(remote_repo, n_files=5)
    number = client(gh).find_or_create_pr("wavegit/w1", "main", "wave w1", "body").number
    assert len(client(gh).pr_files(number)) == 5
    gh.fake.files_limit = 3  # GitHub's is 3,000
    with pytest.raises(GitHubError, match="changes 5 files but GitHub lists only 3"):
        client(gh).pr_files(number)


def test_a_missing_pr_is_bad_input(gh: Running) -> None:
    with pytest.raises(GitHubNotFound) as caught:
        client(gh).pr_info(99)
    assert caught.value.exit_code == 2


@pytest.mark.parametrize(("mangle", "complaint"), [
    (lambda pr: {k: v for k, v in pr.items() if k != "head"}, "pull.head"),
    (lambda pr: {**pr, "number": "seven"}, "'seven', expected int"),
    (lambda pr: {**pr, "merged": "yes"}, "'yes', expected bool"),
])
def test_malformed_pr_answers_are_a_clear_error(gh: Running, remote_repo: RemoteRepo, mangle: object,
                                                complaint: str) -> None:
    push_wave(remote_repo)
    number = client(gh).find_or_create_pr("wavegit/w1", "main", "wave", "").number
    gh.fake.mangle["pull"] = mangle  # type: ignore[assignment]
    with pytest.raises(GitHubError, match=f"unexpected answer from GitHub.*{complaint}"):
        client(gh).pr_info(number)


def test_permission_of_a_stranger_is_none(gh: Running) -> None:
    assert client(gh).permission("nobody") == "none"
    assert client(gh).permission(ALICE) == "write"


def test_pr_state_for_sync_tells_open_merged_with_sha_and_closed(
        gh: Running, remote_repo: RemoteRepo) -> None:
    push_wave(remote_repo, "wavegit/a")
    push_wave(remote_repo, "wavegit/b")
    wg = client(gh)
    merged = wg.find_or_create_pr("wavegit/a", "main", "a", "").number
    closed = wg.find_or_create_pr("wavegit/b", "main", "b", "").number
    assert api.SyncPullRequests(wg, MARKER).state(merged) == ("open", None)
    sha = gh.fake.merge(merged)
    gh.fake.close(closed)
    assert api.SyncPullRequests(wg, MARKER).state(merged) == ("merged", sha)
    assert api.SyncPullRequests(wg, MARKER).state(closed) == ("closed", None)


def test_mark_report_outcome_rewrites_one_line_of_our_comment_in_place(
        gh: Running, remote_repo: RemoteRepo) -> None:
    from wavegit.model.report_markdown import parse_markdown

    head = push_wave(remote_repo)
    wg = client(gh)
    pr = wg.find_or_create_pr("wavegit/w1", "main", "wave", "")
    assert api.mark_report_outcome(wg, pr.number, MARKER, "closed") is None
    posted = wg.upsert_report_comment(pr.number, to_markdown(wave_report(head)), MARKER)
    api.mark_report_outcome(wg, pr.number, MARKER, "closed without merging")
    api.mark_report_outcome(wg, pr.number, MARKER, "merged as abc123")
    comments = gh.fake.issue_comments(pr.number)
    assert [c.id for c in comments] == [posted.id]
    assert comments[0].body.count(api.OUTCOME_PREFIX) == 1 and "merged as abc123" in comments[0].body
    assert parse_markdown(comments[0].body).head_sha == head


def test_a_bad_token_is_reported_without_retrying(gh: Running) -> None:
    with pytest.raises(GitHubError, match=r"401.*check GITHUB_TOKEN"):
        client(gh, "ghp_wrong").pr_info(1)
    assert len(gh.fake.requests) == 1


def test_connect_reads_the_environment(gh: Running, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in github_env(gh).items():
        monkeypatch.setenv(key, value)
    assert connect().whoami() == BOT


def test_a_configured_login_is_used_without_asking_get_user(gh: Running) -> None:
    settings = api.settings_from_env({**github_env(gh), "WAVEGIT_GITHUB_LOGIN": ALICE})
    assert settings is not None
    wg = PyGithubClient(settings, FAST)
    assert wg.whoami() == ALICE
    assert gh.fake.count("GET", "/user") == 0


# ---- against the strict server (issue 13) ----

def test_an_installation_token_asks_graphql_who_it_is_and_never_get_user(gh: Running) -> None:
    assert client(gh, BOT_TOKEN).whoami() == BOT
    assert client(gh, APP_TOKEN).whoami() == APP
    assert [r for r in gh.fake.requests if r.path == "/user"] == [] and gh.fake.count("POST", "/graphql") == 2


def test_outside_actions_an_installation_token_graphql_refuses_names_wavegit_github_login(
        gh: Running, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    gh.fake.viewer_denied = frozenset({APP})
    with pytest.raises(GitHubError, match="WAVEGIT_GITHUB_LOGIN"):
        client(gh, APP_TOKEN).whoami()


def test_in_actions_a_guessed_login_is_corrected_by_the_first_comment_created(
        gh: Running, remote_repo: RemoteRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    gh.fake.viewer_denied = frozenset({APP})
    head = push_wave(remote_repo)
    wg = client(gh, APP_TOKEN)
    assert wg.whoami() == BOT
    pr = wg.find_or_create_pr("wavegit/w1", "main", "wave", "")
    wg.upsert_report_comment(pr.number, to_markdown(wave_report(head)), MARKER)
    assert wg.whoami() == APP


def test_the_noreply_identity_of_an_app_is_its_login_and_user_id(gh: Running) -> None:
    wg = client(gh, APP_TOKEN)
    name, email = identity.commit_identity(wg)
    user_id = wg.user_id(APP)
    assert (name, email) == (APP, f"{user_id}+{APP}@users.noreply.github.com") and user_id > 0


def test_a_token_without_pull_requests_write_fails_the_pr_naming_the_permission_to_grant(
        gh: Running, remote_repo: RemoteRepo) -> None:
    push_wave(remote_repo)
    gh.fake.token_permissions[APP_TOKEN] = {"contents": "write", "pull_requests": "read", "issues": "write",
                                            "statuses": "write"}
    with pytest.raises(GitHubError) as caught:
        client(gh, APP_TOKEN).find_or_create_pr("wavegit/w1", "main", "wave", "")
    assert caught.value.status == 403 and "pull-requests: write" in str(caught.value)
    assert gh.fake.pulls == {}


def test_a_read_only_token_cannot_set_the_gate_status_and_says_which_permission(
        gh: Running, remote_repo: RemoteRepo) -> None:
    head = push_wave(remote_repo)
    gh.fake.token_permissions[BOT_TOKEN] = dict.fromkeys(("contents", "pull_requests", "issues", "statuses"),
                                                         "read")
    with pytest.raises(GitHubError, match="statuses: write"):
        client(gh).set_status(head, "success", "ok")
    assert gh.fake.statuses == [] and client(gh).branch_head("main") is not None


def test_a_non_collaborator_has_permission_none_or_read_and_may_run_no_command(gh: Running) -> None:
    assert client(gh).permission("stranger") == "none"
    gh.fake.private = False
    assert client(gh).permission("stranger") == "read"
    assert gh.fake.count("GET", "/collaborators/stranger/permission") == 2


def test_a_spent_rate_limit_whose_reset_is_past_the_deadline_fails_at_once_with_the_answer(
        gh: Running) -> None:
    gh.fake.rate_limit = 2
    wg = client(gh)
    assert wg.permission(ALICE) == "write" and wg.permission(ALICE) == "write"
    with pytest.raises(GitHubError, match=r"rate limit exceeded.*gave up after 1 attempts"):
        wg.permission(ALICE)
    assert gh.fake.count("GET", "/permission") == 3


def test_the_trusted_authors_are_the_configured_and_our_own_identity_but_never_github_actions_unasked(
        gh: Running) -> None:
    assert api.trusted_authors(("alice",), client(gh, APP_TOKEN)) == ("alice", APP)
    assert api.trusted_authors((APP,), client(gh, APP_TOKEN)) == (APP,)
    assert api.trusted_authors((APP,), client(gh, BOT_TOKEN)) == (APP,)
    # A user's token posts as that user (GET /user), who could set the status with it anyway.
    assert api.trusted_authors((), client(gh, ALICE_TOKEN)) == (ALICE,)


def test_our_identity_is_learned_once_per_process_whatever_the_number_of_clients(gh: Running) -> None:
    for _ in range(3):
        assert api.trusted_authors((), client(gh, APP_TOKEN)) == (APP,)
        assert api.trusted_authors((), client(gh, ALICE_TOKEN)) == (ALICE,)
    assert gh.fake.count("POST", "/graphql") == 1 and gh.fake.count("GET", "/user") == 1
