"""Benchmark a whole wave: 16 items whose worker sleeps 1 s, ``concurrency: 8``, against the ideal 2 s.

Each run builds a fresh repository with a bare ``origin`` and runs ``wavegit run --json`` as a process
(claim, 16 worktrees, workers, item tests, commits, combine, push, record). The worker is
``sh -c 'sleep 1; echo done > "$WAVEGIT_ITEM_ID.txt"'`` and the item test ``true``. Reported: median
and min-max wall time of N runs (default 3) against the ideal 16 / 8 x 1 s = 2 s (target <= 1.25x), and
the per-item overhead of the git steps, timed in-process on the same kind of repository: worktree add +
remove, stage + commit, and replaying one item commit onto the wave branch (collect).

    python bench/wave.py [--runs 3] [--write]   # --write updates the "## wave" section of BENCHMARKS.md
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from wavegit import worktree  # noqa: E402

ITEMS = 16
CONCURRENCY = 8
SLEEP_S = 1.0
IDEAL_S = ITEMS / CONCURRENCY * SLEEP_S
TARGET = 1.25
WORKER = shlex.join(["sh", "-c", f'sleep {SLEEP_S}; echo done > "$WAVEGIT_ITEM_ID.txt"'])
SECTION = "## wave"
HEADER = "# Benchmarks\n"


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "WAVEGIT_", "GITHUB_"))}
    env.update(HOME=str(home), GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=str(home / ".gitconfig"),
               GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="bench@example.com",
               GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="bench@example.com",
               PYTHONPATH=str(ROOT))
    return env


def _git(cwd: Path, env: dict[str, str], *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


def make_repo(base: Path, env: dict[str, str]) -> Path:
    """A bare origin and a clone whose main holds a 16-item tracker and the bench config."""
    (base / "home").mkdir(exist_ok=True)
    (base / "home" / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
    _git(base, env, "init", "-q", "--bare", "-b", "main", "origin.git")
    _git(base, env, "clone", "-q", "origin.git", "work")
    clone = base / "work"
    (clone / ".wavegit").mkdir()
    items = "".join(f"  - id: ITEM-{n:02d}\n    prompt: write ITEM-{n:02d}.txt\n"
                    f"    owns: [ITEM-{n:02d}.txt]\n    test: 'true'\n    status: todo\n"
                    for n in range(ITEMS))
    (clone / ".wavegit" / "tracker.yaml").write_text(f"version: 1\nitems:\n{items}")
    (clone / ".wavegit" / "config.yaml").write_text(
        f"worker: {json.dumps(WORKER)}\nconcurrency: {CONCURRENCY}\nmax_items: {ITEMS}\nattempts: 1\n")
    (clone / "README.md").write_text("bench\n")
    _git(clone, env, "add", "-A")
    _git(clone, env, "commit", "-q", "-m", "bench repo")
    _git(clone, env, "push", "-q", "origin", "main")
    return clone


def time_wave() -> tuple[float, list[float]]:
    """Wall time of one ``wavegit run`` and each item's attempt duration (worktree to removal)."""
    with tempfile.TemporaryDirectory(prefix="wavegit-bench-") as tmp:
        base = Path(tmp)
        env = _env(base / "home")
        clone = make_repo(base, env)
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "wavegit", "run", "--json"], cwd=clone, env=env,
                              capture_output=True, text=True, check=False)
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(f"wavegit run failed ({proc.returncode}): {proc.stderr}")
        report = json.loads(proc.stdout)
        assert sum(item["verified"] for item in report["items"]) == ITEMS, "not every item was verified"
        return wall, [item["duration_s"] for item in report["items"]]


