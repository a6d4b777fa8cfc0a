"""The merge gate through real PyGithub against the fake server: trusted reports only, current head
only, every item verified, and the PR's real files (all pages) within the items' ownership; then the same
rules, in finer detail, on the in-memory GitHub client."""

from __future__ import annotations

import html
import json
import shlex
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from tests.helpers.fake_github import ALICE, MemoryGitHub
from tests.helpers.ghserver import ALICE as ALICE_LOGIN
from tests.helpers.ghserver import BOT, BOT_TOKEN, MALLORY, Running, github_env, running
from tests.helpers.reliability import (
    GATE_TRACKER,
    GATE_WAVE,
    push_work,
    start_wave_branch,
    verified_item,
    wave_report,
    wavegit_in_process,
)
from tests.helpers.repos import TESTS, RemoteRepo, git, wavegit
from tests.helpers.wave import item, make_wave_repo
from wavegit.github import gate
from wavegit.github.api import MAX_BODY_CHARS, GitHubNotFound, Settings
from wavegit.github.client import PyGithubClient
from wavegit.github.publish import Publisher
from wavegit.github.retry import RetryPolicy
from wavegit.github.store import GitHubStore
from wavegit.model import report, report_markdown
from wavegit.model.config import Config
from wavegit.model.report import ItemReport, SkippedItem, WaveReport
from wavegit.model.report_markdown import to_markdown

# A whole-flow suite (real waves, the test GitHub server): `.ci/run` runs it after the README's command.
pytestmark = pytest.mark.slow


def in_review(item_id: str, path: str) -> str:
    """A tracker entry for ``item_id`` owning ``path``, in review in the gate's wave and PR #1."""
    return (f"  - id: {item_id}\n    prompt: do it\n    owns: [{path}]\n    test: 'true'\n"
            f"    status: review\n    wave: {GATE_WAVE}\n    pr: 1\n")


TRACKER = GATE_TRACKER + in_review("B-1", "src/b.py")
CONFIG = Config()
BRANCH = f"wavegit/{GATE_WAVE}"


@dataclass
class Wave:
    gh: Running
    remote: RemoteRepo
    client: PyGithubClient
    pr: int
    head: str

    def push(self, files: dict[str, str]) -> str:
        self.head = push_work(self.remote.clone, files)
        return self.head

    def post(self, report: WaveReport, author: str = BOT) -> None:
        self.gh.fake.add_comment(self.pr, author, to_markdown(report))

    def verdict(self) -> gate.GateResult:
        return gate.run_gate(self.client, self.pr, CONFIG, GitHubStore(self.client, CONFIG))


def report_for(head: str, **changes: object) -> WaveReport:
    items = [verified_item("A-1", "src/a/x.py"), verified_item("B-1", "src/b.py")]
    return wave_report(head, items, **changes)


def unverified_report(head: str, item_id: str) -> WaveReport:
    return report_for(head, items=[ItemReport(id=item_id, status="todo", verified=False)], success=False)


@pytest.fixture
def wave(remote_repo: RemoteRepo) -> Iterator[Wave]:
    start_wave_branch(remote_repo.clone, TRACKER)
    with running(remote_repo.origin) as gh:
        client = PyGithubClient(Settings(BOT_TOKEN, gh.fake.repo, gh.url),
                                RetryPolicy(deadline_s=5, backoff_s=0.01, max_backoff_s=0.02))
        w = Wave(gh, remote_repo, client, 0, "")
        w.push({"src/a/x.py": "x\n", "src/b.py": "b\n"})
        w.pr = client.find_or_create_pr(BRANCH, "main", "a wave", "").number
        yield w


def status_of(w: Wave) -> tuple[str, str] | None:
    status = w.gh.fake.latest_status(w.head, "wavegit/gate")
    return None if status is None else (status.state, status.description)


def test_a_trusted_report_on_the_current_head_passes_and_sets_success(wave: Wave) -> None:
    wave.post(report_for(wave.head))
    result = wave.verdict()
    assert result.passed, result.reason
    assert status_of(wave) == ("success", result.reason)


