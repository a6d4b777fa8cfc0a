"""``/wavegit retry|drop <id>`` PR comments: real waves published through PyGithub to
tests/helpers/ghserver.py, then ``wavegit review`` run as a subprocess against the same bare origin."""

from __future__ import annotations

import html
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import published
from tests.helpers.ghserver import ALICE, BOT, MALLORY, github_env
from tests.helpers.published_once import published_wave
from tests.helpers.reliability import wavegit_in_process
from tests.helpers.repos import RemoteRepo, git, wavegit
from tests.helpers.wave import item, origin_item
from wavegit.github.review import Command, Refused, parse_command
from wavegit.model import report, report_markdown, tracker

# A whole-flow suite (real waves, the test GitHub server): `.ci/run` runs it after the README's command.
pytestmark = pytest.mark.slow

TRACKER = ".wavegit/tracker.yaml"


@dataclass
class Published(published.Published):
    def review(self, author: str, body: str) -> tuple[int, str]:
        comment = self.gh.fake.add_comment(self.pr, author, body)
        result = wavegit(self.remote.clone, "review", "--pr", str(self.pr), "--comment-id", str(comment.id),
                         env=github_env(self.gh))
        assert "Traceback" not in result.stderr, result.stderr
        return result.returncode, result.stdout + result.stderr

    def answer(self, author: str, body: str) -> tuple[int, str]:
        """:meth:`review` in this process, for a command that runs no worker (a drop, a refusal, a reply):
        the real process, which first starts itself again without the token, is :meth:`review`'s."""
        comment = self.gh.fake.add_comment(self.pr, author, body)
        result = wavegit_in_process(self.remote.clone, "review", "--pr", str(self.pr), "--comment-id",
                                    str(comment.id), env=github_env(self.gh))
        assert "Traceback" not in result.stderr, result.stderr
        return result.returncode, result.stdout + result.stderr

    def bot_comments(self) -> list[str]:
        return [c.body for c in self.gh.fake.issue_comments(self.pr) if c.user == BOT]

    def posted_report(self) -> report.WaveReport:
        (body,) = [b for b in self.bot_comments() if b.startswith(report_markdown.MARKER)]
        return report_markdown.parse_markdown(body)

    def replies(self) -> list[str]:
        """The bot's replies, their character references decoded (as GitHub shows them)."""
        return [html.unescape(b) for b in self.bot_comments() if not b.startswith(report_markdown.MARKER)]


@pytest.fixture
def wave(tmp_path: Path) -> Iterator[Published]:
    """A published wave of IT-0 and IT-1 (LATER waits for IT-0), run once per process and copied."""
    with published_wave(tmp_path, [
        item("IT-0", ["write src/f0.txt ok"], ["src/f0.txt"]),
        item("IT-1", ["write src/f1.txt ok"], ["src/f1.txt"]),
        item("LATER", ["write src/later.txt ok"], ["src/later.txt"], depends_on=["IT-0"]),
    ]) as (remote, gh, run_report):
        yield Published(remote, gh, run_report)


def branch_files(published: Published) -> dict[str, str]:
    """The files the items own (src/f*.txt) on the wave branch, with their text."""
    names = git(published.remote.origin, "ls-tree", "-r", "--name-only", published.branch, "src").split()
    return {n: git(published.remote.origin, "show", f"{published.branch}:{n}") for n in names
            if n.startswith("src/f")}


def branch_items(published: Published) -> list[str]:
    return git(published.remote.origin, "log", "--reverse", "--format=%(trailers:key=Wavegit-Item,valueonly)",
               f"{published.report.base_sha}..{published.branch}").split()


def edit_prompt(remote: RemoteRepo, old: str, new: str) -> None:
    editor = remote.new_clone("editor")
    path = editor / TRACKER
    path.write_text(path.read_text().replace(old, new))
    git(editor, "commit", "-q", "-am", "sharpen the prompt")
    git(editor, "push", "-q", "origin", "main")


