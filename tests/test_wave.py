"""The wave lifecycle end to end: real repos with a bare origin, real worktrees, real fake workers."""

from __future__ import annotations

import copy
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.repos import REPO_ROOT, git, wavegit
from tests.helpers.wave import (
    branches,
    check,
    item,
    make_wave_repo,
    origin_item,
    origin_tracker,
    run,
    worktrees,
    write_and_push,
)
from wavegit.core.errors import BudgetExceededError, HaltedError
from wavegit.model.report import WaveReport


def trailers(repo: Path, rev: str, key: str) -> list[str]:
    out = git(repo, "log", f"--format=%(trailers:key={key},valueonly)", rev)
    return [line for line in out.splitlines() if line]


def test_verified_items_are_combined_in_tracker_order_on_a_pushed_branch_with_trailers(
        tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [
        item("LOW", ["write src/b.txt ok"], ["src/b.txt"], priority="P3"),
        item("HIGH", ["write src/a/x.txt ok", "delete src/a/seed.txt"], ["src/a/"], check("src/a/x.txt"),
             priority="P0"),
    ])
    outcome = run(remote.clone)
    rep = outcome.report
    assert (outcome.exit_code, rep.success, rep.tracker_updated) == (0, True, True)
    assert [i.id for i in rep.items] == ["LOW", "HIGH"]
    assert rep.items[1].files_changed == ["src/a/seed.txt", "src/a/x.txt"]
    branch = f"wavegit/{rep.wave_id}"
    assert rep.branch == branch
    # Pushed, with one commit per item in tracker order on top of the base, each carrying its trailers.
    assert git(remote.origin, "rev-parse", branch) == rep.head_sha
    assert trailers(remote.origin, f"{rep.base_sha}..{branch}", "Wavegit-Item") == ["HIGH", "LOW"]
    assert set(trailers(remote.origin, f"{rep.base_sha}..{branch}", "Wavegit-Wave")) == {rep.wave_id}
    shas = trailers(remote.origin, f"{rep.base_sha}..{branch}", "Wavegit-Prompt-Sha256")
    assert sorted(shas) == sorted(r.attempt_records[0].prompt_sha256 for r in rep.items)
    files = git(remote.origin, "ls-tree", "-r", "--name-only", branch).splitlines()
    assert "src/b.txt" in files and "src/a/x.txt" in files and "src/a/seed.txt" not in files
    # Nothing on the wave branch edits the tracker.
    assert ".wavegit/tracker.yaml" not in git(remote.origin, "diff", "--name-only", rep.base_sha, branch)
    for item_id in ("LOW", "HIGH"):
        recorded = origin_item(remote, item_id)
        assert (recorded.status, recorded.wave, recorded.attempts) == ("review", rep.wave_id, 1)
    # Worktrees removed and item branches deleted; the report was written.
    assert worktrees(remote.clone) == [str(remote.clone)]
    assert branches(remote.clone, "wavegit/items/") == []
    saved = remote.clone / ".git" / "wavegit" / "reports" / f"{rep.wave_id}.json"
    assert WaveReport.from_json(saved.read_text()).items[0].id == "LOW"


def test_claim_and_record_are_single_commits_and_the_record_carries_the_cost_trailer(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["cost 0.25", "write src/a.txt ok"], ["src/a.txt"])])
    before = git(remote.origin, "rev-parse", "main")
    rep = run(remote.clone).report
    subjects = git(remote.origin, "log", "--format=%s", f"{before}..main").splitlines()
    assert subjects == [f"wavegit: record wave {rep.wave_id}: 1 of 1 verified",
                        f"wavegit: claim wave {rep.wave_id}"]
    assert trailers(remote.origin, "main", "Wavegit-Cost") == ["0.25"]
    assert origin_item(remote, "A").cost == pytest.approx(0.25)
    assert rep.budget.wave_spent_usd == pytest.approx(0.25)