def _median_ms(step: Callable[[], None], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        step()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def time_steps(repeat: int = 16) -> dict[str, float]:
    """Median milliseconds per item of the git steps a wave adds around each worker."""
    with tempfile.TemporaryDirectory(prefix="wavegit-bench-") as tmp:
        base = Path(tmp)
        env = _env(base / "home")
        clone = make_repo(base, env)
        os.environ.update({k: env[k] for k in ("HOME", "GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL",
                                                "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL",
                                                "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL")})
        head = _git(clone, env, "rev-parse", "HEAD")
        counter = iter(range(10**6))
        commits: list[tuple[str, str]] = []

        def add_remove() -> None:
            path = base / "wt" / f"a{next(counter)}"
            worktree.add(clone, path, branch=f"wavegit/items/w-bench/{path.name}", start=head)
            worktree.remove(clone, path)

        def stage_commit() -> None:
            n = next(counter)
            path = base / "wt" / f"c{n}"
            worktree.add(clone, path, branch=None, start=head)
            (path / f"file{n}.txt").write_text("x\n")
            start = time.perf_counter()
            tree = worktree.stage_all(path)
            worktree.changed_paths(clone, head, tree)
            message = f"item {n}\n\nWavegit-Item: {n}\n"
            commits.append((worktree.commit_tree(clone, tree, [head], message), message))
            timings.append((time.perf_counter() - start) * 1000)
            worktree.remove(clone, path)

        timings: list[float] = []
        results = {"worktree add + remove": _median_ms(add_remove, repeat)}
        for _ in range(repeat):
            stage_commit()
        results["stage + changed paths + commit"] = statistics.median(timings)
        start = time.perf_counter()
        worktree.combine(clone, head, commits)
        results["collect (replay one item commit)"] = (time.perf_counter() - start) * 1000 / len(commits)
        return results


def section(runs: int) -> str:
    walls: list[float] = []
    durations: list[float] = []
    for _ in range(runs):
        wall, item_durations = time_wave()
        walls.append(wall)
        durations.extend(item_durations)
    steps = time_steps()
    median = statistics.median(walls)
    ratio = median / IDEAL_S
    attempt_overhead = (statistics.median(durations) - SLEEP_S) * 1000
    lines = [
        SECTION, "",
        f"`python bench/wave.py --runs {runs}` — {datetime.date.today().isoformat()}, "
        f"{platform.python_implementation()} {platform.python_version()}, {platform.system()} "
        f"{platform.machine()}, {os.cpu_count()} CPUs, {_git(ROOT, os.environ.copy(), '--version')}, "
        f"load average {os.getloadavg()[0]:.1f} at the end.",
        "",
        f"A whole `wavegit run` ({ITEMS} items, worker sleeps {SLEEP_S:g} s, concurrency {CONCURRENCY}, item "
        f"test `true`, local bare origin), as a process, median of {runs} fresh repositories:",
        "",
        "| measure | value |",
        "|---|---|",
        f"| wall time, median (min-max) | {median:.2f} s ({min(walls):.2f}-{max(walls):.2f} s) |",
        f"| ideal ({ITEMS} / {CONCURRENCY} x {SLEEP_S:g} s) | {IDEAL_S:.2f} s |",
        f"| ratio to ideal | {ratio:.2f}x (target ≤ {TARGET}x: {'met' if ratio <= TARGET else 'NOT met'}) |",
        f"| per-attempt overhead beyond the 1 s sleep (median over items) | {attempt_overhead:.0f} ms |",
        "",
        "Per-item git steps, in-process, median ms:",
        "",
        "| step | ms |",
        "|---|---|",
        *(f"| {name} | {ms:.1f} |" for name, ms in steps.items()),
        "",
        "The wall time also holds the process start, the claim and record commits (each a fetch and a push "
        "to the origin), the wave branch push, and the idle-poll granularity of the runner.",
        "",
    ]
    return "\n".join(lines)


def write_section(doc: Path, text: str) -> None:
    """Replace (or append) this benchmark's section of ``doc``, leaving the other sections alone."""
    content = doc.read_text(encoding="utf-8") if doc.exists() else HEADER
    start = content.find(f"\n{SECTION}\n")
    if start < 0:
        content = content.rstrip("\n") + "\n\n" + text
    else:
        end = content.find("\n## ", start + 1)
        content = content[: start + 1] + text + (content[end + 1:] if end >= 0 else "")
    doc.write_text(content, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="update the ## wave section of BENCHMARKS.md")
    args = parser.parse_args()
    text = section(max(args.runs, 1))
    print(text)
    if args.write:
        write_section(ROOT / "BENCHMARKS.md", text)


if __name__ == "__main__":
    main()