def test_retry_by_a_writer_reruns_the_item_and_replaces_its_commit_on_the_wave_branch(
        wave: Published) -> None:
    edit_prompt(wave.remote, "write src/f0.txt ok", "write src/f0.txt ok again")
    code, output = wave.review(ALICE, "Looks thin.\n/wavegit retry IT-0\n")
    assert code == 0, output
    assert branch_files(wave) == {"src/f0.txt": "ok again", "src/f1.txt": "ok"}
    assert branch_items(wave) == ["IT-0", "IT-1"]
    posted = wave.posted_report()
    assert posted.head_sha == wave.tip() and posted.success
    assert [i.id for i in posted.items] == ["IT-0", "IT-1"]
    recorded = origin_item(wave.remote, "IT-0")
    assert (recorded.status, recorded.pr, recorded.attempts) == ("review", wave.pr, 2)
    (reply,) = wave.replies()
    assert f"@{ALICE}" in reply and "retried `IT-0`" in reply
    status = wave.gh.fake.latest_status(wave.tip(), "wavegit/gate")
    assert status is not None and status.state == "success"


def test_a_retry_that_is_not_verified_changes_nothing_and_exits_1(wave: Published) -> None:
    edit_prompt(wave.remote, "write src/f0.txt ok", "write src/f0.txt nope")
    tip, report_before = wave.tip(), wave.posted_report()
    code, output = wave.review(ALICE, "/wavegit retry IT-0")
    assert code == 1, output
    assert wave.tip() == tip and wave.posted_report() == report_before
    assert origin_item(wave.remote, "IT-0").attempts == 1
    assert "was not verified" in wave.replies()[0]


def test_a_retry_of_an_item_with_no_attempt_left_runs_nothing_and_exits_1(wave: Published) -> None:
    editor = wave.remote.new_clone("editor")
    path = editor / TRACKER
    text = tracker.set_fields(path.read_text(), "IT-0", {"attempts": 4})  # max_attempts: 4
    path.write_text(text.replace("write src/f0.txt ok", "write src/f0.txt ok again"))
    git(editor, "commit", "-q", "-am", "IT-0 has used its attempts")
    git(editor, "push", "-q", "origin", "main")
    tip = wave.tip()
    code, output = wave.review(ALICE, "/wavegit retry IT-0")
    assert code == 1, output
    assert wave.tip() == tip and branch_files(wave)["src/f0.txt"] == "ok"
    assert origin_item(wave.remote, "IT-0").attempts == 4
    assert "no attempt left (4 of max_attempts 4 used)" in wave.replies()[0]


def test_drop_by_a_writer_removes_the_items_commit_and_returns_it_to_todo_but_never_the_only_item(
        wave: Published) -> None:
    code, output = wave.answer(ALICE, "/wavegit drop IT-0")
    assert code == 0, output
    assert tracker_spend(wave.remote) == "0"  # a drop carries a cost trailer too
    assert branch_files(wave) == {"src/f1.txt": "ok"}
    assert branch_items(wave) == ["IT-1"]
    dropped = origin_item(wave.remote, "IT-0")
    assert (dropped.status, dropped.wave, dropped.pr) == ("todo", None, None)
    assert dropped.last_error == f"dropped from PR #{wave.pr} by @{ALICE}"
    assert origin_item(wave.remote, "IT-1").status == "review"
    posted = wave.posted_report()
    assert posted.head_sha == wave.tip() and [i.id for i in posted.items] == ["IT-1"]
    assert len(wave.bot_comments()) == 2
    code, output = wave.answer(ALICE, "/wavegit drop IT-1")
    assert code == 2 and "only item" in output
    assert branch_items(wave) == ["IT-1"]


def test_after_the_rebuild_the_gate_waits_until_github_shows_the_pushed_head(wave: Published) -> None:
    wave.gh.fake.head_lag_reads = 4
    old = wave.tip()
    code, output = wave.answer(ALICE, "/wavegit drop IT-0")
    assert code == 0, output
    new = wave.tip()
    assert new != old
    status = wave.gh.fake.latest_status(new, "wavegit/gate")
    assert status is not None and status.state == "success", output


def test_a_non_writer_gets_a_polite_reply_and_nothing_changes(wave: Published) -> None:
    tip, tracker = wave.tip(), git(wave.remote.origin, "show", f"main:{TRACKER}")
    report_before = wave.posted_report()
    for _ in range(2):
        code, _output = wave.answer(MALLORY, "/wavegit drop IT-0")
        assert code == 0
    assert wave.tip() == tip and git(wave.remote.origin, "show", f"main:{TRACKER}") == tracker
    assert wave.posted_report() == report_before
    replies = wave.replies()
    assert len(replies) == 2 and all(f"@{MALLORY}" in r and "write access" in r for r in replies)


def test_the_same_command_comment_is_answered_once_however_often_it_is_handled(wave: Published) -> None:
    comment = wave.gh.fake.add_comment(wave.pr, MALLORY, "/wavegit retry IT-1")
    for _ in range(2):
        result = wavegit_in_process(wave.remote.clone, "review", "--pr", str(wave.pr), "--comment-id",
                                    str(comment.id), env=github_env(wave.gh))
        assert result.returncode == 0
    assert len(wave.replies()) == 1


