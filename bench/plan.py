"""Benchmark ``wavegit plan`` on a 10,000-item backlog against plain-Python references, as whole processes.

Measured in one run, interleaved round by round so that machine noise hits every pipeline alike:

(a) reference: ``bench/json_greedy.py`` — ``json.load`` the backlog and pick a greedy file-disjoint set;
(b) PyYAML's C loader alone on the tracker YAML (``yaml.load(text, Loader=yaml.CSafeLoader)``);
(c) ``wavegit plan --json`` cold (wavegit's parse cache removed before each run);
(d) ``wavegit plan --json`` warm (cache filled by the previous run).

(c) and (d) run in a real temporary git repository whose ``main`` branch holds the YAML as
``.wavegit/tracker.yaml``. Targets: warm/(a) <= 1.5, cold/(b) <= 1.15. Also times ``select()`` alone,
in-process.

    python bench/plan.py [--runs 7] [--items 10000]   # `python bench/run.py --only plan` writes BENCHMARKS.md
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import site
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import backlog
import common

SELECT_TARGET_MS = 20
YAML_ONLY = "import sys, yaml; yaml.load(open(sys.argv[1], encoding='utf-8').read(), Loader=yaml.CSafeLoader)"


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def make_repo(base: Path, tracker_yaml: Path) -> Path:
    """A git repository with one commit on ``main`` holding the tracker."""
    repo = base / "repo"
    (repo / ".wavegit").mkdir(parents=True)
    shutil.copyfile(tracker_yaml, repo / ".wavegit" / "tracker.yaml")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", ".wavegit/tracker.yaml")
    _git(repo, "-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-q", "-m", "tracker")
    return repo


def startup_note(env: dict[str, str]) -> str:
    """What interpreter start imports before any pipeline's code runs, if a ``.pth`` file adds to it."""
    log = subprocess.run([sys.executable, "-X", "importtime", "-c", "pass"], env=env, capture_output=True,
                         text=True, check=True).stderr
    rows = [line.split("|") for line in log.splitlines() if line.startswith("import time:")]
    cumulative = [int(row[1]) for row in rows if len(row) == 3 and row[2].strip() == "certifi"]
    pth = [path.name for folder in map(Path, site.getsitepackages()) if folder.is_dir()
           for path in sorted(folder.glob("*.pth")) if "certifi" in path.read_text(errors="replace")]
    if not cumulative:
        return "interpreter start imports no third-party module"
    source = ", ".join(f"`{name}`" for name in pth) or "a `.pth` file"
    return (f"interpreter start imports `certifi` ({cumulative[0] / 1000:.0f} ms by `-X importtime`), from "
            f"{source} in site-packages: the environment's, not wavegit's, paid by every pipeline alike, (a) "
            "and (e) included")


def phases(repo: str) -> dict[str, tuple[float, float]]:
    """Seconds spent in each step of ``wavegit plan --json`` (the steps of ``commands.plan.run``), in a fresh
    process so that imports and first-call costs count as they do in the real command. (wall, CPU) each."""
    marks = [(time.perf_counter(), time.process_time())]
    from wavegit.core.repo import discover
    from wavegit.model import config, plancache
    from wavegit.model.select import select_columns
    from wavegit.trackerbranch.store import GitStore

    marks.append((time.perf_counter(), time.process_time()))
    found = discover(repo)
    cache_dir = found.state_dir / "cache"
    cfg = config.load_config(found.root, cache_dir)
    marks.append((time.perf_counter(), time.process_time()))
    store = GitStore(found, cfg)
    blob_sha = store.read_blob_sha(fetch=False)
    marks.append((time.perf_counter(), time.process_time()))
    assert blob_sha is not None
    cols = plancache.load_columns(blob_sha, lambda: store.read_blob(blob_sha), cache_dir,
                                  cfg.tracker_path, strict=False)
    marks.append((time.perf_counter(), time.process_time()))
    plan = select_columns(cols, cfg.max_items, blob_sha)
    marks.append((time.perf_counter(), time.process_time()))
    plan.to_json_text()
    marks.append((time.perf_counter(), time.process_time()))
    steps = ("imports", "discover + config", "store (git: remote, blob SHA)",
             "plancache.load_columns (cache)", "select", "JSON out")
    return {step: (end[0] - start[0], end[1] - start[1])
            for step, start, end in zip(steps, marks, marks[1:], strict=False)}


