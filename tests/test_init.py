"""``wavegit init``: tracker and config in one commit, in an empty repo, a local repo, with a remote."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers.reliability import wavegit_in_process as wavegit_here
from tests.helpers.repos import TESTS, CliResult, RemoteRepo, git, wavegit
from wavegit.github import intake
from wavegit.model import tracker
from wavegit.model.config import initial_config_text

# Most commands here run in this process (wavegit_here): their tests are about what init writes and says,
# and a process of its own cost each ~0.15 s of CPU more. The first test and the wave after init run real
# ones.
TRACKER = ".wavegit/tracker.yaml"
CONFIG = ".wavegit/config.yaml"


def files_at(repo: Path, rev: str) -> dict[str, str]:
    names = git(repo, "ls-tree", "-r", "--name-only", rev, "--", ".wavegit").splitlines()
    return {name: git(repo, "show", f"{rev}:{name}") + "\n" for name in names}


def assert_fresh(repo: Path, rev: str) -> None:
    """``rev`` holds exactly a fresh tracker and config under .wavegit/, and the tracker is valid."""
    assert files_at(repo, rev) == {TRACKER: tracker.initial_text(), CONFIG: initial_config_text()}
    assert tracker.loads(files_at(repo, rev)[TRACKER]).items == ()


def assert_refused(result: CliResult, message: str) -> None:
    assert result.returncode == 2, result
    assert message in result.stderr and "Traceback" not in result.stderr
    assert result.stdout == ""


@pytest.fixture
def empty_repo(tmp_path: Path) -> Path:
    git(tmp_path, "init", "-q", "-b", "main", "empty")
    return tmp_path / "empty"


def test_init_in_a_repo_without_commits_creates_the_branch_with_both_files(empty_repo: Path) -> None:
    result = wavegit(empty_repo, "init")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"initialized {TRACKER} and {CONFIG}: commit ")
    assert result.stdout.count("\n") == 1
    assert "(no remote 'origin': the tracker shares main; with a remote, init puts it on wavegit-tracker)" \
        in result.stdout
    assert git(empty_repo, "rev-list", "--count", "main") == "1"
    assert_fresh(empty_repo, "main")
    # The one exception to "never touch the checkout": main is checked out and was clean, so it follows.
    assert git(empty_repo, "status", "--porcelain", "--untracked-files=all") == ""


def test_init_in_a_local_repo_adds_one_commit_on_top_and_keeps_status_clean(empty_repo: Path) -> None:
    (empty_repo / "README.md").write_text("hello\n")
    git(empty_repo, "add", "README.md")
    git(empty_repo, "commit", "-q", "-m", "initial")
    before = git(empty_repo, "rev-parse", "HEAD")
    assert wavegit_here(empty_repo, "init").returncode == 0
    assert git(empty_repo, "rev-parse", "main^") == before
    assert_fresh(empty_repo, "main")
    assert git(empty_repo, "status", "--porcelain", "--untracked-files=all") == ""


OWN = "wavegit-tracker"


def assert_own_branch_layout(origin: Path, branch: str = OWN) -> None:
    """The base branch gained one commit holding the config alone (naming ``branch``); ``branch`` starts there
    and adds the tracker."""
    config = git(origin, "show", f"main:{CONFIG}") + "\n"
    assert yaml.safe_load(config)["tracker_branch"] == branch
    assert git(origin, "ls-tree", "-r", "--name-only", "main", "--", ".wavegit") == CONFIG
    assert git(origin, "rev-parse", f"{branch}^") == git(origin, "rev-parse", "main")
    assert files_at(origin, branch) == {TRACKER: tracker.initial_text(), CONFIG: config}


@pytest.mark.parametrize("push", [[], ["--push"]], ids=["default", "push"])
def test_init_with_a_remote_puts_the_tracker_on_its_own_branch_and_the_config_on_main(
        remote_repo: RemoteRepo, push: list[str]) -> None:
    before = git(remote_repo.origin, "rev-parse", "main")
    result = wavegit_here(remote_repo.clone, "init", *push)
    assert result.returncode == 0, result.stderr
    assert git(remote_repo.origin, "rev-parse", "main^") == before
    assert_own_branch_layout(remote_repo.origin)
    assert f"published to origin/{OWN}" in result.stdout
    assert f"created origin/{OWN} from origin/main" in result.stdout
    # The clean checkout of main followed its one config commit, so the next command here finds the tracker.
    assert git(remote_repo.clone, "rev-parse", "main") == git(remote_repo.origin, "rev-parse", "main")
    assert git(remote_repo.clone, "status", "--porcelain", "--untracked-files=all") == ""
    added = wavegit_here(remote_repo.clone, "add", "A-1", "--prompt", "p", "--owns", "a.py", "--test", "true")
    assert added.returncode == 0 and f"published to origin/{OWN}" in added.stdout, added
    assert git(remote_repo.origin, "rev-parse", "main^") == before  # add left main alone
    git(remote_repo.origin, "fsck", "--strict", "--no-dangling")


def test_init_tracker_branch_main_keeps_the_tracker_on_main_and_leaves_the_checkout_alone(
        remote_repo: RemoteRepo) -> None:
    before = git(remote_repo.origin, "rev-parse", "main")
    result = wavegit_here(remote_repo.clone, "init", "--tracker-branch", "main")
    assert result.returncode == 0, result.stderr
    assert "published to origin/main" in result.stdout and "git pull" in result.stdout
    assert git(remote_repo.origin, "rev-parse", "main^") == before
    assert_fresh(remote_repo.origin, "main")
    assert git(remote_repo.origin, "for-each-ref", "--format=%(refname)") == "refs/heads/main"
    assert git(remote_repo.clone, "rev-parse", "main") == before
    assert git(remote_repo.clone, "status", "--porcelain", "--untracked-files=all") == ""


def test_init_leaves_a_dirty_checkout_alone_and_says_to_pull(remote_repo: RemoteRepo) -> None:
    before = git(remote_repo.clone, "rev-parse", "main")
    (remote_repo.clone / "README.md").write_text("edited\n")
    result = wavegit_here(remote_repo.clone, "init")
    assert result.returncode == 0, result.stderr
    assert_own_branch_layout(remote_repo.origin)
    assert "main here has uncommitted changes, so it was left as it is: git pull here" in result.stdout
    assert git(remote_repo.clone, "rev-parse", "main") == before
    assert (remote_repo.clone / "README.md").read_text() == "edited\n"


def test_init_github_puts_the_issue_form_on_the_base_branch_where_github_reads_it(
        remote_repo: RemoteRepo) -> None:
    before = git(remote_repo.origin, "rev-parse", "main")
    result = wavegit_here(remote_repo.clone, "init", "--github")
    assert result.returncode == 0, result.stderr
    assert git(remote_repo.origin, "rev-parse", "main^") == before
    form = yaml.safe_load(git(remote_repo.origin, "show", f"main:{intake.FORM_PATH}"))
    assert form["labels"] == ["wavegit"]
    assert_own_branch_layout(remote_repo.origin)


def test_init_commits_the_configuration_it_ran_with_environment_overrides_included(
        remote_repo: RemoteRepo) -> None:
    git(remote_repo.clone, "push", "-q", "origin", "main:wavegit-tracker")
    result = wavegit_here(remote_repo.clone, "init", env={"WAVEGIT_TRACKER_BRANCH": "wavegit-tracker"})
    assert result.returncode == 0, result.stderr
    committed = yaml.safe_load(git(remote_repo.origin, "show", f"wavegit-tracker:{CONFIG}"))
    assert committed["tracker_branch"] == "wavegit-tracker"
    assert git(remote_repo.origin, "show", f"wavegit-tracker:{TRACKER}") + "\n" == tracker.initial_text()


def test_init_with_wavegit_tracker_branch_set_commits_a_config_naming_that_branch(
        remote_repo: RemoteRepo) -> None:
    result = wavegit_here(remote_repo.clone, "init", env={"WAVEGIT_TRACKER_BRANCH": "x"})
    assert result.returncode == 0, result.stderr
    assert_own_branch_layout(remote_repo.origin, "x")


def test_init_tracker_branch_option_names_the_branch(remote_repo: RemoteRepo) -> None:
    result = wavegit_here(remote_repo.clone, "init", "--tracker-branch", "ops/tracker")
    assert result.returncode == 0, result.stderr
    assert_own_branch_layout(remote_repo.origin, "ops/tracker")


@pytest.mark.parametrize("name", ["a..b", "has space", "-dash", "x.lock"])
def test_init_refuses_an_invalid_tracker_branch_name_and_writes_nothing(remote_repo: RemoteRepo,
                                                                         name: str) -> None:
    before = git(remote_repo.origin, "for-each-ref")
    assert_refused(wavegit_here(remote_repo.clone, "init", f"--tracker-branch={name}"),
                   f"--tracker-branch {name!r}: not a valid branch name")
    assert git(remote_repo.origin, "for-each-ref") == before


def test_init_twice_is_refused_and_writes_nothing(remote_repo: RemoteRepo) -> None:
    assert wavegit_here(remote_repo.clone, "init").returncode == 0
    heads = git(remote_repo.origin, "for-each-ref")
    refused = wavegit_here(remote_repo.clone, "init")
    assert_refused(refused, f"{TRACKER} already exists on origin/{OWN}: --force replaces it")
    assert git(remote_repo.origin, "for-each-ref") == heads


def test_a_clone_from_before_a_teammates_init_is_told_to_pull_not_to_init(remote_repo: RemoteRepo) -> None:
    # The teammate cloned before init: no config in the checkout, so it looks for the tracker on main.
    teammate = remote_repo.new_clone("teammate")
    assert wavegit_here(remote_repo.clone, "init").returncode == 0
    added = wavegit_here(remote_repo.clone, "add", "A-1", "--prompt", "p", "--owns", "a.py", "--test", "true")
    assert added.returncode == 0, added.stderr
    pull_first = "if someone ran `wavegit init` already, `git pull` brings it"
    for command in (["ls"], ["plan"], ["validate"], ["add", "B-1", "--prompt", "p", "--owns", "b.py",
                                                     "--test", "true"]):
        result = wavegit_here(teammate, *command)
        assert result.returncode == 2 and pull_first in result.stderr, result
        assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr
    heads = git(remote_repo.origin, "for-each-ref")
    # init, as the old message said: refused, and now it says to pull
    refused = wavegit_here(teammate, "init")
    assert_refused(refused, f"{TRACKER} already exists on origin/{OWN}: `git pull` brings its config "
                   f"({CONFIG}) into this checkout; --force replaces it (its items would be dropped)")
    assert git(remote_repo.origin, "for-each-ref") == heads
    git(teammate, "pull", "-q")
    listed = wavegit_here(teammate, "ls")
    assert listed.returncode == 0 and listed.stdout.splitlines()[1].startswith("A-1"), listed


def test_init_force_replaces_a_tracker_that_has_items(remote_repo: RemoteRepo) -> None:
    assert wavegit_here(remote_repo.clone, "init").returncode == 0
    added = wavegit_here(remote_repo.clone, "add", "A-1", "--prompt", "p", "--owns", "a.py", "--test", "true")
    assert added.returncode == 0, added.stderr
    assert wavegit_here(remote_repo.clone, "init", "--force").returncode == 0
    assert files_at(remote_repo.origin, OWN)[TRACKER] == tracker.initial_text()


def test_init_keeps_an_existing_config_naming_no_branch_and_the_tracker_on_main(
        remote_repo: RemoteRepo) -> None:
    (remote_repo.clone / ".wavegit").mkdir()
    (remote_repo.clone / CONFIG).write_text("concurrency: 2\n")
    git(remote_repo.clone, "add", CONFIG)
    git(remote_repo.clone, "commit", "-q", "-m", "config first")
    git(remote_repo.clone, "push", "-q", "origin", "main")
    result = wavegit_here(remote_repo.clone, "init")
    assert result.returncode == 0, result.stderr
    assert f"initialized {TRACKER}: commit" in result.stdout
    expected = {TRACKER: tracker.initial_text(), CONFIG: "concurrency: 2\n"}
    assert files_at(remote_repo.origin, "main") == expected


def test_init_refuses_to_start_an_unrelated_remote_branch_when_only_the_clone_has_it(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "--bare", "-b", "main", "origin.git")
    git(tmp_path, "clone", "-q", "origin.git", "work")
    work = tmp_path / "work"
    (work / "README.md").write_text("hello\n")
    git(work, "add", "README.md")
    git(work, "commit", "-q", "-m", "not pushed yet")
    assert_refused(wavegit_here(work, "init"),
                   "origin has no branch main yet but this clone does: push it first")
    assert git(tmp_path / "origin.git", "for-each-ref") == ""


def test_init_in_a_clone_of_an_empty_remote_creates_the_branch_there(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "--bare", "-b", "main", "origin.git")
    git(tmp_path, "clone", "-q", "origin.git", "work")
    assert wavegit_here(tmp_path / "work", "init").returncode == 0
    assert_fresh(tmp_path / "origin.git", "main")


def test_init_of_an_own_tracker_branch_on_an_empty_remote_is_refused_and_creates_nothing(
        tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "--bare", "-b", "main", "origin.git")
    git(tmp_path, "clone", "-q", "origin.git", "work")
    assert_refused(wavegit_here(tmp_path / "work", "init", "--tracker-branch", OWN),
                   f"origin/main does not exist yet, and the tracker branch {OWN} starts from it: push a "
                   "first commit to main")
    assert git(tmp_path / "origin.git", "for-each-ref") == ""


def test_init_with_a_tracker_already_on_its_branch_is_refused_before_main_gets_a_config(
        remote_repo: RemoteRepo) -> None:
    before = git(remote_repo.origin, "rev-parse", "main")
    assert wavegit_here(remote_repo.clone, "init").returncode == 0
    git(remote_repo.clone, "push", "-q", "--force", "origin", f"{before}:refs/heads/main")  # its config gone
    git(remote_repo.clone, "reset", "-q", "--hard", before)
    heads = git(remote_repo.origin, "for-each-ref")
    refused = wavegit_here(remote_repo.clone, "init")
    assert_refused(refused, f"{TRACKER} already exists on origin/{OWN}: --force replaces it")
    assert git(remote_repo.origin, "for-each-ref") == heads


def test_init_push_without_a_remote_is_refused_and_creates_nothing(empty_repo: Path) -> None:
    assert_refused(wavegit_here(empty_repo, "init", "--push"), "no remote 'origin'")
    assert git(empty_repo, "for-each-ref") == ""


def test_init_outside_a_repository_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    assert_refused(wavegit_here(tmp_path / "plain", "init"), "not inside a git work tree")


def test_init_help_documents_what_push_means(empty_repo: Path) -> None:
    result = wavegit_here(empty_repo, "init", "--help")
    assert result.returncode == 0
    assert "--push" in result.stdout and "compare-and-swap" in result.stdout


def test_a_wave_after_init_writes_only_the_tracker_branch_and_sync_marks_the_merge_done(
        remote_repo: RemoteRepo) -> None:
    clone, origin = remote_repo.clone, remote_repo.origin
    assert wavegit(clone, "init").returncode == 0
    config_commit = git(origin, "rev-parse", "main")
    added = wavegit(clone, "add", "A-1", "--prompt", "write src/a.txt hello", "--owns", "src/a.txt",
                    "--test", "true")
    assert added.returncode == 0, added.stderr
    worker = shlex.join([sys.executable, str(TESTS / "wave_workers" / "scripted.py")])
    env = {"WAVEGIT_WORKER": worker, "WAVEGIT_SANDBOX": "none"}
    ran = wavegit(clone, "run", "--json", env=env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    wave = json.loads(ran.stdout)
    assert wave["success"] and wave["tracker_source"].startswith(f"origin/{OWN}:")
    assert git(origin, "rev-parse", "main") == config_commit  # claim and record: all on the tracker branch
    item = tracker.loads(git(origin, "show", f"{OWN}:{TRACKER}") + "\n").items[0]
    assert item.status == "review"
    # The wave branch started from main, without the tracker branch's bookkeeping.
    assert git(origin, "merge-base", f"wavegit/{wave['wave_id']}", OWN) == config_commit
    git(clone, "fetch", "-q", "origin")
    git(clone, "merge", "-q", "--no-ff", "-m", "merge the wave", f"origin/wavegit/{wave['wave_id']}")
    git(clone, "push", "-q", "origin", "main")
    synced = wavegit(clone, "sync")
    assert synced.returncode == 0 and f"published to origin/{OWN}" in synced.stdout, synced
    assert tracker.loads(git(origin, "show", f"{OWN}:{TRACKER}") + "\n").items[0].status == "done"
    assert git(origin, "ls-tree", "--name-only", "main", "--", ".wavegit/") == CONFIG
