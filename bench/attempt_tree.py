"""The per-attempt cost of an attempt's own tree and of the clean test checkout, against ``git worktree add``.

On a repository of 20,000 files (400 with ``--quick``, one a directory) in 400 directories, each round
times, in-process and interleaved (so load on the machine hits every step alike), after one untimed round:

- the reference: a plain ``git worktree add --detach`` of the head, and its ``git worktree remove``;
- an attempt tree (:func:`wavegit.attempts.workspace.create`: ``git init``, alternates, ``reset --hard``) plus
its
  ``lstat`` baseline, what a wave makes (in the background, ahead of the attempt) per attempt;
- reading it back as content with one file changed (:func:`wavegit.attempts.snapshot.read`: the walk, the hash
of
  the changed file, one ``fast-import``);
- the clean checkout the item's test runs in (:func:`wavegit.attempts.workspace.test_checkout`), on the
critical
  path of every attempt that gets that far;
- removing a tree (:func:`wavegit.attempts.workspace.remove`).

Reading the base once per wave (:meth:`wavegit.attempts.snapshot.Base.load`: ``ls-tree`` and the
``.gitignore`` files) is timed once. Median (min-max) ms of N rounds (default 5).

    python bench/attempt_tree.py [--runs 5] [--quick]   # bench/run.py puts its section in BENCHMARKS.md
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

import common

from wavegit.attempts import snapshot, workspace
from wavegit.model.config import Config

FILES = 20_000
DIRECTORIES = 400
TARGET = 3.0
"""Attempt tree + clean test checkout against one ``git worktree add``: the ceiling this bench checks."""

REFERENCE = "git worktree add (reference)"
CREATE = "attempt tree: create (git init, alternates, reset --hard)"
BASELINE = "attempt tree: its lstat baseline"
READ = "read back as content (1 file changed) + tree"
CHECKOUT = "clean test checkout"
REMOVE_REFERENCE = "git worktree remove (reference)"
REMOVE = "remove a tree"


def make_repo(base: Path, env: Mapping[str, str], files: int) -> Path:
    """A clone with ``files`` small files in :data:`DIRECTORIES` directories, one commit, a .gitignore."""
    clone = base / "repo"
    clone.mkdir()
    common.git(clone, env, "init", "-q")
    per_dir = max(1, files // DIRECTORIES)
    for n in range(files):
        folder = clone / "src" / f"d{n // per_dir:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{n:05d}.py").write_text(f"VALUE = {n}\n")
    (clone / ".gitignore").write_text("__pycache__/\n*.pyc\n")
    common.git(clone, env, "add", "-A")
    common.git(clone, env, "commit", "-q", "-m", "files")
    return clone


class Steps:
    """The steps of one attempt, on the clone of :func:`make_repo`, each returning its seconds."""

    def __init__(self, base: Path, clone: Path, env: Mapping[str, str]) -> None:
        self.base, self.clone, self.env = base, clone, env
        self.head = common.git(clone, env, "rev-parse", "HEAD")
        self.objects = workspace.objects_dir(clone)
        self.limits = snapshot.Limits(Config().max_file_bytes, Config().max_changed_files)
        start = time.perf_counter()
        self.compared_with = snapshot.Base.load(clone, self.head, base / "ignore-rules")
        self.load_s = time.perf_counter() - start

    def one_round(self, n: int) -> dict[str, float]:
        plain, tree, checkout = self.base / f"plain{n}", self.base / f"tree{n}", self.base / f"check{n}"
        times: dict[str, float] = {}
        start = time.perf_counter()
        common.git(self.clone, self.env, "worktree", "add", "-q", "--detach", str(plain), self.head)
        times[REFERENCE] = time.perf_counter() - start
        start = time.perf_counter()
        workspace.create(self.objects, tree, start=self.head, branch=f"wavegit/items/w-bench/I{n}")
        times[CREATE] = time.perf_counter() - start
        start = time.perf_counter()
        untouched = snapshot.baseline(tree)
        times[BASELINE] = time.perf_counter() - start
        (tree / "src" / "d000" / "f00000.py").write_text("VALUE = 'changed'\n")
        start = time.perf_counter()
        taken = snapshot.read(self.clone, tree, self.compared_with, untouched, self.limits, None)
        times[READ] = time.perf_counter() - start
        if taken.changed != ["src/d000/f00000.py"]:
            raise common.BenchError(f"the tree read back changed {taken.changed}")
        commit = common.git(self.clone, self.env, "commit-tree", taken.tree, "-p", self.head, "-m", "bench")
        start = time.perf_counter()
        workspace.test_checkout(self.objects, commit, checkout)
        times[CHECKOUT] = time.perf_counter() - start
        start = time.perf_counter()
        common.git(self.clone, self.env, "worktree", "remove", "--force", str(plain))
        times[REMOVE_REFERENCE] = time.perf_counter() - start
        start = time.perf_counter()
        workspace.remove(tree)
        times[REMOVE] = time.perf_counter() - start
        workspace.remove(checkout)
        return times


def rounds(steps: Steps, runs: int) -> dict[str, common.Stats]:
    """Every step's seconds over ``runs`` rounds, after one untimed round that warms the caches."""
    samples: dict[str, list[float]] = {}
    for n in range(runs + 1):
        times = steps.one_round(n)
        for label, seconds in times.items() if n else ():
            samples.setdefault(label, []).append(seconds)
    return {label: common.Stats(tuple(values)) for label, values in samples.items()}


