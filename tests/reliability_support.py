"""Shared helpers for the reliability suites (races, faults, bad input, security).

Everything here inspects real repositories with git; nothing fakes git.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections import defaultdict
from pathlib import Path

from support import git

from wavegit import tracker
from wavegit.config import TRACKER_PATH
from wavegit.errors import ValidationError

WORKERS = Path(__file__).resolve().parent / "reliability_workers"
LONG = os.environ.get("WAVEGIT_LONG_TESTS") == "1"
"""The long versions of the suites run only when ``WAVEGIT_LONG_TESTS=1``."""


def worker_command(name: str, *args: str) -> str:
    """The command line of ``reliability_workers/<name>.py``."""
    return shlex.join([sys.executable, str(WORKERS / f"{name}.py"), *args])


def tracker_history_problems(repo: Path, branch: str = "main", path: str = TRACKER_PATH) -> list[str]:
    """``commit: problem`` for every commit of ``branch`` whose tracker does not load (empty = all valid)."""
    commits = git(repo, "log", "--format=%H", branch, "--", path).splitlines()
    problems = []
    for commit in commits:
        try:
            tracker.loads(git(repo, "show", f"{commit}:{path}"))
        except ValidationError as exc:
            problems.append(f"{commit[:12]}: {exc.problems[0]}")
    assert commits, f"no commit of {branch} touches {path}"
    return problems


def wave_branches(repo: Path) -> list[str]:
    """The wave branches (``wavegit/<wave-id>``, not per-item branches) of ``repo``."""
    refs = git(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/wavegit/")
    return [r for r in refs.splitlines() if r and not r.startswith("wavegit/items/")]


def trailer_values(repo: Path, rev_range: str, key: str) -> list[str]:
    out = git(repo, "log", f"--format=%(trailers:key={key},valueonly)", rev_range)
    return [line for line in out.splitlines() if line]


def items_by_wave_branch(repo: Path, base: str = "main") -> dict[str, list[str]]:
    """Wave id -> the ``Wavegit-Item`` trailers of its branch's own commits (those not on ``base``)."""
    return {branch.removeprefix("wavegit/"): trailer_values(repo, f"{base}..{branch}", "Wavegit-Item")
            for branch in wave_branches(repo)}


def dispatch_log(path: Path) -> dict[str, list[str]]:
    """Item -> the waves that dispatched it, from a worker log of ``<item> <wave>`` lines."""
    waves: dict[str, list[str]] = defaultdict(list)
    if path.exists():
        for line in path.read_text().splitlines():
            item_id, wave = line.split()
            waves[item_id].append(wave)
    return dict(waves)


def fsck(repo: Path) -> str:
    """``git fsck --strict`` output (git fails the call when the repository is corrupt)."""
    return git(repo, "fsck", "--strict", "--no-progress")


def repo_state(repo: Path) -> tuple[str, str, str]:
    """Refs, worktrees and status of a repository: equal before and after = nothing was written."""
    return (git(repo, "for-each-ref", "--format=%(refname) %(objectname)"),
            git(repo, "worktree", "list", "--porcelain"),
            git(repo, "status", "--porcelain", "--ignored"))


def one_clear_line(stderr: str) -> str:
    """The single message line of a refused command (asserts there is exactly one and no traceback)."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert "Traceback" not in stderr, stderr
    assert len(lines) == 1, stderr
    return lines[0]
