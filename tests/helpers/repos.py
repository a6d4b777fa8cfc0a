"""Helpers for tests: real git repositories with a bare ``origin`` and a way to run the CLI."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
REPO_ROOT = TESTS.parent
EXAMPLE = REPO_ROOT / "examples" / "tracker.yaml"


def git(cwd: Path, *args: str, input: str | None = None) -> str:
    """Run git in a test repository (tests may call git directly; the product may not)."""
    proc = subprocess.run(["git", *args], cwd=cwd, input=input, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
    return proc.stdout.rstrip("\n")


@dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str


def wavegit(cwd: Path, *args: str, input: str | None = None, env: dict[str, str] | None = None,
            timeout: float = 120) -> CliResult:
    """Run ``python -m wavegit ARGS`` as a real subprocess in ``cwd``."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), full_env.get("PYTHONPATH")]))
    if env:
        full_env.update(env)
    proc = subprocess.run([sys.executable, "-m", "wavegit", *args], cwd=cwd, input=input,
                          capture_output=True, text=True, env=full_env, timeout=timeout, check=False)
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


@dataclass
class RemoteRepo:
    """A bare ``origin`` and a clone of it with one initial commit on ``main``."""

    origin: Path
    clone: Path
    base: Path

    def new_clone(self, name: str) -> Path:
        path = self.base / name
        git(self.base, "clone", "-q", str(self.origin), str(path))
        return path


def make_remote_repo(base: Path, files: dict[str, str] | None = None) -> RemoteRepo:
    origin = base / "origin.git"
    git(base, "init", "-q", "--bare", "-b", "main", str(origin))
    clone = base / "work"
    git(base, "clone", "-q", str(origin), str(clone))
    for rel, content in (files or {"README.md": "hello\n"}).items():
        target = clone / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
    git(clone, "add", "-A")
    git(clone, "commit", "-q", "-m", "initial")
    git(clone, "push", "-q", "origin", "main")
    return RemoteRepo(origin=origin, clone=clone, base=base)


def with_tracker(repo: RemoteRepo, text: str | None = None) -> Path:
    """The clone with ``text`` (default: the example tracker) written, uncommitted, as its tracker."""
    (repo.clone / ".wavegit").mkdir(exist_ok=True)
    target = repo.clone / ".wavegit" / "tracker.yaml"
    if text is None:
        shutil.copy(EXAMPLE, target)
    else:
        target.write_text(text)
    return repo.clone
