"""Helpers for the sync and crash tests: repos whose origin holds a tracker, hand-made wave branches."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.helpers.repos import RemoteRepo, git, make_remote_repo
from wavegit.model import tracker

OLD_CLAIM = "2026-01-01T00:00:00Z"
"""A claim time far enough in the past for any lease in these tests to have expired."""


def wave_id(n: int) -> str:
    """A valid wave id (``w-YYYYMMDD-HHMMSS-xxxx``), distinct per ``n``."""
    return f"w-20260101-{n:06d}-ab{n % 100:02d}"


def entry(item_id: str, status: str = "todo", **extra: Any) -> dict[str, Any]:
    """A tracker item owning ``src/<id>.txt``."""
    data: dict[str, Any] = {"id": item_id, "prompt": f"work on {item_id}\n", "owns": [f"src/{item_id}.txt"],
                            "test": "true", "status": status}
    data.update(extra)
    return data


def claimed(item_id: str, wave: str, at: str = OLD_CLAIM, **extra: Any) -> dict[str, Any]:
    """An item claimed by ``wave`` at ``at``."""
    return entry(item_id, "in_progress", wave=wave, claimed_at=at, **extra)


def commit_files(clone: Path, files: dict[str, str], message: str, push_to: str | None = "main") -> str:
    for rel, content in files.items():
        (clone / rel).parent.mkdir(parents=True, exist_ok=True)
        (clone / rel).write_text(content)
    git(clone, "add", *files)
    git(clone, "commit", "-q", "-m", message)
    if push_to:
        git(clone, "push", "-q", "origin", f"HEAD:{push_to}")
    return git(clone, "rev-parse", "HEAD")


def tracker_text(items: list[dict[str, Any]]) -> str:
    return yaml.safe_dump({"version": 1, "items": items}, sort_keys=False)


def make_tracker_repo(base: Path, items: list[dict[str, Any]], **config: Any) -> RemoteRepo:
    """A bare origin and a clone whose main holds the tracker and a config (``config`` overrides)."""
    remote = make_remote_repo(base, {"README.md": "hello\n", "src/keep.txt": "keep\n"})
    settings: dict[str, Any] = {"lease_ttl_s": 60, "max_attempts": 4}
    settings.update(config)
    commit_files(remote.clone, {".wavegit/tracker.yaml": tracker_text(items),
                                ".wavegit/config.yaml": yaml.safe_dump(settings)}, "tracker and config")
    return remote


def make_wave_branch(clone: Path, wave: str, item_ids: list[str], start: str = "origin/main",
                     push: bool = True) -> str:
    """``wavegit/<wave>`` as a wave leaves it: one commit per item with its trailers; the tip."""
    branch = f"wavegit/{wave}"
    git(clone, "checkout", "-q", "-b", branch, start)
    for item_id in item_ids:
        trailers = f"Wavegit-Item: {item_id}\nWavegit-Wave: {wave}\nWavegit-Prompt-Sha256: {'0' * 64}\n"
        message = f"{item_id}: work\n\n{trailers}"
        (clone / "src").mkdir(exist_ok=True)
        (clone / f"src/{item_id}.txt").write_text("ok\n")
        git(clone, "add", f"src/{item_id}.txt")
        git(clone, "commit", "-q", "-F", "-", input=message)
    if push:
        git(clone, "push", "-q", "origin", branch)
    tip = git(clone, "rev-parse", "HEAD")
    git(clone, "checkout", "-q", "--detach")
    return tip


def origin_tracker(remote: RemoteRepo) -> tracker.Tracker:
    return tracker.loads(git(remote.origin, "show", "main:.wavegit/tracker.yaml"))


def origin_item(remote: RemoteRepo, item_id: str) -> tracker.Item:
    found = origin_tracker(remote).get(item_id)
    assert found is not None, item_id
    return found


def origin_head(remote: RemoteRepo) -> str:
    return git(remote.origin, "rev-parse", "main")
