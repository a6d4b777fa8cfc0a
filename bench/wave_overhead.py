"""Benchmark a whole wave: 16 items whose worker sleeps 1 s, ``concurrency: 8``, against the ideal 2 s.

Each run builds a fresh repository with a bare ``origin`` and runs ``wavegit run --json`` as a process
(claim, 16 worktrees, workers, item tests, commits, combine, push, record). The worker is
``sh -c 'sleep 1; echo done > "$WAVEGIT_ITEM_ID.txt"'`` and the item test ``true``. Reported: median
and min-max wall time of N runs (default 5: on this shared machine a median of three moved by 0.1 s
between quiet runs) against the ideal 16 / 8 x 1 s = 2 s (target <= 1.25x), and
the per-item overhead of the git steps, timed in-process on the same kind of repository: attempt tree
create + remove, reading it back + commit, and replaying one item commit onto the wave branch (collect).

    python bench/wave_overhead.py [--runs 5] [--quick]   # bench/run.py puts its section in BENCHMARKS.md

The wave runs twice per round: unsandboxed (``sandbox: none``) and, where bubblewrap can run, with every
worker and item test in the sandbox (``sandbox: bwrap``); both against the same ideal and target. Run as
root, each also runs with its files on a private tmpfs and on a fresh ext4 with a journal (``unshare
--mount``, a loop device): this machine's disk (ext4 without a journal) makes every new inode costly, the
tmpfs shows wavegit's own overhead, the fresh ext4 a disk as most machines have it.

``--quick`` (a smoke test): one run, workers sleeping 0.25 s.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import common

from wavegit.attempts import objectstore, sandbox, snapshot, wavebranch, workspace
from wavegit.core import git
from wavegit.model.config import Config

ITEMS = 16
CONCURRENCY = 8
SLEEP_S = 1.0
TARGET = 1.25


def worker(sleep_s: float) -> str:
    """The bench worker: sleeps, then writes the one file its item owns."""
    return shlex.join(["sh", "-c", f'sleep {sleep_s:g}; echo done > "$WAVEGIT_ITEM_ID.txt"'])


def make_repo(base: Path, env: dict[str, str], items: int = ITEMS, sleep_s: float = SLEEP_S,
              concurrency: int = CONCURRENCY, mode: str = "none") -> Path:
    """A bare origin and a clone whose main holds an ``items``-item tracker and the bench config."""
    common.git(base, env, "init", "-q", "--bare", "-b", "main", "origin.git")
    common.git(base, env, "clone", "-q", "origin.git", "work")
    clone = base / "work"
    (clone / ".wavegit").mkdir()
    entries = "".join(f"  - id: ITEM-{n:02d}\n    prompt: write ITEM-{n:02d}.txt\n"
                      f"    owns: [ITEM-{n:02d}.txt]\n    test: 'true'\n    status: todo\n"
                      for n in range(items))
    (clone / ".wavegit" / "tracker.yaml").write_text(f"version: 1\nitems:\n{entries}")
    (clone / ".wavegit" / "config.yaml").write_text(
        f"worker: {json.dumps(worker(sleep_s))}\nconcurrency: {concurrency}\nmax_items: {items}\n"
        f"attempts: 1\nsandbox: {mode}\n")
    (clone / "README.md").write_text("bench\n")
    common.git(clone, env, "add", "-A")
    common.git(clone, env, "commit", "-q", "-m", "bench repo")
    common.git(clone, env, "push", "-q", "origin", "main")
    return clone


def run_wave(clone: Path, env: dict[str, str]) -> tuple[float, dict[str, object]]:
    """Wall time of one ``wavegit run --json`` in ``clone`` and its report; every item must verify."""
    start = time.perf_counter()
    proc = common.run_process([sys.executable, "-m", "wavegit", "run", "--json"], cwd=clone, env=env)
    wall = time.perf_counter() - start
    report: dict[str, object] = json.loads(proc.stdout)
    items = report["items"]
    assert isinstance(items, list)
    if not all(item["verified"] for item in items):
        raise common.BenchError(f"not every item was verified: {proc.stdout}")
    return wall, report


def time_wave(items: int, sleep_s: float, mode: str, scratch: Callable[[], Path] | None = None
              ) -> tuple[float, list[float]]:
    """Wall time of one ``wavegit run`` and each item's attempt duration (worktree to removal), its files
    (repository, origin, HOME with the attempt trees) in ``TMPDIR``: in a directory ``scratch`` makes (the
    caller removes it), else one removed at once."""
    if scratch is None:
        with common.scratch_dirs() as own:
            return time_wave(items, sleep_s, mode, own)
    base = scratch()
    env = common.git_env(base / "home")
    wall, report = run_wave(make_repo(base, env, items, sleep_s, mode=mode), env)
    if report.get("sandbox") != mode:
        raise common.BenchError(f"asked for sandbox {mode}, the wave ran with {report.get('sandbox')}")
    entries = report["items"]
    assert isinstance(entries, list)
    return wall, [float(item["duration_s"]) for item in entries]


_MOUNTS = {
    "tmpfs": 'mount -t tmpfs -o mode=1777 wavegit-bench "$TMPDIR" && exec "$@"',
    "ext4": 'mkfs.ext4 -q -F "$WAVEGIT_BENCH_IMAGE" && mount -o loop "$WAVEGIT_BENCH_IMAGE" "$TMPDIR" '
            '&& chmod 1777 "$TMPDIR" && exec "$@"',
}
"""By place: run in a private mount namespace where ``TMPDIR`` is a tmpfs, or a fresh ext4 with a journal (on
a loop device over an image file), that only the command sees."""

PLACES = {"tmpfs": "files on a tmpfs", "ext4": "files on a fresh ext4 with a journal"}
"""The places a wave runs besides this machine's disk, by the suffix of its rows' keys."""


def place_problem(place: str) -> str | None:
    """None when a wave can run on a private ``place`` here (root, ``unshare``; for ext4 ``mkfs.ext4`` and
    loop devices), else why not."""
    if os.geteuid() != 0:
        return f"a private {place} needs root"
    needs = ["unshare"] + (["mkfs.ext4"] if place == "ext4" else [])
    missing = [program for program in needs if not shutil.which(program)]
    if missing:
        return f"{', '.join(missing)} not installed"
    if place == "ext4" and not Path("/dev/loop-control").exists():
        return "no loop devices (/dev/loop-control)"
    return None


def time_wave_in(place: str, items: int, sleep_s: float, mode: str) -> tuple[float, list[float]]:
    """:func:`time_wave` in a process of its own whose ``TMPDIR`` is a private ``place`` (``tmpfs``: every
    file of the wave in memory; ``ext4``: a fresh file system with a journal, as most disks are)."""
    scratch = tempfile.mkdtemp(prefix=f"wavegit-bench-{place}-")
    image = Path(f"{scratch}.img")
    try:
        with image.open("wb") as sparse:
            sparse.truncate(1 << 30)
        argv = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", _MOUNTS[place], "sh",
                sys.executable, __file__, "--one-wave", mode, "--items", str(items),
                "--sleep", f"{sleep_s:g}"]
        done = common.run_process(argv, env={**os.environ, "TMPDIR": scratch,
                                             "WAVEGIT_BENCH_IMAGE": str(image),
                                             "WAVEGIT_BENCH_PYCACHE": str(common.PYCACHE)})
    finally:
        image.unlink()
        os.rmdir(scratch)
    wall, durations = json.loads(done.stdout)
    return float(wall), [float(d) for d in durations]


def _median_ms(step: Callable[[], None], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        step()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def time_steps(repeat: int = 16) -> dict[str, float]:
    """Median milliseconds per item of the git steps a wave adds around each worker."""
    with tempfile.TemporaryDirectory(prefix="wavegit-bench-", ignore_cleanup_errors=True) as tmp:
        base = Path(tmp)
        env = common.git_env(base / "home")
        clone = make_repo(base, env)
        saved = dict(os.environ)
        os.environ.update({k: v for k, v in env.items() if k.startswith(("HOME", "GIT_"))})
        try:
            return _steps(base, clone, common.git(clone, env, "rev-parse", "HEAD"), repeat)
        finally:
            os.environ.clear()
            os.environ.update(saved)


def _steps(base: Path, clone: Path, head: str, repeat: int) -> dict[str, float]:
    counter = iter(range(10**6))
    commits: list[tuple[str, str, tuple[str, ...]]] = []
    timings: list[float] = []
    objects = workspace.objects_dir(clone)
    # As a wave makes its trees: git init's git directory captured once, written per tree; the objects its
    # base reaches packed once, the store every tree borrows from.
    skeleton = workspace.Skeleton.capture(base / "wt" / "_skeleton")
    start = time.perf_counter()
    store = objectstore.ensure(clone, base / "wt", head)
    store_ms = (time.perf_counter() - start) * 1000
    compared_with = snapshot.Base.load(clone, head, base / "ignore-rules")
    limits = snapshot.Limits(Config().max_file_bytes, Config().max_changed_files)
    author, committer = git.idents(clone)

    def add_remove() -> None:
        path = base / "wt" / f"a{next(counter)}"
        workspace.create(store, path, start=head, branch=f"wavegit/items/w-bench/{path.name}",
                         skeleton=skeleton)
        snapshot.baseline(path)
        workspace.remove(path)

    def stage_commit() -> None:
        n = next(counter)
        path = base / "wt" / f"c{n}"
        workspace.create(store, path, start=head, skeleton=skeleton)
        untouched = snapshot.baseline(path)
        (path / f"file{n}.txt").write_text("x\n")
        message = f"item {n}\n\nWavegit-Item: {n}\n"
        start = time.perf_counter()
        # The wave's read writes the item's commit in the same fast-import stream.
        taken = snapshot.read(clone, path, compared_with, untouched, limits, None,
                              snapshot.CommitInfo(message, author, committer))
        assert taken.commit is not None
        commits.append((taken.commit, message, taken.written))
        timings.append((time.perf_counter() - start) * 1000)
        workspace.remove(path)

    def test_checkout() -> None:
        n = next(counter)
        commit, _, written = commits[n % len(commits)]
        path = workspace.test_checkout(objects, commit, base / "wt" / f"t{n}", skeleton)
        objectstore.narrow(path, commit, store, objects, written)
        workspace.remove(path)

    results = {"the wave's object store (what its base reaches, packed once per wave)": store_ms,
               "attempt tree create (own git dir, lstat baseline) + remove": _median_ms(add_remove, repeat)}
    for _ in range(repeat):
        stage_commit()
    results["read the tree as content + changed paths + commit"] = statistics.median(timings)
    results["clean test checkout of the item commit (its new objects its own) + remove"] = _median_ms(
        test_checkout, repeat)
    start = time.perf_counter()
    wavebranch.combine(clone, head, [(commit, message) for commit, message, _ in commits])
    results["collect (replay one item commit)"] = (time.perf_counter() - start) * 1000 / len(commits)
    return results


@dataclass(frozen=True)
class ModeFigures:
    walls: common.Stats
    attempt_overhead_ms: float
    """Median over items of an attempt's duration beyond the worker's sleep."""


@dataclass(frozen=True)
class Figures:
    modes: dict[str, ModeFigures]
    """``none`` always; ``bwrap`` where bubblewrap can run."""
    sleep_s: float
    steps: dict[str, float]

    @property
    def ideal(self) -> float:
        return ITEMS / CONCURRENCY * self.sleep_s

    def ratio(self, mode: str) -> float:
        return self.modes[mode].walls.median / self.ideal


def bwrap_problem() -> str | None:
    found = shutil.which(sandbox.BWRAP)
    return sandbox.probe(found) if found else "bwrap is not installed"


def measure(runs: int, sleep_s: float = SLEEP_S, step_repeat: int = 16) -> Figures:
    modes = ["none"] + (["bwrap"] if bwrap_problem() is None else [])
    places = [""] + [place for place in PLACES if place_problem(place) is None]
    keys = [f"{mode}, {place}" if place else mode for place in places for mode in modes]
    walls: dict[str, list[float]] = {key: [] for key in keys}
    durations: dict[str, list[float]] = {key: [] for key in keys}
    common.warm_bytecode()
    # Round by round, so that the machine's noise falls on every mode and place alike; every run's files on
    # the disk kept until the last run (common.scratch_dirs).
    with common.scratch_dirs() as scratch:
        for _ in range(runs):
            for key in keys:
                mode, _, place = key.partition(", ")
                wall, item_durations = (time_wave_in(place, ITEMS, sleep_s, mode) if place
                                        else time_wave(ITEMS, sleep_s, mode, scratch))
                walls[key].append(wall)
                durations[key].extend(item_durations)
    figures = {key: ModeFigures(common.Stats(tuple(walls[key])),
                                (statistics.median(durations[key]) - sleep_s) * 1000) for key in keys}
    return Figures(figures, sleep_s, time_steps(step_repeat))


def result(quick: bool, runs: int = 5) -> common.Result:
    """The section; ``quick``: one run of a wave whose workers sleep 0.25 s (a smoke test)."""
    runs = 1 if quick else runs
    fig = measure(1, 0.25, 4) if quick else measure(runs)
    rows: list[tuple[str, str]] = []
    targets = []
    for key, figures in fig.modes.items():
        mode, _, place = key.partition(", ")
        ratio = fig.ratio(key)
        met = ratio <= TARGET
        label = f"`sandbox: {mode}`{f', {PLACES[place]}' if place else ''}:"
        per_item = (figures.walls.median - fig.ideal) / (ITEMS / CONCURRENCY) * 1000
        rows += [
            (f"{label} wall time, median (min-max)", f"{figures.walls.s()} s"),
            (f"{label} ratio to ideal", f"{ratio:.2f}x (target ≤ {TARGET}x: {common.verdict(met)})"),
            (f"{label} per-attempt overhead beyond the {fig.sleep_s:g} s sleep (median over items)",
             f"{figures.attempt_overhead_ms:.0f} ms"),
            (f"{label} wave overhead per item ((wall - ideal) / {ITEMS // CONCURRENCY} items per slot)",
             f"{per_item:.0f} ms"),
        ]
        what = (f"wave of {ITEMS} x {fig.sleep_s:g} s items at concurrency {CONCURRENCY} vs ideal, "
                f"sandbox {mode}" + (f", {PLACES[place]}" if place else ""))
        issue = 3 if mode == "none" else 10
        targets.append(common.Target(issue, what, f"≤ {TARGET}x", f"{ratio:.2f}x", met))
    problem = bwrap_problem()
    skipped = ([] if problem is None else [f"The sandboxed run was skipped: {problem}.", ""]) + [
        line for place, what in PLACES.items() if (why := place_problem(place)) is not None
        for line in (f"The runs with {what} were skipped: {why}.", "")]
    lines = [
        "## wave",
        "",
        f"`python bench/wave_overhead.py {'--quick' if quick else f'--runs {runs}'}`. A whole `wavegit run` "
        f"({ITEMS} items, worker sleeps {fig.sleep_s:g} s, concurrency {CONCURRENCY}, item test `true`, "
        f"local bare origin), as a process, median of {runs} fresh repositories (bytecode compiled "
        "beforehand, untimed; every run's files removed after the last run, none in another's timing). "
        "Each wave runs three times per round: its files (repository, origin, the attempt trees in its "
        "HOME) on this machine's disk, on a private tmpfs, and on a fresh ext4 file system with a journal "
        "(a loop device over a sparse image on this disk; both in a mount namespace of their own, "
        "`unshare --mount`, as root). This machine's disk is ext4 without a journal, where each new inode "
        "is searched for past the ones freed in the last half minute or so, as every wave's reaper frees "
        "the trees of the wave before (`recently_deleted` and its buffer lookups were 40% of a disk wave's "
        "CPU in `perf`; a journal turns that search off): the tmpfs rows are wavegit's own overhead, the "
        "fresh ext4 rows a disk as most machines have it, the disk rows what this machine adds.",
        "",
        common.table(["measure", "value"], [
            (f"ideal ({ITEMS} / {CONCURRENCY} x {fig.sleep_s:g} s)", f"{fig.ideal:.2f} s"), *rows]),
        "",
        *skipped,
        "Per-item git steps, in-process, median ms:",
        "",
        common.table(["step", "ms"], [(name, f"{ms:.1f}") for name, ms in fig.steps.items()], numeric=(1,)),
        "",
        "In the wave, attempt trees (each a repository of its own borrowing the wave's store of the objects "
        "its base reaches, packed once per wave; its git directory written from the one `git init` of the "
        "wave) are made one batch ahead by two "
        "background threads, once every worker of the batch before has started (the first batch's by their "
        "own item threads, side by side, while their sandboxes are built), and once read back left for the "
        "wave's cleanup (two batches' worth at most, while the disk is more than a fifth free), so create "
        "delays only the first batch. A worker slot is held "
        "while the worker runs: the next worker starts as soon as the previous one exits, and the "
        "previous attempt is read back (its commit written by the same `git fast-import`), checked out "
        "clean and tested once that worker has started (so an attempt's duration, and the per-attempt "
        "overhead above, include that launch). Collect replays all item commits with one "
        "`git fast-import`, kept as one pack. The rest of the "
        "wall time is the process start (interpreter, imports), the claim and record commits (each a push "
        "to the origin, on the tracker as the config's fetch and then the claim's push left it; the first "
        "heartbeat, made while the claim is prepared, rides the claim's push), a HALT read before the "
        "second batch, and the last batch's read-back, test checkout (sandboxed, made at the base while "
        "its worker ran, then moved to the commit) and test; the record's push carries the wave branch, "
        "the shared report (written while the record edits the tracker) and the heartbeat's deletion (one "
        "atomic push). Collect replays the changes the read-backs wrote, asking git for none. Workers "
        "and tests start without Python code in the child (no `preexec_fn`, so no fork holding the GIL). "
        "What is left of the wave's trees "
        "at its end moves "
        "to `.git/wavegit/trash` (a rename each) and a detached reaper removes it after `wavegit run` has "
        "returned, at the lowest CPU priority, so the wall time here ends with the command, not with that "
        "removal (on this machine's disk, mounted with `discard`, each removed directory costs 1-3 ms).",
        "",
    ]
    return common.Result("wave", "\n".join(lines), tuple(targets))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="one run")
    parser.add_argument("--one-wave", choices=["none", "bwrap"],
                        help="time one wave in this process's TMPDIR and print [wall, durations] as JSON")
    parser.add_argument("--items", type=int, default=ITEMS)
    parser.add_argument("--sleep", type=float, default=SLEEP_S)
    args = parser.parse_args()
    if args.one_wave:
        print(json.dumps(time_wave(args.items, args.sleep, args.one_wave)))
        return
    print(result(args.quick, max(args.runs, 1)).section)


if __name__ == "__main__":
    main()
