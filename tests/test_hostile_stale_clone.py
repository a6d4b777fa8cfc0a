"""A claim rests first on the tracker as this clone last fetched it; a teammate who rewinds the tracker branch
(a force-push back to an older commit) makes that snapshot one the remote no longer has. The claim's
compare-and-swap is on the remote's exact commit, so it must still see what the remote holds: here a HALT
that the rewind brought back. Real clones, a real ``wavegit run``."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.repos import RemoteRepo, git, wavegit
from tests.helpers.wave import config_text, item, make_wave_repo, write_and_push


def tracker_branch_repo(base: Path, item_ids: list[str]) -> RemoteRepo:
    """Items writing their own file, on ``wavegit-tracker`` (the tracker on a branch of its own: ``run``'s
    fetch of the base branch for its config leaves the clone's copy of it as last fetched)."""
    items = [item(i, [f"write src/{i}.txt ok"], [f"src/{i}.txt"]) for i in item_ids]
    remote = make_wave_repo(base, items, attempts=1, sandbox="none")
    write_and_push(remote.clone, {".wavegit/config.yaml": config_text(
        attempts=1, sandbox="none", tracker_branch="wavegit-tracker")}, "the tracker on a branch of its own")
    git(remote.clone, "push", "-q", "origin", "HEAD:wavegit-tracker")
    return remote


def test_a_halt_brought_back_by_a_rewind_of_the_tracker_branch_stops_a_clone_that_fetched_past_it(
        tmp_path: Path) -> None:
    remote = tracker_branch_repo(tmp_path, ["A"])
    teammate = remote.new_clone("teammate")
    assert wavegit(teammate, "halt", "--reason", "freeze").returncode == 0
    halted = git(remote.origin, "rev-parse", "wavegit-tracker")
    assert wavegit(teammate, "resume").returncode == 0
    git(remote.clone, "fetch", "-q", "origin")  # this clone last saw the branch resumed
    git(teammate, "push", "-q", "--force", "origin", f"{halted}:refs/heads/wavegit-tracker")
    result = wavegit(remote.clone, "run")
    assert result.returncode == 3, result.stdout + result.stderr
    assert "halted" in result.stderr and "freeze" in result.stderr
    assert git(remote.origin, "rev-parse", "wavegit-tracker") == halted  # nothing claimed


def test_an_item_a_teammate_marked_done_since_the_last_fetch_is_not_said_to_be_another_schedulers(
        tmp_path: Path) -> None:
    # The claim's first try rests on the tracker as last fetched, where B was todo; the skip reason said
    # "lost the claim race: another scheduler claimed it first (done)" though no scheduler ever held B.
    remote = tracker_branch_repo(tmp_path, ["A", "B"])
    git(remote.clone, "fetch", "-q", "origin")
    assert wavegit(remote.new_clone("teammate"), "done", "B").returncode == 0
    result = wavegit(remote.clone, "run", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert [i["id"] for i in report["items"]] == ["A"]
    assert report["skipped"] == [
        {"id": "B", "reason": "changed on the tracker before the claim landed: done now, in no wave"}]