def test_failing_test_is_retried_with_feedback_and_then_released_to_todo(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    log = out / "env.jsonl"
    # The worker reports through a file outside its tree: a path the sandbox lets it write.
    remote = make_wave_repo(tmp_path, [item("A", [f"env {log}", "write src/a.txt bad"], ["src/a.txt"])],
                            sandbox={"rw_paths": [str(out)]})
    outcome = run(remote.clone)
    report_item = outcome.report.items[0]
    assert (outcome.exit_code, outcome.report.success) == (1, False)
    assert (report_item.verified, report_item.attempts, report_item.test_exit) == (False, 2, 1)
    said = "test exited 1: check failed: src/a.txt should contain 'ok', has 'bad\\n'"
    assert report_item.error == said
    seen = [json.loads(line) for line in log.read_text().splitlines()]
    assert "WAVEGIT_FEEDBACK_FILE" not in seen[0]
    assert "check failed: src/a.txt should contain 'ok'" in seen[1]["feedback_text"]
    assert seen[1]["feedback_text"] in seen[1]["prompt_file_text"]
    recorded = origin_item(remote, "A")
    assert (recorded.status, recorded.attempts, recorded.wave) == ("todo", 2, None)
    assert recorded.last_error == said
    # Nothing verified: no wave branch anywhere.
    assert branches(remote.origin) == [] and branches(remote.clone) == [f"wavegit/{outcome.report.wave_id}"]


def test_the_next_worker_runs_while_the_previous_attempt_is_tested(tmp_path: Path) -> None:
    # concurrency counts workers: A's test waits for a file B's worker writes, so it passes only if B's
    # worker runs in A's slot while A is tested (before, B waited for A's test and A's attempt failed).
    marker = tmp_path / "b-worker-ran"
    waits = shlex.join([sys.executable, "-c", "import pathlib, sys, time\n"
                        "deadline = time.monotonic() + 15\n"
                        f"while not pathlib.Path({str(marker)!r}).exists() and time.monotonic() < deadline:\n"
                        "    time.sleep(0.02)\n"
                        f"sys.exit(0 if pathlib.Path({str(marker)!r}).exists() else 1)\n"])
    remote = make_wave_repo(tmp_path, [
        item("A", ["write src/a.txt ok"], ["src/a.txt"], test=waits),
        item("B", ["write src/b.txt ok", f"run touch {marker}"], ["src/b.txt"]),
    ], concurrency=1, attempts=1, sandbox="none")
    rep = run(remote.clone).report
    assert rep.success
    assert [(i.id, i.verified, i.attempts) for i in rep.items] == [("A", True, 1), ("B", True, 1)]


def test_retry_succeeds_on_attempt_two_after_feedback(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [
        item("A", ["no-feedback write src/a.txt bad", "if-feedback write src/a.txt ok"], ["src/a.txt"])])
    rep = run(remote.clone).report
    assert rep.success and rep.items[0].attempts == 2
    first, second = rep.items[0].attempt_records
    assert (first.test_exit, second.test_exit) == (1, 0)
    assert first.prompt_sha256 != second.prompt_sha256
    committed = trailers(remote.origin, f"wavegit/{rep.wave_id}", "Wavegit-Prompt-Sha256")
    assert committed[0] == second.prompt_sha256
    assert git(remote.origin, "show", f"wavegit/{rep.wave_id}:src/a.txt") == "ok"
    assert origin_item(remote, "A").attempts == 2


def test_the_first_attempt_of_a_wave_is_told_the_items_last_error(tmp_path: Path) -> None:
    # Seen in a trial: `reopen ID --reason "..."` promised the next worker would be told the reason, and an
    # item failed in an earlier wave started the next one untold; the scripted worker writes "ok" only when
    # it is given feedback.
    reason = "the classifier was misspelt: write ok"
    remote = make_wave_repo(tmp_path, [
        item("A", ["no-feedback write src/a.txt bad", "if-feedback write src/a.txt ok"], ["src/a.txt"],
             last_error=reason)], attempts=1)
    rep = run(remote.clone).report
    assert rep.success, rep.items[0].error
    prompt = Path(rep.items[0].attempt_records[0].log_path).with_suffix(".prompt").read_text()
    assert prompt.endswith(f"Feedback from wavegit on the previous attempt:\nBefore this wave: {reason}\n")


def test_item_reaching_max_attempts_is_marked_failed(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt bad"], ["src/a.txt"], attempts=2)],
                            attempts=1, max_attempts=3)
    rep = run(remote.clone).report
    assert rep.items[0].status == "failed"
    recorded = origin_item(remote, "A")
    assert (recorded.status, recorded.attempts, recorded.wave) == ("failed", 3, rep.wave_id)
    # The lease ended with the claim, as it does for an item back in todo.
    assert recorded.claimed_at is None


def test_a_wave_runs_only_the_attempts_max_attempts_leaves(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt bad"], ["src/a.txt"], attempts=3)],
                            attempts=2, max_attempts=4)
    rep = run(remote.clone).report
    assert [len(i.attempt_records) for i in rep.items] == [1]
    recorded = origin_item(remote, "A")
    assert (recorded.status, recorded.attempts) == ("failed", 4)


def test_an_item_set_back_to_todo_with_no_attempt_left_never_runs_again(tmp_path: Path) -> None:
    # Regression: a failed item hand-set to todo at 4 of max_attempts 4 ran two more attempts (6 of 4).
    remote = make_wave_repo(tmp_path, [
        item("A", ["write src/a.txt ok"], ["src/a.txt"], attempts=4, last_error="old"),
        item("NEXT", ["write src/next.txt ok"], ["src/next.txt"], depends_on=["A"]),
    ], attempts=2, max_attempts=4)
    outcome = run(remote.clone)
    assert (outcome.exit_code, outcome.report.items, outcome.report.tracker_updated) == (0, [], True)
    assert any("A: no attempt left (max_attempts 4)" in note for note in outcome.report.notes)
    recorded = origin_item(remote, "A")
    assert (recorded.status, recorded.attempts, recorded.wave) == ("failed", 4, None)
    assert recorded.last_error is not None and "4 of max_attempts 4" in recorded.last_error
    assert branches(remote.origin) == [] and branches(remote.clone) == []
    # Its dependent now says why it waits; a second wave still runs nothing.
    assert {s.id: s.reason for s in outcome.report.skipped} == {"NEXT": "depends on A (failed)"}
    again = run(remote.clone)
    assert (again.report.items, origin_item(remote, "A").attempts) == ([], 4)


@pytest.mark.parametrize(("actions", "config", "expected_error", "killed"), [
    (["busy 30", "run touch {finished}"], {"timeout_s": 0.6}, "worker timed out after 0.6 s (timeout_s)",
     "wall"),
    (["sleep 30", "run touch {finished}"], {"idle_timeout_s": 0.4},
     "worker killed: no output for 0.4 s (idle_timeout_s)",
     "idle"),
    (["write src/a.txt ok", "crash"], {}, "worker killed by SIGKILL", None),
    (["write src/a.txt ok", "exit 3"], {}, "worker exited 3", None),
    # What the worker said last (a traceback's exception), its control characters escaped.
    (["say Traceback (most recent call last):", "say ValueError: no column \x1b[2Jnamed x", "say  ",
      "exit 2"], {}, "worker exited 2: ValueError: no column \\x1b[2Jnamed x", None),
    (["say thinking hard"], {}, "the worker changed nothing", None),
], ids=["hang", "silent", "crash", "exit-nonzero", "exit-saying-why", "no-change"])
def test_worker_that_does_not_finish_its_work_is_not_verified(
        tmp_path: Path, actions: list[str], config: dict[str, float], expected_error: str,
        killed: str | None) -> None:
    finished = tmp_path / "worker-finished"
    steps = [action.format(finished=finished) for action in actions]
    remote = make_wave_repo(tmp_path, [item("A", steps, ["src/a.txt"])], attempts=1, **config)
    outcome = run(remote.clone)
    # The wave ended before a hanging worker's own end: the timeout cut it short, nothing waited it out.
    assert not finished.exists()
    result = outcome.report.items[0]
    assert (outcome.exit_code, result.verified, result.error) == (1, False, expected_error)
    assert result.attempt_records[0].killed == killed
    recorded = origin_item(remote, "A")
    assert (recorded.status, recorded.attempts, recorded.last_error) == ("todo", 1, expected_error)
    assert worktrees(remote.clone) == [str(remote.clone)]


@pytest.mark.parametrize(("actions", "violations"), [
    (["write src/a.txt ok", "write README.md changed"], ["README.md"]),
    (["write src/a.txt ok", "rename src/keep.txt src/a.txt.bak"], ["src/a.txt.bak", "src/keep.txt"]),
    (["write src/a.txt ok", "symlink src/link ../src/a.txt"], ["src/link"]),
    (["write src/a.txt ok", "chmod-x src/keep.txt"], ["src/keep.txt"]),
    (["write src/a.txt ok", "write new/dir/untracked.txt x"], ["new/dir/untracked.txt"]),
], ids=["edit", "rename-both-sides", "symlink", "mode", "untracked"])
def test_change_outside_ownership_is_a_violation_and_nothing_is_kept(
        tmp_path: Path, actions: list[str], violations: list[str]) -> None:
    remote = make_wave_repo(tmp_path, [item("A", actions, ["src/a.txt"])], attempts=1)
    outcome = run(remote.clone)
    result = outcome.report.items[0]
    assert (outcome.report.success, result.verified, result.test_exit) == (False, False, None)
    assert result.ownership_violations == violations
    assert result.error is not None and result.error.startswith("ownership violation")
    assert outcome.report.head_sha is None and branches(remote.origin) == []
    assert git(remote.origin, "show", "main:README.md") == "hello"


def test_wave_budget_stops_new_attempts_and_says_so(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [
        item(name, ["cost 0.6", f"write src/{name}.txt ok"], [f"src/{name}.txt"]) for name in ("a", "b", "c")
    ], concurrency=1, budget={"wave_usd": 1.0})
    outcome = run(remote.clone)
    rep = outcome.report
    # The wave claimed: it exits by its results (1), never 3, which means nothing was claimed.
    assert (outcome.exit_code, rep.success, rep.budget.exceeded) == (1, False, True)
    assert rep.budget.wave_spent_usd == pytest.approx(1.2)
    assert [i.verified for i in rep.items] == [True, True, False]
    assert rep.items[2].attempts == 0
    assert rep.items[2].error == "not started: wave budget reached ($1.2 spent of $1 allowed)"
    [logged] = json.loads(wavegit(remote.clone, "status", rep.wave_id, "--json").stdout)
    # The event's state says "not started"; its detail says why, not "not started" again.
    assert logged["items"]["c"]["detail"] == "wave budget reached ($1.2 spent of $1 allowed)"
    never_started = origin_item(remote, "c")
    assert (never_started.status, never_started.attempts, never_started.wave) == ("todo", 0, None)
    assert trailers(remote.origin, "main", "Wavegit-Cost")[0] == "1.2"


@pytest.mark.parametrize(("budget", "reason"), [
    ({"day_usd": 1.0}, "the day's budget reached ($1.2 spent of $1 left today)"),
    ({"day_usd": 1.0, "wave_usd": 5.0}, "the day's budget reached ($1.2 spent of $1 left today)"),
    ({"day_usd": 5.0, "wave_usd": 1.0}, "wave budget reached ($1.2 spent of $1 allowed)"),
])
def test_an_item_left_not_started_names_the_ceiling_that_stopped_it(tmp_path: Path, budget: dict[str, float],
                                                                     reason: str) -> None:
    # With only a day's ceiling it read "wave budget reached ($1.2 spent of $1 allowed)": no wave ceiling.
    remote = make_wave_repo(tmp_path, [
        item(name, ["cost 0.6", f"write src/{name}.txt ok"], [f"src/{name}.txt"]) for name in ("a", "b", "c")
    ], concurrency=1, budget=budget)
    rep = run(remote.clone).report
    assert rep.items[2].error == f"not started: {reason}"


def test_over_the_day_budget_nothing_is_claimed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])],
                            budget={"day_usd": 2.0})
    # An earlier wave's record commit, today (UTC), spent 2.5.
    monkeypatch.setenv("GIT_COMMITTER_DATE", time.strftime("%Y-%m-%dT%H:%M:%S+0000", time.gmtime()))
    git(remote.clone, "commit", "-q", "--allow-empty", "-m", "wavegit: record\n\nWavegit-Cost: 2.5")
    git(remote.clone, "push", "-q", "origin", "main")
    before = git(remote.origin, "rev-parse", "main")
    with pytest.raises(BudgetExceededError, match=r"spent \$2.5 of \$2"):
        run(remote.clone)
    assert git(remote.origin, "rev-parse", "main") == before