def test_a_forged_report_by_another_user_is_ignored(wave: Wave) -> None:
    wave.post(report_for(wave.head), author=MALLORY)
    result = wave.verdict()
    assert not result.passed and "no wavegit report by a trusted author" in result.reason
    assert status_of(wave) == ("failure", result.reason)


def test_a_newer_forged_report_cannot_override_a_failing_trusted_one(wave: Wave) -> None:
    wave.post(unverified_report(wave.head, "A-1"))
    wave.post(report_for(wave.head), author=MALLORY)
    result = wave.verdict()
    assert not result.passed and "not verified: A-1" in result.reason


def test_of_several_trusted_reports_the_latest_edited_wins(wave: Wave) -> None:
    wave.post(report_for(wave.head))
    wave.post(unverified_report(wave.head, "B-1"))
    assert not wave.verdict().passed
    first = min(c.id for c in wave.gh.fake.issue_comments(wave.pr))
    wave.gh.fake.comments[first].updated_at = "2030-01-01T00:00:00Z"
    assert wave.verdict().passed


def test_a_report_about_an_older_head_is_stale(wave: Wave) -> None:
    old = wave.head
    wave.post(report_for(old))
    new = wave.push({"src/a/y.py": "y\n"})
    result = wave.verdict()
    assert not result.passed and f"describes {old[:12]}" in result.reason and new[:12] in result.reason
    assert status_of(wave) == ("failure", result.reason)


def test_an_ownership_violation_in_the_report_fails(wave: Wave) -> None:
    items = [ItemReport(id="A-1", status="review", verified=True, ownership_violations=["src/b.py"])]
    wave.post(report_for(wave.head, items=items))
    result = wave.verdict()
    assert not result.passed and "ownership violated by A-1" in result.reason


def test_a_failed_wave_fails_even_with_verified_items(wave: Wave) -> None:
    wave.post(report_for(wave.head, success=False))
    assert "did not succeed" in wave.verdict().reason


def test_a_changed_file_outside_ownership_on_a_later_page_fails(wave: Wave) -> None:
    owned = {f"src/a/f{i:03}.py": f"{i}\n" for i in range(120)}
    wave.push({**owned, "zz/outside.py": "sneaky\n"})
    wave.post(report_for(wave.head))
    result = wave.verdict()
    assert not result.passed
    assert "1 changed file(s) outside the wave's ownership: zz/outside.py" in result.reason
    assert wave.gh.fake.count("GET", f"/pulls/{wave.pr}/files") == 2


def test_an_item_missing_from_the_tracker_fails(wave: Wave) -> None:
    items = [ItemReport(id="GHOST-1", status="review", verified=True)]
    wave.post(report_for(wave.head, items=items))
    assert "not in the tracker on main: GHOST-1" in wave.verdict().reason


def test_a_report_whose_json_is_broken_fails_without_crashing(wave: Wave) -> None:
    body = to_markdown(report_for(wave.head)).replace('"wave_id"', '"wave_idx"')
    wave.gh.fake.add_comment(wave.pr, BOT, body)
    assert "cannot be read" in wave.verdict().reason


def test_event_files_give_the_pr_number(tmp_path: Path) -> None:
    pull = tmp_path / "pull.json"
    pull.write_text(json.dumps({"action": "synchronize", "pull_request": {"number": 7}}))
    comment = tmp_path / "comment.json"
    comment.write_text(json.dumps({"issue": {"number": 9, "pull_request": {"url": "x"}}, "comment": {}}))
    issue = tmp_path / "issue.json"
    issue.write_text(json.dumps({"issue": {"number": 9}}))
    assert gate.event_pr_number(str(pull)) == 7
    assert gate.event_pr_number(str(comment)) == 9
    with pytest.raises(Exception, match="not a pull_request event"):
        gate.event_pr_number(str(issue))