@pytest.mark.parametrize(("body", "says"), [
    ("/wavegit drop NOPE", "no item `NOPE`"),
    ("/wavegit drop LATER", "not an item of wave"),
    ("/wavegit retry", "could not read that command"),
    ("/wavegit merge IT-0", "could not read that command"),
])
def test_unknown_foreign_or_malformed_commands_get_a_reply_and_exit_2(wave: Published, body: str,
                                                                       says: str) -> None:
    tip = wave.tip()
    code, output = wave.answer(ALICE, body)
    assert code == 2 and says in output
    (reply,) = wave.replies()
    assert says in reply
    assert wave.tip() == tip and origin_item(wave.remote, "IT-0").status == "review"


def test_a_comment_without_a_command_is_ignored(wave: Published) -> None:
    writes = sum(1 for r in wave.gh.fake.requests if r.method != "GET")
    code, output = wave.answer(ALICE, "LGTM, thanks /wavegit team")
    assert code == 0 and "nothing to do" in output
    assert wave.replies() == [] and sum(1 for r in wave.gh.fake.requests if r.method != "GET") == writes


def test_event_mode_reads_the_issue_comment_event(wave: Published, tmp_path: Path) -> None:
    comment = wave.gh.fake.add_comment(wave.pr, ALICE, "/wavegit drop IT-1")
    event = tmp_path / "event.json"
    payload = {"action": "created", "issue": {"number": wave.pr, "pull_request": {}},
               "comment": {"id": comment.id, "body": comment.body, "user": {"login": ALICE}}}
    event.write_text(json.dumps(payload))
    env = {**github_env(wave.gh), "GITHUB_EVENT_PATH": str(event)}
    result = wavegit(wave.remote.clone, "review", "--event", env=env)
    assert result.returncode == 0, result.stderr
    assert branch_items(wave) == ["IT-0"]
    event.write_text(json.dumps({"action": "created", "issue": {"number": 99}, "comment": {"id": 1}}))
    other = wavegit(wave.remote.clone, "review", "--event", env=env)
    assert other.returncode == 0 and "nothing to do" in other.stdout


def test_review_without_github_settings_is_bad_input(tmp_path: Path) -> None:
    result = wavegit(tmp_path, "review", "--pr", "1", "--comment-id", "2")
    assert result.returncode == 2 and "GITHUB_TOKEN" in result.stderr and "Traceback" not in result.stderr


def test_parse_command_takes_the_first_wavegit_line() -> None:
    assert parse_command("please\n/wavegit retry A-1\n/wavegit drop B") == Command("retry", "A-1")
    assert parse_command("no command here; /wavegit retry X is mid-line") is None
    with pytest.raises(Refused):
        parse_command("/wavegit drop a/b")


def tracker_spend(remote: RemoteRepo) -> str:
    """The Wavegit-Cost trailer of the tracker branch's newest commit (what the day budget sums)."""
    return git(remote.origin, "log", "-1", "--format=%(trailers:key=Wavegit-Cost,valueonly)", "main")


def test_a_verified_retry_records_its_spend_in_a_cost_trailer(wave: Published) -> None:
    # A blank line: the prompt is a quoted YAML scalar, where one line break folds into a space.
    edit_prompt(wave.remote, "write src/f0.txt ok", "cost 1.2\n\nwrite src/f0.txt ok again")
    code, output = wave.review(ALICE, "/wavegit retry IT-0")
    assert code == 0, output
    assert tracker_spend(wave.remote) == "1.2"
    assert origin_item(wave.remote, "IT-0").cost == pytest.approx(1.2)


def test_a_retry_that_is_not_verified_still_records_its_spend_in_a_cost_trailer(wave: Published) -> None:
    edit_prompt(wave.remote, "write src/f0.txt ok", "cost 0.7\n\nwrite src/f0.txt nope")
    tip = wave.tip()
    code, output = wave.review(ALICE, "/wavegit retry IT-0")
    assert code == 1, output
    # Both attempts of the retry (attempts: 2) spent, though neither was verified.
    assert tracker_spend(wave.remote) == "1.4" and wave.tip() == tip
    recorded = origin_item(wave.remote, "IT-0")
    assert (recorded.status, recorded.cost) == ("review", pytest.approx(1.4))


