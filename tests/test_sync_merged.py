"""``wavegit sync`` finds merges of every kind (wavegit/sync/merged.py): real waves, merged by hand in
a reviewer's clone (squash, rebase, cherry-pick) and pushed to a bare origin, then ``wavegit sync --json``."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from tests.helpers.repos import RemoteRepo, git, wavegit
from tests.helpers.sync import commit_files, entry, make_tracker_repo, wave_id
from tests.helpers.wave import item, make_wave_repo, origin_item, run

W1 = wave_id(1)
ITEMS = [item("A", ["write src/a.txt ok"], ["src/a.txt"]), item("B", ["write src/b.txt ok"], ["src/b.txt"])]


def wave(tmp_path: Path, *, push: bool = True) -> tuple[RemoteRepo, str]:
    """A real two-item wave (A, B) in review; the wave id."""
    remote = make_wave_repo(tmp_path, ITEMS, sandbox="none")
    outcome = run(remote.clone, push=push)
    assert outcome.exit_code == 0, outcome.report.notes
    return remote, outcome.report.wave_id


def reviewer(remote: RemoteRepo) -> Path:
    """A second clone, on an up-to-date main, where a person merges."""
    clone = remote.new_clone("reviewer")
    git(clone, "config", "user.email", "rev@example.com")
    git(clone, "config", "user.name", "Reviewer")
    return clone


def sync(remote: RemoteRepo) -> dict[str, dict[str, object]]:
    result = wavegit(remote.clone, "sync", "--json")
    assert result.returncode == 0, result.stderr
    return {str(c["id"]): c for c in json.loads(result.stdout) if c["kind"] == "item"}


def statuses(remote: RemoteRepo) -> dict[str, str]:
    return {i: origin_item(remote, i).status for i in "AB"}


def test_a_squash_merge_with_its_message_is_found_by_the_wavegit_item_trailers(tmp_path: Path) -> None:
    remote, wave_id = wave(tmp_path)
    clone = reviewer(remote)
    git(clone, "merge", "-q", "--squash", f"origin/wavegit/{wave_id}")
    git(clone, "commit", "-q", "--no-edit")  # git's SQUASH_MSG quotes each squashed message, trailers too
    git(clone, "push", "-q", "origin", "main")
    squash = git(clone, "rev-parse", "HEAD")
    changes = sync(remote)
    assert {i: (c["to"], c["rule"], c["merge_sha"]) for i, c in changes.items()} == {
        "A": ("done", "trailer", squash), "B": ("done", "trailer", squash)}
    assert statuses(remote) == {"A": "done", "B": "done"}
    assert origin_item(remote, "A").merge_sha == squash
    assert sync(remote) == {}


def test_a_squash_merge_with_a_new_message_is_found_by_content(tmp_path: Path) -> None:
    remote, wave_id = wave(tmp_path)
    clone = reviewer(remote)
    git(clone, "merge", "-q", "--squash", f"origin/wavegit/{wave_id}")
    git(clone, "commit", "-q", "-m", "Add a and b")
    git(clone, "push", "-q", "origin", "main")
    result = wavegit(remote.clone, "sync")
    assert result.returncode == 0, result.stderr
    squash = git(clone, "rev-parse", "HEAD")
    assert f"A: review -> done by content (its files on main equal the wave head's (wavegit/{wave_id}))" \
        in result.stdout.splitlines()
    assert {i: origin_item(remote, i).merge_sha for i in "AB"} == {"A": squash, "B": squash}


def test_a_rebase_merge_is_found_by_patch_id_with_each_rebased_commit(tmp_path: Path) -> None:
    remote, wave_id = wave(tmp_path)
    clone = reviewer(remote)
    # main moved on meanwhile, so the rebase makes new commits.
    (clone / "NEWS").write_text("news\n")
    git(clone, "add", "NEWS")
    git(clone, "commit", "-q", "-m", "news")
    git(clone, "checkout", "-q", "-b", "topic", f"origin/wavegit/{wave_id}")
    git(clone, "rebase", "-q", "main")
    git(clone, "push", "-q", "origin", "topic:main")
    log = git(clone, "log", "--format=%H %(trailers:key=Wavegit-Item,valueonly,separator=)", "-2")
    rebased = {item_id: sha for sha, item_id in (line.split(" ") for line in log.splitlines())}
    changes = sync(remote)
    assert {i: (c["rule"], c["merge_sha"]) for i, c in changes.items()} == {
        "A": ("patch-id", rebased["A"]), "B": ("patch-id", rebased["B"])}


def test_a_cherry_pick_of_one_item_marks_only_that_item_done(tmp_path: Path) -> None:
    remote, wave_id = wave(tmp_path)
    clone = reviewer(remote)
    a_commit = git(clone, "log", "--format=%H", "--grep=Wavegit-Item: A", f"origin/wavegit/{wave_id}")
    git(clone, "cherry-pick", "-x", a_commit)  # -x adds a line, the patch is the same
    git(clone, "push", "-q", "origin", "main")
    changes = sync(remote)
    assert {i: (c["to"], c["rule"]) for i, c in changes.items()} == {"A": ("done", "patch-id")}
    assert statuses(remote) == {"A": "done", "B": "review"}


def test_base_changing_the_same_file_differently_is_not_a_merge(tmp_path: Path) -> None:
    remote, _ = wave(tmp_path)
    clone = reviewer(remote)
    (clone / "src").mkdir(exist_ok=True)
    (clone / "src/a.txt").write_text("someone else's a\n")
    git(clone, "add", "src/a.txt")
    # Even naming the item without its wave's trailer on a commit of another wave is no squash of this one.
    git(clone, "commit", "-q", "-m", "a by hand\n\nWavegit-Item: A\nWavegit-Wave: w-20200101-000000-0000")
    git(clone, "push", "-q", "origin", "main")
    assert sync(remote) == {}
    assert statuses(remote) == {"A": "review", "B": "review"}


def test_a_no_push_wave_merged_by_hand_and_pushed_is_found_by_its_local_branch(tmp_path: Path) -> None:
    remote, wave_id = wave(tmp_path, push=False)
    assert git(remote.origin, "branch", "--list", "wavegit/*") == ""
    clone = remote.clone
    git(clone, "fetch", "-q", "origin")
    git(clone, "checkout", "-q", "-B", "main", "origin/main")
    git(clone, "merge", "-q", "--no-ff", "-m", "merge the local wave", f"wavegit/{wave_id}")
    git(clone, "push", "-q", "origin", "main")
    merge = git(clone, "rev-parse", "HEAD")
    changes = sync(remote)
    assert {i: (c["to"], c["rule"], c["merge_sha"]) for i, c in changes.items()} == {
        "A": ("done", "ancestry", merge), "B": ("done", "ancestry", merge)}
    assert changes["A"]["reason"] == f"wavegit/{wave_id} is merged into main"


def test_a_squash_merge_whose_wave_branch_was_deleted_everywhere_is_still_found_by_its_trailers(
        tmp_path: Path) -> None:
    remote, wave_id = wave(tmp_path)
    clone = reviewer(remote)
    git(clone, "merge", "-q", "--squash", f"origin/wavegit/{wave_id}")
    git(clone, "commit", "-q", "--no-edit")
    # GitHub's "delete head branch" after the merge, and the clone's own copy gone too.
    git(clone, "push", "-q", "origin", "main", f":wavegit/{wave_id}")
    git(remote.clone, "branch", "-q", "-D", f"wavegit/{wave_id}")
    changes = sync(remote)
    assert {i: (c["to"], c["rule"]) for i, c in changes.items()} == {"A": ("done", "trailer"),
                                                                     "B": ("done", "trailer")}


def test_content_counts_only_when_all_of_the_items_files_are_there(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("A", "review", wave=W1, owns=["src/"])])
    clone = remote.clone
    git(clone, "checkout", "-q", "-b", f"wavegit/{W1}", "origin/main")
    commit_files(clone, {"src/one.txt": "1\n", "src/two.txt": "2\n"},
                 f"A: work\n\nWavegit-Item: A\nWavegit-Wave: {W1}\n", push_to=f"wavegit/{W1}")
    git(clone, "checkout", "-q", "-B", "main", "origin/main")
    commit_files(clone, {"src/one.txt": "1\n"}, "one by hand")
    assert sync(remote) == {}
    commit_files(clone, {"src/two.txt": "2\n"}, "two by hand")
    assert {i: (c["to"], c["rule"], c["merge_sha"]) for i, c in sync(remote).items()} == {
        "A": ("done", "content", git(clone, "rev-parse", "HEAD"))}


def test_content_counts_a_files_mode_so_an_unmerged_chmod_is_not_done(tmp_path: Path) -> None:
    # The item only made src/keep.txt executable: the same blob on main and on the wave branch, so sync
    # compared blob ids alone and marked it done, merged, though main never had the change.
    remote = make_tracker_repo(tmp_path, [entry("A", "review", wave=W1, owns=["src/"])])
    clone = remote.clone
    git(clone, "checkout", "-q", "-b", f"wavegit/{W1}", "origin/main")
    (clone / "src" / "keep.txt").chmod(0o755)
    git(clone, "add", "src/keep.txt")
    git(clone, "commit", "-q", "-m", f"A: work\n\nWavegit-Item: A\nWavegit-Wave: {W1}\n")
    git(clone, "push", "-q", "origin", f"HEAD:wavegit/{W1}")
    git(clone, "checkout", "-q", "-B", "main", "origin/main")
    assert sync(remote) == {}
    (clone / "src" / "keep.txt").chmod(0o755)
    git(clone, "add", "src/keep.txt")
    git(clone, "commit", "-q", "-m", "keep is a program now")
    git(clone, "push", "-q", "origin", "main")
    assert {i: (c["to"], c["rule"]) for i, c in sync(remote).items()} == {"A": ("done", "patch-id")}


def test_an_item_commit_merged_before_a_later_commit_on_its_wave_branch_is_found_by_its_own_ancestry(
        tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("A", "review", wave=W1)])
    clone = remote.clone
    git(clone, "checkout", "-q", "-b", f"wavegit/{W1}", "origin/main")
    message = f"A: work\n\nWavegit-Item: A\nWavegit-Wave: {W1}\n"
    item_commit = commit_files(clone, {"src/A.txt": "ok\n"}, message, push_to=f"wavegit/{W1}")
    git(clone, "checkout", "-q", "-B", "main", "origin/main")
    git(clone, "merge", "-q", "--no-ff", "-m", "merge A", item_commit)
    git(clone, "push", "-q", "origin", "main")
    merge = git(clone, "rev-parse", "HEAD")
    # The wave branch moved on after the merge: its tip is not in main, A's commit is.
    git(clone, "checkout", "-q", f"wavegit/{W1}")
    commit_files(clone, {"src/late.txt": "late\n"}, "a late commit", push_to=f"wavegit/{W1}")
    changes = sync(remote)
    assert {i: (c["to"], c["rule"], c["merge_sha"]) for i, c in changes.items()} == {
        "A": ("done", "ancestry", merge)}
    assert changes["A"]["reason"] == f"commit {item_commit[:12]} is in main (wavegit/{W1})"


def test_attack_a_commit_that_only_names_an_item_in_its_message_does_not_mark_it_done(tmp_path: Path) -> None:
    # An outsider's PR, squash-merged: GitHub's squash message quotes its commit messages, trailers too.
    remote, _ = wave(tmp_path)
    clone = reviewer(remote)
    (clone / "README.md").write_text("typo fixed\n")
    git(clone, "commit", "-q", "-am", "* fix a typo\n\nWavegit-Item: A\nWavegit-Item: B")
    git(clone, "push", "-q", "origin", "main")
    assert sync(remote) == {}
    assert statuses(remote) == {"A": "review", "B": "review"}


def test_attack_a_message_naming_the_wave_of_a_deleted_branch_does_not_mark_its_items_done(
        tmp_path: Path) -> None:
    # The wave's PR closed unmerged and its branch deleted everywhere; an outsider's squash-merged PR quotes
    # the wave's trailers (wave ids are public: the PR's branch name). Without a branch, naming is not
    # bringing either: the commit changes none of the items' files.
    remote, wave_id = wave(tmp_path)
    clone = reviewer(remote)
    git(clone, "push", "-q", "origin", f":wavegit/{wave_id}")
    git(remote.clone, "branch", "-q", "-D", f"wavegit/{wave_id}")
    (clone / "README.md").write_text("typo fixed\n")
    git(clone, "commit", "-q", "-am",
        f"* fix a typo\n\nWavegit-Wave: {wave_id}\nWavegit-Item: A\nWavegit-Item: B")
    git(clone, "push", "-q", "origin", "main")
    assert sync(remote) == {}
    assert statuses(remote) == {"A": "review", "B": "review"}


def test_attack_a_path_holding_a_unicode_line_end_breaks_no_sync_of_its_wave(tmp_path: Path) -> None:
    # A path its base lacks is echoed in the judge's `cat-file` answer, which `str.splitlines` split at
    # U+2028: two answers for one spec, and every `wavegit sync` judging the wave by content raised
    # ValueError.
    script = tmp_path / "worker.py"
    script.write_text("import os, sys\nname = sys.stdin.readline().strip()\n"
                      "os.makedirs(os.path.dirname(name), exist_ok=True)\nopen(name, 'w').write('ok\\n')\n")
    test = shlex.join([sys.executable, "-c", "pass"])
    entries = [item("A", ["src/a.txt"], ["src/a.txt"], test),
               item("B", ["src/b/x\u2028y.txt"], ["src/b/"], test)]
    worker = shlex.join([sys.executable, str(script)])
    remote = make_wave_repo(tmp_path, entries, sandbox="none", worker=worker)
    outcome = run(remote.clone)
    assert outcome.exit_code == 0, outcome.report.notes
    clone = reviewer(remote)
    # A's file by hand, with another change: no patch id of the wave's, so judged by content.
    commit_files(clone, {"src/a.txt": "ok\n", "README.md": "edited by hand\n"}, "Add a")
    git(clone, "push", "-q", "origin", "main")
    assert {i: c["to"] for i, c in sync(remote).items()} == {"A": "done"}