def test_cli_gate_exits_0_on_pass_and_1_on_fail_with_the_status_set(wave: Wave) -> None:
    env = github_env(wave.gh)
    wave.post(report_for(wave.head))
    passed = wavegit(wave.remote.clone, "gate", "--pr", str(wave.pr), env=env)
    assert passed.returncode == 0, passed.stderr
    assert passed.stdout.startswith(f"pass: PR #{wave.pr}")
    wave.push({"src/b.py": "changed after the report\n"})
    failed = wavegit(wave.remote.clone, "gate", "--pr", str(wave.pr), env=env)
    assert failed.returncode == 1 and "stale report" in failed.stdout
    assert status_of(wave) is not None and status_of(wave)[0] == "failure"  # type: ignore[index]


def test_cli_gate_reads_the_pr_from_the_event_file(wave: Wave, tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": wave.pr}}))
    wave.post(report_for(wave.head))
    result = wavegit(wave.remote.clone, "gate", "--event",
                     env={**github_env(wave.gh), "GITHUB_EVENT_PATH": str(event)})
    assert result.returncode == 0, result.stderr


def test_cli_gate_passes_an_ordinary_pull_request_so_a_required_check_never_blocks_it(wave: Wave) -> None:
    clone = wave.remote.clone
    (clone / "docs").mkdir(exist_ok=True)
    (clone / "docs/readme.md").write_text("hello\n")
    git(clone, "add", "docs/readme.md")
    git(clone, "commit", "-q", "-m", "docs")
    git(clone, "push", "-q", "origin", "HEAD:refs/heads/feature/docs")
    head = git(clone, "rev-parse", "HEAD")
    number = wave.client.find_or_create_pr("feature/docs", "main", "docs", "").number
    result = wavegit(wave.remote.clone, "gate", "--pr", str(number), env=github_env(wave.gh))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"pass: PR #{number}: not a wavegit pull request")
    status = wave.gh.fake.latest_status(head, "wavegit/gate")
    assert status is not None
    assert (status.state, status.description) == ("success", "not a wavegit pull request")


@pytest.mark.parametrize(("args", "env_kind", "message"), [
    (["--pr", "1"], "none", "GitHub is not configured"),
    (["--pr", "99"], "fake", "GitHub answered 404"),
    (["--event"], "fake", "GITHUB_EVENT_PATH"),
])
def test_cli_gate_bad_input_exits_2_with_one_line(wave: Wave, args: list[str], env_kind: str,
                                                  message: str) -> None:
    env = github_env(wave.gh) if env_kind == "fake" else {}
    result = wavegit(wave.remote.clone, "gate", *args, env=env)
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr
    assert wave.gh.fake.count("POST", "/statuses/") == 0


# --- the gate's rules on the in-memory GitHub (tests/helpers/fake_github.py): no HTTP, no PyGithub ---------

HEAD = "c0ffee" + "0" * 34


@pytest.fixture
def memory() -> MemoryGitHub:
    """PR #1 of the wave branch at HEAD changing one file of A-1 and one of B-1; the tracker on main."""
    gh = MemoryGitHub()
    gh.seed_branch("main", {CONFIG.tracker_path: TRACKER})
    gh.open_pr(BRANCH, HEAD, ["src/a/x.py", "src/b.py"])
    return gh


def verdict_of(gh: MemoryGitHub, config: Config = CONFIG) -> gate.GateResult:
    return gate.run_gate(gh, 1, config, GitHubStore(gh, config))


def test_memory_a_trusted_report_passes_and_sets_success_on_the_pr_head(memory: MemoryGitHub) -> None:
    memory.add_comment(1, BOT, to_markdown(report_for(HEAD)))
    result = verdict_of(memory)
    assert result.passed and result.head_sha == HEAD, result.reason
    status = memory.latest_status(HEAD)
    assert status is not None and (status.state, status.description) == ("success", result.reason)


