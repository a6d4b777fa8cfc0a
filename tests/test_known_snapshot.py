"""A write first rests on the tracker as this clone last fetched it (``mutate``'s ``known``): the
compare-and-swap tells whether it was still the remote's head, and nothing is decided on it alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.repos import RemoteRepo, git
from tests.helpers.store import TRACKER, Counting, commit_file, item_ids, store_at, tracker_text
from wavegit.core.errors import HaltedError
from wavegit.core.repo import discover
from wavegit.model.config import Config
from wavegit.trackerbranch import halt
from wavegit.trackerbranch.mutation import mutate
from wavegit.trackerbranch.store import Change, GitStore, Snapshot


class FetchCounting(GitStore):
    """The git store, counting the reads that fetch first."""

    fetches = 0

    def read(self, fetch: bool = True) -> Snapshot:
        self.fetches += fetch
        return super().read(fetch=fetch)


def seeded_store(remote: RemoteRepo) -> FetchCounting:
    commit_file(remote.clone, TRACKER, tracker_text("A"))
    store = FetchCounting(discover(remote.clone), Config())
    store.read()  # this clone has fetched the tracker once
    store.fetches = 0
    return store


def test_a_write_on_a_current_known_snapshot_lands_without_a_fetch(remote_repo: RemoteRepo) -> None:
    store = seeded_store(remote_repo)
    known = store.known()
    assert known is not None
    result = mutate(store, Counting("B"), message="add B", known=known)
    assert store.fetches == 0
    assert git(remote_repo.origin, "rev-parse", "main") == result.commit
    assert git(remote_repo.origin, "rev-parse", "main^") == known.commit


def test_a_write_on_a_known_snapshot_behind_the_remote_is_redone_on_a_fetched_read(
        remote_repo: RemoteRepo) -> None:
    store = seeded_store(remote_repo)
    known = store.known()
    other = remote_repo.new_clone("other")
    rival = commit_file(other, "src/other.txt", "theirs\n")  # the remote moved since this clone's fetch
    apply = Counting("B")
    result = mutate(store, apply, message="add B", known=known)
    assert store.fetches == 1 and apply.calls == 1  # refused by the lease, replayed on the fetched head
    assert git(remote_repo.origin, "rev-parse", "main^") == rival
    assert git(remote_repo.origin, "rev-parse", "main") == result.commit
    assert item_ids(store.read().text) == ["A", "B"]


def test_a_halt_seen_only_on_a_stale_known_snapshot_does_not_stop_the_write(remote_repo: RemoteRepo) -> None:
    store = seeded_store(remote_repo)
    halt.halt(store, reason="freeze", who="me")
    stale = store.known()  # HALT, as this clone last saw it
    other = remote_repo.new_clone("other")
    halt.resume(GitStore(discover(other), Config()))

    def guard(snapshot: Snapshot) -> None:
        halt.check(store, snapshot)

    result = mutate(store, Counting("B"), message="add B", guard=guard, known=stale)
    assert git(remote_repo.origin, "rev-parse", "main") == result.commit
    assert git(remote_repo.origin, "ls-tree", "--name-only", "main", ".wavegit/HALT") == ""


def test_a_halt_on_the_remote_still_stops_a_write_on_a_known_snapshot(remote_repo: RemoteRepo) -> None:
    store = seeded_store(remote_repo)
    known = store.known()
    other = remote_repo.new_clone("other")
    halt.halt(GitStore(discover(other), Config()), reason="freeze", who="them")
    head = git(remote_repo.origin, "rev-parse", "main")

    def guard(snapshot: Snapshot) -> None:
        halt.check(store, snapshot)

    with pytest.raises(HaltedError, match="freeze"):
        mutate(store, Counting("B"), message="add B", guard=guard, known=known)
    assert git(remote_repo.origin, "rev-parse", "main") == head


def test_nothing_to_do_on_a_stale_known_snapshot_is_decided_again_on_a_fetched_read(
        remote_repo: RemoteRepo) -> None:
    store = seeded_store(remote_repo)
    known = store.known()
    other = remote_repo.new_clone("other")
    commit_file(other, TRACKER, tracker_text("A", "C"))  # C exists only on the remote

    def mark_c(snapshot: Snapshot) -> Change | None:
        if "C" not in item_ids(snapshot.text):
            return None
        assert snapshot.text is not None
        return Change(snapshot.text.replace("do C", "do C now"))

    result = mutate(store, mark_c, message="mark C", known=known)
    assert result.commit is not None and store.fetches == 1
    assert "do C now" in git(remote_repo.origin, "show", f"main:{TRACKER}")


def test_a_store_without_a_remote_knows_no_snapshot(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main", "local")
    assert store_at(tmp_path / "local").known() is None