def _in_flight_collisions(json_path: Path, picks: list[str]) -> int:
    """How many of the reference's picks overlap an item already in flight (wavegit never picks those)."""
    from wavegit.ownership.index import OwnershipIndex
    from wavegit.ownership.patterns import normalize

    data = json.loads(json_path.read_text(encoding="utf-8"))
    index: OwnershipIndex[str] = OwnershipIndex()
    for d in data["items"]:
        if d["status"] in ("in_progress", "review"):
            for pattern in d["owns"]:
                index.add(d["id"], normalize(pattern))
    owns = {d["id"]: d["owns"] for d in data["items"]}
    return sum(1 for pick in picks if any(index.conflicts(normalize(p)) for p in owns[pick]))


def run(runs: int, n_items: int) -> common.Result:
    with tempfile.TemporaryDirectory(prefix="wavegit-bench-") as tmp:
        base = Path(tmp)
        yaml_path, json_path = backlog.write(base / "data", n_items)
        repo = make_repo(base, yaml_path)
        state = repo / ".git" / "wavegit"
        # Bytecode is cached (in the temp dir, not the source tree) for every pipeline, as for an installed
        # package; otherwise each wavegit run would recompile all its modules.
        env = common.python_env()
        py = sys.executable
        wavegit = [py, "-m", "wavegit", "-C", str(repo), "plan", "--json"]
        pipelines = [
            common.Pipeline("(a) reference: json.load + greedy",
                            [py, str(common.BENCH_DIR / "json_greedy.py"), str(json_path)], env),
            common.Pipeline("(b) PyYAML CSafeLoader alone", [py, "-c", YAML_ONLY, str(yaml_path)], env),
            common.Pipeline("(c) wavegit plan --json, cold", wavegit, env,
                            before=lambda: shutil.rmtree(state, ignore_errors=True)),
            common.Pipeline("(d) wavegit plan --json, warm", wavegit, env),
            common.Pipeline("(e) context: `python -c pass`", [py, "-c", "pass"], env),
        ]
        load_before = os.getloadavg()[0]
        common.time_process(pipelines[3])  # one untimed run: file system caches, .pyc files
        timings = list(common.interleaved(pipelines, runs, warmup=False).values())
        load_after = os.getloadavg()[0]
        startup = startup_note(env)
        out = subprocess.run(wavegit, env=env, capture_output=True, text=True, check=True).stdout
        plan = json.loads(out)
        ref = common.run_process(pipelines[0].argv, env=env).stdout
        ref_picks = json.loads(ref)
        collisions = _in_flight_collisions(json_path, ref_picks)
        phase_runs = [json.loads(subprocess.run([py, __file__, "--phases", str(repo)], env=env, check=True,
                                                capture_output=True, text=True).stdout) for _ in range(runs)]
        size = yaml_path.stat().st_size
    a, b, cold, warm, _ = (t.wall.median for t in timings)
    medians = {step: statistics.median(r[step][0] for r in phase_runs) for step in phase_runs[0]}
    cpu = {step: statistics.median(r[step][1] for r in phase_runs) for step in phase_runs[0]}
    select_cpu = cpu["select"]
    breakdown = ", ".join(f"{step} {seconds * 1000:.0f} ({cpu[step] * 1000:.0f})"
                          for step, seconds in medians.items())
    fixed = timings[4].wall.median + sum(seconds for step, seconds in medians.items() if step != "select")
    warm_ratio, cold_ratio = warm / a, cold / b
    cpu_ratio = timings[3].cpu.median / timings[0].cpu.median
    verdict = {True: "met", False: "**missed**"}
    lines = [
        "## plan",
        "",
        f"`python bench/plan.py --runs {runs} --items {n_items}`; machine: {common.machine()}. Load average "
        f"(1 min) {load_before:.1f} before the timed rounds, {load_after:.1f} after.",
        "",
        f"Backlog from `bench/backlog.py` (seed 7): {n_items} items, tracker YAML {size / 1e6:.1f} MB. Each "
        f"pipeline is a whole process (`subprocess.run`), {runs} rounds interleaved a-b-c-d; median and "
        "min-max wall time, and median CPU time (user + system of the process and its git children, which "
        "other load on the machine inflates less). Cold = wavegit's parse cache deleted before the run; "
        "warm = cache from the previous run. wavegit reads the tracker from the `main` branch of a real git "
        "repository. Bytecode is cached for all pipelines (as for an installed package) after one untimed "
        "run.",
        "",
        "| pipeline | median ms | min-max ms | CPU median ms |",
        "|---|---:|---:|---:|",
        *(t.row() for t in timings),
        "",
        f"- warm: **{warm * 1000:.0f} ms** (budget ≤ {common.PLAN_WARM_BUDGET_MS} ms: "
        f"{verdict[warm * 1000 <= common.PLAN_WARM_BUDGET_MS]}); cold: **{cold:.2f} s** (budget ≤ "
        f"{common.PLAN_COLD_BUDGET_S} s: {verdict[cold <= common.PLAN_COLD_BUDGET_S]}).",
        f"- Against the references (issue 2's ratios, now figures): warm / (a) = {warm_ratio:.2f}x (by CPU "
        f"time {cpu_ratio:.2f}x); cold / (b) = {cold_ratio:.2f}x.",
        f"- Where a warm run's time goes (wall ms and, in parentheses, CPU ms of the process itself, not of "
        f"its git children; medians of {runs} fresh processes timing the steps of `commands/plan.py` "
        f"in-process, interpreter start not included): {breakdown}. Everything but "
        f"`select` (interpreter start (e) included) adds up to {fixed * 1000:.0f} ms, "
        f"{fixed / a:.2f}x (a) on its own.",
        f"- `select` alone in a fresh process: {medians['select'] * 1000:.0f} ms wall, "
        f"{select_cpu * 1000:.0f} ms CPU (target <= {SELECT_TARGET_MS} ms: "
        f"{verdict[select_cpu * 1000 <= SELECT_TARGET_MS]}).",
        f"- Start-up: {startup}.",
        "- Cached, content-addressed by the tracker's blob SHA (never the plan): the planning columns of "
        "the items (id, status, priority, depends_on, owns, position, problems; each repeated string stored "
        "once), the folded index key of each distinct owned pattern, and the lookup tables of the items in "
        "flight by pattern (`FirstOverlap`). On every run `select` checks every ready item against "
        "them, solves priority tier by tier until the cap is met, and finds every skip reason. `plan` ends "
        "without interpreter teardown (`FAST_EXIT`).",
        *([] if warm * 1000 <= common.PLAN_WARM_BUDGET_MS
          else [why_missed(cpu, timings[4].cpu.median, n_items)]),
        f"- The plan took {len(plan['selected'])} items (max_items 8) and gave a reason for "
        f"{len(plan['skipped'])} others. The reference picked {len(ref_picks)} items, {collisions} of them "
        "overlapping an item already in flight (it ignores in-flight ownership).",
        "",
    ]
    targets = (
        common.Target(24, f"warm `plan`, {n_items:,} items",
                      *common.within(warm, common.PLAN_WARM_BUDGET_MS)),
        common.Target(24, f"cold `plan`, {n_items:,} items", f"≤ {common.PLAN_COLD_BUDGET_S} s",
                      f"{cold:.2f} s", cold <= common.PLAN_COLD_BUDGET_S),
    )
    return common.Result("plan", "\n".join(lines), targets)


def why_missed(medians: dict[str, float], start: float, n_items: int) -> str:
    """Where a warm plan's time goes beyond its budget, from the phases' CPU times."""
    ms = {step.split(" ")[0]: round(seconds * 1000) for step, seconds in medians.items()}
    budget = common.PLAN_WARM_BUDGET_MS
    return (
        f"- Why the warm target is missed (CPU times): the budget is {budget} ms; interpreter start alone "
        f"takes {start * 1000:.0f} ms and wavegit's imports {ms['imports']} ms (its modules and the standard "
        f"library they use). Loading the cached planning columns of the {n_items:,} items takes "
        f"{ms['plancache.load_columns']} ms, `select` {ms['select']} ms: exact, case-insensitive ownership "
        "checks of the ready items' distinct patterns against the items in flight, about a µs each in a "
        "fresh process, where the reference compares exact strings once."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--phases", metavar="REPO", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phases:
        print(json.dumps(phases(args.phases)))
        return
    print(run(max(args.runs, 5), args.items).section)


if __name__ == "__main__":
    main()
