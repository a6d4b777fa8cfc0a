"""The pre-push hook, warm, against its floor for small and large pushes and trackers.

``bench/prepush.py`` measures one case in depth (10,000 items, 200 commits touching 2,000 files). This adds
the corners: trackers of 1,000 and 10,000 items (5% in flight) times a push of 1 commit touching 1 file and a
push of 200 commits touching 2,000 files (files no in-flight item owns, so every path is checked), all
built by ``prepush.build``. Floor, as there: ``python -c pass`` plus the one ``git log --name-status`` that
lists the pushed paths, each timed alone. Whole processes, interleaved, median (min-max).

    python bench/prepush_sizes.py [--quick]
"""

from __future__ import annotations

import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import common
import prepush

TRACKERS = (1_000, 10_000)
PUSHES = ((1, 1), (200, 10))
"""(commits, files per commit)."""
LABELS = ("python -c pass", "git log of the push", "hook, warm")


@dataclass(frozen=True)
class Case:
    items: int
    commits: int
    files: int
    timings: dict[str, common.Timing]

    @property
    def floor(self) -> float:
        return self.timings[LABELS[0]].wall.median + self.timings[LABELS[1]].wall.median

    @property
    def hook(self) -> float:
        return self.timings[LABELS[2]].wall.median

    @property
    def ratio(self) -> float:
        return self.hook / self.floor


def measure_case(base: Path, n_items: int, commits: int, files: int, runs: int) -> Case:
    where = base / f"{n_items}-{commits}x{files}"
    where.mkdir()
    setup = prepush.build(where, n_items, commits, files)
    env = common.python_env()
    py = sys.executable
    stdin = f"refs/heads/main {setup.new} refs/heads/main {setup.old}\n"
    pipelines = [
        common.Pipeline(LABELS[0], [py, "-c", "pass"], env, setup.clone),
        common.Pipeline(LABELS[1], prepush.floor_git_log(setup.old, setup.new), env, setup.clone),
        common.Pipeline(LABELS[2], setup.hook(), env, setup.clone, stdin,
                        prepush.fetched_just_now(setup.clone)),
    ]
    return Case(n_items, commits, files * commits, common.interleaved(pipelines, runs))


def result(quick: bool) -> common.Result:
    trackers, runs = ((1_000,), 1) if quick else (TRACKERS, 9)
    with tempfile.TemporaryDirectory(prefix="wavegit-prepush-sizes-") as tmp:
        base = Path(tmp)
        common.warm_bytecode()
        cases = [measure_case(base, n, commits, files, runs) for n in trackers for commits, files in PUSHES]
    rows = [(f"{c.items:,}", f"{c.commits} / {c.files}", *(c.timings[label].wall.ms() for label in LABELS),
             f"{c.floor * 1000:.0f}", f"{c.ratio:.2f}x",
             common.verdict(c.hook * 1000 <= common.HOOK_BUDGET_MS))
            for c in cases]
    worst = max(cases, key=lambda c: c.hook)
    body = [
        "## pre-push hook: small and large",
        "",
        f"`python bench/prepush_sizes.py{' --quick' if quick else ''}`: {runs} interleaved round(s) per case "
        "after one untimed round, bytecode cached, warm parse cache. Budget: the warm hook ≤ "
        f"{common.HOOK_BUDGET_MS} ms (issue 24); hook / floor (medians) is issue 4's former ratio, a figure.",
        "",
        common.table(["tracker items", "commits / files pushed", *(f"{label} ms" for label in LABELS),
                      "floor ms", "hook / floor", "budget"], rows, numeric=(2, 3, 4, 5, 6)),
        "",
        f"- Slowest case: {worst.items:,} items, {worst.commits} commit(s) / {worst.files} file(s): "
        f"{worst.hook * 1000:.0f} ms ({worst.ratio:.2f}x its floor). For small pushes the floor is mostly "
        "`python -c pass`, so the rest is the hook's fixed cost (imports, repository discovery, reading the "
        "in-flight items).",
        "",
    ]
    target = common.Target(24, "pre-push hook, warm, every size (small/large push and tracker)",
                           f"≤ {common.HOOK_BUDGET_MS} ms", f"worst {worst.hook * 1000:.0f} ms",
                           worst.hook * 1000 <= common.HOOK_BUDGET_MS)
    return common.Result("prepush-sizes", "\n".join(body), (target,))


if __name__ == "__main__":
    common.quick_main(__doc__, result)
