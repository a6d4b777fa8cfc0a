"""Hostile workers looting the repository around their tree, in real sandboxed waves: the user's other
checkouts (linked worktrees and the main one) and the objects no commit of the base reaches (a stash, a key
staged and unstaged, other branches). The worker is ``tests/hostile_workers/env_loot.py``; whatever it finds
it writes into the file its item owns, so a leak lands on the wave branch."""

from __future__ import annotations

import dataclasses
import shlex
import sys
from pathlib import Path

import pytest

from tests.helpers.repos import RemoteRepo, git
from tests.helpers.wave import check, item, make_wave_repo
from tests.test_hostile_env import BWRAP_PROBLEM, committed, run_json
from wavegit.core.repo import discover

pytestmark = pytest.mark.skipif(BWRAP_PROBLEM is not None, reason=f"bwrap cannot run: {BWRAP_PROBLEM}")

WORKER = shlex.join([sys.executable, str(Path(__file__).resolve().parent / "hostile_workers" / "env_act.py")])


def looting_repo(tmp_path: Path, probes: list[str], worker: str = WORKER) -> RemoteRepo:
    """A wave repository whose one item A (owning src/a.txt) runs the ``loot`` worker with ``probes``."""
    entry = item("A", ["loot", *probes], ["src/a.txt"], check("src/a.txt"))
    return make_wave_repo(tmp_path, [entry], worker=worker, sandbox="bwrap", attempts=1, concurrency=1)


def loot(remote: RemoteRepo, cwd: Path, env: dict[str, str] | None = None) -> str:
    """What the worker landed on the wave branch, the wave run from the checkout ``cwd``."""
    remote = dataclasses.replace(remote, clone=cwd)
    rep, _ = run_json(remote, env)
    assert rep["sandbox"] == "bwrap"
    return committed(remote, rep, "src/a.txt")


def push_private_branch(clone: Path) -> None:
    """A branch ``private`` on origin (``secret.txt``: PUSHED_PRIVATE_BRANCH_SECRET) that the clone's base
    does not reach and the clone no longer has."""
    git(clone, "switch", "--quiet", "-c", "private")
    (clone / "secret.txt").write_text("PUSHED_PRIVATE_BRANCH_SECRET\n")
    git(clone, "add", "secret.txt")
    git(clone, "commit", "--quiet", "-m", "private")
    git(clone, "push", "--quiet", "origin", "private")
    git(clone, "switch", "--quiet", "main")
    git(clone, "branch", "--quiet", "-D", "private")


@pytest.mark.parametrize("run_from", ["main", "linked"])
def test_a_worker_reads_no_untracked_file_of_any_checkout_of_the_repository(tmp_path: Path,
                                                                            run_from: str) -> None:
    # Run from a linked worktree (or from main with one linked), the worker read the other checkout's .env.
    linked = tmp_path / "linked"
    probes = [f"read {tmp_path / 'work' / '.env'}", f"read {linked / '.env'}", f"list {linked}"]
    remote = looting_repo(tmp_path, probes)
    git(remote.clone, "worktree", "add", "--quiet", "-b", "side", str(linked))
    (remote.clone / ".env").write_text("MAIN_SECRET=main-checkout-secret\n")
    (linked / ".env").write_text("LINKED_SECRET=linked-checkout-secret\n")
    landed = loot(remote, remote.clone if run_from == "main" else linked)
    assert "checkout-secret" not in landed, landed
    assert landed.count("refused ") == 2 and f"listed {linked}: []" in landed, landed


def test_a_worker_reads_no_object_its_base_does_not_reach(tmp_path: Path) -> None:
    # The trees borrowed the scheduler's whole object store, readable in the sandbox: a stashed password, a
    # key staged and unstaged again (an unreachable blob) and a local branch were listed and landed.
    clone = tmp_path / "work"
    probes = ["git stash list", "git fsck --lost-found --unreachable", "git log --all --format=%H%x20%s -p",
              "objects", f"objects {clone / '.git' / 'objects'}", f"list {clone / '.git'}"]
    remote = looting_repo(tmp_path, probes)
    (clone / "README.md").write_text("STASHED_PASSWORD=hunter2-in-the-stash\n")
    git(clone, "stash", "--quiet")
    (clone / "key.pem").write_text("PRIVATE KEY staged-then-unstaged\n")
    git(clone, "add", "key.pem")
    git(clone, "reset", "--quiet", "key.pem")
    (clone / "key.pem").unlink()
    git(clone, "switch", "--quiet", "-c", "private")
    (clone / "notes.txt").write_text("a branch never pushed\n")
    git(clone, "add", "notes.txt")
    git(clone, "commit", "--quiet", "-m", "private notes")
    git(clone, "switch", "--quiet", "main")
    landed = loot(remote, clone)
    for secret in ("hunter2", "staged-then-unstaged", "never pushed", "private notes"):
        assert secret not in landed, secret
    # The probes ran: the objects the base reaches are there to read, the scheduler's store is not.
    assert "tracker and config" in landed and "hello" in landed, landed
    assert f"objects {clone / '.git' / 'objects'}: fatal: not a git repository" in landed, landed
    listed = next(line for line in landed.splitlines() if line.startswith(f"listed {clone / '.git'}: "))
    assert "'objects'" not in listed and "'refs'" not in listed, listed


