"""What publish, sync and review say and decide on GitHub, on the in-memory client
(``tests/helpers/fake_github.py``): fast unit tests of the logic; the PyGithub path is proved against
``tests/helpers/ghserver.py`` in the test modules of each command. Last, the fake's own tracker side is
checked against git and the store contract, so that tests keeping a tracker on it can trust it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.helpers.fake_github import ALICE, BOT, MALLORY, MemoryGitHub, blob_sha
from tests.helpers.reliability import GATE_TRACKER, GATE_WAVE, sample_report
from tests.helpers.repos import RemoteRepo, git
from wavegit.core.errors import EXIT_BAD_INPUT, EXIT_OK
from wavegit.core.repo import discover
from wavegit.github.api import (
    OUTCOME_PREFIX,
    GitHubError,
    SyncPullRequests,
    mark_report_outcome,
)
from wavegit.github.publish import Publisher
from wavegit.github.review import Reviewer, reply_marker
from wavegit.github.store import GitHubStore
from wavegit.model import report_markdown
from wavegit.model.config import Config
from wavegit.sync.reconcile import update_comments
from wavegit.sync.rules import ItemChange
from wavegit.trackerbranch.store import CasConflict, Change, mutate

CONFIG = Config()
HEAD = "ab" * 20


@pytest.fixture
def gh() -> MemoryGitHub:
    """The tracker (A-1 owning src/a/) on main and the wave branch's PR #1 at HEAD changing src/a/x.py."""
    memory = MemoryGitHub()
    memory.seed_branch("main", {CONFIG.tracker_path: GATE_TRACKER})
    memory.open_pr(f"wavegit/{GATE_WAVE}", HEAD, ["src/a/x.py"])
    return memory


def publisher(gh: MemoryGitHub) -> Publisher:
    return Publisher(gh, CONFIG, GitHubStore(gh, CONFIG))


# --- publish -----------------------------------------------------------------------------------------


def test_publishing_twice_keeps_one_pr_and_one_report_comment_and_gates_the_head(gh: MemoryGitHub) -> None:
    rep = sample_report(HEAD)
    assert publisher(gh).post_report(rep) == 1 and rep.pr == 1
    rep.notes.append("published again")
    assert publisher(gh).post_report(rep) == 1
    assert len(gh.pulls) == 1
    (only,) = gh.comments[1]
    assert only.author == BOT and "published again" in only.body and only.updated_at > only.created_at
    status = gh.latest_status(HEAD)
    assert status is not None and status.state == "success", status


def test_a_wave_without_a_branch_publishes_nothing(gh: MemoryGitHub) -> None:
    assert publisher(gh).post_report(sample_report(HEAD, branch=None, pr=None)) is None
    assert gh.comments[1] == [] and gh.statuses == []


# --- sync: PR states and the outcome line on the report ------------------------------------------------


def test_pr_states_for_sync_are_open_merged_with_its_sha_or_closed(gh: MemoryGitHub) -> None:
    assert SyncPullRequests(gh, report_markdown.MARKER).state(1) == ("open", None)
    gh.merge(1, "cd" * 20)
    assert SyncPullRequests(gh, report_markdown.MARKER).state(1) == ("merged", "cd" * 20)
    other = gh.open_pr("wavegit/w2", HEAD)
    gh.close(other)
    assert SyncPullRequests(gh, report_markdown.MARKER).state(other) == ("closed", None)


def test_an_unknown_pr_state_is_an_error_not_a_guess(gh: MemoryGitHub) -> None:
    gh.pulls[1] = replace(gh.pulls[1], state="draft")
    with pytest.raises(GitHubError, match="state 'draft'"):
        SyncPullRequests(gh, report_markdown.MARKER).state(1)