def test_halted_before_the_claim_nothing_is_claimed(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])])
    write_and_push(remote.clone, {".wavegit/HALT": "{not json nor: [yaml"}, "halt by hand")
    before = git(remote.origin, "rev-parse", "main")
    with pytest.raises(HaltedError, match="corrupt"):
        run(remote.clone)
    assert git(remote.origin, "rev-parse", "main") == before


def test_halt_during_a_wave_stops_new_attempts_keeps_their_last_error_and_the_wave_exits_1_not_3(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))
    other = tmp_path / "other"
    halt_cmd = f"run {sys.executable} -m wavegit -C {other} halt --reason maintenance"
    remote = make_wave_repo(tmp_path, [
        # The sleep outlasts engine.wave.HALT_FRESH_S, so B's launch must read HALT afresh.
        item("A", [halt_cmd, "sleep 0.6", "write src/a.txt ok"], ["src/a.txt"]),
        item("B", ["write src/b.txt ok"], ["src/b.txt"], last_error="test exited 1: AssertionError"),
        # The worker stands in for a person halting from another clone: unsandboxed, with git's settings.
    ], concurrency=1, sandbox="none", worker_env=["PYTHONPATH", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM",
                                                  "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME",
                                                  "GIT_COMMITTER_EMAIL"])
    remote.new_clone("other")
    outcome = run(remote.clone)
    rep = outcome.report
    assert (outcome.exit_code, rep.halted) == (1, True)
    assert [(i.id, i.verified, i.attempts) for i in rep.items] == [("A", True, 1), ("B", False, 0)]
    assert any("maintenance" in note for note in rep.notes)
    assert origin_item(remote, "A").status == "review" and origin_item(remote, "B").status == "todo"
    # The halt is no news about B: the next worker is still told why its last attempt failed.
    assert (rep.items[1].error or "").startswith("not started: halted by ")
    assert origin_item(remote, "B").last_error == "test exited 1: AssertionError"


