"""``wavegit sync`` in a shallow clone (``actions/checkout`` with ``fetch-depth: 1``): the base branch's
history is cut off there, so sync deepens it before looking for merges, or stops (exit 2) saying why."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.repos import RemoteRepo, git, wavegit
from tests.helpers.sync import commit_files
from tests.helpers.wave import item, make_wave_repo, origin_item, run


def merged_wave(tmp_path: Path) -> tuple[RemoteRepo, str]:
    """A real one-item wave merged into main (a merge commit, then one more commit on top); the wave id."""
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])], sandbox="none")
    outcome = run(remote.clone, push=True)
    assert outcome.exit_code == 0, outcome.report.notes
    reviewer = remote.new_clone("reviewer")
    git(reviewer, "config", "user.email", "rev@example.com")
    git(reviewer, "config", "user.name", "Reviewer")
    git(reviewer, "merge", "-q", "--no-ff", "-m", "merge", f"origin/wavegit/{outcome.report.wave_id}")
    git(reviewer, "push", "-q", "origin", "main")
    commit_files(reviewer, {"NEWS": "later\n"}, "later work")
    return remote, outcome.report.wave_id


def shallow_clone(remote: RemoteRepo, name: str = "shallow") -> Path:
    path = remote.base / name
    git(remote.base, "clone", "-q", "--depth", "1", f"file://{remote.origin}", str(path))
    git(path, "config", "user.email", "ci@example.com")
    git(path, "config", "user.name", "CI")
    assert git(path, "rev-parse", "--is-shallow-repository") == "true"
    return path


def test_sync_in_a_depth_1_clone_deepens_it_and_marks_the_merged_item_done(tmp_path: Path) -> None:
    remote, _ = merged_wave(tmp_path)
    clone = shallow_clone(remote)
    result = wavegit(clone, "sync", "--json")
    assert result.returncode == 0, result.stderr
    changes = {c["id"]: c for c in json.loads(result.stdout) if c["kind"] == "item"}
    assert {i: (c["from"], c["to"]) for i, c in changes.items()} == {"A": ("review", "done")}
    assert origin_item(remote, "A").status == "done"
    assert git(clone, "rev-parse", "--is-shallow-repository") == "false"


def test_sync_in_a_shallow_clone_whose_remote_cannot_deepen_it_stops_with_exit_2(tmp_path: Path) -> None:
    remote, _ = merged_wave(tmp_path)
    clone = shallow_clone(remote)
    # The remote now answers fetches of the branches but not of the history before them.
    gone = remote.base / "gone.git"
    git(remote.base, "clone", "-q", "--bare", "--depth", "1", f"file://{remote.origin}", str(gone))
    git(clone, "remote", "set-url", "origin", f"file://{gone}")
    result = wavegit(clone, "sync")
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "shallow clone" in lines[0] and "fetch-depth: 0" in lines[0], lines
    assert "Traceback" not in result.stderr
    assert origin_item(remote, "A").status == "review"


def test_sync_in_a_shallow_clone_without_its_remote_stops_with_exit_2(tmp_path: Path) -> None:
    remote, _ = merged_wave(tmp_path)
    clone = shallow_clone(remote)
    git(clone, "remote", "remove", "origin")
    result = wavegit(clone, "sync", "--dry-run")
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "shallow clone" in result.stderr and "no remote 'origin'" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
