"""``wavegit add``: one CAS commit per item, concurrent adds all land, bad input writes nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.reliability import wavegit_in_process as wavegit_here
from tests.helpers.repos import REPO_ROOT, CliResult, RemoteRepo, git, wavegit
from wavegit.model import tracker

TRACKER = ".wavegit/tracker.yaml"


def commit_tracker(repo: Path, text: str | None = None) -> str:
    """Commit a tracker (by default the initial one) in ``repo``; the new head."""
    (repo / ".wavegit").mkdir(exist_ok=True)
    (repo / TRACKER).write_text(text if text is not None else tracker.initial_text())
    git(repo, "add", TRACKER)
    git(repo, "commit", "-q", "-m", "seed tracker")
    return git(repo, "rev-parse", "HEAD")


def seed_tracker(clone: Path, text: str | None = None) -> str:
    """Commit and push a tracker from ``clone``; the new head."""
    head = commit_tracker(clone, text)
    git(clone, "push", "-q", "origin", "main")
    return head


def local_repo(tmp_path: Path) -> Path:
    """A repository with no remote whose one commit holds the initial tracker."""
    git(tmp_path, "init", "-q", "-b", "main", "local")
    local = tmp_path / "local"
    commit_tracker(local)
    return local


def add_args(item_id: str, *extra: str) -> list[str]:
    return ["add", item_id, "--prompt", f"do {item_id}", "--owns", f"src/{item_id}.py", "--test", "true",
            *extra]


def remote_tracker(origin: Path, rev: str = "main") -> tracker.Tracker:
    return tracker.loads(git(origin, "show", f"{rev}:{TRACKER}") + "\n")


def assert_refused(result: CliResult, message: str) -> None:
    assert result.returncode == 2, result
    assert message in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


@pytest.fixture
def seeded(remote_repo: RemoteRepo) -> RemoteRepo:
    seed_tracker(remote_repo.clone)
    return remote_repo


def test_add_appends_the_item_to_the_remote_tracker_in_one_commit(seeded: RemoteRepo) -> None:
    before = git(seeded.origin, "rev-parse", "main")
    result = wavegit(seeded.clone, "add", "AUTH-12", "--prompt", "Add a token bucket", "--owns",
                     "src/auth//limiter.py", "tests/auth/", "--test", "pytest -q tests/auth", "--title",
                     "Rate-limit logins", "--priority", "P1", "--push")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("added AUTH-12: commit ") and result.stdout.count("\n") == 1
    assert git(seeded.origin, "rev-parse", "main^") == before
    item = remote_tracker(seeded.origin).get("AUTH-12")
    assert item is not None
    assert (item.prompt.strip(), item.owns, item.test, item.title, item.priority, item.status) == (
        "Add a token bucket", ("src/auth/limiter.py", "tests/auth/"), "pytest -q tests/auth",
        "Rate-limit logins", "P1", "todo")


def test_add_without_push_still_publishes_when_the_remote_exists(seeded: RemoteRepo) -> None:
    assert wavegit_here(seeded.clone, *add_args("A-1")).returncode == 0
    assert remote_tracker(seeded.origin).get("A-1") is not None


def test_add_keeps_the_rest_of_the_tracker_text_unchanged(seeded: RemoteRepo) -> None:
    original = tracker.initial_text()
    assert wavegit_here(seeded.clone, *add_args("A-1")).returncode == 0
    diff = git(seeded.origin, "diff", "main^", "main", "--", TRACKER)
    removed = [line for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")]
    assert removed == [] or removed == ["-items: []"]
    assert git(seeded.origin, "show", f"main:{TRACKER}").startswith(original.split("items:")[0])


def test_add_reads_the_prompt_from_a_file_relative_to_dash_c(seeded: RemoteRepo) -> None:
    (seeded.clone / "prompt.md").write_text("Refactor the parser\nkeeping the API\n")
    result = wavegit(seeded.base, "-C", "work", "add", "P-1", "--prompt-file", "prompt.md", "--owns", "src/",
                     "--test", "true")
    assert result.returncode == 0, result.stderr
    item = remote_tracker(seeded.origin).get("P-1")
    assert item is not None and item.prompt == "Refactor the parser\nkeeping the API\n"


def test_add_with_dependencies_records_them(seeded: RemoteRepo) -> None:
    assert wavegit_here(seeded.clone, *add_args("A-1")).returncode == 0
    assert wavegit_here(seeded.clone, *add_args("A-2", "--depends-on", "A-1")).returncode == 0
    item = remote_tracker(seeded.origin).get("A-2")
    assert item is not None and item.depends_on == ("A-1",)


def test_add_records_an_estimate_for_run_continuous_and_refuses_one_that_is_no_duration(
        seeded: RemoteRepo) -> None:
    # `run --continuous` starts the longest first by estimate_s; add had no way to give one.
    assert wavegit_here(seeded.clone, *add_args("A-1", "--estimate-s", "900")).returncode == 0
    item = remote_tracker(seeded.origin).get("A-1")
    assert item is not None and item.estimate_s == 900
    head = git(seeded.origin, "rev-parse", "main")
    assert_refused(wavegit_here(seeded.clone, *add_args("A-2", "--estimate-s", "-5")),
                   "wavegit add: --estimate-s: must be at least 0\n")
    assert_refused(wavegit_here(seeded.clone, *add_args("A-2", "--estimate-s", "nan")),
                   "argument --estimate-s: 'nan' is not a number of seconds (e.g. 900)")
    assert git(seeded.origin, "rev-parse", "main") == head


@pytest.mark.parametrize(("args", "message"), [
    (add_args("A-1"), "item A-1 already exists in .wavegit/tracker.yaml on origin/main"),
    (add_args("B-1", "--depends-on", "NOPE-9"), "NOPE-9"),
    (add_args("bad id!"), "wavegit add: ID: 'bad id!' may contain only"),
    (["add", "C-1", "--prompt", "p", "--owns", "a.py", "--test", "sh -c 'open"],
     "wavegit add: --test: cannot be split into words"),
    (["add", "C-1", "--prompt", "p", "--owns", "../outside.py", "--test", "true"],
     "wavegit add: --owns: pattern '../outside.py': has a '..' segment; write it from the repository root, "
     "no '..'\n"),  # the pattern said once, as edit and a protected path say it
    (["add", "C-1", "--prompt", "p", "--owns", ".wavegit/", "--test", "true"],
     "wavegit add: --owns: pattern '.wavegit/' can match the protected path '.wavegit/' (hint: own narrower "
     "paths; only allow_protected in .wavegit/config.yaml lifts a protected path)\n"),  # said once
    (["add", "C-1", "--prompt", "  ", "--owns", "a.py", "--test", "true"], "the prompt is empty"),
    (["add", "C-1", "--prompt-file", "missing.md", "--owns", "a.py", "--test", "true"],
     "--prompt-file missing.md: cannot read it"),
    (add_args("C-1", "--deadline", "0"), "--deadline must be a positive number"),
    (add_args("C-1", "--priority", "P9"), "invalid choice: 'P9'"),
    # Read until memory ran out (the machine's OOM killer ended it after some 100 s).
    (["add", "C-1", "--prompt-file", "/dev/zero", "--owns", "a.py", "--test", "true"],
     "wavegit add: --prompt-file /dev/zero: cannot read it ([Errno 27] more than 4,194,304 bytes)\n"),
], ids=["duplicate-id", "unknown-dependency", "bad-id", "unsplittable-test", "escaping-owns",
        "protected-owns", "empty-prompt", "missing-prompt-file", "zero-deadline", "unknown-priority",
        "endless-prompt-file"])
def test_bad_add_exits_2_with_one_clear_message_and_writes_nothing(
        seeded: RemoteRepo, args: list[str], message: str) -> None:
    assert wavegit_here(seeded.clone, *add_args("A-1")).returncode == 0
    head = git(seeded.origin, "rev-parse", "main")
    assert_refused(wavegit_here(seeded.clone, *args), message)
    assert git(seeded.origin, "rev-parse", "main") == head


def test_a_bad_option_is_named_not_located_in_a_tracker_never_written(seeded: RemoteRepo) -> None:
    result = wavegit_here(seeded.clone, "add", "C-1", "--prompt", "p", "--owns", "a.py",
                          "--test", "sh -c 'open", "--depends-on", "NOPE-9")
    assert result.returncode == 2
    assert result.stderr == ("wavegit add: --test: cannot be split into words: No closing quotation; "
                             "--depends-on: depends on unknown id 'NOPE-9'\n")


def test_add_to_a_tracker_with_an_invalid_item_names_its_line_on_the_branch(remote_repo: RemoteRepo) -> None:
    text = "version: 1\nitems:\n  - id: X\n    prompt: p\n    owns: [x.py]\n    test: \"sh -c 'open\"\n"
    head = seed_tracker(remote_repo.clone, text)
    result = wavegit_here(remote_repo.clone, *add_args("A-1"))
    assert result.returncode == 2
    [problem] = result.stderr.splitlines()
    assert problem.startswith(".wavegit/tracker.yaml:6:") and "item X" in problem
    assert git(remote_repo.origin, "rev-parse", "main") == head


def test_add_without_a_tracker_says_to_run_init(remote_repo: RemoteRepo) -> None:
    assert_refused(wavegit_here(remote_repo.clone, *add_args("A-1")), "else run `wavegit init`)")


def test_add_to_a_corrupt_tracker_reports_its_problems_and_writes_nothing(remote_repo: RemoteRepo) -> None:
    head = seed_tracker(remote_repo.clone, "version: 1\nitems:\n  - id: X\n    owns: nope\n")
    result = wavegit_here(remote_repo.clone, *add_args("A-1"))
    assert result.returncode == 2
    assert all(line.startswith(".wavegit/tracker.yaml:") for line in result.stderr.splitlines())
    assert git(remote_repo.origin, "rev-parse", "main") == head


def test_add_push_without_a_remote_is_refused(tmp_path: Path) -> None:
    local = local_repo(tmp_path)
    head = git(local, "rev-parse", "HEAD")
    assert_refused(wavegit_here(local, *add_args("A-1", "--push")), "no remote 'origin'")
    assert git(local, "rev-parse", "HEAD") == head


def test_add_in_a_local_repo_commits_and_keeps_git_status_clean(tmp_path: Path) -> None:
    local = local_repo(tmp_path)
    assert wavegit_here(local, *add_args("A-1")).returncode == 0
    assert git(local, "status", "--porcelain") == ""
    assert tracker.loads((local / TRACKER).read_text()).get("A-1") is not None


def run_concurrently(jobs: list[tuple[Path, list[str]]]) -> list[tuple[int, str, str]]:
    """Start every ``wavegit ARGS`` at once (each in its directory); (exit code, stdout, stderr) of each."""
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    procs = [subprocess.Popen([sys.executable, "-m", "wavegit", *args], cwd=cwd, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for cwd, args in jobs]
    return [(proc.wait(timeout=120), *proc.communicate()) for proc in procs]


@pytest.mark.slow  # eight processes racing on one origin
def test_eight_concurrent_adds_from_eight_clones_all_land_exactly_once(seeded: RemoteRepo) -> None:
    clones = [seeded.new_clone(f"clone{n}") for n in range(8)]
    # A slow remote widens the window between read and publish, so the writers really do collide.
    hook = seeded.origin / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\nsleep 0.05\n")
    hook.chmod(0o755)
    outcomes = run_concurrently([(clone, add_args(f"C-{n}", "--push")) for n, clone in enumerate(clones)])
    assert [code for code, _, _ in outcomes] == [0] * 8, outcomes
    assert any("attempts" in out for _, out, _ in outcomes), "no writer had to retry: the race never happened"
    ids = [item.id for item in remote_tracker(seeded.origin).items]
    assert sorted(ids) == [f"C-{n}" for n in range(8)]
    git(seeded.origin, "fsck", "--strict", "--no-dangling")
    history = git(seeded.origin, "rev-list", "main", "--", TRACKER).splitlines()
    assert len(history) == 9  # the seed and one commit per add
    for commit in history:
        remote_tracker(seeded.origin, commit)


def test_concurrent_adds_sharing_one_clone_all_land(seeded: RemoteRepo) -> None:
    outcomes = run_concurrently([(seeded.clone, add_args(f"S-{n}")) for n in range(4)])
    assert [code for code, _, _ in outcomes] == [0] * 4, outcomes
    assert sorted(item.id for item in remote_tracker(seeded.origin).items) == [f"S-{n}" for n in range(4)]
    assert git(seeded.clone, "rev-parse", "origin/main") == git(seeded.origin, "rev-parse", "main")


def test_add_gives_up_with_exit_4_when_every_push_loses_the_race(seeded: RemoteRepo) -> None:
    first = git(seeded.origin, "rev-parse", "main")
    (seeded.clone / "other.txt").write_text("unrelated\n")
    git(seeded.clone, "add", "other.txt")
    git(seeded.clone, "commit", "-q", "-m", "unrelated")
    git(seeded.clone, "push", "-q", "origin", "main")
    second = git(seeded.origin, "rev-parse", "main")
    # A rival that moves the branch between the two commits during every push: each push loses.
    hook = seeded.origin / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\nunset GIT_QUARANTINE_PATH\n"
                    f'if [ "$(git rev-parse main)" = {first} ]; then next={second}; else next={first}; fi\n'
                    'git update-ref refs/heads/main "$next"\n')
    hook.chmod(0o755)
    result = wavegit(seeded.clone, *add_args("A-1", "--deadline", "1"))
    assert result.returncode == 4, result
    assert "lost the compare-and-swap race on origin/main after" in result.stderr
    assert "Traceback" not in result.stderr
    hook.unlink()
    assert remote_tracker(seeded.origin).get("A-1") is None
