"""Branch names, item commits and combining them, on real repositories."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import pytest

from tests.helpers.repos import AttemptTree, RemoteRepo, git, make_remote_repo
from tests.helpers.wave import item, make_wave_repo, run_cli
from wavegit.attempts import wavebranch
from wavegit.attempts.wavebranch import Trailers
from wavegit.core import git as wgit
from wavegit.model import tracker


def test_wave_ids_are_utc_timestamped_unique_and_sort_by_start_time() -> None:
    early = wavebranch.new_wave_id(datetime(2026, 11, 29, 14, 32, 5, tzinfo=timezone.utc))
    late = wavebranch.new_wave_id(datetime(2026, 11, 29, 14, 32, 6, tzinfo=timezone.utc))
    assert early.startswith("w-20261129-143205-") and wavebranch.WAVE_ID_RE.match(early)
    assert early < late
    # 2,000 in one second: 65,536 suffixes make a repeat all but certain unless the process remembers its own.
    moment = datetime(2026, 11, 29, 14, 32, 7, tzinfo=timezone.utc)
    assert len({wavebranch.new_wave_id(moment) for _ in range(2_000)}) == 2_000


def test_branch_names_round_trip_and_item_branches_never_nest_under_the_wave_branch() -> None:
    wave_id = "w-20261129-143205-a1b2"
    assert wavebranch.wave_branch(wave_id) == "wavegit/w-20261129-143205-a1b2"
    assert wavebranch.item_branch(wave_id, "AUTH-12") == "wavegit/items/w-20261129-143205-a1b2/AUTH-12"
    assert wavebranch.parse_wave_branch(f"refs/heads/{wavebranch.wave_branch(wave_id)}") == wave_id
    assert wavebranch.parse_item_branch(wavebranch.item_branch(wave_id, "AUTH-12")) == (wave_id, "AUTH-12")
    assert not wavebranch.item_branch(wave_id, "X").startswith(wavebranch.wave_branch(wave_id) + "/")


@pytest.mark.parametrize("name", ["main", "wavegit/items/w-1/x", "wavegit/w-2026-x", "wavegit/"])
def test_other_branch_names_are_not_wave_branches(name: str) -> None:
    assert wavebranch.parse_wave_branch(name) is None


def test_item_branch_parse_rejects_wave_branches_and_missing_item() -> None:
    assert wavebranch.parse_item_branch("wavegit/w-20261129-143205-a1b2") is None
    assert wavebranch.parse_item_branch("wavegit/items/w-20261129-143205-a1b2/") is None


def test_item_commit_has_the_base_as_parent_and_the_trailers(remote_repo: RemoteRepo) -> None:
    attempt = AttemptTree(remote_repo)
    base = attempt.base
    (attempt.path / "x.txt").write_text("x\n")
    tree = attempt.read().tree
    message = wavebranch.item_message("Add x\nmore", Trailers("X-1", "w-20260101-000000-0000", "ab" * 32))
    commit = wgit.commit_tree(remote_repo.clone, tree, [base], message)
    assert git(remote_repo.clone, "rev-parse", f"{commit}^") == base
    assert git(remote_repo.clone, "log", "-1", "--format=%s", commit) == "X-1: Add x"
    assert git(remote_repo.clone, "log", "-1", "--format=%(trailers:key=Wavegit-Item,valueonly)",
               commit) == "X-1"


def _item_commit(remote: RemoteRepo, name: str, change: Callable[[Path], object],
                 start: str) -> tuple[str, str]:
    attempt = AttemptTree(remote, name, start)
    change(attempt.path)
    message = f"{name}: ü\n\nWavegit-Item: {name}\n"
    return wgit.commit_tree(remote.clone, attempt.read().tree, [start], message), message


def _writes(rel: str, text: str) -> Callable[[Path], int]:
    """An item's change to its worktree: write ``text`` to ``rel``."""
    return lambda path: (path / rel).write_text(text)


def _items_writing(remote: RemoteRepo, base: str, rel: str, text: str) -> list[tuple[str, str]]:
    """Item commits ``one`` and ``two`` on ``base``, each writing ``text`` to ``rel`` (``{name}`` filled)."""
    return [_item_commit(remote, name, _writes(rel.format(name=name), text.format(name=name)), base)
            for name in ("one", "two")]


def test_combine_replays_item_commits_in_order_keeping_messages(remote_repo: RemoteRepo) -> None:
    clone = remote_repo.clone
    base = git(clone, "rev-parse", "HEAD")
    commits = _items_writing(remote_repo, base, "{name}.txt", "{name}\n")
    head = wavebranch.combine(clone, base, commits)
    assert git(clone, "log", "--format=%s", f"{base}..{head}").splitlines() == ["two: ü", "one: ü"]
    assert git(clone, "ls-tree", "--name-only", head).splitlines() == ["README.md", "one.txt", "two.txt"]


