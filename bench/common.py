"""What every benchmark shares: timing whole processes, describing the machine, writing BENCHMARKS.md.

Figures are wall times of whole processes (``subprocess.run``), several runs each, reported as the median
with the min-max range; references are measured in the same run, interleaved round by round, so that noise
from other processes on the machine hits every pipeline alike.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
DOC = ROOT / "BENCHMARKS.md"
for _path in (str(ROOT), str(BENCH_DIR)):
    if _path not in sys.path:
        sys.path.insert(0, _path)


@dataclass(frozen=True)
class Stats:
    """Samples of one measure (seconds, or any unit the caller keeps consistent)."""

    samples: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def low(self) -> float:
        return min(self.samples)

    @property
    def high(self) -> float:
        return max(self.samples)

    def ms(self) -> str:
        """``median (min-max)`` in milliseconds."""
        return f"{self.median * 1000:.0f} ({self.low * 1000:.0f}-{self.high * 1000:.0f})"

    def s(self, digits: int = 2) -> str:
        """``median (min-max)`` in seconds."""
        return f"{self.median:.{digits}f} ({self.low:.{digits}f}-{self.high:.{digits}f})"


@dataclass(frozen=True)
class Pipeline:
    """One whole-process command to time; ``before`` runs untimed before each run (e.g. drop a cache)."""

    label: str
    argv: Sequence[str]
    env: Mapping[str, str] | None = None
    cwd: Path | None = None
    stdin: str | None = None
    before: Callable[[], None] | None = None


class BenchError(RuntimeError):
    """A benchmarked command failed: the figures would be meaningless."""


def run_process(argv: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: Path | None = None,
                stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(list(argv), env=None if env is None else dict(env), cwd=cwd, input=stdin,
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise BenchError(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr.strip()}")
    return proc


@dataclass(frozen=True)
class Timing:
    """The runs of one pipeline: wall seconds, and CPU seconds (user + system of the process and the
    children it waited for, e.g. its git calls), which other load on a shared machine inflates less."""

    label: str
    wall: Stats
    cpu: Stats

    def row(self) -> str:
        """``| label | wall median ms | wall min-max ms | CPU median ms |``."""
        return (f"| {self.label} | {self.wall.median * 1000:.0f} | {self.wall.low * 1000:.0f}-"
                f"{self.wall.high * 1000:.0f} | {self.cpu.median * 1000:.0f} |")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_process(pipeline: Pipeline) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``pipeline`` (its ``before`` step not counted)."""
    if pipeline.before is not None:
        pipeline.before()
    cpu, start = _children_cpu(), time.perf_counter()
    run_process(pipeline.argv, env=pipeline.env, cwd=pipeline.cwd, stdin=pipeline.stdin)
    return time.perf_counter() - start, _children_cpu() - cpu


def interleaved(pipelines: Sequence[Pipeline], runs: int, warmup: bool = True) -> dict[str, Timing]:
    """Each pipeline ``runs`` times, round by round (a, b, c, a, b, c, ...); with ``warmup``, one untimed
    round first so that file system caches and bytecode are warm for every pipeline."""
    if warmup:
        for pipeline in pipelines:
            time_process(pipeline)
    samples: dict[str, list[tuple[float, float]]] = {p.label: [] for p in pipelines}
    for _ in range(runs):
        for pipeline in pipelines:
            samples[pipeline.label].append(time_process(pipeline))
    return {label: Timing(label, Stats(tuple(w for w, _ in pairs)), Stats(tuple(c for _, c in pairs)))
            for label, pairs in samples.items()}


# One bytecode cache for every benchmark process of this user, kept from one run to the next: with the
# prefix, the standard library's and PyYAML's and PyGithub's bytecode moves there too, and a cache per
# benchmark (as before) compiled them again in its first timed process, ~1.9 s of CPU each; the quick
# benchmarks of tests/test_bench.py took 67 s of CPU with a cache each, 50 s with this one. Python checks
# each file's size and mtime against its bytecode, so a cache older than the checkout is safe.
PYCACHE = Path(os.environ.get("WAVEGIT_BENCH_PYCACHE")
               or Path(tempfile.gettempdir()) / f"wavegit-bench-pycache-{os.getuid()}")
"""Inherited by a benchmark run in a process of its own with another TMPDIR (a private tmpfs)."""


def python_env() -> dict[str, str]:
    """The environment for timed Python processes: wavegit from this checkout, bytecode cached in
    :data:`PYCACHE` (as for an installed package, without writing into the source tree), C locale."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), LC_ALL="C", PYTHONPYCACHEPREFIX=str(PYCACHE))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def warm_bytecode() -> None:
    """Compile wavegit's bytecode into the cache, untimed, so no timed process pays for it."""
    run_process([sys.executable, "-m", "compileall", "-q", str(ROOT / "wavegit")], env=python_env())


