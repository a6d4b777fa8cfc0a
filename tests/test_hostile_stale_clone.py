"""A claim rests first on the tracker as this clone last fetched it; a teammate who rewinds the tracker branch
(a force-push back to an older commit) makes that snapshot one the remote no longer has. The claim's
compare-and-swap is on the remote's exact commit, so it must still see what the remote holds: here a HALT
that the rewind brought back. Real clones, a real ``wavegit run``."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.repos import git, wavegit
from tests.helpers.wave import config_text, item, make_wave_repo, write_and_push


def test_a_halt_brought_back_by_a_rewind_of_the_tracker_branch_stops_a_clone_that_fetched_past_it(
        tmp_path: Path) -> None:
    items = [item("A", ["write src/a.txt ok"], ["src/a.txt"])]
    remote = make_wave_repo(tmp_path, items, attempts=1, sandbox="none")
    write_and_push(remote.clone, {".wavegit/config.yaml": config_text(
        attempts=1, sandbox="none", tracker_branch="wavegit-tracker")}, "the tracker on a branch of its own")
    git(remote.clone, "push", "-q", "origin", "HEAD:wavegit-tracker")
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
