"""wavegit.attempts.workspaces: attempt trees made ahead of their attempts and removed behind them, on real
repos."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.helpers.repos import RemoteRepo, git
from wavegit.attempts import objectstore, snapshot, workspace, workspaces
from wavegit.attempts.workspaces import Spec, Workspaces
from wavegit.core.git import GitError

BRANCH = "wavegit/items/w-20260101-000000-0000/X"


def _linked(remote: RemoteRepo) -> list[str]:
    return [line for line in git(remote.clone, "worktree", "list", "--porcelain").splitlines()
            if line.startswith("worktree ")]


def test_a_prepared_tree_is_the_one_taken_its_own_repository_on_its_branch_at_the_start(
        remote_repo: RemoteRepo) -> None:
    base = git(remote_repo.clone, "rev-parse", "HEAD")
    git(remote_repo.clone, "commit", "-q", "--allow-empty", "-m", "elsewhere")
    spaces = Workspaces(remote_repo.clone)
    spec = Spec(remote_repo.base / "wt" / "X-1", BRANCH, base)
    spaces.prepare(spec)
    deadline = time.monotonic() + 10
    while not (spec.path / "README.md").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    (spec.path / "marker.txt").write_text("made ahead\n")
    ready = spaces.take(spec)
    spaces.close()
    # Taken as it was made (not made again), on the item's branch name at the start commit.
    assert (spec.path / "marker.txt").read_text() == "made ahead\n"
    assert git(spec.path, "symbolic-ref", "HEAD") == f"refs/heads/{BRANCH}"
    assert git(spec.path, "rev-parse", "HEAD") == base
    # A repository of its own: no linked worktree, no branch made in the scheduler's repository.
    assert (spec.path / ".git").is_dir() and len(_linked(remote_repo)) == 1
    assert git(remote_repo.clone, "for-each-ref", "refs/heads/wavegit/") == ""
    # Its baseline is the checkout as wavegit left it.
    assert ready.path == spec.path and "README.md" in ready.untouched
    assert ready.base.commit == base and set(ready.base.entries) == {"README.md"}


def test_release_removes_the_tree_in_the_background(remote_repo: RemoteRepo) -> None:
    base = git(remote_repo.clone, "rev-parse", "HEAD")
    spaces = Workspaces(remote_repo.clone)
    first = Spec(remote_repo.base / "wt" / "X-1", BRANCH, base)
    second = Spec(remote_repo.base / "wt" / "X-2", BRANCH, base)
    spaces.take(first)
    (first.path / "sub").mkdir()
    (first.path / "sub" / "f").write_text("x\n")
    (first.path / "sub").chmod(0o500)
    spaces.release(first)
    spaces.take(second)
    # In the background: close() drops a removal not begun yet (the wave's cleanup takes what is left).
    deadline = time.monotonic() + 10
    while first.path.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    spaces.close()
    assert not first.path.exists() and (second.path / "README.md").exists()


def test_a_failed_preparation_is_raised_by_take(remote_repo: RemoteRepo) -> None:
    spaces = Workspaces(remote_repo.clone)
    spec = Spec(remote_repo.base / "wt" / "X-1", BRANCH, "0" * 40)
    spaces.prepare(spec)  # no such commit
    with pytest.raises(GitError):
        spaces.take(spec)
    spaces.close()


def test_close_drops_preparations_not_begun_and_waits_for_the_rest(remote_repo: RemoteRepo,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    base = git(remote_repo.clone, "rev-parse", "HEAD")
    gate = threading.Event()
    begun: list[Path] = []
    real_create = workspace.create

    def held_create(objects: Path, path: Path, *, start: str, branch: str | None = None,
                    skeleton: workspace.Skeleton | None = None,
                    history: workspace.History = workspace.NO_HISTORY, as_stored: bool = False) -> None:
        begun.append(path)
        gate.wait(timeout=30)
        real_create(objects, path, start=start, branch=branch, skeleton=skeleton, history=history,
                    as_stored=as_stored)

    monkeypatch.setattr(workspace, "create", held_create)
    spaces = Workspaces(remote_repo.clone)
    specs = [Spec(remote_repo.base / "wt" / f"I{n}-1", f"wavegit/items/w-20260101-000000-0000/I{n}", base)
             for n in range(12)]
    for spec in specs:
        spaces.prepare(spec)
    while len(begun) < workspaces.WORKTREE_THREADS:
        time.sleep(0.01)
    closing = threading.Thread(target=spaces.close)
    closing.start()
    time.sleep(1.0)  # ample time for close() to cancel the queue while the running ones are held
    gate.set()
    closing.join(timeout=30)
    assert not closing.is_alive()
    # Only the ones already running when close() came (one per background thread) were made, fully.
    made = [spec.path for spec in specs if spec.path.exists()]
    assert made == sorted(begun) and len(made) == workspaces.WORKTREE_THREADS
    assert all((path / "README.md").is_file() for path in made)


def test_a_tree_prepared_after_a_batch_is_begun_only_once_that_many_workers_started(
        remote_repo: RemoteRepo) -> None:
    # The next batch's trees wait for the launches of the batch before: made with them, they took the CPU
    # its sandboxes were being built with.
    base = git(remote_repo.clone, "rev-parse", "HEAD")
    spaces = Workspaces(remote_repo.clone)
    first, second, later = (Spec(remote_repo.base / "wt" / f"X-{n}", BRANCH, base) for n in (1, 2, 3))
    spaces.prepare_after(2, later)
    spaces.take(first)
    spaces.take(second)
    spaces.launched()
    time.sleep(0.5)
    assert not later.path.exists()  # both trees taken, one worker started: nothing made ahead yet
    spaces.launched()
    deadline = time.monotonic() + 10
    while not (later.path / "README.md").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    (later.path / "marker.txt").write_text("made ahead\n")
    spaces.take(later)
    spaces.close()
    assert (later.path / "marker.txt").read_text() == "made ahead\n"


@pytest.mark.parametrize("narrow", [True, False])
def test_a_test_checkout_reads_the_wave_store_only_when_narrowed(remote_repo: RemoteRepo,
                                                                  narrow: bool) -> None:
    # Sandboxed, an item's test reads the commit and its wave's store; unsandboxed (it could read the
    # scheduler's repository anyway) the checkout borrows the scheduler's objects, one pack-objects fewer.
    clone = remote_repo.clone
    base = git(clone, "rev-parse", "HEAD")
    spaces = Workspaces(clone)
    spaces.take(Spec(remote_repo.base / "wt" / "X-1", BRANCH, base))
    (clone / "new.txt").write_text("the worker's file\n")
    git(clone, "add", "new.txt")
    git(clone, "commit", "-q", "-m", "worker")
    commit = git(clone, "rev-parse", "HEAD")
    checkout = spaces.test_checkout(commit, remote_repo.base / "wt" / "X-1.test", narrow=narrow)
    spaces.close()
    assert (checkout / "new.txt").read_text() == "the worker's file\n"
    alternates = (checkout / ".git" / "objects" / "info" / "alternates").read_text().split()
    own_packs = list((checkout / ".git" / "objects" / "pack").glob("*.pack"))
    if narrow:
        assert alternates == [str(remote_repo.base / "wt" / "_objects")] and len(own_packs) == 1
    else:
        assert alternates == [str(workspace.objects_dir(clone))] and own_packs == []
    assert git(checkout, "cat-file", "-t", commit) == "commit"


def _read_back(remote_repo: RemoteRepo, spaces: Workspaces, files: dict[str, str]) -> snapshot.Snapshot:
    """A worker's tree with ``files`` written, read back into the scheduler's repository with its commit."""
    base = git(remote_repo.clone, "rev-parse", "HEAD")
    ready = spaces.take(Spec(remote_repo.base / "wt" / "X-1", BRANCH, base))
    for name, text in files.items():
        (ready.path / name).parent.mkdir(parents=True, exist_ok=True)
        (ready.path / name).write_text(text)
    ident = git(remote_repo.clone, "var", "GIT_AUTHOR_IDENT")
    return snapshot.read(remote_repo.clone, ready.path, ready.base, ready.untouched,
                         snapshot.Limits(1 << 20, 100), None, snapshot.CommitInfo("worker\n", ident, ident))


def _complete_and_narrow(checkout: Path, store: Path, commit: str) -> set[str]:
    """The loose objects of the checkout's repository, once git found every object ``commit`` reaches there
    and its only alternate is the store."""
    objects = checkout / ".git" / "objects"
    assert (objects / "info" / "alternates").read_text().split() == [str(store)]
    git(checkout, "fsck", "--connectivity-only", "--no-dangling", commit)
    return {folder.name + name.name for folder in objects.glob("[0-9a-f][0-9a-f]")
            for name in folder.iterdir()}


def test_a_test_checkout_copies_the_objects_its_read_wrote_none_packed(remote_repo: RemoteRepo) -> None:
    spaces = Workspaces(remote_repo.clone)
    taken = _read_back(remote_repo, spaces, {"new.txt": "the worker's file\n", "deep/er/b.txt": "b\n"})
    assert taken.commit is not None
    checkout = spaces.test_checkout(taken.commit, remote_repo.base / "wt" / "X-1.test", written=taken.written)
    spaces.close()
    store = remote_repo.base / "wt" / "_objects"
    assert _complete_and_narrow(checkout, store, taken.commit) == set(taken.written)
    assert not (checkout / ".git" / "objects" / "pack").exists()  # no `git pack-objects` ran
    (checkout / ".git" / "objects" / taken.commit[:2] / taken.commit[2:]).write_bytes(b"the test's own")
    assert git(remote_repo.clone, "cat-file", "-t", taken.commit) == "commit"  # copies, never links


def test_a_written_object_that_is_not_loose_in_the_scheduler_is_packed_for_the_test_checkout(
        remote_repo: RemoteRepo) -> None:
    spaces = Workspaces(remote_repo.clone)
    taken = _read_back(remote_repo, spaces, {"new.txt": "packed away\n"})
    assert taken.commit is not None
    git(remote_repo.clone, "update-ref", "refs/keep", taken.commit)
    git(remote_repo.clone, "repack", "-a", "-d", "-q")  # the scheduler's loose objects go into a pack
    checkout = spaces.test_checkout(taken.commit, remote_repo.base / "wt" / "X-1.test", written=taken.written)
    spaces.close()
    store = remote_repo.base / "wt" / "_objects"
    _complete_and_narrow(checkout, store, taken.commit)
    assert list((checkout / ".git" / "objects" / "pack").glob("*.pack"))


def test_a_file_copied_from_the_base_needs_no_pack_for_the_test_checkout(remote_repo: RemoteRepo) -> None:
    # A copy or a rename keeps its base's blob, which the scheduler holds packed: listed as written, it was
    # not loose there, and every such read fell back to `git pack-objects`.
    git(remote_repo.clone, "repack", "-a", "-d", "-q")
    base = git(remote_repo.clone, "rev-parse", "HEAD")
    readme = git(remote_repo.clone, "show", f"{base}:README.md") + "\n"
    spaces = Workspaces(remote_repo.clone)
    taken = _read_back(remote_repo, spaces, {"docs/copy.md": readme})
    assert taken.commit is not None
    checkout = spaces.test_checkout(taken.commit, remote_repo.base / "wt" / "X-1.test", written=taken.written)
    spaces.close()
    _complete_and_narrow(checkout, remote_repo.base / "wt" / "_objects", taken.commit)
    assert not (checkout / ".git" / "objects" / "pack").exists()  # no `git pack-objects` ran


def test_a_written_name_that_is_no_object_id_copies_no_file_beside_the_objects(
        remote_repo: RemoteRepo) -> None:
    # `..config` was read as the object `..`/`config`: the scheduler's .git/config over the checkout's own.
    (remote_repo.clone / ".git" / "config").write_text(
        (remote_repo.clone / ".git" / "config").read_text() + "[wavegit-test]\n\tsecret = SCHEDULER_ONLY\n")
    spaces = Workspaces(remote_repo.clone)
    taken = _read_back(remote_repo, spaces, {"new.txt": "the worker's file\n"})
    assert taken.commit is not None
    checkout = spaces.test_checkout(taken.commit, remote_repo.base / "wt" / "X-1.test",
                                    written=[*taken.written, "..config"])
    spaces.close()
    assert "SCHEDULER_ONLY" not in (checkout / ".git" / "config").read_text()
    _complete_and_narrow(checkout, remote_repo.base / "wt" / "_objects", taken.commit)


def test_when_made_tells_once_the_background_tree_is_made_whether_asked_before_or_after_its_preparation(
        remote_repo: RemoteRepo) -> None:
    base = git(remote_repo.clone, "rev-parse", "HEAD")
    spaces = Workspaces(remote_repo.clone)
    early, late = (Spec(remote_repo.base / "wt" / f"X-{n}", BRANCH, base) for n in (1, 2))
    told: dict[str, threading.Event] = {"early": threading.Event(), "late": threading.Event()}
    spaces.when_made(early, told["early"].set)  # before its preparation is even begun
    spaces.prepare(early)
    spaces.prepare(late)
    spaces.when_made(late, told["late"].set)
    assert told["early"].wait(30) and told["late"].wait(30)
    # Told once made: the tree is there, ready to be taken.
    assert (early.path / "README.md").exists() and (late.path / "README.md").exists()
    spaces.close()


def test_an_empty_directory_made_ahead_is_the_very_one_its_tree_is_made_in(remote_repo: RemoteRepo) -> None:
    base = git(remote_repo.clone, "rev-parse", "HEAD")
    path = remote_repo.base / "wt" / "X-1.test"
    path.mkdir(parents=True)
    # A sandbox started before the checkout binds this directory, as this descriptor holds it: the checkout
    # must be seen through it, not in a directory made again at the same path.
    made_ahead = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        workspace.test_checkout(workspace.objects_dir(remote_repo.clone), base, path)
        assert "README.md" in os.listdir(made_ahead)
    finally:
        os.close(made_ahead)


def test_discarded_paths_wait_for_the_waves_cleanup_until_more_than_kept_then_the_oldest_goes(
        tmp_path: Path) -> None:
    # Deleting while the wave launches and reads back slowed it on a disk mounted with discard: what an
    # attempt leaves waits for the cleanup, two batches' worth at most.
    spaces = Workspaces(tmp_path, tmp_path / "objects", kept=2)
    left = [tmp_path / f"attempt-{n}" for n in range(4)]
    for path in left:
        (path / "sub").mkdir(parents=True)
        (path / "sub" / "file.txt").write_text("x\n")
    for path in left[:3]:
        spaces.discard(path)
    spaces.close()  # waits for the removals begun
    assert [path.exists() for path in left] == [False, True, True, True]


def test_a_path_discarded_twice_waits_once_and_pushes_no_other_path_out(tmp_path: Path) -> None:
    # A test checkout is discarded by its attempt and again by its launch pad: counted twice, the last
    # batch's discards removed the first batch's paths while the wave's last attempts were read back.
    spaces, left = _attempt_folders(tmp_path, kept=2, count=2)
    spaces.discard(left[0])
    spaces.discard(left[1])
    spaces.discard(left[1])
    spaces.close()  # waits for any removal begun
    assert [path.exists() for path in left] == [True, True]


def test_with_nothing_kept_a_discarded_path_is_removed_at_once_in_the_background(tmp_path: Path) -> None:
    spaces = Workspaces(tmp_path, tmp_path / "objects")
    (tmp_path / "attempt" / "sub").mkdir(parents=True)
    spaces.discard(tmp_path / "attempt")
    spaces.close()
    assert not (tmp_path / "attempt").exists()


def test_once_the_disk_is_less_than_a_fifth_free_every_discarded_path_goes_at_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # What a worker left (gigabytes of ignored files) must not hold the disk full for its siblings.
    spaces, left = _attempt_folders(tmp_path, kept=8, count=3)
    spaces.discard(left[0])
    spaces.discard(left[1])
    assert all(path.exists() for path in left)
    total = shutil.disk_usage(tmp_path).total
    monkeypatch.setattr(shutil, "disk_usage", lambda _: _Usage(total, total - total // 10, total // 10))
    spaces.discard(left[2])
    deadline = time.monotonic() + 10
    while any(path.exists() for path in left) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [path.exists() for path in left] == [False, False, False]
    spaces.close()


def _attempt_folders(tmp_path: Path, *, kept: int, count: int) -> tuple[Workspaces, list[Path]]:
    """Workspaces keeping ``kept`` discarded paths, and ``count`` empty attempt folders to discard."""
    left = [tmp_path / f"attempt-{n}" for n in range(count)]
    for path in left:
        path.mkdir()
    return Workspaces(tmp_path, tmp_path / "objects", kept=kept), left


class _Usage(NamedTuple):
    total: int
    used: int
    free: int


def test_a_tree_its_attempt_took_before_its_batch_was_due_is_not_made_again_under_its_worker(
        remote_repo: RemoteRepo) -> None:
    # Two workers at once: the first exits at once and gives its slot back while the second's is still being
    # set up (its tree made, its sandbox built). The next batch's first attempt takes that slot and makes its
    # own tree, before the launch its preparation waited for: that launch then made the tree again, in the
    # background, removing the worker's tree under it (its work gone: "the worker changed nothing", counted).
    base = git(remote_repo.clone, "rev-parse", "HEAD")
    spaces = Workspaces(remote_repo.clone)
    later = Spec(remote_repo.base / "wt" / "X-3", BRANCH, base)
    spaces.prepare_after(2, later)
    spaces.launched()  # the first worker started (and exited: its slot given back)
    ready = spaces.take(later)  # the next batch's first attempt, in that slot
    (ready.path / "work.txt").write_text("the worker's work\n")
    spaces.launched()  # the second worker starts at last
    time.sleep(1)  # what the background would make meanwhile
    spaces.close()
    assert (ready.path / "work.txt").read_text() == "the worker's work\n"


def test_a_tree_being_prepared_is_not_reserved_and_a_reserved_one_is_never_prepared(
        remote_repo: RemoteRepo) -> None:
    # A launch that starts its sandbox first makes the tree's directory empty for it and the tree after; a
    # background preparation of the same tree made it in that directory at once: `File exists` (a rolling
    # wave's item failed, not counted, about one run in six).
    base = git(remote_repo.clone, "rev-parse", "HEAD")
    spaces = Workspaces(remote_repo.clone)
    prepared, reserved = (Spec(remote_repo.base / "wt" / f"X-{n}", BRANCH, base) for n in (1, 2))
    spaces.prepare(prepared)
    assert not spaces.reserve(prepared)
    assert spaces.reserve(reserved) and list(reserved.path.iterdir()) == []
    spaces.prepare(reserved)
    time.sleep(0.3)
    assert list(reserved.path.iterdir()) == []  # left to the caller
    assert (spaces.take(reserved).path / "README.md").is_file()
    assert (spaces.take(prepared).path / "README.md").is_file()
    spaces.close()


def test_the_tags_the_base_reaches_are_in_its_trees_and_test_checkouts_so_git_describe_works(
        remote_repo: RemoteRepo) -> None:
    # An item test that asks git for the version (`git describe`, setuptools-scm) ran in a checkout with
    # no tag at all: `fatal: No names found, cannot describe anything`. A tag the base does not reach
    # (another branch's release) stays out, as that branch's objects do.
    clone = remote_repo.clone
    git(clone, "tag", "-a", "v1.0", "-m", "release 1.0")
    git(clone, "commit", "-q", "--allow-empty", "-m", "after the release")
    git(clone, "tag", "v1.0.post")
    git(clone, "commit", "-q", "--allow-empty", "-m", "the base")
    base = git(clone, "rev-parse", "HEAD")
    git(clone, "checkout", "-q", "-b", "elsewhere")
    git(clone, "commit", "-q", "--allow-empty", "-m", "another branch")
    git(clone, "tag", "-a", "v9.0", "-m", "not on the base")
    spaces = Workspaces(clone)
    ready = spaces.take(Spec(remote_repo.base / "wt" / "X-1", BRANCH, base))
    assert git(ready.path, "describe").startswith("v1.0-2-g")
    assert git(ready.path, "describe", "--tags") == git(clone, "describe", "--tags", base)
    assert git(ready.path, "tag").split() == ["v1.0", "v1.0.post"]
    assert git(ready.path, "symbolic-ref", "HEAD") == f"refs/heads/{BRANCH}"
    checkout = _worker_commit_checked_out(spaces, clone, ready.path)
    spaces.close()
    assert git(checkout, "describe").startswith("v1.0-3-g")
    assert git(checkout, "tag").split() == ["v1.0", "v1.0.post"]
    git(checkout, "fsck", "--connectivity-only", "--no-dangling")


def _worker_commit_checked_out(spaces: Workspaces, scheduler: Path, tree: Path) -> Path:
    """A worker's commit of a new file in its ``tree``, fetched into the ``scheduler``'s repository, and the
    test checkout of it beside the tree."""
    (tree / "new.txt").write_text("the worker's file\n")
    git(tree, "add", "new.txt")
    git(tree, "commit", "-q", "-m", "worker")
    commit = git(tree, "rev-parse", "HEAD")
    git(scheduler, "fetch", "-q", str(tree), f"refs/heads/{BRANCH}")
    return spaces.test_checkout(commit, tree.with_name(f"{tree.name}.test"))


def test_in_a_shallow_clone_trees_and_test_checkouts_know_where_the_history_stops(
        remote_repo: RemoteRepo) -> None:
    # `git log` in a tree of a shallow clone (CI's `fetch-depth: 1`) failed: "Could not read <parent>",
    # since the tree's git directory did not say that history stops at the base's graft.
    git(remote_repo.clone, "commit", "-q", "--allow-empty", "-m", "second")
    git(remote_repo.clone, "push", "-q", "origin", "main")
    shallow = remote_repo.base / "shallow"
    git(remote_repo.base, "clone", "-q", "--depth", "1", f"file://{remote_repo.origin}", str(shallow))
    base = git(shallow, "rev-parse", "HEAD")
    spaces = Workspaces(shallow)
    ready = spaces.take(Spec(remote_repo.base / "wt" / "X-1", BRANCH, base))
    assert git(ready.path, "log", "--format=%s") == "second"
    checkout = _worker_commit_checked_out(spaces, shallow, ready.path)
    spaces.close()
    assert git(checkout, "log", "--format=%s").splitlines() == ["worker", "second"]


def test_a_store_made_for_a_second_base_keeps_the_tags_of_the_first_whatever_their_names(
        remote_repo: RemoteRepo) -> None:
    # A tag name may hold U+2028, at which str.splitlines splits: the second base's read of the first's
    # tags raised, and every tree of that wave failed to be made.
    clone = remote_repo.clone
    odd = "v1\u2028odd"
    git(clone, "tag", "-a", odd, "-m", "odd")
    first = git(clone, "rev-parse", "HEAD")
    folder = remote_repo.base / "wt"
    objectstore.ensure(clone, folder, first)
    git(clone, "commit", "-q", "--allow-empty", "-m", "second")
    git(clone, "tag", "v2")
    objectstore.ensure(clone, folder, git(clone, "rev-parse", "HEAD"))
    tags = objectstore.history(objectstore.store_of(folder)).tags
    names = [line.split(" ", 1)[1] for line in tags.split("\n") if line and not line.startswith("^")]
    assert names == [f"refs/tags/{odd}", "refs/tags/v2"]


def _files(tree: Path) -> dict[str, tuple[int, bytes]]:
    """Every file and link of ``tree`` outside ``.git``: its mode and its content (a link's target)."""
    found: dict[str, tuple[int, bytes]] = {}
    for path in sorted(tree.rglob("*")):
        name = str(path.relative_to(tree))
        if name == ".git" or name.startswith(".git/") or (path.is_dir() and not path.is_symlink()):
            continue
        mode = path.lstat().st_mode
        found[name] = (mode, os.readlink(path).encode() if path.is_symlink() else path.read_bytes())
    return found


def _moved_ahead(spaces: Workspaces, base: str, taken: snapshot.Snapshot, path: Path) -> Path:
    """The test checkout of ``taken``'s commit at ``path`` as a parked test gets it: made at ``base`` in the
    background, in the very directory its sandbox binds, then moved to the commit."""
    path.mkdir()
    inode = path.stat().st_ino
    assert taken.commit is not None
    moved = spaces.test_checkout(taken.commit, path, written=taken.written, changed=taken.changed,
                                 prepared=spaces.prepare_checkout(base, path))
    assert moved == path and path.stat().st_ino == inode
    return moved


def test_a_test_checkout_made_at_the_base_ahead_then_moved_is_the_checkout_made_afresh(
        remote_repo: RemoteRepo) -> None:
    clone = remote_repo.clone
    for name, text in {"a.txt": "a\n", "sub/b.txt": "b\n", "run.sh": "#!/bin/sh\n"}.items():
        (clone / name).parent.mkdir(exist_ok=True)
        (clone / name).write_text(text)
    (clone / "run.sh").chmod(0o755)
    os.symlink("a.txt", clone / "link")
    git(clone, "add", "-A")
    git(clone, "commit", "-q", "-m", "base")
    base = git(clone, "rev-parse", "HEAD")
    spaces = Workspaces(clone)
    tree = spaces.take(Spec(remote_repo.base / "wt" / "X-1", BRANCH, base))
    # The worker changes, deletes, adds, changes a mode and turns a link into a file and a file into a folder.
    (tree.path / "a.txt").write_text("a, changed\n")
    (tree.path / "sub" / "b.txt").unlink()
    (tree.path / "run.sh").chmod(0o644)
    (tree.path / "link").unlink()
    (tree.path / "link").write_text("a file now\n")
    (tree.path / "README.md").unlink()
    (tree.path / "README.md").mkdir()
    (tree.path / "README.md" / "new.txt").write_text("new\n")
    ident = git(clone, "var", "GIT_AUTHOR_IDENT")
    taken = snapshot.read(clone, tree.path, tree.base, tree.untouched, snapshot.Limits(1 << 20, 100), None,
                          snapshot.CommitInfo("worker\n", ident, ident))
    assert taken.commit is not None
    moved = _moved_ahead(spaces, base, taken, remote_repo.base / "wt" / "X-1.test")
    fresh = spaces.test_checkout(taken.commit, remote_repo.base / "wt" / "X-2.test", written=taken.written)
    spaces.close()
    assert _files(moved) == _files(fresh) and "sub/b.txt" not in _files(moved)
    assert git(moved, "status", "--porcelain", "--ignored") == ""
    assert git(moved, "symbolic-ref", "HEAD") == git(fresh, "symbolic-ref", "HEAD")
    assert git(moved, "rev-parse", "HEAD") == taken.commit
    assert _complete_and_narrow(moved, remote_repo.base / "wt" / "_objects", taken.commit) == \
        _complete_and_narrow(fresh, remote_repo.base / "wt" / "_objects", taken.commit)


def test_a_commit_changing_gitattributes_gets_its_test_checkout_afresh(remote_repo: RemoteRepo) -> None:
    # The attributes say how a file the base and the commit share is written out: moved from the base's
    # checkout, a.txt kept its LF, where a checkout of the commit writes CRLF.
    clone = remote_repo.clone
    (clone / "a.txt").write_text("x\n")
    git(clone, "add", "a.txt")
    git(clone, "commit", "-q", "-m", "base")
    base = git(clone, "rev-parse", "HEAD")
    spaces = Workspaces(clone)
    taken = _read_back(remote_repo, spaces, {"sub/.gitattributes": "x text\n", ".gitattributes":
                                             "a.txt text eol=crlf\n"})
    moved = _moved_ahead(spaces, base, taken, remote_repo.base / "wt" / "X-1.test")
    spaces.close()
    assert (moved / "a.txt").read_bytes() == b"x\r\n"
    assert git(moved, "status", "--porcelain") == ""


def test_a_checkout_whose_preparation_failed_is_made_afresh_in_the_same_directory(
        remote_repo: RemoteRepo) -> None:
    spaces = Workspaces(remote_repo.clone)
    taken = _read_back(remote_repo, spaces, {"new.txt": "the worker's file\n"})
    moved = _moved_ahead(spaces, "1" * 40, taken, remote_repo.base / "wt" / "X-1.test")  # no such base
    spaces.close()
    assert (moved / "new.txt").read_text() == "the worker's file\n"
    assert git(moved, "status", "--porcelain", "--ignored") == ""


def test_a_test_checkout_discarded_while_it_is_made_at_the_base_ahead_is_gone_once_made(
        remote_repo: RemoteRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    # A worker that exits at once, changing nothing: its launch pad discards the test checkout still being
    # made at the base in the background. Removed first (at once, nothing kept), the directory was made
    # again by that preparation and filled with the base's checkout, which stayed until the wave's end.
    base = git(remote_repo.clone, "rev-parse", "HEAD")
    slow, begun, removed = workspace.test_checkout, threading.Event(), threading.Event()

    def test_checkout(*args: object, **kwargs: object) -> Path:
        begun.set()
        removed.wait(timeout=5)  # the removal goes first
        return slow(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(workspace, "test_checkout", test_checkout)
    spaces = Workspaces(remote_repo.clone)
    spaces.warm(Spec(remote_repo.base / "wt" / "X-1", BRANCH, base))
    path = remote_repo.base / "wt" / "X-1.test"
    path.mkdir(parents=True)
    prepared = spaces.prepare_checkout(base, path)
    assert begun.wait(timeout=5)
    discarding = threading.Thread(target=lambda: (spaces.discard(path), spaces.flush(), removed.set()))
    discarding.start()
    removed.wait(timeout=0.5)  # fixed, the discard waits for the preparation, which waits for this
    removed.set()
    discarding.join()
    spaces.close()
    assert prepared.done() and not path.exists()


def test_a_worker_edit_under_eol_attributes_commits_what_git_add_would(remote_repo: RemoteRepo) -> None:
    # The base asks for CRLF in the work tree of *.txt, whose blobs hold LF. The read-back hashes the tree's
    # bytes as they are (no clean conversion), so the worker's tree must hold the blobs' bytes: checked out
    # with CRLF, a worker's one-line append committed every line of a.txt with CR (a whole-file change, and
    # the file shown modified in every clone), and a file it rewrote unchanged (a formatter) was a change.
    clone = remote_repo.clone
    (clone / ".gitattributes").write_text("*.txt text eol=crlf\n")
    (clone / "a.txt").write_text("x\n")
    (clone / "b.txt").write_text("y\n")
    git(clone, "add", "-A")
    git(clone, "commit", "-q", "-m", "base")
    base = git(clone, "rev-parse", "HEAD")
    spaces = Workspaces(clone)
    ready = spaces.take(Spec(remote_repo.base / "wt" / "X-1", BRANCH, base))
    with (ready.path / "a.txt").open("ab") as handle:
        handle.write(b"z\n")
    (ready.path / "b.txt").write_bytes((ready.path / "b.txt").read_bytes())
    ident = git(clone, "var", "GIT_AUTHOR_IDENT")
    taken = snapshot.read(clone, ready.path, ready.base, ready.untouched, snapshot.Limits(1 << 20, 100), None,
                          snapshot.CommitInfo("worker\n", ident, ident))
    spaces.close()
    assert taken.changed == ["a.txt"]
    assert taken.commit is not None
    assert git(clone, "cat-file", "blob", f"{taken.commit}:a.txt") == "x\nz"
    # What `git add` in a checkout of the base would have committed for the same edit.
    plain = remote_repo.base / "plain"
    git(remote_repo.base, "clone", "-q", str(clone), str(plain))
    with (plain / "a.txt").open("ab") as handle:
        handle.write(b"z\n")
    git(plain, "add", "a.txt")
    assert git(plain, "rev-parse", ":a.txt") == git(clone, "rev-parse", f"{taken.commit}:a.txt")
