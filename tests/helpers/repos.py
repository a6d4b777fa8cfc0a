"""Helpers for tests: real git repositories with a bare ``origin`` and a way to run the CLI."""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from wavegit.core.repo import discover

if TYPE_CHECKING:
    from wavegit.attempts import snapshot

TESTS = Path(__file__).resolve().parent.parent
REPO_ROOT = TESTS.parent
EXAMPLE = REPO_ROOT / "examples" / "tracker.yaml"


def git(cwd: Path, *args: str, input: str | None = None) -> str:
    """Run git in a test repository (tests may call git directly; the product may not); its output exactly (no
    newline translation: a CR in a file name stays a CR)."""
    proc = subprocess.run(["git", *args], cwd=cwd, input=None if input is None else input.encode(),
                          capture_output=True, check=False)
    if proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed ({proc.returncode}): {proc.stderr.decode()}")
    return proc.stdout.decode("utf-8", "surrogateescape").rstrip("\n")


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
    """A bare ``origin`` and a clone with ``files`` (default a README) committed and pushed on ``main``,
    under ``base``: copied from a template this process built once for the same files and git settings, so
    each test spends two git calls on it instead of a dozen processes (init, clone, add, commit, push)."""
    files = files or {"README.md": "hello\n"}
    template = _template(files)
    shutil.copytree(template, base, symlinks=True, dirs_exist_ok=True)
    origin, clone = base / "origin.git", base / "work"
    git(clone, "remote", "set-url", "origin", str(origin))
    # The copy has new inodes and change times: refreshed, the index says the files are unmodified again,
    # as after a real clone, also to plumbing (diff-files) that does not refresh it itself.
    git(clone, "update-index", "-q", "--refresh")
    return RemoteRepo(origin=origin, clone=clone, base=base)


_TEMPLATES: dict[tuple[object, ...], Path] = {}


def _template(files: dict[str, str]) -> Path:
    """The folder holding ``origin.git`` and ``work`` built from scratch for ``files`` under the current git
    identity, dates and global config, made once per process (and removed at its exit)."""
    gitconfig = Path(os.environ.get("GIT_CONFIG_GLOBAL", os.devnull))
    settings = sorted((k, v) for k, v in os.environ.items()
                      if k.startswith("GIT_") and k != "GIT_CONFIG_GLOBAL")
    key = (tuple(files.items()), tuple(settings), gitconfig.read_bytes() if gitconfig.is_file() else None)
    if key not in _TEMPLATES:
        if not _TEMPLATES:
            atexit.register(shutil.rmtree, _template_root(), True)
        base = Path(tempfile.mkdtemp(dir=_template_root()))
        origin = base / "origin.git"
        git(base, "init", "-q", "--bare", "-b", "main", str(origin))
        clone = base / "work"
        git(base, "clone", "-q", str(origin), str(clone))
        for rel, content in files.items():
            target = clone / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content)
        git(clone, "add", "-A")
        git(clone, "commit", "-q", "-m", "initial")
        git(clone, "push", "-q", "origin", "main")
        _TEMPLATES[key] = base
    return _TEMPLATES[key]


@functools.cache
def _template_root() -> Path:
    return Path(tempfile.mkdtemp(prefix="wavegit-test-templates-"))


def with_tracker(repo: RemoteRepo, text: str | None = None) -> Path:
    """The clone with ``text`` (default: the example tracker) written, uncommitted, as its tracker."""
    (repo.clone / ".wavegit").mkdir(exist_ok=True)
    target = repo.clone / ".wavegit" / "tracker.yaml"
    if text is None:
        shutil.copy(EXAMPLE, target)
    else:
        target.write_text(text)
    return repo.clone


class AttemptTree:
    """An attempt's tree made as a wave makes it (``start``: a commit, default the clone's HEAD), and its
    reading back (:func:`wavegit.attempts.snapshot.read`) into the clone; limits by default 1 KiB per file and
    10 changed files."""

    def __init__(self, remote: RemoteRepo, name: str = "t", start: str = "HEAD") -> None:
        from wavegit.attempts import snapshot, workspace

        self.remote = remote
        self.base = git(remote.clone, "rev-parse", start)
        self.path = remote.base / "trees" / name
        workspace.create(workspace.objects_dir(remote.clone), self.path, start=self.base)
        self.untouched = snapshot.baseline(self.path)
        self.compared_with = snapshot.Base.load(remote.clone, self.base, remote.base / "rules" / name)

    def read(self, limits: snapshot.Limits | None = None, deadline: float | None = None) -> snapshot.Snapshot:
        from wavegit.attempts import snapshot

        return snapshot.read(self.remote.clone, self.path, self.compared_with, self.untouched,
                             limits or snapshot.Limits(1024, 10), deadline)

    def show(self, taken: snapshot.Snapshot, rel: str) -> str:
        return git(self.remote.clone, "cat-file", "-p", f"{taken.tree}:{rel}")

    def mode(self, taken: snapshot.Snapshot, rel: str) -> str:
        return git(self.remote.clone, "ls-tree", taken.tree, "--", rel).split(" ")[0]


def state_files(clone: Path) -> list[Path]:
    """Every file in ``clone``'s wavegit state folder and its attempt trees' folder, once the detached reaper
    of its last wave (started as ``wavegit run`` returns) has emptied the trash: what stays, not what is
    being removed."""
    repo = discover(clone)
    deadline = time.monotonic() + 60
    while repo.trash_dir.is_dir() and any(repo.trash_dir.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.02)
    folders = (repo.state_dir, repo.trees_dir)
    return [path for folder in folders for path in folder.rglob("*") if path.is_file()]
