"""Helpers for the wave tests: a real repo with a bare origin holding a tracker and config, fake workers."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.helpers.repos import TESTS, RemoteRepo, git, make_remote_repo, wavegit
from tests.helpers.sync import origin_item as origin_item  # re-exported: wave tests read origin's tracker too
from tests.helpers.sync import origin_tracker as origin_tracker
from wavegit.core.repo import discover
from wavegit.engine.outcome import WaveOutcome
from wavegit.engine.pipeline import Delivery, WaveOptions, run_wave
from wavegit.model.config import load_config
from wavegit.model.report import WaveReport
from wavegit.trackerbranch.store import GitStore

WORKERS = TESTS / "wave_workers"
WORKER = shlex.join([sys.executable, str(WORKERS / "scripted.py")])
FILES = {"README.md": "hello\n", "src/keep.txt": "keep\n", "src/a/seed.txt": "seed\n"}


def check(path: str, text: str = "ok") -> str:
    """An item test passing when ``path`` contains ``text``."""
    return shlex.join([sys.executable, str(WORKERS / "check.py"), path, text])


def item(item_id: str, actions: list[str], owns: list[str], test: str | None = None,
         **extra: Any) -> dict[str, Any]:
    """A tracker item whose prompt is the scripted worker's actions (one per line)."""
    entry: dict[str, Any] = {"id": item_id, "prompt": "\n".join(actions) + "\n", "owns": owns,
                             "test": test or check(owns[0].rstrip("/"))}
    entry.update(extra)
    entry.setdefault("status", "todo")
    return entry


def config_text(**overrides: Any) -> str:
    config: dict[str, Any] = {"worker": WORKER, "concurrency": 4, "timeout_s": 20, "idle_timeout_s": 10,
                              "attempts": 2}
    config.update(overrides)
    return yaml.safe_dump(config, sort_keys=False)


def make_wave_repo(base: Path, items: list[dict[str, Any]], **config: Any) -> RemoteRepo:
    """A bare origin and a clone whose main branch holds the tracker and config."""
    remote = make_remote_repo(base, FILES)
    write_and_push(remote.clone, {
        ".wavegit/tracker.yaml": yaml.safe_dump({"version": 1, "items": items}, sort_keys=False),
        ".wavegit/config.yaml": config_text(**config),
    }, "tracker and config")
    return remote


def write_and_push(clone: Path, files: dict[str, str], message: str, *, executable: bool = False) -> None:
    """Commit ``files`` (as executables with ``executable``) and push them to the origin's main."""
    for rel, content in files.items():
        (clone / rel).parent.mkdir(parents=True, exist_ok=True)
        (clone / rel).write_text(content)
        if executable:
            (clone / rel).chmod(0o755)
    git(clone, "add", *files)
    git(clone, "commit", "-q", "-m", message)
    git(clone, "push", "-q", "origin", "HEAD:main")


def run(clone: Path, *, max_items: int | None = None, push: bool = True,
        delivery: Delivery | None = None) -> WaveOutcome:
    """``wavegit run`` in-process (the CLI path is covered by test_run.py)."""
    repo = discover(clone)
    config = load_config(repo.root)
    return run_wave(repo, config, GitStore(repo, config), max_items=max_items, delivery=delivery,
                    options=WaveOptions(push=push))


def untouched(remote_origin: Path, clone: Path) -> tuple[str, str, str]:
    """What a run that writes nothing leaves as it was: origin's branches, the clone's branches, its log."""
    return (git(remote_origin, "for-each-ref", "--format=%(refname) %(objectname)"),
            git(clone, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/"),
            git(clone, "log", "--oneline", "-1", "origin/main"))


def worktrees(clone: Path) -> list[str]:
    """Every work tree of ``clone``: its own, its linked worktrees, then what is left under its state dir's
    ``worktrees`` folder (attempt trees, test checkouts, ignore rules), one entry per wave's folder entry."""
    listing = git(clone, "worktree", "list", "--porcelain")
    linked = [line.split(" ", 1)[1] for line in listing.splitlines() if line.startswith("worktree ")]
    state = discover(clone).worktrees_dir
    waves = sorted(state.iterdir()) if state.is_dir() else []
    return linked + [str(entry) for wave in waves for entry in sorted(wave.iterdir())]


def branches(repo: Path, pattern: str = "wavegit/") -> list[str]:
    refs = git(repo, "for-each-ref", "--format=%(refname:short)", f"refs/heads/{pattern}")
    return [r for r in refs.splitlines() if r]


def run_cli(clone: Path, env: dict[str, str] | None = None, timeout: float = 120) -> tuple[int, WaveReport]:
    """``wavegit run --json`` as a real process in ``clone``: its exit code and report."""
    result = wavegit(clone, "run", "--json", env=env, timeout=timeout)
    assert result.stdout.strip(), result.stderr
    return result.returncode, WaveReport.from_json(result.stdout)


def history_text(repo: Path) -> str:
    """Every path and every line of content of every commit on any ref of ``repo``, as one text; the
    tracker and config (whose prompts name what workers were told to do) left out."""
    # Branches and tags: wavegit's own metadata refs (refs/wavegit/: a report, a heartbeat) land no file.
    return git(repo, "log", "--branches", "--tags", "--remotes", "--no-renames", "-p", "--binary",
               "--format=commit %H", "--", ".",
               ":(exclude).wavegit")