def git_env(home: Path) -> dict[str, str]:
    """:func:`python_env` plus a private HOME and git identity: no user or system git config, no GitHub or
    wavegit settings leaking in from the caller."""
    home.mkdir(parents=True, exist_ok=True)
    gitconfig = home / ".gitconfig"
    gitconfig.write_text("[init]\n\tdefaultBranch = main\n")
    env = {k: v for k, v in python_env().items()
           if not k.startswith(("GIT_", "WAVEGIT_", "GITHUB_"))}
    env.update(HOME=str(home), GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=str(gitconfig))
    for role in ("AUTHOR", "COMMITTER"):
        env[f"GIT_{role}_NAME"] = "bench"
        env[f"GIT_{role}_EMAIL"] = "bench@example.com"
    return env


def git(cwd: Path, env: Mapping[str, str], *args: str, stdin: str | None = None) -> str:
    """Run git for a benchmark's set-up or reference pipeline (wavegit itself runs git only through
    ``wavegit.core.git``); stdout without the trailing newline."""
    return run_process(["git", *args], env=env, cwd=cwd, stdin=stdin).stdout.rstrip("\n")


def git_version() -> str:
    return subprocess.run(["git", "--version"], capture_output=True, text=True, check=False).stdout.strip()


def machine() -> str:
    """One line: OS, CPU count, Python and git versions."""
    return (f"{platform.system()} {platform.release()} {platform.machine()}, {os.cpu_count()} CPUs, "
            f"{platform.python_implementation()} {platform.python_version()}, {git_version()}")


def load_average() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.1f} (1 min), {five:.1f} (5 min) on {os.cpu_count()} CPUs"


def today() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def table(headers: Sequence[str], rows: Iterable[Sequence[object]], numeric: Sequence[int] = ()) -> str:
    """A Markdown table; columns whose index is in ``numeric`` are right-aligned."""
    align = ["---:" if k in numeric else "---" for k in range(len(headers))]
    lines = [_row(headers), _row(align)]
    lines += [_row([str(cell) for cell in row]) for row in rows]
    return "\n".join(lines)


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def table_rows(text: str) -> list[list[str]]:
    """The body rows of the first Markdown table in ``text`` (header and alignment rows left out)."""
    rows: list[list[str]] = []
    started = False
    for line in text.splitlines():
        if line.startswith("|"):
            started = True
            cells = [cell.strip().replace("\\|", "|") for cell in line.strip().strip("|").split(" | ")]
            rows.append(cells)
        elif started:
            break
    return rows[2:]


# Issue 24's absolute budgets for the read path, on this 2-core machine at 10,000 items: what a user would
# feel, where issues 2 and 4 compared with references (their ratios stay in the sections as figures).
HOOK_BUDGET_MS = 60
"""The warm pre-push hook, 2,000 files pushed."""
PLAN_WARM_BUDGET_MS = 150
PLAN_COLD_BUDGET_S = 1.2
READ_BUDGET_MS = 200
"""Every read command: ``ls``, ``validate``, ``status``, ``report``, ``plan``."""


def within(seconds: float, budget_ms: float) -> tuple[str, str, bool]:
    """(target, figure, met) of a wall time against a budget in milliseconds."""
    return f"≤ {budget_ms:g} ms", f"{seconds * 1000:.0f} ms", seconds * 1000 <= budget_ms


def verdict(met: bool) -> str:
    return "met" if met else "**NOT met**"


@dataclass(frozen=True)
class Target:
    """A target from the issues (2-6, 10, 22-24) and the figure measured against it."""

    issue: int
    what: str
    target: str
    figure: str
    met: bool


@dataclass(frozen=True)
class Result:
    """A benchmark's section of BENCHMARKS.md (heading included) and the targets it measured."""

    name: str
    section: str
    targets: tuple[Target, ...] = field(default=())


def sections(text: str) -> dict[str, str]:
    """The ``## `` sections of a Markdown document by heading text, each with its heading line."""
    found: dict[str, str] = {}
    parts = ("\n" + text).split("\n## ")
    for part in parts[1:]:
        heading = part.split("\n", 1)[0].strip()
        found[heading] = "## " + part.rstrip("\n") + "\n"
    return found


def ratio(a: float, b: float) -> float:
    return a / b if b else float("inf")


def quick_main(doc: str | None, measure: Callable[[bool], Result]) -> None:
    """A benchmark run on its own: ``--quick`` for tiny sizes; prints its BENCHMARKS.md section."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    print(measure(parser.parse_args().quick).section)


@contextlib.contextmanager
def scratch_dirs() -> Iterator[Callable[[], Path]]:
    """Fresh temporary directories, all removed as the block ends rather than each after its run: a run's
    removal (its repository, origin and HOME, thousands of inodes) then never falls in the next run's timing.
    On ext4 without a journal, as this machine's disk is, a new inode is searched for past those deleted in
    the last half minute or so (``recently_deleted``)."""
    made: list[Path] = []

    def make() -> Path:
        made.append(Path(tempfile.mkdtemp(prefix="wavegit-bench-")))
        return made[-1]

    try:
        yield make
    finally:
        for directory in made:
            shutil.rmtree(directory, ignore_errors=True)