def test_launch_failure_stops_the_batch_and_records_every_item(tmp_path: Path) -> None:
    # An executable the preflight finds, whose interpreter is missing: it fails only when launched.
    worker = tmp_path / "no-such-worker"
    worker.write_text("#!/nonexistent/interpreter\n")
    worker.chmod(0o755)
    remote = make_wave_repo(tmp_path, [
        item(name, [f"write src/{name}.txt ok"], [f"src/{name}.txt"]) for name in ("a", "b", "c")
    ], concurrency=1, worker=str(worker), sandbox="none")
    outcome = run(remote.clone)
    rep = outcome.report
    assert (outcome.exit_code, rep.success) == (1, False)
    assert "cannot launch" in (rep.items[0].error or "")
    assert all("launch failure" in (i.error or "") or "cannot launch" in (i.error or "") for i in rep.items)
    assert sum(len(i.attempt_records) for i in rep.items) == 1
    for name in ("a", "b", "c"):
        recorded = origin_item(remote, name)
        assert (recorded.status, recorded.attempts) == ("todo", 0)
        assert recorded.last_error is not None and "no-such-worker" in recorded.last_error


def test_a_test_that_cannot_launch_is_not_retried_and_counts_no_attempt(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [
        item("a", ["write src/a.txt ok"], ["src/a.txt"], test=str(tmp_path / "no-such-test")),
        item("b", ["write src/b.txt ok"], ["src/b.txt"]),
    ], attempts=2, max_attempts=2)
    rep = run(remote.clone).report
    [a, b] = rep.items
    assert len(a.attempt_records) == 1 and "test cannot launch" in (a.error or "")
    assert b.verified
    recorded = origin_item(remote, "a")
    assert (recorded.status, recorded.attempts) == ("todo", 0)
    assert recorded.last_error is not None and "no-such-test" in recorded.last_error