def test_a_worker_reads_no_tree_of_another_repositorys_wave_in_a_cache_outside_home(tmp_path: Path) -> None:
    # With $XDG_CACHE_HOME outside the hidden HOME (a CI runner's or a cluster's scratch disk), only this
    # repository's folder of trees was hidden: a worker read another repository's attempt trees (a sibling
    # wave's untracked work), its object store and its private folders, and landed them.
    cache = tmp_path / "cache"
    other = cache / "wavegit" / "other-0123456789ab"
    secret = other / "worktrees" / "w-1" / "B-1" / "src" / "secret.txt"
    secret.parent.mkdir(parents=True)
    secret.write_text("OTHER_REPOSITORY_SECRET\n")
    remote = looting_repo(tmp_path, [f"read {secret}", f"list {cache / 'wavegit'}", f"list {other}"])
    landed = loot(remote, remote.clone, env={"XDG_CACHE_HOME": str(cache)})
    assert "OTHER_REPOSITORY_SECRET" not in landed, landed
    assert f"refused {secret}" in landed and f"refused {other}" in landed, landed
    assert f"listed {cache / 'wavegit'}: ['{discover(remote.clone).trees_dir.name}']" in landed, landed


def test_a_worker_reads_no_branch_of_a_remote_or_a_reference_repository_on_the_same_disk(
        tmp_path: Path) -> None:
    # The origin a bare repository on this machine (`remote.origin.url` a path), the clone borrowing from a
    # mirror (`git clone --reference`): both were readable in the sandbox, and a worker fetched every branch
    # of either into its tree's repository.
    origin, mirror = tmp_path / "origin.git", tmp_path / "mirror.git"
    probes = [f"git fetch {origin} private:refs/heads/stolen", "git show stolen:secret.txt",
              f"list {mirror}", f"objects {mirror / 'objects'}"]
    remote = looting_repo(tmp_path, probes)
    assert remote.origin == origin
    clone = remote.clone
    push_private_branch(clone)
    git(tmp_path, "clone", "--quiet", "--bare", str(origin), str(mirror))
    (clone / ".git" / "objects" / "info" / "alternates").write_text(f"{mirror / 'objects'}\n")
    landed = loot(remote, clone)
    assert "PUSHED_PRIVATE_BRANCH_SECRET" not in landed, landed
    assert f"listed {mirror}: []" in landed, landed


def test_a_remote_on_this_disk_spelled_through_insteadof_is_hidden_too(tmp_path: Path) -> None:
    # `url.<path>.insteadOf` (a team's shorthand for its mirrors) makes `remote.origin.url` `local:origin.git`
    # a path on this disk that no configured URL names: the bare origin stayed visible in the sandbox, and the
    # worker fetched a branch the base does not reach.
    origin = tmp_path / "origin.git"
    probes = [f"git fetch {origin} private:refs/heads/stolen", "git show stolen:secret.txt", f"list {origin}"]
    remote = looting_repo(tmp_path, probes)
    clone = remote.clone
    push_private_branch(clone)
    git(clone, "config", f"url.{tmp_path}/.insteadOf", "local:")
    git(clone, "config", "remote.origin.url", "local:origin.git")
    landed = loot(remote, clone)
    assert "PUSHED_PRIVATE_BRANCH_SECRET" not in landed, landed
    assert f"listed {origin}: []" in landed, landed


def test_a_remote_on_this_disk_spelled_through_a_link_and_dotdot_is_hidden_where_the_kernel_finds_it(
        tmp_path: Path) -> None:
    # `remote.origin.url` `links/l/../origin.git`, `l` a link into the folder holding origin: git (the
    # kernel) reaches the bare origin, but read as text `l/..` cancels out and a folder that does not exist
    # was hidden instead; the worker fetched a branch the base does not reach.
    origin = tmp_path / "origin.git"
    probes = [f"git fetch {origin} private:refs/heads/stolen", "git show stolen:secret.txt", f"list {origin}"]
    remote = looting_repo(tmp_path, probes)
    clone = remote.clone
    push_private_branch(clone)
    (tmp_path / "links").mkdir()
    (tmp_path / "links" / "l").symlink_to(clone)
    git(clone, "config", "remote.origin.url", f"{tmp_path}/links/l/../origin.git")
    landed = loot(remote, clone)
    assert "PUSHED_PRIVATE_BRANCH_SECRET" not in landed, landed
    assert f"listed {origin}: []" in landed, landed
