"""How ``wavegit plan`` grows with the backlog: 1k, 10k and 100k items, cold and warm, against references.

For each size, a backlog from ``bench/backlog.py`` (seed 7) in a real git repository (``bench/plan.py``'s
``make_repo``), and as whole processes, interleaved round by round:

(a) ``bench/json_greedy.py``: ``json.load`` the same backlog and pick a greedy file-disjoint set;
(b) PyYAML's C loader alone on the tracker YAML;
(c) ``wavegit plan --json`` cold (parse cache deleted before each run);
(d) ``wavegit plan --json`` warm.

Growth is linear when the time each extra item costs stays the same from one size to the next: the slope
(ms per 1,000 items) between 10k and 100k is compared with the slope between 1k and 10k.

    python bench/plan_scaling.py [--quick]
"""

from __future__ import annotations

import itertools
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import backlog
import common
from plan import YAML_ONLY, make_repo

SIZES = (1_000, 10_000, 100_000)
QUICK_SIZES = (200, 500, 1_000)
LINEAR_SLACK = 1.5
"""Slope of the last step over the first one, at most: linear within noise."""
LABELS = ("(a) json.load + greedy", "(b) PyYAML CSafeLoader alone", "(c) plan cold", "(d) plan warm")


@dataclass(frozen=True)
class Size:
    items: int
    yaml_bytes: int
    timings: dict[str, common.Timing]

    def median(self, label: str) -> float:
        return self.timings[label].wall.median


def measure_size(base: Path, n_items: int, runs: int) -> Size:
    where = base / f"n{n_items}"
    yaml_path, json_path = backlog.write(where / "data", n_items)
    repo = make_repo(where, yaml_path)
    env = common.python_env()
    py = sys.executable
    plan = [py, "-m", "wavegit", "-C", str(repo), "plan", "--json"]
    state = repo / ".git" / "wavegit"
    pipelines = [
        common.Pipeline(LABELS[0], [py, str(common.BENCH_DIR / "json_greedy.py"), str(json_path)], env),
        common.Pipeline(LABELS[1], [py, "-c", YAML_ONLY, str(yaml_path)], env),
        common.Pipeline(LABELS[2], plan, env, before=lambda: shutil.rmtree(state, ignore_errors=True)),
        common.Pipeline(LABELS[3], plan, env),
    ]
    common.time_process(pipelines[3])  # untimed: fills the parse cache and the file system caches
    timings = common.interleaved(pipelines, runs, warmup=False)
    return Size(n_items, yaml_path.stat().st_size, timings)


def slopes(sizes: list[Size], label: str) -> list[float]:
    """Milliseconds per 1,000 extra items between consecutive sizes."""
    return [(b.median(label) - a.median(label)) * 1000 / ((b.items - a.items) / 1000)
            for a, b in itertools.pairwise(sizes)]


def runs_for(n_items: int, quick: bool) -> int:
    """Fewer rounds for the biggest backlog: one round of it takes about 20 s."""
    return 1 if quick else 3 if n_items >= 100_000 else 5


def result(quick: bool) -> common.Result:
    plan_sizes = QUICK_SIZES if quick else SIZES
    with tempfile.TemporaryDirectory(prefix="wavegit-scaling-") as tmp:
        base = Path(tmp)
        common.warm_bytecode()
        sizes = [measure_size(base, n, runs_for(n, quick)) for n in plan_sizes]
    rows = []
    for size in sizes:
        a, b, cold, warm = (size.median(label) for label in LABELS)
        rows.append((f"{size.items:,}", f"{size.yaml_bytes / 1e6:.1f}",
                     *(size.timings[label].wall.ms() for label in LABELS),
                     f"{cold / size.items * 1e6:.0f}", f"{warm / size.items * 1e6:.0f}",
                     f"{warm / a:.2f}x", f"{cold / b:.2f}x"))
    growth = {label: slopes(sizes, label) for label in LABELS}
    linear = {label: len(s) < 2 or s[-1] <= LINEAR_SLACK * s[0] for label, s in growth.items()}
    slope_rows = [(label, *(f"{v:.1f}" for v in growth[label]),
                   *((f"{growth[label][-1] / growth[label][0]:.2f}",) if len(growth[label]) > 1 else ()))
                  for label in LABELS]
    steps = [f"{a.items:,} → {b.items:,}" for a, b in itertools.pairwise(sizes)]
    runs_note = ", ".join(f"{runs_for(s.items, quick)} at {s.items:,}" for s in sizes)
    body = [
        "## plan scaling",
        "",
        f"`python bench/plan_scaling.py{' --quick' if quick else ''}`: backlogs of "
        f"{', '.join(f'{n:,}' for n in plan_sizes)} items from `bench/backlog.py` (seed 7, the same shape at "
        "every size), whole processes interleaved round by round, median (min-max) ms over "
        f"{runs_note} rounds; bytecode compiled beforehand. Cold = wavegit's parse cache deleted before "
        "the run; warm = cached by the previous run.",
        "",
        common.table(["items", "YAML MB", "(a) json + greedy ms", "(b) YAML C loader ms", "(c) plan cold ms",
                      "(d) plan warm ms", "cold µs/item", "warm µs/item", "warm / (a)", "cold / (b)"],
                     rows, numeric=tuple(range(1, 10))),
        "",
        "Growth: extra milliseconds per 1,000 extra items between sizes (a constant slope = linear; a "
        "last-over-first slope ratio well above 1 would mean super-linear growth).",
        "",
        common.table(["pipeline", *steps, *(("last / first slope",) if len(steps) > 1 else ())], slope_rows,
                     numeric=tuple(range(1, len(steps) + 2))),
        "",
        f"- plan warm grows {'linearly' if linear[LABELS[3]] else '**faster than linearly**'} and plan cold "
        f"{'linearly' if linear[LABELS[2]] else '**faster than linearly**'} (criterion: last slope ≤ "
        f"{LINEAR_SLACK}x the first).",
        "",
    ]
    ratios = {label: growth[label][-1] / growth[label][0] for label in LABELS[2:] if len(growth[label]) > 1}
    target = common.Target(6, "`plan` time grows linearly with the backlog (cold and warm)",
                           f"last / first slope ≤ {LINEAR_SLACK}",
                           ", ".join(f"{label.split()[-1]} {value:.2f}" for label, value in ratios.items())
                           or "n/a", linear[LABELS[2]] and linear[LABELS[3]])
    return common.Result("scaling", "\n".join(body), (target,))


if __name__ == "__main__":
    common.quick_main(__doc__, result)
