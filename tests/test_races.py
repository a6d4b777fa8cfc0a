"""Races: several schedulers, each in its own clone, add items and run waves against one bare remote.

Each scheduler loops ``wavegit add --push`` then ``wavegit run`` (real subprocesses, a fast worker that
logs ``<item> <wave>`` to a shared file). Afterwards the worker log, the ``Wavegit-Item`` trailers of every
wave branch and the tracker must agree: no item dispatched twice, no intake lost, no two items owning the
same file in flight at once, the tracker valid at every commit, and ``git fsck`` clean everywhere.
Fast by default (4 x 4); ``WAVEGIT_LONG_TESTS=1`` runs 8 schedulers x 25 rounds.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.helpers.reliability import (
    LONG,
    dispatch_log,
    fsck,
    items_by_wave_branch,
    tracker_history_problems,
    worker_command,
)
from tests.helpers.repos import CliResult, wavegit
from tests.helpers.sync import entry, make_tracker_repo, origin_tracker

pytestmark = pytest.mark.slow  # concurrent schedulers on one origin

SCHEDULERS, ROUNDS = (8, 25) if LONG else (4, 4)
SHARED = "docs/shared.txt"
"""Every third item also owns this file: at most one of them may ever be dispatched (none is merged)."""


@dataclass
class Scheduler:
    clone: Path
    env: dict[str, str]
    added: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    waves: list[str] = field(default_factory=list)


def owns_of(index: int, item_id: str) -> list[str]:
    return [f"src/{item_id}.txt", *([SHARED] if index % 3 == 0 else [])]


def note(sched: Scheduler, what: str, result: CliResult) -> None:
    if result.returncode != 0:
        sched.failures.append(f"{what}: exit {result.returncode}: {result.stderr.strip()[-400:]}")


def loop(sched: Scheduler, number: int) -> None:
    for rnd in range(ROUNDS):
        item_id = f"S{number}-R{rnd}"
        added = wavegit(sched.clone, "add", item_id, "--prompt", f"make {item_id}",
                        "--owns", *owns_of(number + rnd, item_id), "--test", "true", "--push", env=sched.env)
        note(sched, f"add {item_id}", added)
        if added.returncode == 0:
            sched.added.append(item_id)
        ran = wavegit(sched.clone, "run", "--json", env=sched.env, timeout=300)
        note(sched, f"run round {rnd}", ran)
        if ran.returncode == 0:
            sched.waves.append(json.loads(ran.stdout)["wave_id"])


def test_concurrent_schedulers_never_dispatch_an_item_twice_nor_lose_an_intake(tmp_path: Path) -> None:
    seeded = [entry(f"SEED-{n}", owns=owns_of(n, f"SEED-{n}")) for n in range(2 * SCHEDULERS)]
    # Unsandboxed: the workers append to one dispatch log outside their trees.
    remote = make_tracker_repo(tmp_path, seeded, worker=worker_command("race"), concurrency=2, max_items=2,
                               attempts=1, timeout_s=60, idle_timeout_s=60, lease_ttl_s=3600, sandbox="none",
                               worker_env=["RACE_LOG"])
    log = tmp_path / "dispatch.log"
    scheds = [Scheduler(remote.new_clone(f"sched{n}"), {"RACE_LOG": str(log)}) for n in range(SCHEDULERS)]
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=SCHEDULERS) as pool:
        for future in [pool.submit(loop, s, n) for n, s in enumerate(scheds)]:
            future.result()
    elapsed = time.monotonic() - started

    assert [f for s in scheds for f in s.failures] == []
    dispatched = dispatch_log(log)
    assert dispatched, "no wave dispatched anything"
    # Worker logs: each item ran once, in one wave.
    assert {i: w for i, w in dispatched.items() if len(w) > 1} == {}
    # Trailers of every wave branch on the remote: each dispatched item in exactly its wave's branch.
    on_branches = items_by_wave_branch(remote.origin)
    counts = Counter(i for items in on_branches.values() for i in items)
    assert {i: n for i, n in counts.items() if n > 1} == {}
    ran = {(i, w[0]) for i, w in dispatched.items()}
    assert ran == {(i, w) for w, ids in on_branches.items() for i in ids}
    # The tracker: every intake present, dispatched items in review with the wave that ran them.
    final = origin_tracker(remote)
    ids = {i.id for i in final.items}
    assert {a for s in scheds for a in s.added} | {e["id"] for e in seeded} <= ids
    assert len(ids) == len(seeded) + SCHEDULERS * ROUNDS
    assert {i.id: i.wave for i in final.items if i.status != "todo"} == dict(ran)
    assert {i.status for i in final.items} <= {"todo", "review"}
    # In-flight ownership never overlapped: at most one item owning the shared file ever ran.
    assert sum(1 for i in final.items if SHARED in i.owns and i.id in dispatched) <= 1
    assert tracker_history_problems(remote.origin) == []
    for repo in [remote.origin, *(s.clone for s in scheds)]:
        fsck(repo)
    print(f"{SCHEDULERS} schedulers x {ROUNDS} rounds: {len(dispatched)} items dispatched in "
          f"{len(on_branches)} waves, {elapsed:.1f}s")
