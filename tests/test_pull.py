"""``wavegit pull``: the local tracker branch fast-forwarded to the remote's (its checkout too, if clean)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.reliability import wavegit_in_process as wavegit_here
from tests.helpers.repos import CliResult, RemoteRepo, git, wavegit

BRANCH = "wavegit-tracker"
TRACKER = ".wavegit/tracker.yaml"


def add(clone: Path, item_id: str) -> None:
    result = wavegit(clone, "add", item_id, "--prompt", "p", "--owns", f"{item_id}.py", "--test", "true")
    assert result.returncode == 0, result.stderr


def refused(result: CliResult, message: str) -> None:
    assert result.returncode == 2, result
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert result.stdout == "" and "Traceback" not in result.stderr


def test_pull_creates_then_fast_forwards_the_local_tracker_branch(remote_repo: RemoteRepo) -> None:
    clone = remote_repo.clone
    assert wavegit_here(clone, "init").returncode == 0
    add(clone, "A")
    created = wavegit_here(clone, "pull")
    assert created.returncode == 0, created.stderr
    assert created.stdout.startswith(f"created {BRANCH} at origin/{BRANCH} (")
    assert f"tracker origin/{BRANCH}:{TRACKER} blob " in created.stdout
    assert git(clone, "rev-parse", BRANCH) == git(remote_repo.origin, "rev-parse", BRANCH)
    add(clone, "B")
    old = git(clone, "rev-parse", BRANCH)
    moved = wavegit_here(clone, "pull")
    assert moved.returncode == 0, moved.stderr
    assert moved.stdout.startswith(f"fast-forwarded {BRANCH} {old[:12]}..")
    assert git(clone, "rev-parse", BRANCH) == git(remote_repo.origin, "rev-parse", BRANCH)
    again = wavegit_here(clone, "pull")
    assert again.returncode == 0 and again.stdout.startswith(f"{BRANCH} is up to date with origin/{BRANCH}")


def test_the_tracker_branch_pull_creates_tracks_the_remotes_so_git_push_works_in_its_checkout(
        remote_repo: RemoteRepo) -> None:
    # `wavegit pull` created wavegit-tracker with no upstream: in a checkout of it, a hand edit's `git push`
    # (and `git pull`) failed with "fatal: The current branch wavegit-tracker has no upstream branch", where
    # `git switch wavegit-tracker` would have set one. Created, it tracks origin/wavegit-tracker, as git does.
    clone = remote_repo.clone
    assert wavegit_here(clone, "init").returncode == 0
    assert wavegit_here(clone, "pull").returncode == 0
    assert git(clone, "rev-parse", "--abbrev-ref", f"{BRANCH}@{{upstream}}") == f"origin/{BRANCH}"
    checkout = clone.parent / "tracker-checkout"
    git(clone, "worktree", "add", "-q", str(checkout), BRANCH)
    (checkout / "notes.txt").write_text("by hand\n")
    git(checkout, "add", "notes.txt")
    git(checkout, "commit", "-qm", "a note by hand")
    git(checkout, "push", "-q")
    assert git(remote_repo.origin, "rev-parse", BRANCH) == git(clone, "rev-parse", BRANCH)


def test_pull_brings_the_tracker_file_into_a_clean_checkout_of_the_tracker_branch(
        remote_repo: RemoteRepo) -> None:
    clone = remote_repo.clone
    assert wavegit_here(clone, "init", "--tracker-branch", "main").returncode == 0
    add(clone, "A")  # published to origin/main: the checkout of main is behind
    assert not (clone / TRACKER).exists()
    result = wavegit_here(clone, "pull")
    assert result.returncode == 0, result.stderr
    assert f"files updated in {clone}" in result.stdout
    assert "id: A" in (clone / TRACKER).read_text()
    assert git(clone, "status", "--porcelain") == ""


def test_pull_refuses_a_dirty_checkout_of_the_tracker_branch_and_changes_nothing(
        remote_repo: RemoteRepo) -> None:
    clone = remote_repo.clone
    assert wavegit_here(clone, "init", "--tracker-branch", "main").returncode == 0
    add(clone, "A")
    before = git(clone, "rev-parse", "main")
    (clone / "README.md").write_text("mine\n")
    refused(wavegit_here(clone, "pull"),
            "has uncommitted changes and main is checked out there: commit or stash")
    assert git(clone, "rev-parse", "main") == before
    assert (clone / "README.md").read_text() == "mine\n"


def test_pull_refuses_a_local_tracker_branch_that_diverged_and_names_the_fix(remote_repo: RemoteRepo) -> None:
    clone = remote_repo.clone
    assert wavegit_here(clone, "init").returncode == 0
    assert wavegit_here(clone, "pull").returncode == 0
    git(clone, "checkout", "-q", BRANCH)
    (clone / "local.txt").write_text("local\n")
    git(clone, "add", "local.txt")
    git(clone, "commit", "-q", "-m", "local only")
    git(clone, "checkout", "-q", "main")
    ahead = git(clone, "rev-parse", BRANCH)
    refused(wavegit_here(clone, "pull"), f"local branch {BRANCH} is ahead of origin/{BRANCH}")
    add(clone, "A")
    refused(wavegit_here(clone, "pull"),
            f"local branch {BRANCH} has diverged from origin/{BRANCH} (it has commits origin/{BRANCH} does "
            f"not): push them, or rebase it onto origin/{BRANCH} (git rebase origin/{BRANCH} {BRANCH})")
    assert git(clone, "rev-parse", BRANCH) == ahead


def test_pull_without_a_remote_is_refused(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main", "local")
    refused(wavegit_here(tmp_path / "local", "pull"),
            "no remote 'origin': the tracker is the local branch main already")


def test_pull_before_init_says_to_run_init(remote_repo: RemoteRepo) -> None:
    (remote_repo.clone / ".wavegit").mkdir()
    (remote_repo.clone / ".wavegit" / "config.yaml").write_text(f"tracker_branch: {BRANCH}\n")
    refused(wavegit_here(remote_repo.clone, "pull"),
            f"origin/{BRANCH} does not exist: run `wavegit init` first")


def test_a_dirty_checkout_of_another_branch_pulls_and_the_help_says_only_its_own_checkout_must_be_clean(
        remote_repo: RemoteRepo) -> None:
    clone = remote_repo.clone
    assert wavegit_here(clone, "init").returncode == 0
    add(clone, "A")
    (clone / "README.md").write_text("an edit not committed\n")  # main is checked out, dirty
    result = wavegit_here(clone, "pull")
    assert result.returncode == 0, result.stderr
    assert git(clone, "rev-parse", BRANCH) == git(remote_repo.origin, "rev-parse", BRANCH)
    listed = wavegit(clone, "--help").stdout
    assert "(its checkout too, if clean)" in listed and "clean checkouts only" not in listed