def test_memory_evaluate_alone_sets_no_status(memory: MemoryGitHub) -> None:
    memory.add_comment(1, BOT, to_markdown(report_for(HEAD)))
    assert gate.evaluate(memory, 1, CONFIG, GitHubStore(memory, CONFIG)).passed
    assert memory.statuses == [] and "set_status" not in memory.calls


def test_memory_only_the_configured_report_authors_are_believed(memory: MemoryGitHub) -> None:
    memory.add_comment(1, ALICE, to_markdown(report_for(HEAD)))
    assert "no wavegit report by a trusted author (github-actions[bot])" in verdict_of(memory).reason
    assert verdict_of(memory, Config(report_authors=(ALICE,))).passed


def test_memory_the_latest_edit_not_the_latest_post_decides(memory: MemoryGitHub) -> None:
    first = memory.add_comment(1, BOT, to_markdown(unverified_report(HEAD, "A-1")))
    memory.add_comment(1, BOT, to_markdown(unverified_report(HEAD, "B-1")))
    assert "not verified: B-1" in verdict_of(memory).reason
    memory.edit_comment(1, first.id, to_markdown(report_for(HEAD)))
    assert verdict_of(memory).passed


def test_memory_a_push_after_the_report_makes_it_stale(memory: MemoryGitHub) -> None:
    memory.add_comment(1, BOT, to_markdown(report_for(HEAD)))
    newer = "beef" + "1" * 36
    memory.push(1, newer, ["src/a/x.py"])
    result = verdict_of(memory)
    assert not result.passed and result.head_sha == newer
    assert f"describes {HEAD[:12]}, the PR head is {newer[:12]}" in result.reason
    status = memory.latest_status(newer)
    assert status is not None and status.state == "failure" and memory.latest_status(HEAD) is None


def test_memory_a_bad_report_fails_before_the_files_are_read(memory: MemoryGitHub) -> None:
    memory.add_comment(1, BOT, to_markdown(unverified_report(HEAD, "A-1")))
    assert not verdict_of(memory).passed
    assert "pr_files" not in memory.calls


def test_memory_files_outside_ownership_are_named_three_then_counted(memory: MemoryGitHub) -> None:
    memory.add_comment(1, BOT, to_markdown(report_for(HEAD)))
    outside = ["docs/a.md", "docs/b.md", "src/c.py", "src/bb.py", "src/a.py"]
    memory.push(1, HEAD, ["src/a/x.py", *outside])
    reason = verdict_of(memory).reason
    assert reason.endswith("5 changed file(s) outside the wave's ownership: docs/a.md, docs/b.md, src/c.py "
                           "and 2 more")


def test_memory_an_invalid_tracker_on_the_tracker_branch_fails_naming_it(memory: MemoryGitHub) -> None:
    memory.add_comment(1, BOT, to_markdown(report_for(HEAD)))
    memory.seed_branch("main", {CONFIG.tracker_path: TRACKER.replace("version: 1", "version: 9")})
    assert verdict_of(memory).reason == ("the tracker on main is invalid: .wavegit/tracker.yaml:1:10: "
                                         "unknown tracker version 9 (hint: this wavegit reads version 1)")


def test_memory_without_a_tracker_every_item_is_missing(memory: MemoryGitHub) -> None:
    memory.add_comment(1, BOT, to_markdown(report_for(HEAD)))
    memory.seed_branch("main", {"README.md": "no tracker here\n"})
    assert verdict_of(memory).reason == "not in the tracker on main: A-1, B-1"


def test_memory_an_unknown_pr_is_bad_input(memory: MemoryGitHub) -> None:
    with pytest.raises(GitHubNotFound):
        gate.run_gate(memory, 99, CONFIG, GitHubStore(memory, CONFIG))
    assert memory.statuses == []


# --- forged reports (issue 11, point 1): only the wave's own report comment, bound to the PR ----------------

FORGE = shlex.join([sys.executable, str(TESTS / "hostile_workers" / "forge_report.py")])
INVENTED = "w-20990101-000000-dead"


