"""The compare-and-swap git store: reads, plumbing-only writes, races, replay, re-apply, op-id dedupe."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tests.helpers.repos import RemoteRepo, git
from tests.helpers.store import TRACKER, Counting, commit_file, item_ids, store_at, tracker_text
from wavegit.core import git as wgit
from wavegit.core.errors import HaltedError, RaceLostError, ValidationError
from wavegit.core.repo import discover
from wavegit.model.config import Config
from wavegit.trackerbranch.mutation import mutate, with_trailer
from wavegit.trackerbranch.store import (
    OP_TRAILER,
    CasConflict,
    Change,
    GitStore,
    RemoteError,
    Snapshot,
    StaleLockError,
)


def checkout_state(path: Path) -> tuple[str, str, str]:
    """Everything a write must not change in a checkout: status, index entries, HEAD."""
    return (git(path, "status", "--porcelain", "--untracked-files=all"), git(path, "ls-files", "-s"),
            git(path, "rev-parse", "HEAD"))


@pytest.fixture
def local_repo(tmp_path: Path) -> Path:
    """A repository without a remote, `main` checked out, one commit holding an empty tracker."""
    path = tmp_path / "local"
    git(tmp_path, "init", "-q", "-b", "main", str(path))
    (path / ".wavegit").mkdir()
    (path / TRACKER).write_text(tracker_text())
    (path / "README.md").write_text("hello\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    return path


@pytest.fixture
def seeded(remote_repo: RemoteRepo) -> RemoteRepo:
    """The remote repo with an empty tracker committed and pushed."""
    commit_file(remote_repo.clone, TRACKER, tracker_text())
    return remote_repo


# --- reading -------------------------------------------------------------------------------------------


def test_read_of_a_repo_without_commits_has_no_branch(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main", "empty")
    assert store_at(tmp_path / "empty").read() == Snapshot(None, None, None)


def test_read_without_tracker_file_gives_the_commit_and_no_text(remote_repo: RemoteRepo) -> None:
    snapshot = store_at(remote_repo.clone).read()
    assert snapshot.text is None and snapshot.blob_sha is None
    assert snapshot.commit == git(remote_repo.origin, "rev-parse", "main")


def test_read_fetches_the_remote_head_not_the_local_branch(seeded: RemoteRepo) -> None:
    other = seeded.new_clone("other")
    commit_file(other, TRACKER, tracker_text("A-1"))
    snapshot = store_at(seeded.clone).read()
    assert snapshot.text == tracker_text("A-1")
    assert snapshot.commit == git(seeded.origin, "rev-parse", "main")
    assert snapshot.blob_sha == git(seeded.origin, "rev-parse", f"main:{TRACKER}")
    assert git(seeded.clone, "rev-parse", "main") != snapshot.commit


def test_read_without_fetch_uses_the_remote_tracking_ref_only(seeded: RemoteRepo) -> None:
    before = git(seeded.clone, "rev-parse", "origin/main")
    commit_file(seeded.new_clone("other"), TRACKER, tracker_text("A-1"))
    assert store_at(seeded.clone).read(fetch=False).commit == before


def test_read_of_a_branch_missing_on_the_remote_has_no_commit(remote_repo: RemoteRepo) -> None:
    assert store_at(remote_repo.clone, tracker_branch="wavegit-tracker").read().commit is None


def test_read_blob_sha_names_the_blob_read_returns_and_read_blob_gives_its_text(seeded: RemoteRepo) -> None:
    commit_file(seeded.new_clone("other"), TRACKER, tracker_text("A-1"))
    store = store_at(seeded.clone)
    blob_sha = store.read_blob_sha()  # fetches, like read()
    snapshot = store.read(fetch=False)
    assert blob_sha == snapshot.blob_sha == git(seeded.origin, "rev-parse", f"main:{TRACKER}")
    assert store.read_blob(blob_sha) == snapshot.text == tracker_text("A-1")


def test_read_blob_sha_without_fetch_uses_the_remote_tracking_ref_only(seeded: RemoteRepo) -> None:
    before = git(seeded.clone, "rev-parse", f"origin/main:{TRACKER}")
    commit_file(seeded.new_clone("other"), TRACKER, tracker_text("A-1"))
    assert store_at(seeded.clone).read_blob_sha(fetch=False) == before


def test_read_blob_sha_of_a_local_repo_reads_the_local_branch(local_repo: Path) -> None:
    assert store_at(local_repo).read_blob_sha() == git(local_repo, "rev-parse", f"main:{TRACKER}")


def test_read_blob_sha_is_none_without_branch_or_file_or_for_a_directory(
        tmp_path: Path, local_repo: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main", "empty")
    assert store_at(tmp_path / "empty").read_blob_sha() is None
    assert store_at(local_repo, tracker_branch="no-such-branch").read_blob_sha() is None
    git(local_repo, "rm", "-q", TRACKER)
    (local_repo / TRACKER).mkdir(parents=True)
    (local_repo / TRACKER / "inner").write_text("x\n")
    git(local_repo, "add", TRACKER)
    git(local_repo, "commit", "-q", "-m", "the tracker path is a directory now")
    assert store_at(local_repo).read_blob_sha() is None


def test_read_file_returns_other_files_at_the_snapshot_commit(local_repo: Path) -> None:
    store = store_at(local_repo)
    snapshot = store.read()
    assert store.read_file(snapshot, "README.md") == "hello\n"
    assert store.read_file(snapshot, ".wavegit/HALT") is None
    assert store.read_file(Snapshot(None, None, None), "README.md") is None


def test_read_head_file_fetches_and_reads_the_file_at_the_remote_head(seeded: RemoteRepo) -> None:
    store = store_at(seeded.clone)
    assert store.read_head_file(".wavegit/HALT") is None
    other = seeded.new_clone("other")
    (other / ".wavegit" / "HALT").write_text("stop\n")
    git(other, "add", ".wavegit/HALT")
    git(other, "commit", "-q", "-m", "halt")
    git(other, "push", "-q", "origin", "HEAD:main")
    assert store.read_head_file(".wavegit/HALT") == "stop\n"


def test_fetch_from_an_unreachable_remote_is_a_clear_remote_error(seeded: RemoteRepo) -> None:
    git(seeded.clone, "remote", "set-url", "origin", str(seeded.base / "gone.git"))
    with pytest.raises(RemoteError, match=r"cannot fetch main from origin: fatal: .*gone\.git"):
        store_at(seeded.clone).read()


# --- writing -------------------------------------------------------------------------------------------


def test_write_pushes_one_commit_on_top_of_the_read_head(seeded: RemoteRepo) -> None:
    store = store_at(seeded.clone)
    snapshot = store.read()
    commit = store.write(snapshot, Change(tracker_text("A-1")), "add A-1")
    assert git(seeded.origin, "rev-parse", "main") == commit
    assert git(seeded.origin, "rev-parse", f"{commit}^") == snapshot.commit
    assert git(seeded.origin, "show", f"main:{TRACKER}") + "\n" == tracker_text("A-1")
    assert git(seeded.clone, "rev-parse", "origin/main") == commit
    assert store.read().text == tracker_text("A-1")


def test_write_with_a_remote_leaves_index_work_tree_and_local_branch_alone(seeded: RemoteRepo) -> None:
    clone = seeded.clone
    (clone / "README.md").write_text("staged edit\n")
    git(clone, "add", "README.md")
    (clone / TRACKER).write_text("# unstaged edit of the tracker\n")
    (clone / "scratch.txt").write_text("untracked\n")
    before = checkout_state(clone)
    store = store_at(clone)
    store.write(store.read(), Change(tracker_text("A-1"), {"docs/new.md": "new\n"}), "add A-1")
    assert checkout_state(clone) == before
    assert (clone / TRACKER).read_text() == "# unstaged edit of the tracker\n"
    assert not (clone / "docs").exists()


def test_a_tracker_commit_holds_the_text_exactly_by_gits_identity_and_leaves_no_ref(
        local_repo: Path) -> None:
    # A committed attribute that would rewrite the text on its way into git (CRLF conversion, a filter)
    # plays no part, and the one fast-import that writes the commit leaves no ref of its own behind.
    (local_repo / ".gitattributes").write_text("* text eol=crlf filter=upper\n")
    git(local_repo, "config", "filter.upper.clean", "tr a-z A-Z")
    git(local_repo, "add", ".gitattributes")
    git(local_repo, "commit", "-q", "-m", "attributes")
    refs_before = git(local_repo, "for-each-ref", "--format=%(refname)")
    store = store_at(local_repo)
    text = tracker_text("A-1").replace("\n", "\r\n", 1)
    commit = store.write(store.read(), Change(text, {"notes/caf\u00e9 \"x\".txt": "lower\n"}), "add A-1")
    assert git(local_repo, "cat-file", "blob", f"{commit}:{TRACKER}") + "\n" == text
    assert git(local_repo, "cat-file", "blob", f"{commit}:notes/caf\u00e9 \"x\".txt") == "lower"
    said = git(local_repo, "log", "-1", "--format=%an <%ae> %ad|%cn <%ce> %cd|%s", "--date=raw", commit)
    assert said == "|".join([git(local_repo, "var", "GIT_AUTHOR_IDENT"),
                             git(local_repo, "var", "GIT_COMMITTER_IDENT"), "add A-1"])
    assert git(local_repo, "for-each-ref", "--format=%(refname)") == refs_before


def test_write_changes_and_deletes_other_files_in_the_same_commit(local_repo: Path) -> None:
    store = store_at(local_repo)
    commit = store.write(store.read(), Change(None, {".wavegit/HALT": "stop\n", "README.md": None}), "halt")
    assert git(local_repo, "ls-tree", "-r", "--name-only", commit).splitlines() == [".wavegit/HALT", TRACKER]
    assert git(local_repo, "diff-tree", "--no-commit-id", "--name-status", "-r", commit).splitlines() == [
        "A\t.wavegit/HALT", "D\tREADME.md"]


def test_local_write_refreshes_a_clean_checkout_of_the_branch(local_repo: Path) -> None:
    store = store_at(local_repo)
    commit = store.write(store.read(), Change(tracker_text("A-1"), {".wavegit/HALT": "stop\n"}), "add A-1")
    assert git(local_repo, "rev-parse", "HEAD") == commit
    assert git(local_repo, "status", "--porcelain", "--untracked-files=all") == ""
    assert (local_repo / TRACKER).read_text() == tracker_text("A-1")
    assert (local_repo / ".wavegit/HALT").read_text() == "stop\n"


def test_local_write_keeps_the_users_edit_of_a_dirty_tracker(local_repo: Path) -> None:
    (local_repo / TRACKER).write_text("# my half-done edit\n")
    store = store_at(local_repo)
    store.write(store.read(), Change(tracker_text("A-1")), "add A-1")
    assert (local_repo / TRACKER).read_text() == "# my half-done edit\n"
    assert git(local_repo, "show", f":{TRACKER}") + "\n" == tracker_text()  # index untouched too


def test_local_write_leaves_a_checkout_of_another_branch_alone(local_repo: Path) -> None:
    git(local_repo, "switch", "-q", "-c", "feature")
    before = checkout_state(local_repo)
    store = store_at(local_repo)
    commit = store.write(store.read(), Change(tracker_text("A-1")), "add A-1")
    assert checkout_state(local_repo) == before
    assert git(local_repo, "rev-parse", "main") == commit


def test_local_write_refreshes_the_linked_worktree_that_has_the_branch(
        local_repo: Path, tmp_path: Path) -> None:
    git(local_repo, "switch", "-q", "-c", "feature")
    git(local_repo, "worktree", "add", "-q", str(tmp_path / "linked"), "main")
    store = store_at(local_repo)
    store.write(store.read(), Change(tracker_text("A-1")), "add A-1")
    assert (tmp_path / "linked" / TRACKER).read_text() == tracker_text("A-1")
    assert git(tmp_path / "linked", "status", "--porcelain") == ""
    assert (local_repo / TRACKER).read_text() == tracker_text()


def test_write_against_a_moved_branch_is_a_conflict_and_writes_nothing(seeded: RemoteRepo) -> None:
    store = store_at(seeded.clone)
    stale = store.read()
    head = commit_file(seeded.new_clone("other"), "other.txt", "x\n")
    with pytest.raises(CasConflict):
        store.write(stale, Change(tracker_text("A-1")), "add A-1")
    assert git(seeded.origin, "rev-parse", "main") == head


def test_local_write_against_a_moved_branch_is_a_conflict(local_repo: Path) -> None:
    store = store_at(local_repo)
    stale = store.read()
    head = commit_file(local_repo, "other.txt", "x\n", push=False)
    with pytest.raises(CasConflict):
        store.write(stale, Change(tracker_text("A-1")), "add A-1")
    assert git(local_repo, "rev-parse", "main") == head


def test_invalid_tracker_text_is_refused_before_anything_is_written(seeded: RemoteRepo) -> None:
    bad = tracker_text("A-1") + "  - id: A-1\n    prompt: again\n    owns: [x]\n    test: 'true'\n"
    head = git(seeded.origin, "rev-parse", "main")
    store = store_at(seeded.clone)
    with pytest.raises(ValidationError, match=r"\.wavegit/tracker\.yaml:\d+:\d+: "):
        store.write(store.read(), Change(bad), "dup")
    assert git(seeded.origin, "rev-parse", "main") == head
    bad_blob = git(seeded.clone, "hash-object", "--stdin", input=bad)
    assert wgit.run(["cat-file", "-e", bad_blob], cwd=seeded.clone, check=False).returncode != 0


def test_push_refused_by_a_remote_hook_is_a_remote_error_not_a_race(seeded: RemoteRepo) -> None:
    hook = seeded.origin / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'branch is protected' >&2\nexit 1\n")
    hook.chmod(0o755)
    store = store_at(seeded.clone)
    with pytest.raises(RemoteError, match=r"hook declined\); the remote said: branch is protected"):
        mutate(store, lambda s: Change(tracker_text("A-1")), message="add A-1", deadline_s=30)


# --- mutate --------------------------------------------------------------------------------------------


def test_mutate_commits_with_an_operation_id_trailer(seeded: RemoteRepo) -> None:
    result = mutate(store_at(seeded.clone), Counting("A-1"), message="wavegit: add A-1")
    trailer = git(seeded.origin, "log", "-1", f"--format=%(trailers:key={OP_TRAILER},valueonly)")
    assert result.op_id and trailer == result.op_id
    assert (result.attempts, result.reapplied) == (1, 0)


def test_mutate_with_nothing_to_do_commits_nothing(seeded: RemoteRepo) -> None:
    head = git(seeded.origin, "rev-parse", "main")
    result = mutate(store_at(seeded.clone), lambda s: None, message="noop")
    assert result.commit is None and result.attempts == 0
    assert git(seeded.origin, "rev-parse", "main") == head


def test_racing_an_unrelated_commit_replays_without_calling_apply_again(seeded: RemoteRepo) -> None:
    other = seeded.new_clone("other")
    unrelated: list[str] = []
    apply = Counting("A-1", lambda call: unrelated.append(commit_file(other, "other.txt", "x\n")))
    result = mutate(store_at(seeded.clone), apply, message="add A-1")
    assert apply.calls == 1
    assert (result.attempts, result.reapplied) == (2, 0)
    assert git(seeded.origin, "rev-parse", "main^") == unrelated[0]
    assert item_ids(store_at(seeded.clone).read().text) == ["A-1"]


def test_racing_a_tracker_change_reapplies_on_the_new_tracker(seeded: RemoteRepo) -> None:
    other = seeded.new_clone("other")

    def rival_adds_b(call: int) -> None:
        if call == 1:
            commit_file(other, TRACKER, tracker_text("B-1"))

    apply = Counting("A-1", rival_adds_b)
    result = mutate(store_at(seeded.clone), apply, message="add A-1")
    assert apply.calls == 2
    assert (result.attempts, result.reapplied) == (2, 1)
    assert item_ids(store_at(seeded.clone).read().text) == ["B-1", "A-1"]


def test_a_guard_runs_again_on_a_replayed_head_and_its_refusal_writes_nothing(seeded: RemoteRepo) -> None:
    """A precondition outside the tracker blob (here: a HALT file) that lands between read and push wins,
    although the tracker is unchanged and the change would be replayed without calling apply."""
    other = seeded.new_clone("other")
    store = store_at(seeded.clone)
    rival: list[str] = []
    apply = Counting("A-1", lambda call: rival.append(commit_file(other, ".wavegit/HALT", "{}\n")))
    guarded: list[str | None] = []

    def no_halt(snapshot: Snapshot) -> None:
        guarded.append(snapshot.commit)
        if store.read_file(snapshot, ".wavegit/HALT") is not None:
            raise HaltedError("halted")

    with pytest.raises(HaltedError):
        mutate(store, apply, message="add A-1", guard=no_halt)
    assert apply.calls == 1 and guarded[-1] == rival[0] and len(guarded) == 2
    assert git(seeded.origin, "rev-parse", "main") == rival[0]
    assert item_ids(store.read().text) == []


class AnswerLost(GitStore):
    """A store whose write lands but reports failure, as when a push succeeds and its answer is lost."""

    failure: type[Exception] = CasConflict

    def write(self, expected: Snapshot, change: Change, message: str) -> str:
        super().write(expected, change, message)
        if self.failure is RemoteError:
            raise RemoteError("cannot push", wgit.GitError(["push"], 128, "fatal: the remote hung up"))
        raise CasConflict("answer lost")


@pytest.mark.parametrize("failure", [CasConflict, RemoteError], ids=["seen-as-race", "seen-as-network-error"])
def test_a_write_that_landed_unseen_is_found_by_its_op_id_not_applied_twice(
        seeded: RemoteRepo, failure: type[Exception]) -> None:
    store = AnswerLost(discover(seeded.clone), Config())
    store.failure = failure
    apply = Counting("A-1")
    result = mutate(store, apply, message="add A-1")
    assert apply.calls == 1 and result.attempts == 1
    assert result.commit == git(seeded.origin, "rev-parse", "main")
    assert item_ids(store_at(seeded.clone).read().text) == ["A-1"]


def test_a_write_that_landed_unseen_right_at_the_deadline_is_a_success_not_a_lost_race(
        seeded: RemoteRepo) -> None:
    store = AnswerLost(discover(seeded.clone), Config())
    result = mutate(store, Counting("A-1"), message="add A-1", deadline_s=0.001)
    assert result.commit == git(seeded.origin, "rev-parse", "main")
    assert item_ids(store_at(seeded.clone).read().text) == ["A-1"]


class AlwaysRaced(GitStore):
    """Someone commits something unrelated right before every one of our writes."""

    rival: Path

    def write(self, expected: Snapshot, change: Change, message: str) -> str:
        commit_file(self.rival, "other.txt", f"{expected.commit}\n")
        return super().write(expected, change, message)


def test_losing_every_race_until_the_deadline_raises_race_lost(seeded: RemoteRepo) -> None:
    store = AlwaysRaced(discover(seeded.clone), Config())
    store.rival = seeded.new_clone("rival")
    apply = Counting("A-1")
    with pytest.raises(RaceLostError, match=r"origin/main after \d+ attempts") as caught:
        mutate(store, apply, message="add A-1", deadline_s=0.6)
    assert caught.value.exit_code == 4
    assert apply.calls == 1  # only unrelated commits raced us: replayed, never re-applied
    assert "A-1" not in git(seeded.origin, "show", f"main:{TRACKER}")


@pytest.mark.parametrize("lock", ["HEAD.lock", "refs/heads/main.lock"])
def test_a_stale_lock_on_the_remote_is_named_when_the_write_gives_up(seeded: RemoteRepo,
                                                                          lock: str) -> None:
    # What a `kill -9` of receive-pack between moving main and releasing HEAD.lock leaves on the remote.
    (seeded.origin / lock).write_text("")
    head = git(seeded.origin, "rev-parse", "main")
    named = rf"on the lock file \S*{lock} while the branch stood still"
    with pytest.raises(StaleLockError, match=named) as caught:
        mutate(store_at(seeded.clone), Counting("A-1"), message="add A-1", deadline_s=30, stale_lock_s=0.3)
    assert caught.value.exit_code == 4
    assert git(seeded.origin, "rev-parse", "main") == head


def test_a_stale_lock_in_a_local_repo_is_named_not_reported_as_a_lost_race(local_repo: Path) -> None:
    lock = local_repo / ".git" / "refs" / "heads" / "main.lock"
    lock.write_text("")
    head = git(local_repo, "rev-parse", "main")
    with pytest.raises(StaleLockError, match=rf"^cannot write to main: .* on the lock file {lock}") as caught:
        mutate(store_at(local_repo), Counting("A-1"), message="add A-1", deadline_s=30, stale_lock_s=0.3)
    assert "race" not in str(caught.value)
    assert git(local_repo, "rev-parse", "main") == head


def test_validation_failure_inside_mutate_writes_nothing(seeded: RemoteRepo) -> None:
    head = git(seeded.origin, "rev-parse", "main")
    with pytest.raises(ValidationError):
        mutate(store_at(seeded.clone), lambda s: Change("version: 1\nitems: {}\n"), message="bad")
    assert git(seeded.origin, "rev-parse", "main") == head


# --- trailers ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("message", "expected"), [
    ("subject", "subject\n\nWavegit-Op: 1\n"),
    ("subject\n\nbody text\n", "subject\n\nbody text\n\nWavegit-Op: 1\n"),
    ("subject\n\nWavegit-Item: A-1", "subject\n\nWavegit-Item: A-1\nWavegit-Op: 1\n"),
])
def test_with_trailer_joins_an_existing_trailer_block_or_starts_one(message: str, expected: str) -> None:
    assert with_trailer(message, OP_TRAILER, "1") == expected


def test_push_to_an_unreachable_remote_is_tried_once_and_reported(seeded: RemoteRepo) -> None:
    git(seeded.clone, "remote", "set-url", "--push", "origin", str(seeded.base / "gone.git"))
    head = git(seeded.origin, "rev-parse", "main")
    apply = Counting("A-1")
    with pytest.raises(RemoteError, match=r"cannot push the tracker commit to origin/main: .*gone\.git"):
        mutate(store_at(seeded.clone), apply, message="add A-1")
    assert apply.calls == 1
    assert git(seeded.origin, "rev-parse", "main") == head


@pytest.mark.parametrize("fetches", ["+refs/heads/*:refs/remotes/origin/*", None], ids=["glob", "none"])
def test_a_write_moves_this_clones_tracking_ref_with_its_push_whatever_the_remote_fetches(
        seeded: RemoteRepo, fetches: str | None) -> None:
    # The push itself moves it (one `update-ref` fewer after each tracker write), also where no fetch
    # refspec of the remote names it.
    git(seeded.clone, "config", "--unset-all", "remote.origin.fetch")
    if fetches:
        git(seeded.clone, "config", "remote.origin.fetch", fetches)
    store = store_at(seeded.clone)
    result = mutate(store, lambda snap: Change(tracker_text("A-1")), message="add A-1")
    assert git(seeded.clone, "rev-parse", "refs/remotes/origin/main") == result.commit
    assert git(seeded.origin, "rev-parse", "main") == result.commit


# --- riders: refs pushed with a tracker commit, atomically ----------------------------------------------


def test_a_commit_riding_with_a_branch_lands_both_in_one_push(seeded: RemoteRepo) -> None:
    store = store_at(seeded.clone)
    git(seeded.clone, "branch", "wave", "HEAD")
    with store.riding(lambda: ["refs/heads/wave:refs/heads/wave"]):
        result = mutate(store, lambda snap: Change(tracker_text("A-1")), message="add A-1")
    assert git(seeded.origin, "rev-parse", "main") == result.commit
    assert git(seeded.origin, "rev-parse", "wave") == git(seeded.clone, "rev-parse", "wave")
    # Outside the block, writes go alone again.
    mutate(store, lambda snap: Change(tracker_text("A-2")), message="add A-2")
    assert git(seeded.origin, "rev-parse", "wave") == git(seeded.clone, "rev-parse", "wave")


def test_a_rider_refused_as_non_fast_forward_is_no_lost_race(seeded: RemoteRepo) -> None:
    # Retried as a race, it would be refused again until the deadline; it is the caller's to push alone.
    store = store_at(seeded.clone)
    git(seeded.clone, "branch", "wave", "HEAD~1")
    git(seeded.clone, "push", "-q", "origin", "HEAD:refs/heads/wave")
    main = git(seeded.origin, "rev-parse", "main")
    with store.riding(lambda: ["refs/heads/wave:refs/heads/wave"]), pytest.raises(RemoteError):
        mutate(store, lambda snap: Change(tracker_text("A-1")), message="add A-1", deadline_s=30)
    assert git(seeded.origin, "rev-parse", "main") == main  # nothing landed


def test_a_tracker_moved_while_its_atomic_push_runs_is_a_lost_race_retried(seeded: RemoteRepo) -> None:
    # The remote's ref transaction fails as a whole ("atomic transaction failed" on every ref); the race is
    # told by its message naming the tracker's ref, and the write lands on the moved head.
    hook = seeded.origin / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\ngrep -q ' refs/heads/wave$' && [ ! -e \"$0.once\" ] && touch \"$0.once\" "
                    "&& sleep 1\nexit 0\n")
    hook.chmod(0o755)
    other = seeded.new_clone("other")
    store = store_at(seeded.clone)
    git(seeded.clone, "branch", "wave", "HEAD")
    mover = threading.Timer(0.4, lambda: commit_file(other, "elsewhere.txt", "moved\n"))
    mover.start()
    with store.riding(lambda: ["refs/heads/wave:refs/heads/wave"]):
        result = mutate(store, lambda snap: Change(tracker_text("A-1")), message="add A-1", deadline_s=30)
    mover.join()
    assert result.attempts == 2
    assert git(seeded.origin, "rev-parse", "main") == result.commit
    assert git(seeded.origin, "show", "main:elsewhere.txt") == "moved"