def test_failed_wave_test_keeps_items_in_review_but_the_wave_is_not_a_success(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])],
                            wave_test=check("src/a.txt", "something else"))
    outcome = run(remote.clone)
    rep = outcome.report
    assert (outcome.exit_code, rep.success, rep.wave_test.exit_code) == (1, False, 1)
    assert rep.items[0].verified and origin_item(remote, "A").status == "review"
    assert git(remote.origin, "rev-parse", f"wavegit/{rep.wave_id}") == rep.head_sha
    # Told as it ends, in the progress view and the event log (status had only "failed, exit 1" to go on).
    [logged] = json.loads(wavegit(remote.clone, "status", rep.wave_id, "--json").stdout)
    log = remote.clone / ".git" / "wavegit" / "logs" / rep.wave_id / "_wave.test.log"
    assert f"wave test failed (exited 1); log: {log}" in logged["notes"]


def test_passing_wave_test_runs_on_the_combined_tree(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [
        item("A", ["write src/a.txt ok"], ["src/a.txt"]), item("B", ["write src/b.txt ok"], ["src/b.txt"])
    ], wave_test=f"{sys.executable} -c \"import pathlib,sys; sys.exit(not all(pathlib.Path(p).exists() "
                 f"for p in ('src/a.txt', 'src/b.txt')))\"")
    rep = run(remote.clone).report
    assert (rep.success, rep.wave_test.exit_code) == (True, 0)
    [logged] = json.loads(wavegit(remote.clone, "status", rep.wave_id, "--json").stdout)
    assert "wave test passed" in logged["notes"]
    # Its worktree and the items' ones (removed in the background meanwhile) are all gone, folder and all.
    assert worktrees(remote.clone) == [str(remote.clone)]
    assert not (remote.clone / ".git" / "wavegit" / "worktrees" / rep.wave_id).exists()
    assert branches(remote.clone, "wavegit/items/") == []