def gate_an_innocent_pr_at(remote: RemoteRepo, gh: Running, head: str, env: dict[str, str]) -> None:
    """Open an ordinary PR (branch ``innocent``) at ``head`` and gate it: it must get no success."""
    git(remote.clone, "push", "-q", "origin", f"{head}:refs/heads/innocent")
    client = PyGithubClient(Settings(BOT_TOKEN, gh.fake.repo, gh.url))
    number = client.find_or_create_pr("innocent", "main", "docs", "").number
    gated = wavegit_in_process(remote.clone, "gate", "--pr", str(number), env=env)
    assert gated.returncode == 1, gated.stdout


def forged_path(claim: WaveReport) -> str:
    """A file path that, quoted as it is, reads as a report comment claiming ``claim``: both markers and the
    report JSON, whose padding strings hold the '/' that keep every path component a legal file name."""
    wave_test = replace(claim.wave_test, command="/", log_path="/") if claim.wave_test is not None else None
    padded = replace(claim, notes=["/"], config_source="/", sandbox="/", tracker_source="/", phase="/",
                     wave_test=wave_test, omitted=replace(claim.omitted, full_report="/"),
                     items=[replace(one, log_tail="/", title="/") for one in claim.items])
    path = (f"{report_markdown.MARKER} {report_markdown.JSON_OPEN} {padded.to_json(indent=None)} "
            f"{report_markdown.JSON_CLOSE}")
    assert "--" not in padded.to_json(indent=None)
    assert max(len(part.encode()) for part in path.split("/")) <= 255 and "//" not in path
    return path


def test_a_file_named_like_the_report_markers_quoted_by_the_retry_reply_cannot_pass_the_gate(
        tmp_path: Path) -> None:
    """The attack: a wave whose wave test fails; on `/wavegit retry`, the worker names a file like a report
    comment claiming success on the unchanged head; the reply quotes the violation. The gate still fails."""
    name_file = tmp_path / "forged-name"
    items = [item("IT-0", ["go"], ["src/f0.txt"]), item("IT-1", ["go"], ["src/f1.txt"])]
    remote = make_wave_repo(tmp_path, items,
                            worker=f"{FORGE} {name_file}", wave_test="false", sandbox="none")
    with running(remote.origin) as gh:
        env = github_env(gh)
        ran = wavegit(remote.clone, "run", "--json", env=env)
        rep = WaveReport.from_json(ran.stdout)
        assert ran.returncode == 1 and not rep.success and rep.pr is not None, ran.stderr
        assert status_state(gh, rep) == "failure"
        items = [replace(one, log_tail="", attempt_records=[], error=None) for one in rep.items]
        # The wave test's log path and tail would make the name longer than a path may be.
        passed = replace(rep.wave_test, exit_code=0, log_path="", log_tail="")
        claim = replace(rep, success=True, wave_test=passed, notes=[], items=items)
        name_file.write_text(forged_path(claim))
        comment = gh.fake.add_comment(rep.pr, ALICE_LOGIN, "/wavegit retry IT-0")
        retried = wavegit(remote.clone, "review", "--pr", str(rep.pr), "--comment-id", str(comment.id),
                          env=env)
        assert retried.returncode == 1, retried.stdout + retried.stderr
        replies = [c.body for c in gh.fake.issue_comments(rep.pr) if c.body.startswith("<!-- wavegit:reply")]
        assert len(replies) == 1 and "forged-name" not in replies[0]
        # The reply does quote the file name (the attack was delivered), but escaped: no marker in it.
        assert forged_path(claim).split("/")[0] in html.unescape(replies[0])
        # Quoted raw (as it was), the violation would read as a report claiming success on this very head.
        raw = report_markdown.parse_markdown(f"changed {forged_path(claim)}, not owned by IT-0")
        assert raw.success and raw.head_sha == rep.head_sha
        assert report_markdown.MARKER not in replies[0] and report_markdown.JSON_OPEN not in replies[0]
        assert rep.head_sha == git(remote.origin, "rev-parse", f"wavegit/{rep.wave_id}")
        judged = wavegit_in_process(remote.clone, "gate", "--pr", str(rep.pr), env=env)
        assert judged.returncode == 1 and "did not succeed" in judged.stdout, judged.stdout
        assert status_state(gh, rep) == "failure"


