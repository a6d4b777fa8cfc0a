"""The tracker store contract, run against both backends (git and the GitHub API), plus what only the
GitHub backend has: Contents ``sha`` conflicts, a write that landed although its answer was lost,
large files through the blob API, and a missing branch.

The contract cases live here as one parametrised set (``backend`` fixture: ``git`` | ``github``); the
git-only cases stay in tests/test_store.py; both use tests/helpers/store.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.helpers.ghserver import BOT_TOKEN, Fault, Running, running
from tests.helpers.repos import RemoteRepo, git
from tests.helpers.store import TRACKER, Counting, WrappedStore, commit_file, item_ids, store_at, tracker_text
from wavegit.core.errors import HaltedError, UsageError, ValidationError
from wavegit.github.api import Settings
from wavegit.github.client import PyGithubClient
from wavegit.github.retry import RetryPolicy
from wavegit.github.store import GitHubStore
from wavegit.model.config import Config
from wavegit.trackerbranch.mutation import mutate
from wavegit.trackerbranch.store import OP_TRAILER, CasConflict, Change, Snapshot, TrackerStore


@dataclass
class Backend:
    name: str
    store: TrackerStore
    remote: RemoteRepo
    gh: Running


def github_store(gh: Running, **config: str) -> GitHubStore:
    client = PyGithubClient(Settings(BOT_TOKEN, gh.fake.repo, gh.url),
                            RetryPolicy(deadline_s=10, backoff_s=0.01, max_backoff_s=0.02))
    return GitHubStore(client, Config(**config))  # type: ignore[arg-type]


@pytest.fixture
def seeded(remote_repo: RemoteRepo) -> RemoteRepo:
    commit_file(remote_repo.clone, TRACKER, tracker_text())
    return remote_repo


@pytest.fixture(params=["git", "github"])
def backend(request: pytest.FixtureRequest, seeded: RemoteRepo) -> Iterator[Backend]:
    with running(seeded.origin) as gh:
        store: TrackerStore = store_at(seeded.clone) if request.param == "git" else github_store(gh)
        yield Backend(request.param, store, seeded, gh)


def origin_head(b: Backend) -> str:
    return git(b.remote.origin, "rev-parse", "main")


# --- the contract, both backends ---------------------------------------------------------------------

def test_read_gives_text_blob_and_the_branch_head(backend: Backend) -> None:
    snap = backend.store.read()
    assert snap.commit == origin_head(backend)
    assert snap.text == tracker_text()
    assert snap.blob_sha == git(backend.remote.origin, "rev-parse", f"main:{TRACKER}")


def test_write_lands_one_commit_on_the_read_head(backend: Backend) -> None:
    snap = backend.store.read()
    commit = backend.store.write(snap, Change(tracker_text("A-1")), "add A-1")
    assert commit == origin_head(backend)
    assert git(backend.remote.origin, "rev-parse", "main^") == snap.commit
    assert item_ids(backend.store.read().text) == ["A-1"]


def test_write_changes_and_deletes_other_files_in_the_same_commit(backend: Backend) -> None:
    snap = backend.store.read()
    backend.store.write(snap, Change(tracker_text("A-1"), {".wavegit/HALT": "stop\n"}), "halt")
    halted = backend.store.read()
    assert backend.store.read_file(halted, ".wavegit/HALT") == "stop\n"
    assert git(backend.remote.origin, "diff", "--name-only", "main^", "main").split() == [
        ".wavegit/HALT", TRACKER]
    backend.store.write(halted, Change(None, {".wavegit/HALT": None}), "resume")
    assert backend.store.read_file(backend.store.read(), ".wavegit/HALT") is None


def test_write_against_a_changed_tracker_is_a_conflict_and_writes_nothing(backend: Backend) -> None:
    snap = backend.store.read()
    commit_file(backend.remote.new_clone("rival"), TRACKER, tracker_text("B-1"))
    head = origin_head(backend)
    with pytest.raises(CasConflict):
        backend.store.write(snap, Change(tracker_text("A-1")), "add A-1")
    assert origin_head(backend) == head


def test_invalid_tracker_text_is_refused_before_anything_is_written(backend: Backend) -> None:
    head = origin_head(backend)
    with pytest.raises(ValidationError):
        backend.store.write(backend.store.read(), Change("version: 1\nitems: {}\n"), "broken")
    assert origin_head(backend) == head
    assert backend.gh.fake.count("PUT") == 0


def test_mutate_replays_over_an_unrelated_commit_without_calling_apply_again(backend: Backend) -> None:
    rival = backend.remote.new_clone("rival")
    apply = Counting("A-1", lambda call: commit_file(rival, f"other{call}.txt", "x\n") if call == 1 else None)
    result = mutate(backend.store, apply, message="add A-1")
    assert apply.calls == 1 and result.reapplied == 0
    assert item_ids(backend.store.read().text) == ["A-1"]
    assert git(backend.remote.origin, "show", "main:other1.txt") == "x"


def test_mutate_reapplies_over_a_rival_tracker_change(backend: Backend) -> None:
    rival = backend.remote.new_clone("rival")

    def rival_adds_b(call: int) -> None:
        if call == 1:
            commit_file(rival, TRACKER, tracker_text("B-1"))

    apply = Counting("A-1", rival_adds_b)
    result = mutate(backend.store, apply, message="add A-1")
    assert apply.calls == 2 and result.reapplied == 1
    assert item_ids(backend.store.read().text) == ["B-1", "A-1"]


def test_an_exact_change_is_not_taken_onto_a_moved_head_so_a_guard_sees_the_halt(backend: Backend) -> None:
    """A claim's write (exact) loses to a HALT committed between its read and its write on both backends
    (GitHub's contents API would have taken it onto the halted head: the tracker blob is unchanged)."""
    rival = backend.remote.new_clone("rival")
    halted: list[str] = []

    def apply(snapshot: Snapshot) -> Change:
        if not halted:
            halted.append(commit_file(rival, ".wavegit/HALT", "{}\n"))
        assert snapshot.text is not None
        return Change(tracker_text(*item_ids(snapshot.text), "A-1"), exact=True)

    def no_halt(snapshot: Snapshot) -> None:
        if backend.store.read_file(snapshot, ".wavegit/HALT") is not None:
            raise HaltedError("halted")

    with pytest.raises(HaltedError):
        mutate(backend.store, apply, message="claim A-1", guard=no_halt)
    assert origin_head(backend) == halted[0]
    assert item_ids(backend.store.read().text) == []


def test_contains_op_finds_only_our_operation_id_after_the_snapshot(backend: Backend) -> None:
    before = backend.store.read()
    result = mutate(backend.store, Counting("A-1"), message="add A-1")
    after = backend.store.read()
    assert backend.store.contains_op(after, before, result.op_id)
    assert not backend.store.contains_op(after, before, "0" * 32)
    assert not backend.store.contains_op(after, after, result.op_id)


class AnswerLost(WrappedStore):
    """Wraps a store: the write lands, then the caller is told it lost the race."""

    def write(self, expected: Snapshot, change: Change, message: str) -> str:
        self.inner.write(expected, change, message)
        raise CasConflict("answer lost")


def test_a_write_that_landed_unseen_is_found_by_its_op_id(backend: Backend) -> None:
    apply = Counting("A-1")
    result = mutate(AnswerLost(backend.store), apply, message="add A-1")
    assert apply.calls == 1 and result.attempts == 1
    assert result.commit == origin_head(backend)
    assert item_ids(backend.store.read().text) == ["A-1"]


# --- the GitHub backend only ------------------------------------------------------------------------

@pytest.fixture
def gh(seeded: RemoteRepo) -> Iterator[Running]:
    with running(seeded.origin) as server:
        yield server


def test_a_stale_contents_sha_is_a_409_conflict(gh: Running, seeded: RemoteRepo) -> None:
    store = github_store(gh)
    stale = store.read()
    store.write(stale, Change(tracker_text("A-1")), "add A-1")
    with pytest.raises(CasConflict, match="409"):
        store.write(stale, Change(tracker_text("B-1")), "add B-1")
    assert item_ids(store.read().text) == ["A-1"]


def test_a_put_that_landed_before_a_5xx_lands_exactly_once(gh: Running, seeded: RemoteRepo) -> None:
    store = github_store(gh)
    gh.fake.set_faults([None, None, Fault("5xx", after=True)])  # ref, contents, then the PUT
    result = mutate(store, Counting("A-1"), message="add A-1")
    assert item_ids(store.read().text) == ["A-1"]
    trailers = git(seeded.origin, "log", f"--format=%(trailers:key={OP_TRAILER},valueonly)", "main")
    assert trailers.split() == [result.op_id]
    assert [r.status for r in gh.fake.requests if r.method == "PUT"] == [502, 409]


def test_a_tracker_over_one_megabyte_is_read_through_the_blob_api(gh: Running, seeded: RemoteRepo) -> None:
    gh.fake.contents_limit = 100
    text = tracker_text(*(f"X-{i}" for i in range(20)))
    commit_file(seeded.clone, TRACKER, text)
    assert github_store(gh).read().text == text
    assert gh.fake.count("GET", "/git/blobs/") == 1


def test_a_missing_tracker_branch_reads_empty_and_refuses_writes(gh: Running) -> None:
    store = github_store(gh, tracker_branch="wavegit-tracker")
    snap = store.read()
    assert snap == Snapshot(None, None, None)
    with pytest.raises(UsageError, match="does not exist"):
        store.write(snap, Change(tracker_text()), "init")


def test_a_missing_tracker_file_reads_as_none_at_the_branch_head(gh: Running, seeded: RemoteRepo) -> None:
    store = github_store(gh, tracker_path=".wavegit/other.yaml")
    snap = store.read()
    assert (snap.text, snap.blob_sha, snap.commit) == (None, None, git(seeded.origin, "rev-parse", "main"))
    store.write(snap, Change(tracker_text("A-1")), "create")
    assert item_ids(store.read().text) == ["A-1"]


# --- a ruleset refusal is bad configuration, not a lost race (issue 20, point 9) ---------------------------


@pytest.mark.parametrize("exact", [False, True], ids=["contents-409", "ref-422"])
def test_a_ruleset_refusal_through_the_api_exits_2_naming_the_rule_and_is_not_retried(
        gh: Running, seeded: RemoteRepo, exact: bool) -> None:
    from wavegit.core.errors import EXIT_BAD_INPUT
    from wavegit.github.api import GitHubRuleViolation

    rule = "Changes must be made through a pull request."
    gh.fake.rulesets["main"] = (rule,)
    store = github_store(gh)
    head = origin_head_of(seeded)
    with pytest.raises(GitHubRuleViolation) as refused:
        mutate(store, lambda snap: Change(tracker_text("A-1"), exact=exact), message="add A-1")
    assert refused.value.exit_code == EXIT_BAD_INPUT and rule in str(refused.value)
    assert "repository's rules" in str(refused.value) and "race" not in str(refused.value)
    writes = gh.fake.count("PATCH", "/git/ref") if exact else gh.fake.count("PUT", "/contents/")
    assert writes == 1 and origin_head_of(seeded) == head


def origin_head_of(remote: RemoteRepo) -> str:
    return git(remote.origin, "rev-parse", "main")