def test_nothing_selected_exits_zero_and_writes_nothing(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"], status="done")])
    before = git(remote.origin, "rev-parse", "main")
    outcome = run(remote.clone)
    assert (outcome.exit_code, outcome.report.items, outcome.report.tracker_updated) == (0, [], False)
    assert "nothing selected" in outcome.report.notes[0]
    assert git(remote.origin, "rev-parse", "main") == before


class RecordingDelivery:
    """A Delivery that opens pull request ``opened`` and posts nothing, remembering each call's report."""

    def __init__(self, opened: int | None = None, posted: int | None = None) -> None:
        self.opened, self.posted = opened, posted
        self.calls: list[tuple[str, WaveReport]] = []

    def open_pr(self, rep: WaveReport) -> int | None:
        self.calls.append(("open_pr", copy.deepcopy(rep)))
        return self.opened

    def post_report(self, rep: WaveReport) -> int | None:
        self.calls.append(("post_report", copy.deepcopy(rep)))
        return self.posted


def test_no_push_keeps_the_wave_branch_local_and_the_delivery_is_not_called(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])])
    delivery = RecordingDelivery(7, 7)
    rep = run(remote.clone, push=False, delivery=delivery).report
    assert branches(remote.origin) == [] and branches(remote.clone) == [f"wavegit/{rep.wave_id}"]
    assert delivery.calls == [] and rep.pr is None


def test_the_delivery_opens_the_pr_before_the_record_and_posts_the_final_report(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])])
    delivery = RecordingDelivery(opened=42)
    rep = run(remote.clone, delivery=delivery).report
    assert [name for name, _ in delivery.calls] == ["open_pr", "post_report"]
    opened, posted = delivery.calls[0][1], delivery.calls[1][1]
    assert not opened.tracker_updated and [i.id for i in opened.items if i.verified] == ["A"]
    assert posted.tracker_updated and posted.head_sha == rep.head_sha and posted.pr == 42
    # The record already carries the pull request opened before it; post_report's None keeps it.
    assert rep.pr == 42 and origin_item(remote, "A").pr == 42


def test_second_run_from_another_clone_during_a_wave_takes_nothing_overlapping(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [
        item("SLOW", ["sleep 2", "write src/a/x.txt ok"], ["src/a/"], check("src/a/x.txt")),
        item("OVERLAP", ["write src/a/y.txt ok"], ["src/a/y.txt"]),
        item("FREE", ["write src/free.txt ok"], ["src/free.txt"]),
    ], max_items=1)
    other = remote.new_clone("other")
    env = {"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"}
    first = subprocess.Popen([sys.executable, "-m", "wavegit", "run", "--json"], cwd=remote.clone,
                             stdout=subprocess.PIPE, text=True, env={**__import__("os").environ, **env})
    try:
        deadline = time.monotonic() + 20
        while origin_tracker(remote).get("SLOW").status != "in_progress":  # type: ignore[union-attr]
            assert time.monotonic() < deadline and first.poll() is None
            time.sleep(0.05)
        second = run(other, max_items=5).report
    finally:
        stdout, _ = first.communicate(timeout=60)
    assert [i.id for i in second.items] == ["FREE"]
    assert {s.id: s.reason for s in second.skipped}["OVERLAP"] == "in flight: SLOW"
    first_report = WaveReport.from_json(stdout)
    assert [i.id for i in first_report.items] == ["SLOW"] and first_report.success
    final = origin_tracker(remote)
    assert [final.get(i).status for i in ("SLOW", "OVERLAP", "FREE")] == ["review", "todo", "review"]  # type: ignore[union-attr]


def test_item_tests_and_the_wave_test_find_the_tags_their_base_reaches_as_git_describe_does(
        tmp_path: Path) -> None:
    # A project's tests that ask git for its version (`git describe`, setuptools-scm) failed in every
    # checkout a wave made: "fatal: No names found, cannot describe anything".
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"],
                                            "git describe --tags --match v1.0")],
                            wave_test="git describe --tags --match v1.0")
    git(remote.clone, "tag", "-a", "v1.0", "-m", "release 1.0")
    rep = run(remote.clone).report
    assert rep.items[0].verified, rep.items[0].attempt_records
    assert (rep.success, rep.wave_test.exit_code) == (True, 0)