def status_state(gh: Running, rep: WaveReport) -> str | None:
    status = gh.fake.latest_status(rep.head_sha or "", "wavegit/gate")
    return None if status is None else status.state


def test_a_pr_from_feature_anything_with_a_bot_report_naming_an_invented_wave_fails(wave: Wave) -> None:
    clone = wave.remote.clone
    git(clone, "checkout", "-q", "-b", "feature/anything")
    (clone / "src" / "a" / "x.py").write_text("anything\n")
    git(clone, "commit", "-q", "-am", "anything")
    git(clone, "push", "-q", "origin", "feature/anything")
    head = git(clone, "rev-parse", "HEAD")
    number = wave.client.find_or_create_pr("feature/anything", "main", "anything", "").number
    invented = report_for(head, wave_id=INVENTED, branch=f"wavegit/{INVENTED}", pr=number)
    wave.gh.fake.add_comment(number, BOT, to_markdown(invented))
    result = gate.run_gate(wave.client, number, CONFIG, GitHubStore(wave.client, CONFIG))
    assert not result.passed
    assert result.reason == ("not a wave's pull request: its head branch 'feature/anything' is not "
                             "wavegit/<wave-id>")
    status = wave.gh.fake.latest_status(head, "wavegit/gate")
    assert status is not None and (status.state, status.description) == ("failure", result.reason)


def test_a_wave_branch_nobody_claimed_with_a_bot_report_naming_its_invented_wave_fails(wave: Wave) -> None:
    git(wave.remote.clone, "push", "-q", "origin", f"HEAD:refs/heads/wavegit/{INVENTED}")
    number = wave.client.find_or_create_pr(f"wavegit/{INVENTED}", "main", "invented", "").number
    invented = report_for(wave.head, wave_id=INVENTED, branch=f"wavegit/{INVENTED}", pr=number)
    wave.gh.fake.add_comment(number, BOT, to_markdown(invented))
    result = gate.run_gate(wave.client, number, CONFIG, GitHubStore(wave.client, CONFIG))
    assert not result.passed
    assert result.reason.startswith(f"not in review for wave {INVENTED} in the tracker on main: A-1 (review, "
                                    f"wave {GATE_WAVE})")


def test_a_fork_pr_from_a_branch_named_like_the_wave_fails(wave: Wave) -> None:
    number = wave.gh.fake.open_fork_pr("mallory/widgets", BRANCH, "main", MALLORY)
    wave.gh.fake.add_comment(number, BOT, to_markdown(report_for(wave.head, pr=number)))
    result = gate.run_gate(wave.client, number, CONFIG, GitHubStore(wave.client, CONFIG))
    assert not result.passed
    assert result.reason == (f"the head branch {BRANCH} is in mallory/widgets, not in acme/widgets: a fork's "
                             "branch is never a wave")


def test_memory_a_reply_quoting_the_marker_is_never_the_report(memory: MemoryGitHub) -> None:
    memory.add_comment(1, BOT, to_markdown(unverified_report(HEAD, "A-1")))
    quoted = to_markdown(report_for(HEAD))
    reply = memory.add_comment(1, BOT, f"<!-- wavegit:reply 7 -->\n@alice: not verified ({quoted})\n")
    assert gate.trusted_report(memory.list_comments(1), CONFIG.report_authors) != reply
    assert verdict_of(memory).reason == "not verified: A-1"
    # Nor does publishing the report edit that reply: the report comment starts with the marker.
    memory.comments[1] = [reply]
    Publisher(memory, CONFIG, GitHubStore(memory, CONFIG)).post_report(report_for(HEAD))
    assert memory.comments[1][0] == reply and len(memory.comments[1]) == 2
    assert verdict_of(memory).passed


