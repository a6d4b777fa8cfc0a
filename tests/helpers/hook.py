"""Helpers shared by the pre-push hook tests: trackers with items in flight, commits, real pushes."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tests.helpers.reliability import wavegit_in_process
from tests.helpers.repos import REPO_ROOT, RemoteRepo, git


@dataclass(frozen=True)
class ItemSpec:
    id: str
    owns: Sequence[str]
    status: str = "in_progress"
    wave: str | None = None
    pr: int | None = None
    extra: Mapping[str, object] = field(default_factory=dict)


def tracker_yaml(items: Sequence[ItemSpec]) -> str:
    """A tracker in the block format of README.md, "The tracker" (json.dumps renders valid YAML scalars)."""
    lines = ["version: 1", "items:" if items else "items: []"]
    for item in items:
        lines += [f"  - id: {item.id}", f"    prompt: {json.dumps('work on ' + item.id)}",
                  f"    owns: {json.dumps(list(item.owns))}", '    test: "true"',
                  f"    status: {item.status}"]
        if item.wave:
            lines.append(f"    wave: {item.wave}")
        if item.pr is not None:
            lines.append(f"    pr: {item.pr}")
        lines += [f"    {key}: {json.dumps(value)}" for key, value in item.extra.items()]
    return "\n".join(lines) + "\n"


def commit(repo: Path, files: Mapping[str, str | None], message: str = "change") -> str:
    """Write (text) or delete (None) ``files`` and commit them; the new commit."""
    for rel, content in files.items():
        target = repo / rel
        if content is None:
            git(repo, "rm", "-q", rel)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
        git(repo, "add", rel)
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def hook_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The test environment plus a PYTHONPATH, so the installed hook's ``python -m wavegit`` finds wavegit."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    env.update(extra or {})
    return env


def push(repo: Path, *args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """A real ``git push`` (which runs the installed hook); returns the finished process."""
    return subprocess.run(["git", "push", *args], cwd=repo, capture_output=True, text=True,
                          env=hook_env(env), timeout=120, check=False)


def publish_tracker(remote: RemoteRepo, items: Sequence[ItemSpec],
                    files: Mapping[str, str] | None = None) -> None:
    """Commit ``files`` and a tracker with ``items`` on main in a second clone, push it, fetch it in the main
    clone (so its remote-tracking tracker branch has it) and fast-forward the main clone to it."""
    admin = remote.base / "admin"
    if not admin.exists():
        git(remote.base, "clone", "-q", str(remote.origin), str(admin))
    git(admin, "pull", "-q", "--ff-only", "origin", "main")
    commit(admin, {**(files or {}), ".wavegit/tracker.yaml": tracker_yaml(items)}, "tracker")
    git(admin, "push", "-q", "--no-verify", "origin", "main")
    git(remote.clone, "fetch", "-q", "origin")
    if git(remote.clone, "rev-parse", "--abbrev-ref", "HEAD") == "main":
        git(remote.clone, "merge", "-q", "--ff-only", "origin/main")


def install_hook(repo: Path, *args: str) -> None:
    """``wavegit hooks install ARGS`` in ``repo``, through ``cli.main`` in the test process: a process of
    its own cost ~0.13 s of CPU, in some 35 tests whose subject is the installed hook, not its installing
    (the first test of tests/test_hook_install.py installs through a real process)."""
    result = wavegit_in_process(repo, "hooks", "install", *args)
    assert result.returncode == 0, result.stderr


def remote_oid(remote: RemoteRepo, ref: str) -> str:
    """The object a ref points to on the bare origin ("" when it does not exist)."""
    result = subprocess.run(["git", "rev-parse", "-q", "--verify", ref], cwd=remote.origin,
                            capture_output=True, text=True, check=False)
    return result.stdout.strip()
