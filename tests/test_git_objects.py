"""wavegit.core.git: the attempt-tree and bulk-object operations against real repositories."""

from __future__ import annotations

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


def test_git_path_and_absolute_git_dir(clone: Path) -> None:
    (clone / "sub").mkdir()
    assert wgit.git_path(clone, "objects") == (clone / ".git" / "objects").resolve()
    assert wgit.absolute_git_dir(clone / "sub") == clone / ".git"


def test_init_repository_has_no_templates_and_checking_out_a_commit_writes_no_reflog(clone: Path,
                                                                              tmp_path: Path) -> None:
    tree = tmp_path / "attempt"
    tree.mkdir()
    wgit.init_repository(tree, "item/X-1")
    assert git(tree, "symbolic-ref", "HEAD") == "refs/heads/item/X-1"
    assert not (tree / ".git" / "hooks").exists() and not (tree / ".git" / "info" / "exclude").exists()
    (tree / ".git" / "objects" / "info" / "alternates").write_text(
        f"{wgit.git_path(clone, 'objects')}\n")
    head = commit(clone, {"dir/f.txt": "f\n"})
    (tree / "stray.txt").write_text("left over\n")
    wgit.check_out_unlogged(tree, head)
    assert git(tree, "rev-parse", "HEAD") == head and (tree / "dir" / "f.txt").read_text() == "f\n"
    assert not (tree / ".git" / "logs").exists()
    with pytest.raises(GitError):
        wgit.check_out_unlogged(tree, "0" * 40)


def test_ls_tree_recursive_lists_every_file_with_full_paths(clone: Path) -> None:
    head = commit(clone, {"dir/deep/f.txt": "f\n"})
    entries = wgit.ls_tree_recursive(clone, head)
    assert [(e.path, e.kind, e.mode) for e in entries] == [("README.md", "blob", "100644"),
                                                           ("dir/deep/f.txt", "blob", "100644")]
    assert entries[1].sha == git(clone, "rev-parse", f"{head}:dir/deep/f.txt")


def test_cat_file_batch_returns_exact_bytes_in_order(clone: Path) -> None:
    texts = ["no newline", "two\nlines\n", "", "ü\n"]
    blobs = [wgit.BlobSha(git(clone, "hash-object", "-w", "--stdin", input=text)) for text in texts]
    assert wgit.cat_file_batch(clone, [*reversed(blobs)]) == [t.encode() for t in reversed(texts)]
    assert wgit.cat_file_batch(clone, []) == []


def test_missing_objects_tells_which_ids_the_repository_lacks(clone: Path) -> None:
    head = git(clone, "rev-parse", "HEAD")
    assert wgit.missing_objects(clone, [head, "1" * 40, head]) == [False, True, False]
    assert wgit.missing_objects(clone, []) == []


def test_check_ignore_reads_only_the_given_work_tree_s_rules(clone: Path, tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    (rules / "sub").mkdir(parents=True)
    (rules / ".gitignore").write_text("*.log\n")
    (rules / "sub" / ".gitignore").write_text("build/\n")
    git_dir = wgit.absolute_git_dir(clone)
    paths = ["a.log", "a.txt", "sub/build/x", ":(exclude)x.log", "build/y"]
    assert wgit.check_ignore(git_dir, rules, paths) == {"a.log", "sub/build/x", ":(exclude)x.log"}
    assert wgit.check_ignore(git_dir, rules, ["a.txt"]) == set()
    assert wgit.check_ignore(git_dir, rules, []) == set()
    with pytest.raises(GitError):
        wgit.check_ignore(tmp_path / "no-git-dir", rules, ["a.log"])


def test_idents_are_the_author_and_committer_lines_with_time(clone: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Ann Author")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Carl Committer")
    author, committer = wgit.idents(clone)
    assert author.startswith("Ann Author <") and committer.startswith("Carl Committer <")
    assert committer.rsplit(" ", 2)[0] == wgit.committer_ident(clone)
    assert author.rsplit(" ", 2)[1].isdigit()


def test_idents_are_read_once_then_dated_now_unless_the_environment_pins_the_date(
        clone: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GIT_AUTHOR_DATE", raising=False)
    monkeypatch.delenv("GIT_COMMITTER_DATE", raising=False)
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Ann Author")
    wgit.idents(clone)
    (clone / ".git" / "config").write_text("this config no longer parses [\n")  # git var would fail now
    for now in (1_800_000_000, 1_800_000_060):  # dated at each call, not when first read
        monkeypatch.setattr(time, "time", lambda now=now: now + 0.5)
        author, committer = wgit.idents(clone)
        assert author.startswith("Ann Author <") and author.rsplit(" ", 2)[1] == str(now)
        assert committer.rsplit(" ", 2)[1] == str(now)
    monkeypatch.undo()
    # Another environment (monkeypatch.undo restored the pinned dates): asked again.
    with pytest.raises(GitError):
        wgit.idents(clone)


def test_fast_import_writes_objects_and_needs_force_to_rewind_a_branch(clone: Path) -> None:
    head = git(clone, "rev-parse", "HEAD")
    author, committer = wgit.idents(clone)
    stream = (f"feature done\ncommit refs/heads/side\nmark :1\nauthor {author}\ncommitter {committer}\n"
              f"data 4\nnew\nfrom {head}\nM 100644 inline f.txt\ndata 2\nf\n\nget-mark :1\ndone\n")
    made = wgit.fast_import(clone, stream).strip()
    assert git(clone, "rev-parse", "refs/heads/side") == made
    assert git(clone, "show", f"{made}:f.txt") == "f"
    rewind = f"feature done\nreset refs/heads/side\nfrom {head}\n\ndone\n"
    with pytest.raises(GitError):
        wgit.fast_import(clone, rewind)
    wgit.fast_import(clone, rewind, force=True)
    assert git(clone, "rev-parse", "refs/heads/side") == head