def test_combine_refuses_conflicting_commits(remote_repo: RemoteRepo) -> None:
    clone = remote_repo.clone
    base = git(clone, "rev-parse", "HEAD")
    commits = _items_writing(remote_repo, base, "README.md", "{name}\n")
    with pytest.raises(wavebranch.CombineConflict):
        wavebranch.combine(clone, base, commits)


def test_combine_of_disjoint_items_applies_each_change_as_is_and_sets_the_branch(tmp_path: Path) -> None:
    remote = make_remote_repo(tmp_path, {"README.md": "r\n", "old/f.txt": "f\n", "run.sh": "x\n"})
    clone, base = remote.clone, git(remote.clone, "rev-parse", "HEAD")
    weird = 'we "ird"\tname\\ü.txt'

    def one(path: Path) -> None:
        (path / weird).write_text("1\n")
        (path / "sub").mkdir()
        (path / "sub" / "a.txt").write_text("a\n")

    def two(path: Path) -> None:
        (path / "README.md").unlink()
        (path / "sub").mkdir()
        (path / "sub" / "b.txt").write_text("b\n")

    def three(path: Path) -> None:
        shutil.rmtree(path / "old")
        (path / "old").write_text("a file now\n")
        (path / "run.sh").chmod(0o755)
        os.symlink("README.md", path / "link")

    commits = [_item_commit(remote, name, change, base)
               for name, change in (("one", one), ("two", two), ("three", three))]
    head = wavebranch.combine(clone, base, commits, branch="wavegit/w-20260101-000000-cccc")
    assert git(clone, "rev-parse", "wavegit/w-20260101-000000-cccc") == head
    subjects = git(clone, "log", "--format=%s", f"{base}..{head}").splitlines()
    assert subjects == ["three: ü", "two: ü", "one: ü"]
    # Each replayed commit adds exactly its item's own change to the one before it.
    for n, (commit, _) in enumerate(commits):
        replayed = f"{head}~{len(commits) - 1 - n}"
        assert (git(clone, "diff-tree", "-r", "--no-renames", f"{replayed}^", replayed)
                == git(clone, "diff-tree", "-r", "--no-renames", base, commit))
    assert git(clone, "show", f"{head}:{weird}") == "1"


def test_combine_writes_the_replayed_chain_as_one_pack_not_as_loose_objects(remote_repo: RemoteRepo) -> None:
    # Below fastimport.unpackLimit a second git process would write every commit and tree loose: on a slow
    # disk most of the combine's time, at the very end of the wave.
    clone = remote_repo.clone
    base = git(clone, "rev-parse", "HEAD")
    commits = _items_writing(remote_repo, base, "{name}.txt", "{name}\n")
    objects = Path(git(clone, "rev-parse", "--path-format=absolute", "--git-path", "objects"))
    loose_before = {p.name for p in objects.glob("??/*")}
    packs_before = set(objects.glob("pack/*.pack"))
    head = wavebranch.combine(clone, base, commits)
    new_packs = set(objects.glob("pack/*.pack")) - packs_before
    assert len(new_packs) == 1
    chain = set(git(clone, "rev-list", "--objects", f"{base}..{head}").split())
    assert chain and not chain & {f"{p.parent.name}{p.name}" for p in objects.glob("??/*")
                                  if p.name not in loose_before}
    index = new_packs.pop().with_suffix(".idx")
    listed = git(clone, "verify-pack", "-v", str(index)).splitlines()
    assert {line.split()[0] for line in listed if line[:40].isalnum() and len(line.split()[0]) == 40} >= {
        git(clone, "rev-parse", head), git(clone, "rev-parse", f"{head}^{{tree}}")}


def test_combine_without_a_branch_leaves_no_ref_behind(remote_repo: RemoteRepo) -> None:
    clone = remote_repo.clone
    base = git(clone, "rev-parse", "HEAD")
    commits = _items_writing(remote_repo, base, "{name}.txt", "x\n")
    refs = git(clone, "for-each-ref")
    head = wavebranch.combine(clone, base, commits)
    assert git(clone, "for-each-ref") == refs
    assert git(clone, "ls-tree", "--name-only", head).splitlines() == ["README.md", "one.txt", "two.txt"]