def test_the_outcome_line_goes_under_the_marker_and_replaces_an_earlier_one(gh: MemoryGitHub) -> None:
    body = report_markdown.to_markdown(sample_report(HEAD))
    gh.add_comment(1, MALLORY, body)
    ours = gh.add_comment(1, BOT, body)
    mark_report_outcome(gh, 1, report_markdown.MARKER, "first")
    edited = mark_report_outcome(gh, 1, report_markdown.MARKER, "merged as cdcdcdcdcdcd")
    assert edited is not None and edited.id == ours.id
    first, second, rest = edited.body.split("\n", 2)
    assert (first, second) == (report_markdown.MARKER, f"{OUTCOME_PREFIX}merged as cdcdcdcdcdcd")
    assert report_markdown.parse_markdown(edited.body) == report_markdown.parse_markdown(body)
    assert OUTCOME_PREFIX not in rest
    assert gh.comments[1][0].body == body  # someone else's copy of the marker is left alone


def test_no_report_comment_of_ours_means_nothing_to_mark(gh: MemoryGitHub) -> None:
    gh.add_comment(1, MALLORY, report_markdown.to_markdown(sample_report(HEAD)))
    assert mark_report_outcome(gh, 1, report_markdown.MARKER, "merged") is None
    assert "upsert_report_comment" not in gh.calls


def change(item_id: str, old: str, new: str, pr: int | None, merge_sha: str | None = None) -> ItemChange:
    return ItemChange(item_id, "w1", old, new, "why", {}, pr=pr, merge_sha=merge_sha)


def test_sync_says_merged_or_closed_once_per_pr_and_only_for_review_items(gh: MemoryGitHub) -> None:
    closed = gh.open_pr("wavegit/w2", HEAD)
    for number in (1, closed):
        gh.add_comment(number, BOT, report_markdown.to_markdown(sample_report(HEAD)))
    errors = update_comments(SyncPullRequests(gh, report_markdown.MARKER), [
        change("A-1", "review", "done", 1, "ef" * 20), change("A-2", "review", "done", 1, "ef" * 20),
        change("B-1", "review", "todo", closed), change("C-1", "in_progress", "todo", closed),
        change("D-1", "review", "todo", None)])
    assert errors == []
    merged_line = gh.comments[1][0].body.splitlines()[1]
    closed_line = gh.comments[closed][0].body.splitlines()[1]
    assert merged_line == f"{OUTCOME_PREFIX}merged as efefefefefef; `wavegit sync` marked A-1, A-2 done"
    assert closed_line == f"{OUTCOME_PREFIX}closed without merging; `wavegit sync` returned B-1 to todo"


def test_a_pr_that_cannot_be_updated_is_reported_and_the_others_still_are(gh: MemoryGitHub) -> None:
    gh.add_comment(1, BOT, report_markdown.to_markdown(sample_report(HEAD)))
    errors = update_comments(SyncPullRequests(gh, report_markdown.MARKER),
                             [change("A-1", "review", "done", 1), change("G-1", "review", "todo", 99)])
    assert len(errors) == 1 and errors[0].startswith("PR #99: cannot update the report comment: ")
    assert gh.comments[1][0].body.splitlines()[1] == f"{OUTCOME_PREFIX}merged; `wavegit sync` marked A-1 done"


# --- review: who may command, and what is not a command ------------------------------------------------


@pytest.fixture
def reviewer(gh: MemoryGitHub, remote_repo: RemoteRepo) -> Reviewer:
    return Reviewer(discover(remote_repo.clone), CONFIG, GitHubStore(gh, CONFIG), gh)


def test_a_comment_without_a_command_or_by_ourselves_gets_no_reply(gh: MemoryGitHub,
                                                                    reviewer: Reviewer) -> None:
    for author, body in ((ALICE, "looks good"), (BOT, "/wavegit drop A-1")):
        outcome = reviewer.handle(1, gh.add_comment(1, author, body))
        assert (outcome.exit_code, outcome.reply) == (EXIT_OK, None)
    assert [c.author for c in gh.comments[1]] == [ALICE, BOT] and "permission" not in gh.calls


