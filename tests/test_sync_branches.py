"""``wavegit sync`` deletes the branches of settled waves whose work is in main, and keeps the others
(wavegit/sync/branches.py), on a real bare origin and in the clone."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.repos import RemoteRepo, git, wavegit
from tests.helpers.sync import commit_files, entry, make_tracker_repo, make_wave_branch, tracker_text, wave_id

W1, W2 = wave_id(1), wave_id(2)


def sync(clone: Path, *args: str, env: dict[str, str] | None = None) -> list[dict[str, object]]:
    result = wavegit(clone, "sync", "--json", *args, env=env)
    assert result.returncode == 0, result.stderr
    changes: list[dict[str, object]] = json.loads(result.stdout)
    return changes


def fates(changes: list[dict[str, object]]) -> dict[tuple[object, object], tuple[object, object]]:
    """(branch, where) -> (action, reason) of the branch entries."""
    return {(c["branch"], c["where"]): (c["action"], c["reason"]) for c in changes if c["kind"] == "branch"}


def branches(repo: Path) -> list[str]:
    return git(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/wavegit/").splitlines()


def merge_into_main(remote: RemoteRepo, *args: str) -> str:
    """Merge origin's wave branch W1 into main in the clone (``git merge ARGS``), push; main's new head."""
    clone = remote.clone
    git(clone, "fetch", "-q", "origin")
    git(clone, "checkout", "-q", "-B", "main", "origin/main")
    git(clone, "merge", "-q", *args, f"origin/wavegit/{W1}")
    if "--squash" in args:
        git(clone, "commit", "-q", "--no-edit")
    git(clone, "push", "-q", "origin", "main")
    return git(clone, "rev-parse", "HEAD")


def test_a_merged_wave_branch_is_deleted_on_origin_and_here_once_its_items_are_done(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("A", "review", wave=W1), entry("C", "review", wave=W2)])
    make_wave_branch(remote.clone, W1, ["A"])
    make_wave_branch(remote.clone, W2, ["C"])  # under review: left alone
    merge_into_main(remote, "--no-ff", "-m", "merge")
    changes = sync(remote.clone)
    assert [(c["id"], c["to"]) for c in changes if c["kind"] == "item"] == [("A", "done")]
    assert fates(changes) == {(f"wavegit/{W1}", "origin"): ("delete", "merged into main"),
                              (f"wavegit/{W1}", "local"): ("delete", "merged into main")}
    assert branches(remote.origin) == branches(remote.clone) == [f"wavegit/{W2}"]
    assert sync(remote.clone) == []


def test_a_squash_merged_wave_branch_is_deleted_by_the_rule_that_found_its_commits(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("A", "review", wave=W1), entry("B", "review", wave=W1)])
    make_wave_branch(remote.clone, W1, ["A", "B"])
    merge_into_main(remote, "--squash")
    result = wavegit(remote.clone, "sync")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert f"delete branch wavegit/{W1} on origin (its changes are in main: trailer)" in lines
    assert f"delete branch wavegit/{W1} here (its changes are in main: trailer)" in lines
    assert branches(remote.origin) == branches(remote.clone) == []


def test_a_branch_with_a_commit_not_in_main_is_kept_and_sync_says_which(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("A", "review", wave=W1), entry("B", "review", wave=W1)])
    make_wave_branch(remote.clone, W1, ["A", "B"])
    merge_into_main(remote, "--squash")
    # After the squash someone added a fix to the wave branch that main does not have.
    helper = remote.new_clone("helper")
    git(helper, "checkout", "-q", f"wavegit/{W1}")
    commit_files(helper, {"src/fix.txt": "fix\n"}, "a late fix", push_to=f"wavegit/{W1}")
    fix = git(helper, "rev-parse", "HEAD")
    changes = sync(remote.clone)
    done = [(c["id"], c["rule"]) for c in changes if c["kind"] == "item"]
    assert done == [("A", "trailer"), ("B", "trailer")]
    assert fates(changes) == {
        (f"wavegit/{W1}", "origin"): ("keep", f"1 commit not in main ({fix[:12]}); wavegit never deletes "
                                              "unmerged work"),
        # The clone's own copy is at the tip the wave pushed, all of it in main.
        (f"wavegit/{W1}", "local"): ("delete", "its changes are in main: trailer")}
    assert branches(remote.origin) == [f"wavegit/{W1}"] and branches(remote.clone) == []
    # Listed again by every sync's JSON, and nothing else happens.
    assert [c["action"] for c in sync(remote.clone)] == ["keep"]


def test_a_kept_branch_is_said_once_when_it_becomes_kept_and_again_when_its_tip_moves(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("A")])  # the wave's PR was closed: back to todo
    make_wave_branch(remote.clone, W1, ["A"])
    keep = f"keep branch wavegit/{W1} on origin: 1 commit not in main"
    first = wavegit(remote.clone, "sync")
    assert first.returncode == 0 and keep in first.stdout, first
    for _ in range(2):
        again = wavegit(remote.clone, "sync")
        assert (again.returncode, again.stdout) == (0, "in sync: nothing to change\n")
    dry = wavegit(remote.clone, "sync", "--dry-run")
    assert keep not in dry.stdout
    helper = remote.new_clone("helper")
    git(helper, "checkout", "-q", f"wavegit/{W1}")
    commit_files(helper, {"src/fix.txt": "fix\n"}, "a late fix", push_to=f"wavegit/{W1}")
    moved = wavegit(remote.clone, "sync")
    assert f"keep branch wavegit/{W1} on origin: 2 commits not in main" in moved.stdout, moved


def test_an_abandoned_wave_keeps_its_branch_but_not_the_item_branches_it_holds(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("A"), entry("B")])  # the wave's PR was closed: back to todo
    tip = make_wave_branch(remote.clone, W1, ["A", "B"])
    base = git(remote.clone, "rev-parse", f"{tip}~2")
    # A scale-out worker's item branch: A's change on the wave's base, so another commit of the same patch.
    git(remote.clone, "checkout", "-q", "--detach", base)
    git(remote.clone, "cherry-pick", f"{tip}~1")
    git(remote.clone, "push", "-q", "origin", f"HEAD:refs/heads/wavegit/items/{W1}/A")
    # One with work found nowhere else stays.
    commit_files(remote.clone, {"src/other.txt": "other\n"}, "other",
                 push_to=f"refs/heads/wavegit/items/{W1}/Z")
    changes = sync(remote.clone)
    found = fates(changes)
    on_wave = f"its commits are in main or on wavegit/{W1}"
    assert found[(f"wavegit/items/{W1}/A", "origin")] == ("delete", on_wave)
    assert found[(f"wavegit/{W1}", "origin")][0] == "keep"
    assert found[(f"wavegit/items/{W1}/Z", "origin")][0] == "keep"
    assert branches(remote.origin) == [f"wavegit/items/{W1}/Z", f"wavegit/{W1}"]


def test_keep_branches_keeps_every_branch(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("A", "review", wave=W1)], keep_branches=True)
    make_wave_branch(remote.clone, W1, ["A"])
    git(remote.clone, "branch", "-q", f"wavegit/items/{W1}/A", f"origin/wavegit/{W1}")
    merge_into_main(remote, "--no-ff", "-m", "merge")
    assert [c["kind"] for c in sync(remote.clone)] == ["item"]
    assert branches(remote.origin) == [f"wavegit/{W1}"]
    assert branches(remote.clone) == [f"wavegit/items/{W1}/A", f"wavegit/{W1}"]
    # The same repository with the environment's override deletes them.
    changes = sync(remote.clone, env={"WAVEGIT_KEEP_BRANCHES": "false"})
    assert [c["kind"] for c in changes] == ["prune", "branch", "branch"]
    assert branches(remote.origin) == branches(remote.clone) == []


def test_dry_run_says_what_it_would_delete_and_deletes_nothing(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("A", "review", wave=W1)])
    make_wave_branch(remote.clone, W1, ["A"])
    merge_into_main(remote, "--no-ff", "-m", "merge")
    result = wavegit(remote.clone, "sync", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert f"would delete branch wavegit/{W1} on origin (merged into main)" in result.stdout.splitlines()
    assert branches(remote.origin) == branches(remote.clone) == [f"wavegit/{W1}"]


def test_a_local_wave_branch_checked_out_is_kept(tmp_path: Path) -> None:
    repo = tmp_path / "solo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    tracker = tracker_text([entry("A", "done", wave=W1)])
    commit_files(repo, {".wavegit/config.yaml": "lease_ttl_s: 60\n", ".wavegit/tracker.yaml": tracker},
                 "start", push_to=None)
    make_wave_branch(repo, W1, ["A"], start="main", push=False)
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-ff", "-m", "merge", f"wavegit/{W1}")
    git(repo, "checkout", "-q", f"wavegit/{W1}")
    changes = sync(repo)
    assert fates(changes) == {(f"wavegit/{W1}", "local"): ("keep", f"checked out at {repo}")}
    git(repo, "checkout", "-q", "main")
    assert fates(sync(repo)) == {(f"wavegit/{W1}", "local"): ("delete", "merged into main")}
    assert branches(repo) == []


def test_a_remote_that_refuses_the_deletion_keeps_the_branch_and_sync_gives_its_reason(
        tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("A", "review", wave=W1)])
    make_wave_branch(remote.clone, W1, ["A"])
    merge_into_main(remote, "--no-ff", "-m", "merge")
    hook = remote.origin / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\nwhile read old new ref; do\n"
                    "  case $new in *[!0]*) ;; *) echo \"no deleting $ref\" >&2; exit 1;; esac\ndone\n")
    hook.chmod(0o755)
    changes = sync(remote.clone)
    assert [(c["id"], c["to"]) for c in changes if c["kind"] == "item"] == [("A", "done")]
    assert fates(changes) == {
        (f"wavegit/{W1}", "origin"): (
            "keep", "origin refused to delete it: [remote rejected] (pre-receive hook declined)"),
        (f"wavegit/{W1}", "local"): ("delete", "merged into main")}
    assert branches(remote.origin) == [f"wavegit/{W1}"]


def test_a_wave_branch_updated_with_main_then_squashed_is_deleted_merge_commit_and_all(
        tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("A", "review", wave=W1), entry("B", "review", wave=W1)])
    make_wave_branch(remote.clone, W1, ["A", "B"])
    # GitHub's "update branch": main moved on, and was merged into the wave branch.
    helper = remote.new_clone("helper")
    commit_files(helper, {"NEWS": "news\n"}, "news on main")
    git(helper, "checkout", "-q", f"wavegit/{W1}")
    git(helper, "merge", "-q", "--no-ff", "-m", "Merge main into the wave", "main")
    git(helper, "push", "-q", "origin", f"wavegit/{W1}")
    merge_into_main(remote, "--squash")
    changes = sync(remote.clone)
    done = [(c["id"], c["rule"]) for c in changes if c["kind"] == "item"]
    assert done == [("A", "trailer"), ("B", "trailer")]
    assert fates(changes)[(f"wavegit/{W1}", "origin")] == ("delete", "its changes are in main: trailer")
    assert branches(remote.origin) == branches(remote.clone) == []
