"""The read commands and ``sync`` against ``plan``, from 1,000 to 100,000 items.

For each size, a backlog from ``bench/backlog.py`` (seed 7: about 5% in flight, so 500 at 10,000 items, their
leases expired) in a real git repository (``bench/plan.py``'s ``make_repo``), and as whole processes, warm
(each command's parse cache filled by an untimed run), interleaved round by round: ``plan --json``, ``ls``,
``validate``, ``status``, ``report`` (of a finished wave's report, written once) and ``sync --dry-run``
(which releases every expired claim: the edits of hundreds of items, composed and rendered, no commit).

Targets at 10,000 items: every read command (``plan``, ``ls``, ``validate``, ``status``, ``report``) within
200 ms (issue 24) and within 1.5x of ``plan`` (issue 22); ``sync`` with 500 in flight within 1 s (issue 22).

    python bench/read_scaling.py [--quick]
"""

from __future__ import annotations

import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import backlog
import common
from plan import make_repo

from wavegit.core.git import WaveId
from wavegit.model import report

SIZES = (1_000, 10_000, 100_000)
QUICK_SIZES = (200,)
"""One size runs every command and the sync once: the smoke test of the code, not of the scaling."""
TARGET_SIZE = 10_000
READ_RATIO = 1.5
SYNC_SECONDS = 1.0
COMMANDS = (("plan", ["plan", "--json"]), ("ls", ["ls"]), ("validate", ["validate"]), ("status", ["status"]),
            ("report", ["report"]), ("sync --dry-run", ["sync", "--dry-run"]))
WAVE = WaveId("w-20260101-000000-ab12")


@dataclass(frozen=True)
class Size:
    items: int
    in_flight: int
    timings: dict[str, common.Timing]

    def median(self, label: str) -> float:
        return self.timings[label].wall.median


def measure_size(base: Path, n_items: int, runs: int) -> Size:
    where = base / f"n{n_items}"
    yaml_path, _ = backlog.write(where / "data", n_items)
    repo = make_repo(where, yaml_path)
    reports = repo / ".git" / "wavegit" / "reports"
    reports.mkdir(parents=True)
    written = report.WaveReport(wave_id=WAVE, base_sha="0" * 40, started_at="2026-01-01T00:00:00Z")
    (reports / f"{WAVE}.json").write_text(written.to_json())
    env = common.python_env()
    pipelines = [common.Pipeline(label, [sys.executable, "-m", "wavegit", "-C", str(repo), *argv], env)
                 for label, argv in COMMANDS]
    for pipeline in pipelines:
        common.time_process(pipeline)  # untimed: fills the parse caches and the file system caches
    in_flight = yaml_path.read_text().count("status: in_progress")
    return Size(n_items, in_flight, common.interleaved(pipelines, runs, warmup=False))


def runs_for(n_items: int, quick: bool) -> int:
    return 1 if quick or n_items >= 100_000 else 3


def result(quick: bool) -> common.Result:
    sizes_wanted = QUICK_SIZES if quick else SIZES
    with tempfile.TemporaryDirectory(prefix="wavegit-reads-") as tmp:
        base = Path(tmp)
        common.warm_bytecode()
        sizes = [measure_size(base, n, runs_for(n, quick)) for n in sizes_wanted]
    labels = [label for label, _ in COMMANDS]
    rows = [(f"{size.items:,}", f"{size.in_flight:,}", *(size.timings[label].wall.ms() for label in labels),
             *(f"{common.ratio(size.median(label), size.median('plan')):.2f}x" for label in labels[1:]))
            for size in sizes]
    at = next((size for size in sizes if size.items == TARGET_SIZE), sizes[-1])
    reads = labels[:5]
    worst = max(common.ratio(at.median(label), at.median("plan")) for label in reads[1:])
    slowest = max(reads, key=at.median)
    sync_s = at.median("sync --dry-run")
    body = [
        "## read commands and sync scaling",
        "",
        f"`python bench/read_scaling.py{' --quick' if quick else ''}`: backlogs of "
        f"{', '.join(f'{n:,}' for n in sizes_wanted)} items from `bench/backlog.py` (seed 7; in flight: the "
        "`in_progress` items, claimed long ago, so `sync` releases them all), each command a whole process, "
        "warm (its caches filled by an untimed run), interleaved round by round, median (min-max) ms; "
        f"{common.load_average()}.",
        "",
        common.table(["items", "in_progress", *(f"{label} ms" for label in labels),
                      *(f"{label} / plan" for label in labels[1:])], rows,
                     numeric=tuple(range(0, 2 + 2 * len(labels)))),
        "",
        f"- At {at.items:,} items the slowest read command, `{slowest}`, takes "
        f"{at.median(slowest) * 1000:.0f} ms (budget ≤ {common.READ_BUDGET_MS} ms): "
        f"{common.verdict(at.median(slowest) * 1000 <= common.READ_BUDGET_MS)}; the slowest against `plan`: "
        f"{worst:.2f}x (target ≤ {READ_RATIO}x): {common.verdict(worst <= READ_RATIO)}.",
        f"- `sync --dry-run` at {at.items:,} items with {at.in_flight:,} in progress: {sync_s:.2f} s (target "
        f"≤ {SYNC_SECONDS:.0f} s): {common.verdict(sync_s <= SYNC_SECONDS)}.",
        "",
    ]
    targets = (common.Target(24, f"every read command at {at.items:,} items (slowest: `{slowest}`)",
                             *common.within(at.median(slowest), common.READ_BUDGET_MS)),
               common.Target(22, "read commands at 10,000 items", f"≤ {READ_RATIO}x plan", f"{worst:.2f}x",
                             worst <= READ_RATIO),
               common.Target(22, "sync at 10,000 items, 500 in flight", f"≤ {SYNC_SECONDS:.0f} s",
                             f"{sync_s:.2f} s", sync_s <= SYNC_SECONDS))
    return common.Result("reads", "\n".join(body), targets)


if __name__ == "__main__":
    common.quick_main(__doc__, result)