@pytest.mark.parametrize(("changes", "reason"), [
    ({"wave_id": INVENTED}, f"the report is about wave '{INVENTED}' (branch '{BRANCH}'), the PR's branch is "
                            f"{BRANCH}"),
    ({"branch": "wavegit/other"},
     f"the report is about wave '{GATE_WAVE}' (branch 'wavegit/other'), the PR's branch is {BRANCH}"),
    ({"pr": 2}, "the report is about PR #2, not #1"),
    ({"pr": None}, "the report is about no PR, not #1"),
])
def test_memory_a_report_about_another_wave_or_pr_fails_naming_the_binding(
        memory: MemoryGitHub, changes: dict[str, object], reason: str) -> None:
    memory.add_comment(1, BOT, to_markdown(report_for(HEAD, **changes)))
    assert verdict_of(memory).reason == reason


B1 = in_review("B-1", "src/b.py")
EXTRA = in_review("C-1", "src/c.py")


@pytest.mark.parametrize(("tracker_text", "reason"), [
    (TRACKER.replace(B1, B1.replace("status: review", "status: todo")),
     f"not in review for wave {GATE_WAVE} in the tracker on main: B-1 (todo, wave {GATE_WAVE})"),
    (TRACKER.replace(B1, B1.replace(f"wave: {GATE_WAVE}", f"wave: {INVENTED}")),
     f"not in review for wave {GATE_WAVE} in the tracker on main: B-1 (review, wave {INVENTED})"),
    (TRACKER.replace(B1, B1.replace("pr: 1", "pr: 7")),
     "not recorded for PR #1 in the tracker on main: B-1 (#7)"),
    (TRACKER.replace(B1, B1.replace("    pr: 1\n", "")),
     "not recorded for PR #1 in the tracker on main: B-1 (no PR)"),
    (TRACKER + EXTRA,
     f"in review for wave {GATE_WAVE} in the tracker on main but not in the report: C-1"),
])
def test_memory_a_tracker_disagreeing_with_the_report_fails_naming_the_binding(
        memory: MemoryGitHub, tracker_text: str, reason: str) -> None:
    assert tracker_text != TRACKER
    memory.seed_branch("main", {CONFIG.tracker_path: tracker_text})
    memory.add_comment(1, BOT, to_markdown(report_for(HEAD)))
    assert verdict_of(memory).reason == reason


def test_memory_a_wave_of_2500_files_and_2400_skipped_items_fits_one_comment_and_passes(
        memory: MemoryGitHub) -> None:
    files = [f"src/a/f{i:04}.py" for i in range(2500)]
    memory.push(1, HEAD, files)
    big = report_for(HEAD, items=[replace(verified_item("A-1", files[0]), files_changed=files),
                                  verified_item("B-1", "src/b.py")],
                     skipped=[SkippedItem(id=f"S-{i}", reason="overlaps an item in flight")
                              for i in range(2400)])
    body = to_markdown(big)
    assert len(body) <= MAX_BODY_CHARS
    memory.add_comment(1, BOT, body)
    assert verdict_of(memory).passed


def test_memory_a_report_comment_that_leaves_out_items_never_passes(memory: MemoryGitHub) -> None:
    many = report_for(HEAD, items=[verified_item("A-1", "src/a/x.py"), verified_item("B-1", "src/b.py")]
                      + [verified_item(f"Z-{i}", "src/a/x.py") for i in range(400)])
    body = to_markdown(many, max_chars=20_000)
    assert report_markdown.parse_markdown(body).omitted.items > 0
    memory.add_comment(1, BOT, body)
    reason = verdict_of(memory).reason
    assert reason.startswith("the report comment leaves out") and "cannot check them" in reason

# --- attacks on the "not a wavegit pull request" pass: a commit status belongs to a SHA, not to a PR ---

def failed_wave(tmp_path: Path, gh_env: dict[str, str]) -> report.WaveReport:
    """A real wave whose items verify but whose wave test fails: pushed, PR opened, gate status failure."""
    result = wavegit(tmp_path / "work", "run", "--json", env=gh_env)
    assert result.returncode == 1 and result.stdout, result.stderr
    return report.WaveReport.from_json(result.stdout)


