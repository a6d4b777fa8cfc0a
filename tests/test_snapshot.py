"""wavegit.attempts.snapshot: an attempt's tree read back as content, within limits, on real repositories."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.repos import AttemptTree, RemoteRepo, git, make_remote_repo
from wavegit.attempts import snapshot
from wavegit.attempts.snapshot import Limits, Snapshot, TreeRejected
from wavegit.core.git import _runner as git_module

FILES = {"a.txt": "a\n", "old/name.txt": "n\n", "run.sh": "x\n", "gone.txt": "g\n", ".gitignore": "*.log\n",
         "sub/.gitignore": "/build/\n", "sub/kept.txt": "k\n"}


@pytest.fixture
def tree(tmp_path: Path) -> AttemptTree:
    return AttemptTree(make_remote_repo(tmp_path, FILES))


def _objects(remote: RemoteRepo) -> int:
    """How many objects the scheduler's repository holds, loose and packed."""
    counts = dict(line.split(": ") for line in git(remote.clone, "count-objects", "-v").splitlines())
    return int(counts["count"]) + int(counts["in-pack"])


def test_changed_paths_list_new_deleted_both_sides_of_renames_modes_and_symlinks(tree: AttemptTree) -> None:
    path = tree.path
    (path / "old" / "name.txt").rename(path / "new.txt")
    (path / "run.sh").chmod(0o755)
    (path / "gone.txt").unlink()
    (path / "deep" / "er").mkdir(parents=True)
    (path / "deep" / "er" / "file.txt").write_text("new\n")
    os.symlink("/etc/passwd", path / "link")
    (path / "debug.log").write_text("ignored\n")
    (path / "sub" / "build").mkdir()
    (path / "sub" / "build" / "out.o").write_text("ignored by a nested .gitignore\n")
    taken = tree.read()
    assert taken.changed == ["deep/er/file.txt", "gone.txt", "link", "new.txt", "old/name.txt", "run.sh"]
    assert tree.mode(taken, "run.sh") == "100755" and tree.show(taken, "new.txt") == "n"
    # The symlink is a symlink blob holding its target, never the file it points at.
    assert tree.mode(taken, "link") == "120000" and tree.show(taken, "link") == "/etc/passwd"


def test_a_commit_lists_every_object_it_adds_to_its_base(tree: AttemptTree) -> None:
    # What its test checkout is given beside the base's objects: exactly what git says the commit adds.
    path = tree.path
    (path / "deep" / "er").mkdir(parents=True)
    (path / "deep" / "er" / "file.txt").write_text("new\n")
    (path / "sub" / "kept.txt").unlink()  # a folder that keeps another file
    (path / "old" / "name.txt").unlink()  # a folder that goes
    (path / "a\nb").write_text("an awkward name\n")
    os.symlink("a.txt", path / "link")
    ident = git(tree.remote.clone, "var", "GIT_AUTHOR_IDENT")
    said = snapshot.CommitInfo("item\n", ident, ident)
    taken = snapshot.read(tree.remote.clone, path, tree.compared_with, tree.untouched, Limits(1024, 10), None,
                          said)
    added = git(tree.remote.clone, "rev-list", "--objects", taken.commit or "", "--not", tree.base)
    assert sorted(taken.written) == sorted(line.split()[0] for line in added.splitlines())
    assert taken.written[0] == taken.commit and tree.read().written == ()  # no commit asked: nothing listed


