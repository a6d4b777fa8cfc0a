"""A wave PR brought up to date with its base ("Update branch") and the merge queue: real waves published
through PyGithub to tests/helpers/ghserver.py, real git histories on its bare origin, then ``wavegit gate``
and ``wavegit gate-test`` as subprocesses."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.actions_log import obeyed_commands
from tests.helpers.ghserver import ALICE, github_env, merge_group_event, queue_branch, running
from tests.helpers.published import Published
from tests.helpers.published_once import published_wave
from tests.helpers.reliability import wavegit_in_process
from tests.helpers.repos import TESTS, git, wavegit
from tests.helpers.wave import item, make_wave_repo
from wavegit.model import report

# A whole-flow suite (real waves, the test GitHub server): `.ci/run` runs it after the README's command.
pytestmark = pytest.mark.slow

# The wave test fails once main holds BROKEN: a base change that breaks the merged result.
WAVE_TEST = shlex.join([sys.executable, "-c", "import os, sys; sys.exit(os.path.exists('BROKEN'))"])


@dataclass
class Wave(Published):
    person: Path
    """A clone where a person updates the branch (and main)."""

    @property
    def reported(self) -> str:
        assert self.report.head_sha is not None
        return self.report.head_sha

    def on_main(self, files: dict[str, str], message: str = "main moves on") -> str:
        git(self.person, "checkout", "-q", "main")
        git(self.person, "pull", "-q", "--ff-only", "origin", "main")
        for rel, text in files.items():
            (self.person / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.person / rel).write_text(text)
        git(self.person, "add", *files)
        git(self.person, "commit", "-q", "-m", message)
        git(self.person, "push", "-q", "origin", "main")
        return git(self.person, "rev-parse", "HEAD")

    def update_branch(self, merge_in: str = "main", extra: dict[str, str] | None = None) -> str:
        """What GitHub's "Update branch" does: merge ``merge_in`` into the wave branch (first parent the
        old head); ``extra``: files changed in the merge commit itself (an edit slipped into it)."""
        git(self.person, "fetch", "-q", "origin")
        git(self.person, "checkout", "-q", "-B", "update", f"origin/{self.branch}")
        git(self.person, "merge", "-q", "--no-ff", "--no-edit", merge_in)
        for rel, text in (extra or {}).items():
            (self.person / rel).write_text(text)
            git(self.person, "add", rel)
        if extra:
            git(self.person, "commit", "-q", "--amend", "--no-edit")
        git(self.person, "push", "-q", "origin", f"HEAD:{self.branch}")
        return git(self.person, "rev-parse", "HEAD")

    def gate(self, *args: str) -> tuple[int, str]:
        """``wavegit gate`` in this process (test_gate.py runs it as a real process)."""
        result = wavegit_in_process(self.remote.clone, "gate", "--pr", str(self.pr), *args,
                                    env=github_env(self.gh))
        assert "Traceback" not in result.stderr, result.stderr
        return result.returncode, result.stdout + result.stderr

    def gate_test(self, out: Path, head: str | None = None) -> tuple[int, str]:
        """``wavegit gate-test`` from the base checkout, on a checkout of ``head`` (default: the PR's)."""
        tree = self.remote.base / f"tree-{out.stem}"
        if not tree.exists():
            git(self.remote.base, "clone", "-q", str(self.remote.origin), str(tree))
        git(tree, "fetch", "-q", "origin")
        git(tree, "checkout", "-q", "--detach", head or f"origin/{self.branch}")
        result = wavegit(self.remote.clone, "gate-test", "--pr", str(self.pr), "--tree", str(tree),
                         "--out", str(out), env=github_env(self.gh))
        assert "Traceback" not in result.stderr, result.stderr
        return result.returncode, result.stdout + result.stderr

    def status(self, sha: str) -> tuple[str, str] | None:
        found = self.gh.fake.latest_status(sha, "wavegit/gate")
        return None if found is None else (found.state, found.description)


@pytest.fixture
def wave(tmp_path: Path) -> Iterator[Wave]:
    """A published wave of IT-0 and IT-1 with a wave test, run once per process and copied."""
    with published_wave(tmp_path, [item("IT-0", ["write src/f0.txt ok"], ["src/f0.txt"]),
                                   item("IT-1", ["write src/f1.txt ok"], ["src/f1.txt"])],
                        wave_test=WAVE_TEST, sandbox="none") as (remote, gh, run_report):
        yield Wave(remote, gh, run_report, remote.new_clone("person"))


def test_an_updated_branch_passes_once_its_merged_result_is_tested(wave: Wave, tmp_path: Path) -> None:
    wave.on_main({"NEWS": "news\n"})
    head = wave.update_branch()
    code, output = wave.gate()
    assert code == 1 and "the tests must pass on the merged result" in output, output
    assert f"merges main into the reported head {wave.reported[:12]}" in output
    verdict_file = tmp_path / "verdict.json"
    code, output = wave.gate_test(verdict_file)
    assert code == 0, output
    verdict = json.loads(verdict_file.read_text())
    assert (verdict["pr"], verdict["head_sha"]) == (wave.pr, head)
    assert (verdict["tested"], verdict["passed"]) == (True, True)
    assert [t["name"] for t in verdict["tests"]] == ["IT-0", "IT-1", "wave_test"]
    code, output = wave.gate("--verdict", str(verdict_file))
    assert code == 0, output
    state = wave.status(head)
    assert state is not None and state[0] == "success" and "main merged in and tested" in state[1]


def test_two_updates_in_a_row_keep_the_report_too(wave: Wave, tmp_path: Path) -> None:
    wave.on_main({"NEWS": "news\n"})
    wave.update_branch()
    wave.on_main({"NEWS2": "more news\n"})
    head = wave.update_branch()
    verdict_file = tmp_path / "verdict.json"
    assert wave.gate_test(verdict_file)[0] == 0
    code, output = wave.gate("--verdict", str(verdict_file))
    assert code == 0 and f"main merged in and tested at {head[:12]}" in output, output


def test_a_merged_result_that_fails_the_wave_test_fails_the_gate(wave: Wave, tmp_path: Path) -> None:
    wave.on_main({"BROKEN": "x\n"})
    head = wave.update_branch()
    verdict_file = tmp_path / "verdict.json"
    assert wave.gate_test(verdict_file)[0] == 0
    verdict = json.loads(verdict_file.read_text())
    assert (verdict["tested"], verdict["passed"]) == (True, False)
    assert "wave_test (exited 1)" in verdict["reason"]
    code, output = wave.gate("--verdict", str(verdict_file))
    assert code == 1 and "the tests failed on the merged result" in output, output
    assert wave.status(head) is not None and wave.status(head)[0] == "failure"  # type: ignore[index]


def test_a_verdict_about_an_older_head_is_not_believed(wave: Wave, tmp_path: Path) -> None:
    wave.on_main({"NEWS": "news\n"})
    wave.update_branch()
    verdict_file = tmp_path / "verdict.json"
    assert wave.gate_test(verdict_file)[0] == 0
    wave.on_main({"NEWS2": "more\n"})
    wave.update_branch()
    code, output = wave.gate("--verdict", str(verdict_file))
    assert code == 1 and "the tests must pass on the merged result" in output, output


def test_a_merge_that_edits_a_wave_file_beyond_what_main_brought_fails(wave: Wave, tmp_path: Path) -> None:
    wave.on_main({"NEWS": "news\n"})
    head = wave.update_branch(extra={"src/f0.txt": "edited in the merge\n"})
    code, output = wave.gate()
    assert code == 1 and f"the merge {head[:12]} of main changes src/f0.txt beyond what main brought" \
        in output, output
    verdict_file = tmp_path / "verdict.json"
    assert wave.gate_test(verdict_file)[0] == 0
    assert json.loads(verdict_file.read_text())["tested"] is False
    assert wave.gate("--verdict", str(verdict_file))[0] == 1


def test_a_merge_of_a_branch_that_is_not_main_is_stale(wave: Wave) -> None:
    git(wave.person, "checkout", "-q", "-b", "side", "origin/main")
    (wave.person / "SIDE").write_text("side\n")
    git(wave.person, "add", "SIDE")
    git(wave.person, "commit", "-q", "-m", "side work")
    side = git(wave.person, "rev-parse", "HEAD")
    head = wave.update_branch(merge_in="side")
    code, output = wave.gate()
    assert code == 1 and f"{head[:12]} merges {side[:12]}, not on main" in output, output


def test_a_commit_after_the_reported_head_that_is_no_merge_is_stale(wave: Wave) -> None:
    git(wave.person, "fetch", "-q", "origin")
    git(wave.person, "checkout", "-q", "-B", "fix", f"origin/{wave.branch}")
    (wave.person / "src/f0.txt").write_text("by hand\n")
    git(wave.person, "commit", "-q", "-am", "by hand")
    git(wave.person, "push", "-q", "origin", f"HEAD:{wave.branch}")
    head = git(wave.person, "rev-parse", "HEAD")
    code, output = wave.gate()
    assert code == 1 and f"describes {wave.reported[:12]}" in output and f"{head[:12]} is not a merge" \
        in output, output


def test_gate_test_on_the_reported_head_has_nothing_to_test(wave: Wave, tmp_path: Path) -> None:
    verdict_file = tmp_path / "verdict.json"
    code, output = wave.gate_test(verdict_file)
    assert code == 0 and "nothing to test: the report describes the PR's head" in output, output
    assert json.loads(verdict_file.read_text())["tested"] is False
    assert wave.gate("--verdict", str(verdict_file))[0] == 0


def test_gate_test_on_a_tree_that_is_not_the_pr_head_is_bad_input(wave: Wave, tmp_path: Path) -> None:
    wave.on_main({"NEWS": "news\n"})
    wave.update_branch()
    out = tmp_path / "verdict.json"
    code, output = wave.gate_test(out, head="origin/main")
    assert code == 2 and "check the PR's head out there" in output, output
    assert len(output.strip().splitlines()) == 1 and not out.exists()


@pytest.mark.parametrize("text", ["not json", '{"pr": 1}', '{"pr": "1", "head_sha": "x", "tested": true, '
                                                          '"passed": true, "reason": ""}'])
def test_gate_with_an_unreadable_verdict_is_bad_input(wave: Wave, tmp_path: Path, text: str) -> None:
    bad = tmp_path / "verdict.json"
    bad.write_text(text)
    statuses = len(wave.gh.fake.statuses)
    code, output = wave.gate("--verdict", str(bad))
    assert code == 2 and f"--verdict {bad}: not a wavegit verdict" in output, output
    assert len(output.strip().splitlines()) == 1
    assert len(wave.gh.fake.statuses) == statuses


# ---- the merge queue ----


def queue(wave: Wave, pr: int, *, squash: bool = False, extra: dict[str, str] | None = None) -> str:
    """The merge queue's group for PR ``pr``: its temporary branch gh-readonly-queue/main/pr-N-<sha> on
    main (the merge method, or a squash); its head."""
    pr_head = wave.gh.fake.git("rev-parse", f"refs/heads/{wave.gh.fake.pulls[pr].head}")
    git(wave.person, "fetch", "-q", "origin")
    git(wave.person, "checkout", "-q", "-B", "group", "origin/main")
    if squash:
        git(wave.person, "merge", "-q", "--squash", pr_head)
        git(wave.person, "commit", "-q", "-m", "squashed")
    else:
        git(wave.person, "merge", "-q", "--no-ff", "--no-edit", pr_head)
    for rel, text in (extra or {}).items():
        (wave.person / rel).write_text(text)
        git(wave.person, "add", rel)
        git(wave.person, "commit", "-q", "--amend", "--no-edit")
    head = git(wave.person, "rev-parse", "HEAD")
    base = git(wave.person, "rev-parse", "origin/main")
    git(wave.person, "push", "-q", "origin", f"HEAD:refs/heads/{queue_branch(pr, pr_head)}")
    event = wave.remote.base / "merge_group.json"
    event.write_text(json.dumps(merge_group_event(head, pr, pr_head, base)))
    return head


def gate_event(wave: Wave) -> tuple[int, str]:
    event = wave.remote.base / "merge_group.json"
    result = wavegit_in_process(wave.remote.clone, "gate", "--event",
                     env={**github_env(wave.gh), "GITHUB_EVENT_PATH": str(event)})
    assert "Traceback" not in result.stderr, result.stderr
    return result.returncode, result.stdout + result.stderr


def test_a_merge_group_of_a_passing_wave_gets_success_on_its_head(wave: Wave) -> None:
    wave.on_main({"NEWS": "news\n"})
    head = queue(wave, wave.pr)
    code, output = gate_event(wave)
    assert code == 0, output
    state = wave.status(head)
    assert state is not None and state[0] == "success" and f"merge group of PR #{wave.pr}" in state[1]


def test_a_merge_group_whose_head_adds_unowned_files_fails(wave: Wave) -> None:
    head = queue(wave, wave.pr, extra={"README.md": "slipped in\n"})
    code, output = gate_event(wave)
    assert code == 1 and "outside the wave's ownership: README.md" in output, output
    assert wave.status(head) is not None and wave.status(head)[0] == "failure"  # type: ignore[index]


def test_a_squashed_merge_group_does_not_contain_the_reported_head_and_fails(wave: Wave) -> None:
    head = queue(wave, wave.pr, squash=True)
    code, output = gate_event(wave)
    assert code == 1 and "does not contain the reported head" in output, output
    assert wave.status(head) is not None and wave.status(head)[0] == "failure"  # type: ignore[index]


def test_a_merge_group_of_an_ordinary_pr_passes_as_not_a_wave(wave: Wave) -> None:
    git(wave.person, "checkout", "-q", "-b", "feature", "origin/main")
    (wave.person / "FEATURE").write_text("f\n")
    git(wave.person, "add", "FEATURE")
    git(wave.person, "commit", "-q", "-m", "feature")
    git(wave.person, "push", "-q", "origin", "feature")
    number = wave.gh.fake.open_fork_pr(wave.gh.fake.repo, "feature", "main", ALICE)
    head = queue(wave, number)
    code, output = gate_event(wave)
    assert code == 0 and "not a wavegit pull request" in output, output
    assert wave.status(head) == ("success", "not a wavegit pull request")


def test_hostile_code_under_test_cannot_forge_the_verdict_of_its_merged_result(tmp_path: Path) -> None:
    """The worker's code, run by the tests on the merged result, fails them and leaves a daemon that keeps
    overwriting gate-test's ``--out`` with a passing verdict: wavegit ends the tests' processes before it
    writes the verdict, which stays a failure."""
    ci = shlex.join([sys.executable, "src/ci.py"])
    worker = shlex.join([sys.executable, str(TESTS / "hostile_workers" / "forge_verdict.py")])
    remote = make_wave_repo(tmp_path, [item("CI", ["forge"], ["src/ci.py"], test=ci)],
                            worker=worker, wave_test=ci, sandbox="none")
    with running(remote.origin) as gh:
        result = wavegit(remote.clone, "run", "--json", env=github_env(gh))
        assert result.returncode == 0, result.stderr
        wave = Wave(remote, gh, report.WaveReport.from_json(result.stdout), remote.new_clone("person"))
        wave.on_main({"BROKEN": "x\n"})
        head = wave.update_branch()
        verdict_file = tmp_path / "verdict.json"
        assert wave.gate_test(verdict_file)[0] == 0
        deadline = time.monotonic() + 5  # the daemon would keep writing for 4 s
        while time.monotonic() < deadline:
            time.sleep(0.2)
        verdict = json.loads(verdict_file.read_text())
        assert (verdict["head_sha"], verdict["tested"], verdict["passed"]) == (head, True, False), verdict
        code, output = wave.gate("--verdict", str(verdict_file))
        assert code == 1 and "the tests failed on the merged result" in output, output


def test_a_merge_bringing_more_files_than_github_compares_fails_closed(wave: Wave) -> None:
    # GitHub names at most 300 files in a comparison and says nothing of the rest.
    wave.on_main({f"news/{n}.txt": f"{n}\n" for n in range(301)})
    head = wave.update_branch()
    code, output = wave.gate()
    assert code == 1 and f"the merge {head[:12]} changes more files than GitHub lists" in output, output


@pytest.mark.parametrize(("group", "says"), [
    ({"head_sha": "a" * 40, "head_ref": "refs/heads/main", "base_ref": "refs/heads/main"},
     "is not gh-readonly-queue/<base>/pr-<number>-<sha>"),
    ({"head_sha": "a" * 40, "base_ref": "refs/heads/main"}, "has no head_sha, head_ref and base_ref"),
])
def test_a_malformed_merge_group_event_is_bad_input(wave: Wave, group: dict[str, str], says: str) -> None:
    (wave.remote.base / "merge_group.json").write_text(json.dumps({"merge_group": group}))
    statuses = len(wave.gh.fake.statuses)
    code, output = gate_event(wave)
    assert code == 2 and says in output, output
    assert len(output.strip().splitlines()) == 1 and len(wave.gh.fake.statuses) == statuses


def test_a_pr_retargeted_to_a_branch_that_smuggles_a_change_never_passes(wave: Wave, tmp_path: Path) -> None:
    # Attack: a branch `evil` (main plus an unowned change) becomes the PR's base; merging it into the wave
    # branch is then "an update with the base", tested and passed, and retargeting the PR back to main
    # (no pull_request_target run on `edited`) would keep that success on the head that carries README.md.
    git(wave.person, "checkout", "-q", "-b", "evil", "origin/main")
    (wave.person / "README.md").write_text("smuggled\n")
    git(wave.person, "commit", "-q", "-am", "unowned change")
    git(wave.person, "push", "-q", "origin", "evil")
    wave.gh.fake.pulls[wave.pr].base = "evil"  # the PR's "Edit" button: its base is now evil
    head = wave.update_branch(merge_in="evil")
    verdict_file = tmp_path / "verdict.json"
    wave.gate_test(verdict_file)
    code, output = wave.gate("--verdict", str(verdict_file))
    assert code == 1 and "the PR targets evil, not the base branch main" in output, output
    assert wave.status(head) is not None and wave.status(head)[0] == "failure"  # type: ignore[index]


def test_a_file_name_on_the_pr_cannot_issue_workflow_commands_through_the_actions_log(
        wave: Wave, tmp_path: Path) -> None:
    # Attack: a file whose name holds a line break and a workflow command; the gate names it in its reason,
    # and the Action's last step echoes the command's output into the job log, where the runner would obey
    # any line starting with "::" (a forged annotation, ::stop-commands::, ::set-output).
    name = "notes\n::warning title=wavegit gate::forged by a file name"
    wave.on_main({name: "base\n"})
    wave.update_branch(extra={name: "edited in the merge\n"})
    result = wavegit_in_process(wave.remote.clone, "gate", "--pr", str(wave.pr), env=github_env(wave.gh))
    code = result.returncode
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    out.write_text(result.stdout)
    err.write_text(result.stderr)
    # The reason stays one line: the name is quoted.
    assert code == 1 and 'changes "notes\\n::warning title=wavegit gate::forged by a file name" beyond' \
        in result.stdout, result.stdout
    step = subprocess.run([sys.executable, "-m", "wavegit.github.action", "gate", str(code), str(out),
                           str(err)], cwd=wave.remote.clone, capture_output=True, text=True, check=False)
    assert obeyed_commands(step.stdout + step.stderr) == [("error", "")], step.stdout
    assert "forged by a file name" in step.stdout  # shown, inert