def test_attack_a_pr_from_another_branch_at_a_failed_waves_head_cannot_turn_its_gate_green(
        tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("IT-0", ["write src/f0.txt ok"], ["src/f0.txt"])],
                            wave_test="false")
    with running(remote.origin) as gh:
        env = github_env(gh)
        rep = failed_wave(tmp_path, env)
        head = rep.head_sha or ""
        status = gh.fake.latest_status(head, "wavegit/gate")
        assert status is not None and status.state == "failure"
        # Anyone who can open a PR (a fork's, through pull_request_target) points another branch at it.
        gate_an_innocent_pr_at(remote, gh, head, env)
        status = gh.fake.latest_status(head, "wavegit/gate")
        assert status is not None and status.state == "failure", status


@pytest.mark.parametrize("via", ["a fork's branch of the wave's name", "the wave branch into another base",
                                 "another branch"])
def test_attack_another_pr_at_a_passing_waves_head_cannot_turn_its_gate_red(tmp_path: Path, via: str) -> None:
    remote = make_wave_repo(tmp_path, [item("IT-0", ["write src/f0.txt ok"], ["src/f0.txt"])])
    with running(remote.origin) as gh:
        env = github_env(gh)
        result = wavegit(remote.clone, "run", "--json", env=env)
        assert result.returncode == 0, result.stderr
        rep = report.WaveReport.from_json(result.stdout)
        head, branch = rep.head_sha or "", rep.branch or ""
        status = gh.fake.latest_status(head, "wavegit/gate")
        assert status is not None and status.state == "success"
        client = PyGithubClient(Settings(BOT_TOKEN, gh.fake.repo, gh.url))
        if via == "a fork's branch of the wave's name":
            number = gh.fake.open_fork_pr("mallory/widgets", branch, "main", MALLORY)
        elif via == "the wave branch into another base":
            git(remote.clone, "push", "-q", "origin", "origin/main:refs/heads/develop")
            number = client.find_or_create_pr(branch, "develop", "same head, another base", "").number
        else:
            git(remote.clone, "push", "-q", "origin", f"{head}:refs/heads/innocent")
            number = client.find_or_create_pr("innocent", "main", "docs", "").number
        gated = wavegit_in_process(remote.clone, "gate", "--pr", str(number), env=env)
        assert gated.returncode == 1 and "left to the wave's own pull request" in gated.stdout, gated.stdout
        status = gh.fake.latest_status(head, "wavegit/gate")
        assert status is not None and status.state == "success", status


def test_attack_a_commit_pushed_on_a_wave_branch_cannot_be_turned_green_by_another_pr_at_it(
        tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("IT-0", ["write src/f0.txt ok"], ["src/f0.txt"])])
    with running(remote.origin) as gh:
        env = github_env(gh)
        result = wavegit(remote.clone, "run", "--json", env=env)
        assert result.returncode == 0, result.stderr
        rep = report.WaveReport.from_json(result.stdout)
        # Someone who may push adds an unverified change on the wave branch: the wave PR's gate fails ...
        git(remote.clone, "fetch", "-q", "origin")
        git(remote.clone, "checkout", "-q", f"origin/{rep.branch}")
        (remote.clone / "src/f0.txt").write_text("not what was verified\n")
        git(remote.clone, "commit", "-q", "-am", "on top")
        git(remote.clone, "push", "-q", "origin", f"HEAD:refs/heads/{rep.branch}")
        head = git(remote.clone, "rev-parse", "HEAD")
        assert wavegit_in_process(remote.clone, "gate", "--pr", str(rep.pr), env=env).returncode == 1
        # ... and an ordinary PR at the same commit must not set the "not a wavegit pull request" success.
        gate_an_innocent_pr_at(remote, gh, head, env)
        status = gh.fake.latest_status(head, "wavegit/gate")
        assert status is not None and status.state == "failure", status