def push_to_wave_branch(wave: Published, *, merge_base: bool) -> str:
    """A person's commit on the wave branch, pushed: an "Update branch" merge of a newer main, or a fix."""
    person = wave.remote.new_clone("person")
    (person / "NEWS").write_text("news\n")
    git(person, "add", "NEWS")
    git(person, "commit", "-q", "-m", "news on main")
    git(person, "push", "-q", "origin", "main")
    git(person, "checkout", "-q", "-b", "topic", f"origin/{wave.branch}")
    if merge_base:
        git(person, "merge", "-q", "--no-ff", "-m", "Merge branch 'main' into wave", "main")
    else:
        (person / "src/f0.txt").write_text("fixed by hand\n")
        git(person, "commit", "-q", "-am", "fix f0 by hand")
    git(person, "push", "-q", "origin", f"HEAD:{wave.branch}")
    return git(person, "rev-parse", "HEAD")


@pytest.mark.parametrize(("merge_base", "says"), [(True, "Merge branch 'main' into wave"),
                                                  (False, "fix f0 by hand")])
@pytest.mark.parametrize("action", ["retry", "drop"])
def test_retry_and_drop_refuse_a_wave_branch_with_commits_wavegit_did_not_make(
        wave: Published, merge_base: bool, says: str, action: str) -> None:
    reported = wave.tip()
    pushed = push_to_wave_branch(wave, merge_base=merge_base)
    code, output = wave.answer(ALICE, f"/wavegit {action} IT-0")
    assert code == 2, output
    (reply,) = wave.replies()
    assert "1 commit(s) wavegit did not make" in reply and says in reply
    assert f"{pushed[:12]} by <code>" in reply
    assert f"back to the reported head {reported[:12]}" in reply and "would drop them" in reply
    assert wave.tip() == pushed
    assert origin_item(wave.remote, "IT-0").status == "review"


@pytest.mark.parametrize("action", ["retry", "drop"])
def test_attack_a_human_commit_forging_wavegits_author_and_trailers_is_still_refused(
        wave: Published, action: str) -> None:
    # A commit after the reported head that looks like wavegit's own: its author, an item's subject and
    # trailers. What tells is where it is (after the head the report describes), not what it says.
    reported = wave.tip()
    person = wave.remote.new_clone("forger")
    git(person, "checkout", "-q", "-b", "topic", f"origin/{wave.branch}")
    (person / "src/f0.txt").write_text("forged\n")
    author = git(person, "log", "-1", "--format=%an <%ae>", reported)
    git(person, "commit", "-q", "-am", f"IT-0: ok\n\nWavegit-Item: IT-0\nWavegit-Wave: {wave.report.wave_id}",
        f"--author={author}")
    git(person, "push", "-q", "origin", f"HEAD:{wave.branch}")
    forged = git(person, "rev-parse", "HEAD")
    code, output = wave.answer(ALICE, f"/wavegit {action} IT-0")
    assert code == 2, output
    (reply,) = wave.replies()
    assert "1 commit(s) wavegit did not make" in reply and f"{forged[:12]} by <code>" in reply
    assert wave.tip() == forged and origin_item(wave.remote, "IT-0").status == "review"


def test_a_writers_command_superseded_while_it_waited_gets_a_reply_saying_it_was_not_run(
        wave: Published) -> None:
    """Issue 20, point 7: the workflow's concurrency group cancels a waiting review run for a newer one
    without a word; the newer run answers the command it replaced (a reader's command stays unanswered:
    the check job ignored it)."""
    assert wave.answer(ALICE, "/wavegit drop IT-0")[0] == 0  # answered by its own run
    wave.gh.fake.add_comment(wave.pr, ALICE, "/wavegit retry IT-1")  # its waiting run was cancelled
    wave.gh.fake.add_comment(wave.pr, MALLORY, "/wavegit drop IT-1")  # ignored by the check job
    code, _ = wave.answer(ALICE, "/wavegit retry NOPE")
    assert code == 2
    replies = wave.replies()
    assert len(replies) == 3, replies
    superseded = [r for r in replies if "was not run" in r]
    assert len(superseded) == 1 and superseded[0].startswith("<!-- wavegit:reply ")
    assert f"@{ALICE}: `/wavegit retry IT-1` was not run: the newer command of @{ALICE}" in superseded[0]
    assert not any(f"@{MALLORY}" in r for r in replies)
    assert wave.answer(ALICE, "/wavegit retry NOPE")[0] == 2 and len(wave.replies()) == 4  # said once