def test_combine_of_items_not_on_the_start_merges_them_onto_it(remote_repo: RemoteRepo) -> None:
    clone = remote_repo.clone
    base = git(clone, "rev-parse", "HEAD")
    commit = _item_commit(remote_repo, "one", _writes("one.txt", "1\n"), base)
    git(clone, "commit", "-q", "--allow-empty", "-m", "moved on")
    (clone / "later.txt").write_text("later\n")
    git(clone, "add", "later.txt")
    git(clone, "commit", "-q", "-m", "later")
    start = git(clone, "rev-parse", "HEAD")
    head = wavebranch.combine(clone, start, [commit])
    assert git(clone, "rev-parse", f"{head}^") == start
    assert git(clone, "ls-tree", "--name-only", head).splitlines() == ["README.md", "later.txt", "one.txt"]


def test_combine_of_items_making_the_same_change_still_merges_cleanly(remote_repo: RemoteRepo) -> None:
    clone = remote_repo.clone
    base = git(clone, "rev-parse", "HEAD")
    commits = _items_writing(remote_repo, base, "same.txt", "same\n")
    head = wavebranch.combine(clone, base, commits)
    assert git(clone, "rev-list", "--count", f"{base}..{head}") == "2"
    assert git(clone, "show", f"{head}:same.txt") == "same"


def test_item_branches_lists_and_deletes_only_that_waves_branches(remote_repo: RemoteRepo) -> None:
    clone = remote_repo.clone
    head = git(clone, "rev-parse", "HEAD")
    for wave_id in ("w-20260101-000000-aaaa", "w-20260101-000000-bbbb"):
        wavebranch.set_branch(clone, wavebranch.item_branch(wave_id, "X"), head)
    found = wavebranch.item_branches(clone, "w-20260101-000000-aaaa")
    assert found == ["wavegit/items/w-20260101-000000-aaaa/X"]
    wavebranch.delete_branches(clone, [*found, "wavegit/items/never-existed"])
    assert wavebranch.item_branches(clone, "w-20260101-000000-aaaa") == []
    assert wavebranch.item_branches(clone, "w-20260101-000000-bbbb") != []


def test_fetch_branch_returns_the_remote_head(remote_repo: RemoteRepo) -> None:
    other = remote_repo.new_clone("other")
    git(other, "commit", "-q", "--allow-empty", "-m", "moved")
    git(other, "push", "-q", "origin", "main")
    assert wavebranch.fetch_branch(remote_repo.clone, "origin", "main") == git(other, "rev-parse", "HEAD")


def test_attack_a_nul_byte_in_an_items_title_still_lets_its_verified_work_commit(tmp_path: Path) -> None:
    # An imported title ("\u0000" in the source's JSON): git refuses the byte in a message, and the attempt
    # failed, uncounted, in every wave.
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"], title="evil\0title")],
                            sandbox="none")
    code, rep = run_cli(remote.clone)
    assert code == 0 and rep.items[0].verified, rep.items[0].error
    assert rep.head_sha is not None
    assert git(remote.origin, "log", "-1", "--format=%s", rep.head_sha) == "A: eviltitle"


def test_a_nul_byte_in_a_test_command_is_refused_where_it_is_written() -> None:
    check = tracker.ITEM_SCHEMA.field("test")
    assert check is not None and check.check is not None
    assert check.check("true\0rm -rf /") == "contains a NUL byte, which no program can be given"


def test_combine_replays_the_changes_known_for_each_commit_without_asking_git(
        remote_repo: RemoteRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    # A wave's read-backs wrote its item commits: their parents and changes are known, and git is asked only
    # when some commit's are not.
    clone, base = remote_repo.clone, git(remote_repo.clone, "rev-parse", "HEAD")
    commits = [_item_commit(remote_repo, name, _writes(f"{name}.txt", f"{name}\n"), base)
               for name in ("one", "two")]
    said = wgit.changes_of_commits(clone, [wgit.CommitSha(commit) for commit, _ in commits])
    known = {commit: changes for (commit, _), changes in zip(commits, said, strict=True)}
    asked: list[object] = []
    real = wgit.changes_of_commits
    monkeypatch.setattr(wgit, "changes_of_commits", lambda *args: asked.append(args) or real(*args))
    head = wavebranch.combine(clone, base, commits, known=known)
    assert asked == [] and git(clone, "ls-tree", "--name-only", head).split() == ["README.md", "one.txt",
                                                                                 "two.txt"]
    again = wavebranch.combine(clone, base, commits, known={commits[0][0]: known[commits[0][0]]})
    assert len(asked) == 1 and git(clone, "rev-parse", f"{again}^{{tree}}") == git(clone, "rev-parse",
                                                                                   f"{head}^{{tree}}")