def measure(files: int, runs: int) -> tuple[dict[str, common.Stats], float]:
    with tempfile.TemporaryDirectory(prefix="wavegit-bench-attempt-") as tmp:
        base = Path(tmp)
        env = common.git_env(base / "home")
        clone = make_repo(base, env, files)
        saved = dict(os.environ)
        os.environ.update({k: v for k, v in env.items() if k.startswith(("HOME", "GIT_"))})
        try:
            steps = Steps(base, clone, env)
            return rounds(steps, runs), steps.load_s
        finally:
            os.environ.clear()
            os.environ.update(saved)


def result(quick: bool, runs: int = 5) -> common.Result:
    files, runs = (DIRECTORIES, 1) if quick else (FILES, runs)
    stats, load_s = measure(files, runs)
    reference = stats[REFERENCE].median
    per_attempt = stats[CREATE].median + stats[BASELINE].median + stats[CHECKOUT].median
    ratio = per_attempt / reference
    met = ratio <= TARGET
    rows = [(label, stats[label].ms(), f"{stats[label].median / reference:.2f}x") for label in stats]
    lines = [
        "## attempt trees",
        "",
        f"`python bench/attempt_tree.py {'--quick' if quick else f'--runs {runs}'}`: a repository of "
        f"{files:,} files in {DIRECTORIES} directories; each step in-process, {runs} interleaved round(s) "
        "after one untimed round, median (min-max) ms and the ratio to a plain `git worktree add` of the "
        "same commit in the same round.",
        "",
        common.table(["step", "ms", "vs git worktree add"], rows, numeric=(1, 2)),
        "",
        f"- Per attempt, its tree with its baseline and the clean test checkout: {per_attempt * 1000:.0f} "
        f"ms, {ratio:.2f}x one `git worktree add` (ceiling {TARGET}x: {common.verdict(met)}). The tree is "
        "made ahead in the background, like the worktree it replaces; the test checkout is on the "
        "attempt's critical path.",
        f"- Once per wave, reading the base (its entries and `.gitignore` files): {load_s * 1000:.0f} ms.",
        "",
    ]
    target = common.Target(10, f"attempt tree + clean test checkout vs git worktree add, {files:,} files",
                           f"≤ {TARGET}x", f"{ratio:.2f}x", met)
    return common.Result("attempt trees", "\n".join(lines), (target,))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    print(result(args.quick, args.runs).section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