@pytest.mark.parametrize("permission", ["read", "triage", "none"])
def test_without_write_access_a_command_gets_a_polite_reply_and_nothing_else(
        gh: MemoryGitHub, reviewer: Reviewer, permission: str) -> None:
    gh.permissions[MALLORY] = permission
    command = gh.add_comment(1, MALLORY, "/wavegit retry A-1")
    outcome = reviewer.handle(1, command)
    assert outcome.exit_code == EXIT_OK and outcome.reply is not None and "write access" in outcome.reply
    reply = gh.comments[1][-1]
    assert reply.author == BOT and reply.body.startswith(reply_marker(command.id))
    assert "pr_info" not in gh.calls and "branch_head" not in gh.calls


def test_a_malformed_command_is_refused_with_exit_2_and_one_reply_however_often_handled(
        gh: MemoryGitHub, reviewer: Reviewer) -> None:
    command = gh.add_comment(1, ALICE, "/wavegit merge A-1")
    for _ in range(2):
        outcome = reviewer.handle(1, command)
        assert outcome.exit_code == EXIT_BAD_INPUT and "could not read that command" in (outcome.reply or "")
    assert [c.author for c in gh.comments[1]] == [ALICE, BOT]


def test_a_command_on_a_pr_that_is_not_an_open_wave_is_refused(gh: MemoryGitHub, reviewer: Reviewer) -> None:
    other = gh.open_pr("feature/x", HEAD)
    outcome = reviewer.handle(other, gh.add_comment(other, ALICE, "/wavegit drop A-1"))
    assert outcome.exit_code == EXIT_BAD_INPUT
    assert "is not an open wavegit wave (its branch is <code>feature/x</code>)" in (outcome.reply or "")
    gh.close(1)
    outcome = reviewer.handle(1, gh.add_comment(1, ALICE, "/wavegit drop A-1"))
    assert outcome.exit_code == EXIT_BAD_INPUT and "not an open wavegit wave" in (outcome.reply or "")


# --- the fake's tracker side answers as GitHub does (so gate tests may keep the tracker on it) -----------


def test_the_fakes_file_sha_is_the_git_blob_id(tmp_path: Path) -> None:
    text = "version: 1\nitems: []\n"
    assert blob_sha(text) == git(tmp_path, "hash-object", "--stdin", input=text)


def test_the_tracker_store_reads_writes_and_detects_a_rival_on_the_fake(gh: MemoryGitHub) -> None:
    store = GitHubStore(gh, CONFIG)
    snap = store.read()
    assert (snap.text, snap.blob_sha) == (GATE_TRACKER, blob_sha(GATE_TRACKER))
    assert snap.commit == gh.branches["main"]
    moved = GATE_TRACKER.replace("do a", "do a again")
    commit = store.write(snap, Change(moved), "edit A-1")
    assert gh.branches["main"] == commit and gh.commits[commit].parent == snap.commit
    with pytest.raises(CasConflict):
        store.write(snap, Change(GATE_TRACKER), "a stale tracker")
    with pytest.raises(CasConflict):
        store.write(snap, Change(None, {".wavegit/HALT": "stop\n"}), "a stale branch")
    assert gh.branches["main"] == commit and gh.file_at("main", CONFIG.tracker_path) == moved


def test_mutate_on_the_fake_lands_once_with_its_operation_id(gh: MemoryGitHub) -> None:
    store = GitHubStore(gh, CONFIG)
    before = store.read()
    result = mutate(store, lambda snap: Change(snap.text, {".wavegit/HALT": "stop\n"}), message="halt")
    after = store.read()
    assert result.commit == after.commit and gh.file_at("main", ".wavegit/HALT") == "stop\n"
    assert store.contains_op(after, before, result.op_id)
    assert not store.contains_op(before, before, result.op_id)
