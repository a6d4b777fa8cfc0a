"""wavegit.core.git: each named git operation against real repositories (a bare origin and a clone)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers.hook import commit
from tests.helpers.repos import RemoteRepo, git
from wavegit.core import git as wgit
from wavegit.core.git import GitError


@pytest.fixture
def clone(remote_repo: RemoteRepo) -> Path:
    return remote_repo.clone


def _head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD")


# -- locating and reading ----------------------------------------------------------------------------------

def test_locate_finds_the_work_tree_from_a_subdirectory(clone: Path) -> None:
    (clone / "sub").mkdir()
    found = wgit.locate(clone / "sub")
    assert found is not None
    assert (found.root, found.git_dir, found.common_dir) == (clone, clone / ".git", clone / ".git")


def test_locate_outside_a_work_tree_is_none(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    assert wgit.locate(tmp_path / "plain") is None


def test_remotes_config_value_and_committer_ident(clone: Path) -> None:
    assert wgit.remotes(clone) == ["origin"]
    assert wgit.config_value(clone, "core.hooksPath") is None
    git(clone, "config", "core.hooksPath", "hooks-here")
    assert wgit.config_value(clone, "core.hooksPath") == "hooks-here"
    # The test environment sets the committer (tests/conftest.py); the timestamp and zone are cut off.
    assert wgit.committer_ident(clone) == (f"{os.environ['GIT_COMMITTER_NAME']} "
                                             f"<{os.environ['GIT_COMMITTER_EMAIL']}>")


# -- revisions -----------------------------------------------------------------------------------------------

def test_resolve_commit_peels_to_a_commit_and_is_none_for_what_names_none(clone: Path) -> None:
    head = _head(clone)
    git(clone, "tag", "-a", "-m", "v1", "v1")
    assert wgit.resolve_commit(clone, "v1") == head  # an annotated tag peels to its commit
    assert wgit.resolve_commit(clone, "refs/heads/main") == head
    assert wgit.resolve_commit(clone, "refs/heads/nope") is None
    assert wgit.resolve_commit(clone, "HEAD^{tree}") is None  # a tree is not a commit


@pytest.mark.parametrize(("name", "valid"), [("A-1", True), ("x.y_z", True), ("a..b", False),
                                           ("x.lock", False), (".hidden", False), ("end.", False)])
def test_is_valid_ref_name_asks_git_check_ref_format(clone: Path, name: str, valid: bool) -> None:
    assert wgit.is_valid_ref_name(clone, f"refs/heads/wavegit/items/w-1/{name}") is valid


def test_commit_of_raises_with_the_command_and_git_s_reason(clone: Path) -> None:
    assert wgit.commit_of(clone, "HEAD") == _head(clone)
    with pytest.raises(GitError) as caught:
        wgit.commit_of(clone, "refs/heads/nope")
    assert caught.value.command == ["git", "rev-parse", "--verify", "refs/heads/nope^{commit}"]
    assert caught.value.returncode == 128 and "Needed a single revision" in caught.value.stderr


def test_tree_parent_ancestry_and_rev_list(clone: Path) -> None:
    first = _head(clone)
    second = commit(clone, {"a.txt": "a\n"})
    third = commit(clone, {"b.txt": "b\n"})
    assert wgit.tree_of(clone, third) == git(clone, "rev-parse", f"{third}^{{tree}}")
    assert wgit.first_parent(clone, third) == second
    assert wgit.is_ancestor(clone, first, third) and wgit.is_ancestor(clone, third, third)
    assert not wgit.is_ancestor(clone, third, first)
    assert not wgit.is_ancestor(clone, "0" * 40, third)  # not an object here
    assert wgit.rev_list(clone, [f"{first}..{third}"]) == [third, second]
    git(clone, "checkout", "-q", "-b", "side", first)
    side = commit(clone, {"c.txt": "c\n"})
    git(clone, "checkout", "-q", "main")
    git(clone, "merge", "-q", "--no-ff", "-m", "merge side", "side")
    merge = _head(clone)
    assert wgit.rev_list(clone, [f"{side}..{merge}"], first_parent_only=True, ancestry_path=True) == [merge]


def test_log_formats_filters_and_reads_messages(clone: Path) -> None:
    one = commit(clone, {"a.txt": "a\n"}, "first\n\nWavegit-Op: op-1")
    two = commit(clone, {"b.txt": "b\n"}, "second\n\nWavegit-Op: op-2")
    assert wgit.log(clone, [two], "%(trailers:key=Wavegit-Op,valueonly)").split() == ["op-2", "op-1"]
    assert wgit.log(clone, [f"{one}..{two}"], "%H") == two
    assert wgit.log(clone, [two], "%s", reverse=True, max_count=2).splitlines() == ["first", "second"]
    assert wgit.log(clone, [two], "%s", grep="Wavegit-Op: op-1") == "first"
    assert wgit.log(clone, [two], "%s", grep="op-.") == ""  # a fixed string, not a pattern
    assert wgit.log(clone, [two], "%s", since="2999-01-01") == ""
    assert wgit.commit_message(clone, two) == "second\n\nWavegit-Op: op-2"


def test_log_changes_lists_each_commit_s_paths_by_range_or_by_exact_commits(clone: Path) -> None:
    base = _head(clone)
    one = commit(clone, {"a.txt": "a\n"})
    two = commit(clone, {"a.txt": None, "b.txt": "b\n"})
    by_range = wgit.log_changes(clone, "@", [two, "--not", base]).split("\0")
    assert [t for t in by_range if t.startswith("@")] == [f"@{two}", f"@{one}"]
    assert {"a.txt", "b.txt"} <= set(by_range)
    exact = wgit.log_changes(clone, "@", commits=[one]).split("\0")
    assert [t for t in exact if t.startswith("@")] == [f"@{one}"] and "b.txt" not in exact


def test_log_changes_with_parents_names_each_commits_parents(clone: Path) -> None:
    base = _head(clone)
    one = commit(clone, {"a.txt": "a\n"})
    two = commit(clone, {"b.txt": "b\n"})
    listed = wgit.log_changes(clone, "@", [two, "--not", base], parents=True).split("\0")
    assert [t for t in listed if t.startswith("@")] == [f"@{two} {one}", f"@{one} {base}"]


# -- refs ----------------------------------------------------------------------------------------------------

def test_for_each_ref_update_ref_with_its_old_value_and_delete(clone: Path) -> None:
    head = _head(clone)
    older = commit(clone, {"a.txt": "a\n"})
    wgit.update_ref(clone, "refs/heads/wavegit/x", head)
    wgit.update_ref(clone, "refs/heads/wavegit/y", head, "")  # "" = must not exist yet
    assert wgit.for_each_ref(clone, "refs/heads/wavegit/") == {"refs/heads/wavegit/x": head,
                                                                 "refs/heads/wavegit/y": head}
    with pytest.raises(GitError) as caught:
        wgit.update_ref(clone, "refs/heads/wavegit/x", older, older)  # x is not at `older`
    assert caught.value.command[:2] == ["git", "update-ref"] and "cannot lock ref" in caught.value.stderr
    assert not wgit.update_ref(clone, "refs/heads/wavegit/x", older, older, check=False)
    assert wgit.update_ref(clone, "refs/heads/wavegit/x", older, head, message="moved")
    assert wgit.resolve_commit(clone, "refs/heads/wavegit/x") == older
    refused = wgit.delete_refs(clone, {"refs/heads/wavegit/x": head, "refs/heads/wavegit/y": None})
    assert list(refused) == ["refs/heads/wavegit/x", "refs/heads/wavegit/y"] and "expected" in refused[
        "refs/heads/wavegit/x"]  # x moved to `older`: the transaction deletes neither
    assert wgit.delete_refs(clone, {"refs/heads/wavegit/x": older, "refs/heads/wavegit/y": None,
                                    "refs/heads/wavegit/never-was": None}) == {}
    assert wgit.delete_refs(clone, {}) == {}
    assert wgit.for_each_ref(clone, "refs/heads/wavegit/") == {}


# -- remotes -------------------------------------------------------------------------------------------------

def test_fetch_and_prune_tracking_refs(remote_repo: RemoteRepo) -> None:
    other = remote_repo.new_clone("other")
    pushed = commit(other, {"a.txt": "a\n"})
    git(other, "push", "-q", "origin", "main:refs/heads/wavegit/w1", "main:refs/heads/wavegit/w2")
    clone = remote_repo.clone
    spec = "+refs/heads/wavegit/*:refs/remotes/origin/wavegit/*"
    wgit.fetch(clone, "origin", [spec])
    assert set(wgit.for_each_ref(clone, "refs/remotes/origin/wavegit/").values()) == {pushed}
    assert not (clone / ".git" / "FETCH_HEAD").exists()
    git(other, "push", "-q", "origin", ":refs/heads/wavegit/w2")
    wgit.fetch(clone, "origin", [spec])  # without prune the stale tracking ref stays
    assert len(wgit.for_each_ref(clone, "refs/remotes/origin/wavegit/")) == 2
    wgit.fetch(clone, "origin", [spec], prune=True)
    assert list(wgit.for_each_ref(clone, "refs/remotes/origin/")) == ["refs/remotes/origin/main",
                                                                       "refs/remotes/origin/wavegit/w1"]


def test_a_tracking_ref_lock_a_killed_fetch_left_is_waited_out_and_removed(remote_repo: RemoteRepo) -> None:
    clone = remote_repo.clone
    other = remote_repo.new_clone("other")
    pushed = commit(other, {"a.txt": "a\n"})
    git(other, "push", "-q", "origin", "main", "main:refs/wavegit/heartbeat/w-1")
    # What a `kill -9` in the middle of a fetch leaves: the tracking ref's lock, just made, no process holding
    # it. A `wavegit sync` right after the kill meets it (a heartbeat copy, in CI).
    lock = clone / ".git" / "refs" / "wavegit" / "heartbeats" / "origin" / "w-1.lock"
    lock.parent.mkdir(parents=True)
    lock.write_text("")
    began = time.monotonic()
    wgit.fetch(clone, "origin", ["+refs/wavegit/heartbeat/*:refs/wavegit/heartbeats/origin/*"])
    assert time.monotonic() - began >= wgit.STALE_TRACKING_LOCK_S  # a live fetch's lock is not taken away
    assert git(clone, "rev-parse", "refs/wavegit/heartbeats/origin/w-1") == pushed and not lock.exists()


def test_a_lock_on_a_ref_the_fetch_does_not_force_is_left_to_its_owner(remote_repo: RemoteRepo) -> None:
    clone = remote_repo.clone
    other = remote_repo.new_clone("other")
    commit(other, {"a.txt": "a\n"})
    git(other, "push", "-q", "origin", "main")
    lock = clone / ".git" / "refs" / "remotes" / "origin" / "main.lock"
    lock.write_text("")
    old = time.time() - wgit.STALE_TRACKING_LOCK_S - 1
    os.utime(lock, (old, old))
    with pytest.raises(GitError, match="cannot lock ref"):  # no `+`: not a copy to rewrite
        wgit.fetch(clone, "origin", ["refs/heads/main:refs/remotes/origin/main"])
    assert lock.exists()


def test_a_stale_tracking_lock_takes_away_no_other_lock_the_same_fetch_met(remote_repo: RemoteRepo) -> None:
    # A pruning fetch that met packed-refs.lock (held by a `git gc` or `pack-refs` of a big repository) and a
    # tracking ref's stale lock removed packed-refs.lock, the first lock its error named, under the tracking
    # ref's name: two writers of the file holding every packed ref.
    clone = remote_repo.clone
    other = remote_repo.new_clone("other")
    commit(other, {"a.txt": "a\n"})
    git(other, "push", "-q", "origin", "main:refs/heads/wavegit/w1", "main:refs/heads/wavegit/w2")
    spec = "+refs/heads/wavegit/*:refs/remotes/origin/wavegit/*"
    wgit.fetch(clone, "origin", [spec])
    git(other, "push", "-q", "origin", ":refs/heads/wavegit/w2")
    commit(other, {"b.txt": "b\n"})
    git(other, "push", "-q", "origin", "main:refs/heads/wavegit/w1")
    git(clone, "pack-refs", "--all")
    old = time.time() - wgit.STALE_TRACKING_LOCK_S - 1
    packed_lock = clone / ".git" / "packed-refs.lock"
    ref_lock = clone / ".git" / "refs" / "remotes" / "origin" / "wavegit" / "w1.lock"
    ref_lock.parent.mkdir(parents=True, exist_ok=True)
    for lock in (packed_lock, ref_lock):
        lock.write_text("")
        os.utime(lock, (old, old))
    with pytest.raises(GitError):  # the prune cannot go while packed-refs.lock is held
        wgit.fetch(clone, "origin", [spec], prune=True)
    assert packed_lock.exists() and not ref_lock.exists()


def test_a_failed_fetch_says_whether_the_remote_ref_is_missing(clone: Path) -> None:
    with pytest.raises(GitError) as caught:
        wgit.fetch(clone, "origin", ["+refs/heads/nope:refs/remotes/origin/nope"])
    assert caught.value.command[:2] == ["git", "fetch"] and caught.value.returncode != 0
    assert wgit.missing_remote_ref(caught.value)
    with pytest.raises(GitError) as unreachable:
        wgit.fetch(clone, "no-such-remote", ["refs/heads/main"])
    assert not wgit.missing_remote_ref(unreachable.value) and unreachable.value.stderr


def test_push_force_and_lease(remote_repo: RemoteRepo) -> None:
    clone, origin = remote_repo.clone, remote_repo.origin
    base = _head(clone)
    wgit.push(clone, "origin", [f"{base}:refs/heads/wavegit/w"])
    assert git(origin, "rev-parse", "refs/heads/wavegit/w") == base
    ahead = commit(clone, {"a.txt": "a\n"})
    git(clone, "reset", "-q", "--hard", base)
    aside = commit(clone, {"b.txt": "b\n"})
    wgit.push(clone, "origin", [f"{ahead}:refs/heads/wavegit/w"])
    with pytest.raises(GitError) as caught:  # not a fast-forward
        wgit.push(clone, "origin", [f"{aside}:refs/heads/wavegit/w"])
    assert caught.value.command[:2] == ["git", "push"] and "rejected" in caught.value.stderr
    with pytest.raises(GitError):  # the lease names a value the remote ref no longer has
        wgit.push(clone, "origin", [f"{aside}:refs/heads/wavegit/w"], lease={"refs/heads/wavegit/w": base})
    wgit.push(clone, "origin", [f"{aside}:refs/heads/wavegit/w"], lease={"refs/heads/wavegit/w": ahead})
    assert git(origin, "rev-parse", "refs/heads/wavegit/w") == aside
    wgit.push(clone, "origin", [f"{base}:refs/heads/wavegit/w"], force=True)
    assert git(origin, "rev-parse", "refs/heads/wavegit/w") == base


def test_push_with_lease_is_a_compare_and_swap_that_returns_a_refusal(remote_repo: RemoteRepo) -> None:
    clone, origin = remote_repo.clone, remote_repo.origin
    base = _head(clone)
    ref = "refs/heads/tracker"
    created = wgit.push_with_lease(clone, "origin", base, ref, None)
    assert created.ok and created.rejected == []
    moved = commit(clone, {"a.txt": "a\n"})
    stale = wgit.push_with_lease(clone, "origin", moved, ref, moved)  # the remote is at base, not moved
    assert not stale.ok and stale.rejected and "stale info" in stale.rejected[0]
    error = stale.error("why")
    assert error.command[:3] == ["git", "push", "--porcelain"] and error.stderr == "why"
    assert error.returncode == stale.result.returncode != 0
    assert git(origin, "rev-parse", ref) == base
    assert wgit.push_with_lease(clone, "origin", moved, ref, base).ok
    assert git(origin, "rev-parse", ref) == moved


@pytest.mark.parametrize("name", ["my.re-mote", "a=b"])
def test_push_with_lease_moves_the_tracking_ref_of_a_remote_without_fetch_refspecs_whatever_its_name(
        remote_repo: RemoteRepo, name: str) -> None:
    # `git remote add a=b` is allowed; a `-c remote.a=b.fetch=...` set `remote.a` instead, and the tracking
    # ref stayed where it was: the next write's lease rested on a stale tracker.
    clone = remote_repo.clone
    git(clone, "remote", "rename", "origin", name)
    git(clone, "config", "--unset-all", f"remote.{name}.fetch")
    moved = commit(clone, {"a.txt": "a\n"})
    tracking = f"refs/remotes/{name}/tracker"
    assert wgit.push_with_lease(clone, name, moved, "refs/heads/tracker", None, tracking=tracking).ok
    assert git(clone, "rev-parse", tracking) == moved
    assert git(remote_repo.origin, "rev-parse", "refs/heads/tracker") == moved


# -- objects -------------------------------------------------------------------------------------------------

def _stored(repo: Path, text: str) -> wgit.BlobSha:
    return wgit.BlobSha(git(repo, "hash-object", "-w", "--stdin", input=text))


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_a_blob_id_named_without_git_is_the_one_git_gives(tmp_path: Path, object_format: str) -> None:
    git(tmp_path, "init", "-q", f"--object-format={object_format}", "repo")
    repo = tmp_path / "repo"
    like = git(repo, "hash-object", "--stdin", input="")
    for text in ["text\n", "", "caf\u00e9 \udcff\r\n"]:
        named = subprocess.run(["git", "hash-object", "--stdin"], cwd=repo, capture_output=True, check=True,
                               input=text.encode("utf-8", "surrogateescape")).stdout.decode().strip()
        assert wgit.blob_id(text, like) == named


def test_blobs_hash_read_and_look_up(clone: Path) -> None:
    with pytest.raises(GitError):
        wgit.read_blob(clone, git(clone, "hash-object", "--stdin", input="never stored\n"))
    sha = _stored(clone, "stored\n")
    assert wgit.read_blob(clone, sha) == "stored\n"
    readme = git(clone, "rev-parse", "HEAD:README.md")
    assert wgit.blob_at(clone, "HEAD:README.md") == readme
    assert wgit.blob_at(clone, "HEAD:nope") is None
    assert wgit.read_blob_at(clone, "HEAD:README.md") == (readme, "hello\n")
    assert wgit.read_blob_at(clone, "HEAD:nope") is None
    (clone / "dir").mkdir()
    commit(clone, {"dir/f.txt": "f\n"})
    assert wgit.blob_at(clone, "HEAD:dir") is None  # a tree, not a blob
    assert wgit.read_blob_at(clone, "HEAD:dir") is None
    (clone / "x.txt").write_text("x\n")
    assert wgit.hash_file(clone, "x.txt") == git(clone, "hash-object", "--stdin", input="x\n")


def test_a_commit_and_a_file_in_it_are_read_in_one_go_exactly(clone: Path) -> None:
    text = "caf\u00e9 \udcff\r\nno newline"  # not UTF-8, a CR, no final newline
    (clone / "dir").mkdir()
    (clone / "dir" / "f.txt").write_bytes(text.encode("utf-8", "surrogateescape"))
    git(clone, "add", "dir/f.txt")
    head = commit(clone, {"empty.txt": ""})
    blob = git(clone, "rev-parse", "HEAD:dir/f.txt")
    assert wgit.read_commit_and_blob(clone, "HEAD", "dir/f.txt") == (head, (blob, text))
    empty = git(clone, "rev-parse", "HEAD:empty.txt")
    assert wgit.read_commit_and_blob(clone, "HEAD", "empty.txt") == (head, (empty, ""))
    assert wgit.read_commit_and_blob(clone, "HEAD", "dir") == (head, None)  # a tree, not a file
    assert wgit.read_commit_and_blob(clone, "HEAD", "nope") == (head, None)
    assert wgit.read_commit_and_blob(clone, "refs/heads/nope", "dir/f.txt") == (None, None)


def test_ls_tree_lists_the_given_paths_of_a_commit(clone: Path) -> None:
    head = commit(clone, {"dir/f.txt": "f\n"})
    entries = wgit.ls_tree(clone, head, ["README.md", "dir", "nope"])
    assert [(e.path, e.kind, e.mode) for e in entries] == [("README.md", "blob", "100644"),
                                                           ("dir", "tree", "040000")]
    assert entries[0].sha == git(clone, "rev-parse", "HEAD:README.md")
    with pytest.raises(GitError):
        wgit.ls_tree(clone, "refs/heads/nope^{commit}", ["README.md"])


def test_build_tree_keeps_a_cr_and_an_lf_in_two_names_apart(clone: Path, tmp_path: Path) -> None:
    # Index records went to update-index one per line: `p\nq` split in two, and text-mode output read the
    # CR of `p\rq` as a newline.
    blobs = {name: _stored(clone, f"{name!r}\n") for name in ("p\rq", "p\nq")}
    tree = wgit.build_tree(clone, tmp_path / "index", None, blobs)
    assert {entry.path: entry.sha for entry in wgit.ls_tree(clone, tree, [])} == blobs


def test_build_tree_own_changes_and_commit_tree(clone: Path, tmp_path: Path) -> None:
    base = _head(clone)
    blob = _stored(clone, "new\n")
    tree = wgit.build_tree(clone, tmp_path / "index", base, {"new.txt": blob, "README.md": None},
                             modes={"new.txt": "100755"})
    assert git(clone, "ls-tree", "-r", "--name-only", tree).split() == ["new.txt"]
    assert git(clone, "ls-tree", tree, "new.txt").split()[0] == "100755"
    made = wgit.commit_tree(clone, tree, [base], "built\n")
    assert git(clone, "log", "-1", "--format=%s %P", made) == f"built {base}"
    assert wgit.own_changes(clone, made) == [
        wgit.Change("README.md", "000000", "0" * len(blob)),
        wgit.Change("new.txt", "100755", blob)]
    assert [c.deleted for c in wgit.own_changes(clone, made)] == [True, False]
    assert wgit.build_tree(clone, tmp_path / "index2", None, {"only.txt": blob}) == git(
        clone, "mktree", input=f"100644 blob {blob}\tonly.txt\n")
    root = wgit.commit_tree(clone, tree, [], "no parent\n")
    assert git(clone, "log", "-1", "--format=%P", root) == ""
    with pytest.raises(GitError) as caught:
        wgit.commit_tree(clone, "0" * 40, [base], "bad\n")
    assert caught.value.command[:2] == ["git", "commit-tree"] and caught.value.returncode == 128


# -- a checkout's index and worktrees ------------------------------------------------------------------------

def test_staged_entries_and_refresh_files(clone: Path) -> None:
    readme = git(clone, "rev-parse", "HEAD:README.md")
    assert wgit.staged_entries(clone, "README.md") == [("100644", readme, "0")]
    assert wgit.staged_entries(clone, "*") == []  # the path is literal, not a pattern
    blob = _stored(clone, "fresh\n")
    wgit.refresh_files(clone, {"README.md": None, "new.txt": blob})
    assert not (clone / "README.md").exists() and (clone / "new.txt").read_text() == "fresh\n"
    assert git(clone, "status", "--porcelain") == "D  README.md\nA  new.txt"


def test_worktrees_lists_each_work_tree_and_its_branch_main_first(clone: Path, tmp_path: Path) -> None:
    linked = tmp_path / "linked"
    git(clone, "worktree", "add", "-q", "-b", "feature", str(linked))
    git(clone, "worktree", "lock", str(linked))
    detached = tmp_path / "detached"
    git(clone, "worktree", "add", "-q", "--detach", str(detached))
    found = wgit.worktrees(clone)
    assert found[0] == wgit.Worktree(clone, "refs/heads/main")
    assert sorted((str(w.path), w.branch or "") for w in found[1:]) == [(str(detached), ""),
                                                                      (str(linked), "refs/heads/feature")]


# -- diffs and merges ----------------------------------------------------------------------------------------

def test_changed_paths_lists_both_sides_of_a_rename_and_mode_changes_sorted(clone: Path) -> None:
    base = commit(clone, {"a.txt": "a\n", "b.txt": "b\n"})
    (clone / "z").mkdir()
    git(clone, "mv", "a.txt", "z/a.txt")
    git(clone, "update-index", "--chmod=+x", "b.txt")
    git(clone, "commit", "-q", "-m", "move")
    assert wgit.changed_paths(clone, base, "HEAD") == ["a.txt", "b.txt", "z/a.txt"]
    assert wgit.changed_paths(clone, base, base) == []


def test_changes_of_commits_gives_each_commit_s_parents_and_own_changes_in_order(clone: Path) -> None:
    base = _head(clone)
    first = commit(clone, {"one.txt": "1\n"})
    second = commit(clone, {"one.txt": None, "two/t.txt": "2\n"})
    empty = wgit.commit_tree(clone, wgit.tree_of(clone, second), [second], "empty\n")
    found = wgit.changes_of_commits(clone, [second, first, empty])
    blob = git(clone, "rev-parse", f"{second}:two/t.txt")
    one = git(clone, "rev-parse", f"{first}:one.txt")
    assert found == [
        wgit.CommitChanges([first], [wgit.Change("one.txt", "000000", "0" * len(blob)),
                                       wgit.Change("two/t.txt", "100644", blob)]),
        wgit.CommitChanges([base], [wgit.Change("one.txt", "100644", one)]),
        wgit.CommitChanges([second], []),  # --always: a commit that changed nothing is listed too
    ]


def test_merge_tree_merges_disjoint_changes_and_raises_on_a_conflict(clone: Path) -> None:
    base = _head(clone)
    ours = commit(clone, {"ours.txt": "o\n"})
    git(clone, "checkout", "-q", "--detach", base)
    theirs = commit(clone, {"theirs.txt": "t\n"})
    merged = wgit.merge_tree(clone, ours, theirs)
    assert git(clone, "ls-tree", "--name-only", merged).split() == ["README.md", "ours.txt", "theirs.txt"]
    clash = commit(clone, {"ours.txt": "different\n"})
    with pytest.raises(GitError) as caught:
        wgit.merge_tree(clone, ours, clash)
    assert caught.value.command == ["git", "merge-tree", "--write-tree", ours, clash]
    assert caught.value.returncode == 1 and "ours.txt" in caught.value.stderr


def test_patch_ids_match_the_same_change_on_another_parent_and_skip_empty_commits(clone: Path) -> None:
    base = _head(clone)
    first = commit(clone, {"a.txt": "a\n"}, "a on base")
    git(clone, "checkout", "-q", "--detach", base)
    other = commit(clone, {"c.txt": "c\n"})
    git(clone, "cherry-pick", first)
    moved = _head(clone)
    git(clone, "commit", "-q", "--allow-empty", "-m", "empty")
    empty = _head(clone)
    found = wgit.patch_ids(clone, [first, other, moved, empty])
    assert moved != first and found[first] == found[moved] != found[other] and empty not in found
    assert wgit.patch_ids(clone, []) == {}
    # A range: only the commits touching the paths, their patches cut down to them.
    ranged = wgit.patch_ids(clone, revs=[moved, f"^{base}"], paths=["a.txt"])
    assert ranged == {moved: found[first]}


def test_last_change_names_the_newest_commit_that_changed_a_path(clone: Path) -> None:
    first = commit(clone, {"x/a.txt": "1\n"})
    second = commit(clone, {"x/a.txt": "2\n", "b.txt": "b\n"})
    assert wgit.last_change(clone, second, ["x/a.txt"]) == second
    assert wgit.last_change(clone, first, ["b.txt"]) is None


def test_delete_refs_on_a_remote_deletes_at_the_lease_and_reports_a_ref_that_moved(
        remote_repo: RemoteRepo) -> None:
    clone = remote_repo.clone
    old = _head(clone)
    git(clone, "push", "-q", "origin", f"{old}:refs/heads/gone", f"{old}:refs/heads/moved")
    new = commit(clone, {"m.txt": "m\n"})
    git(clone, "push", "-q", "origin", f"{new}:refs/heads/moved")
    leases = {"refs/heads/gone": old, "refs/heads/moved": old}
    refused = wgit.delete_refs(clone, leases, remote="origin")
    assert list(refused) == ["refs/heads/moved"] and "stale info" in refused["refs/heads/moved"]
    assert git(remote_repo.origin, "branch", "--list", "gone", "moved").split() == ["moved"]
    assert wgit.delete_refs(clone, {}, remote="origin") == {}


def test_lines_split_at_gits_line_ends_only() -> None:
    # A subject, a path or a trailer may hold what str.splitlines also takes for a line end.
    record = "a\u2028b\x85c\rd\x0ce\x1cf"
    assert wgit.lines(f"{record}\n{record}") == [record, record] and wgit.lines("") == []


def test_locate_finds_a_repository_whose_folder_name_holds_a_unicode_line_end(tmp_path: Path) -> None:
    # rev-parse prints the paths a line each; str.splitlines split this one in two (the root named wrong).
    root = tmp_path / "a\u2028b"
    root.mkdir()
    git(root, "init", "-q")
    found = wgit.locate(root)
    assert found is not None and found.root == root and found.git_dir == root / ".git"


@pytest.mark.parametrize("args", [["push", "origin"], ["-c", "remote.origin.fetch=+a:b", "push", "origin"],
                                  ["-c", "x.y=1", "-c", "x.z=2", "fetch", "origin"]])
def test_a_remote_command_gets_the_remote_auth_whatever_config_precedes_it(args: list[str]) -> None:
    # A tracker write's push names the tracking ref with `-c` before `push`: it went without the App's token
    # (git asked for a user name, with prompts disabled) and every claim failed.
    from wavegit.core.git import _runner

    _runner.set_remote_auth(lambda: {"WAVEGIT_TEST_AUTH": "token"})
    try:
        assert _runner._with_remote_auth(args, None) == {"WAVEGIT_TEST_AUTH": "token"}
        assert _runner._with_remote_auth(["-c", "x.y=1", "log"], None) is None
    finally:
        _runner.set_remote_auth(None)