def test_attack_deep_chains_of_long_folder_names_list_no_folder(tree: AttemptTree,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # Each folder on the way to a changed path was asked for and printed whole: a worker's 5000 chains of
    # 16 names of 250 characters were hundreds of megabytes in wavegit's memory where the paths were 20.
    # Over the bound, nothing is listed: the test checkout's pack-objects finds the commit's objects.
    monkeypatch.setattr(snapshot, "LISTED_FOLDER_BYTES", 16 * 1024, raising=False)
    for n in range(4):
        chain = tree.path.joinpath(*[f"{n}{'x' * 200}"] * 12)
        chain.mkdir(parents=True)
        (chain / "f").write_text(f"{n}\n")
    ident = git(tree.remote.clone, "var", "GIT_AUTHOR_IDENT")
    taken = snapshot.read(tree.remote.clone, tree.path, tree.compared_with, tree.untouched, Limits(1024, 10),
                          None, snapshot.CommitInfo("item\n", ident, ident))
    assert taken.commit is not None and taken.written == ()
    assert git(tree.remote.clone, "rev-parse", f"{taken.commit}^{{tree}}") == taken.tree


def test_an_unchanged_tree_is_the_base_tree_and_writes_nothing(tree: AttemptTree) -> None:
    before = _objects(tree.remote)
    (tree.path / "a.txt").write_text("a\n")  # rewritten with the same content: touched, not changed
    taken = tree.read()
    assert taken == Snapshot(git(tree.remote.clone, "rev-parse", f"{tree.base}^{{tree}}"), [])
    assert _objects(tree.remote) == before


def test_a_change_that_keeps_size_and_modification_time_is_still_seen(tree: AttemptTree) -> None:
    target = tree.path / "a.txt"
    st = target.stat()
    target.write_text("b\n")
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert tree.read().changed == ["a.txt"]


def test_a_symlinked_directory_is_not_entered(tree: AttemptTree, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    os.symlink(outside, tree.path / "escape")
    taken = tree.read()
    assert taken.changed == ["escape"] and tree.show(taken, "escape") == str(outside)


def test_the_workers_git_dir_config_and_excludes_play_no_part(tree: AttemptTree) -> None:
    (tree.path / ".git" / "info").mkdir(exist_ok=True)
    (tree.path / ".git" / "info" / "exclude").write_text("*.txt\n")
    git(tree.path, "config", "core.excludesFile", "/dev/null")
    (tree.path / "note.txt").write_text("kept\n")
    (tree.path / "sub" / ".git").mkdir()
    (tree.path / "sub" / ".git" / "x").write_text("never content\n")
    assert tree.read().changed == ["note.txt"]
    shutil.rmtree(tree.path / ".git")
    assert tree.read().changed == ["note.txt"]


def test_only_the_base_trees_ignore_rules_count(tree: AttemptTree) -> None:
    (tree.path / ".gitignore").write_text("")  # the worker's edit to the rules does not un-ignore
    (tree.path / "x.log").write_text("still ignored\n")
    (tree.path / "a.txt.log").write_text("still ignored\n")
    assert tree.read().changed == [".gitignore"]


def test_a_tracked_file_matching_an_ignore_rule_is_still_read(tmp_path: Path) -> None:
    remote = make_remote_repo(tmp_path, {"README.md": "r\n"})
    (remote.clone / "tracked.log").write_text("t\n")
    git(remote.clone, "add", "-f", "tracked.log")
    (remote.clone / ".gitignore").write_text("*.log\n")
    git(remote.clone, "add", ".gitignore")
    git(remote.clone, "commit", "-q", "-m", "tracked log")
    tree = AttemptTree(remote)
    (tree.path / "tracked.log").write_text("changed\n")
    assert tree.read().changed == ["tracked.log"]


def test_file_and_directory_swaps_and_awkward_names_survive(tree: AttemptTree) -> None:
    shutil.rmtree(tree.path / "old")
    (tree.path / "old").write_text("now a file\n")
    (tree.path / "a.txt").unlink()
    (tree.path / "a.txt").mkdir()
    (tree.path / "a.txt" / "inner").write_text("i\n")
    odd = 'sp ace "q" \\ tab\tnl\n.txt'
    (tree.path / odd).write_text("odd\n")
    raw = os.fsdecode(b"bin-\xff.txt")
    (tree.path / raw).write_bytes(b"\x00\xff binary\n")
    taken = tree.read()
    assert taken.changed == sorted(["a.txt", "a.txt/inner", "old", "old/name.txt", odd, raw])
    assert tree.show(taken, "old") == "now a file"
    blob = git(tree.remote.clone, "rev-parse", f"{taken.tree}:{odd}")
    assert git(tree.remote.clone, "cat-file", "-p", blob) == "odd"


def test_a_huge_sparse_file_is_a_violation_before_anything_is_read_or_written(tree: AttemptTree) -> None:
    before = _objects(tree.remote)
    with open(tree.path / "big.bin", "wb") as handle:
        handle.truncate(3 * 1024**3)
    (tree.path / "small.txt").write_text("small\n")
    with pytest.raises(TreeRejected, match=r"limit violation: big\.bin \(3221225472 bytes\) over "
                                           r"max_file_bytes \(1024\); nothing staged"):
        # A deadline already near: reading 3 GB could never make it, one lstat does.
        tree.read(deadline=time.monotonic() + 5)
    assert _objects(tree.remote) == before


def test_an_ignored_huge_file_is_no_violation(tree: AttemptTree) -> None:
    with open(tree.path / "huge.log", "wb") as handle:
        handle.truncate(3 * 1024**3)
    assert tree.read().changed == []


def test_too_many_changed_files_is_a_violation_counting_deletions(tree: AttemptTree) -> None:
    for n in range(9):
        (tree.path / f"n{n}.txt").write_text("n\n")
    (tree.path / "gone.txt").unlink()
    assert len(tree.read().changed) == 10
    (tree.path / "a.txt").unlink()
    with pytest.raises(TreeRejected, match=r"limit violation: 11 changed files, over max_changed_files "
                                           r"\(10\); nothing staged"):
        tree.read()


def test_reading_past_the_deadline_is_rejected(tree: AttemptTree) -> None:
    for n in range(600):
        (tree.path / f"n{n}.txt").write_text("n\n")
    with pytest.raises(TreeRejected, match="timed out while reading the worker's tree"):
        tree.read(Limits(1024, 10_000), deadline=time.monotonic() - 1)


def test_big_changes_are_written_in_batches(tree: AttemptTree, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snapshot, "BATCH_BYTES", 10)
    imports: list[str] = []
    real_run = git_module.run

    def counting_run(args: Sequence[str], **kwargs: Any) -> git_module.GitResult:
        imports.extend(args[:1] if args[:1] == ["fast-import"] else [])
        return real_run(args, **kwargs)

    monkeypatch.setattr(git_module, "run", counting_run)
    for n in range(5):
        (tree.path / f"n{n}.txt").write_text(f"content number {n}\n")
    taken = tree.read()
    assert [tree.show(taken, f"n{n}.txt") for n in range(5)] == [f"content number {n}" for n in range(5)]
    # Each blob filled a batch of its own, then one run wrote the tree.
    assert len(imports) == 6


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_an_unreadable_file_is_the_workers_doing(tree: AttemptTree) -> None:
    (tree.path / "locked.txt").write_text("x\n")
    (tree.path / "locked.txt").chmod(0)
    with pytest.raises(TreeRejected, match=r"cannot read locked\.txt"):
        tree.read()


def test_concurrent_reads_leave_no_ref_behind(tmp_path: Path) -> None:
    remote = make_remote_repo(tmp_path, FILES)
    trees = [AttemptTree(remote, f"t{n}") for n in range(4)]
    for n, tree in enumerate(trees):
        (tree.path / f"mine{n}.txt").write_text(f"{n}\n")
    refs = git(remote.clone, "for-each-ref")
    with ThreadPoolExecutor(max_workers=4) as pool:
        taken = list(pool.map(AttemptTree.read, trees))
    assert [t.changed for t in taken] == [[f"mine{n}.txt"] for n in range(4)]
    assert git(remote.clone, "for-each-ref") == refs


def test_names_that_look_like_pathspec_magic_are_plain_names(tree: AttemptTree) -> None:
    (tree.path / ":(exclude)x.log").write_text("ignored by *.log\n")
    (tree.path / ":(glob)*.txt").write_text("a new file\n")
    assert tree.read().changed == [":(glob)*.txt"]


def test_a_commits_changes_are_what_git_diff_tree_says_of_it(tree: AttemptTree) -> None:
    # The wave's collect replays them as they are, without asking git again.
    path = tree.path
    (path / "old" / "name.txt").rename(path / "new.txt")
    (path / "run.sh").chmod(0o755)
    (path / "a.txt").unlink()
    (path / "a.txt").mkdir()  # a file becomes a folder
    (path / "a.txt" / "in.txt").write_text("in\n")
    os.symlink("new.txt", path / "link")
    (path / "sub" / "kept.txt").write_text("changed\n")
    ident = git(tree.remote.clone, "var", "GIT_AUTHOR_IDENT")
    taken = snapshot.read(tree.remote.clone, path, tree.compared_with, tree.untouched, Limits(1024, 10), None,
                          snapshot.CommitInfo("item\n", ident, ident))
    assert taken.commit is not None
    said = git(tree.remote.clone, "diff-tree", "-r", "--no-renames", "--no-commit-id", taken.commit)
    expected = sorted((fields[5], fields[1], "" if fields[1] == "000000" else fields[3])
                      for fields in (line.replace("\t", " ").split(" ", 5) for line in said.splitlines()))
    assert sorted((change.path, change.mode, change.sha) for change in taken.changes) == expected
    assert tree.read().changes == ()  # no commit asked: none
