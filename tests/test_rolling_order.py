"""Which items ``wavegit run --continuous`` claims and starts first: within a priority, the longest chain of
expected work (``estimate_s``), across waves; and what a drained backlog costs (a fetch, no heartbeat)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from tests.helpers.repos import wavegit
from tests.helpers.wave import item, make_wave_repo
from wavegit.core.errors import ValidationError
from wavegit.engine.order import longest_first
from wavegit.engine.slots import RollingSlots
from wavegit.model import tracker


def backlog(*rows: str) -> tracker.Tracker:
    return tracker.loads("version: 1\nitems:\n" + "".join(
        f"  - {{id: {row.split()[0]}, prompt: p, owns: [{row.split()[0]}.txt], test: 'true'"
        f"{''.join(', ' + extra.replace(':', ': ', 1) for extra in row.split()[1:])}}}\n" for row in rows))


def test_longest_first_orders_by_priority_then_the_longest_chain_of_estimates_then_the_file() -> None:
    loaded = backlog("A estimate_s:1", "B estimate_s:6", "C", "D estimate_s:2", "E estimate_s:3",
                     "P estimate_s:0.5 priority:P1", "R estimate_s:1", "S estimate_s:5 depends_on:[R]")
    plan = longest_first(loaded, 8, "sha")
    # P1 first whatever its length; R (1 s) carries S (5 s) after it: a 6 s chain, before E; C has no
    # estimate and counts as the median of the known ones (2); S waits for R (not ready).
    assert plan.selected == ("P", "B", "R", "E", "C", "D", "A")
    assert [(skip.id, skip.reason) for skip in plan.skipped] == [("S", "depends on R")]


def test_longest_first_leaves_the_shorter_ones_for_later_claims_skipped_in_file_order() -> None:
    loaded = backlog("A estimate_s:1", "B estimate_s:6", "C estimate_s:2", "D estimate_s:4")
    plan = longest_first(loaded, 2, "sha")
    assert plan.selected == ("B", "D")
    assert [(skip.id, skip.reason) for skip in plan.skipped] == [("A", "max items"), ("C", "max items")]


def test_without_estimates_the_plan_order_stands() -> None:
    loaded = backlog("A", "B", "C priority:P0")
    assert longest_first(loaded, 3, "sha").selected == ("C", "A", "B")


def test_a_negative_estimate_is_a_validation_problem_with_its_place() -> None:
    with pytest.raises(ValidationError) as caught:
        backlog("A estimate_s:-1")
    assert "estimate_s" in str(caught.value) and ":3:" in str(caught.value)


def run_in_threads(slots: RollingSlots, turns: list[int]) -> tuple[list[threading.Thread], list[int]]:
    """A thread per turn, each asking for its slot in the order of ``turns``; the order they got one."""
    started: list[int] = []

    def run(turn: int) -> None:
        slot = slots.take(turn)
        assert slot is not None
        started.append(turn)
        slot.give_back()

    threads = [threading.Thread(target=run, args=(turn,)) for turn in turns]
    for thread in threads:
        thread.start()
        time.sleep(0.05)  # in this order
    return threads, started


def test_claimed_items_take_slots_by_rank_then_claim_order_whatever_order_their_threads_ask_in() -> None:
    slots = RollingSlots(1, lambda: None)
    # Turns 0-3 from one claim, 4 from a later one that ranks it first (a longer item).
    slots.promise({0: (2, -1.0), 1: (2, -1.0), 2: (2, -1.0), 3: (2, -1.0)})
    slots.promise({4: (2, -5.0)})
    first = slots.take(0)
    assert first is not None and slots.idle() == -4
    threads, started = run_in_threads(slots, [3, 2, 4])
    # Turn 1 never asks (its wave stopped): it holds no other turn back once forgotten.
    slots.forget(1)
    first.give_back()
    for thread in threads:
        thread.join(timeout=10)
    assert started == [4, 2, 3] and slots.idle() == 1


@pytest.mark.slow
def test_a_continuous_run_starts_the_longest_expected_items_first(tmp_path: Path) -> None:
    log = tmp_path / "started.jsonl"
    estimates = {"A": 1, "B": 6, "C": None, "D": 2, "F": 3}
    items = [item(item_id, [f"env {log}", f"write src/{item_id}.txt ok"], [f"src/{item_id}.txt"])
             for item_id in estimates]
    for entry in items:
        if estimates[entry["id"]] is not None:
            entry["estimate_s"] = estimates[entry["id"]]
    remote = make_wave_repo(tmp_path, items, concurrency=1, attempts=1, sandbox="none")
    result = wavegit(remote.clone, "run", "--continuous", "--json", timeout=120)
    assert result.returncode == 0, result.stderr
    started = [json.loads(line)["WAVEGIT_ITEM_ID"] for line in log.read_text().splitlines()]
    # C has no estimate: the median of the others' (2.5 s), between F and D.
    assert started == ["B", "F", "C", "D", "A"]


@pytest.mark.slow
def test_a_drained_backlog_opens_no_empty_wave_each_wave_pushes_one_heartbeat(tmp_path: Path) -> None:
    items = [item(f"I{n}", ["sleep 0.3", f"write src/i{n}.txt ok"], [f"src/i{n}.txt"]) for n in range(5)]
    remote = make_wave_repo(tmp_path, items, concurrency=2, max_items=2, attempts=1, sandbox="none")
    # The origin logs every ref a push creates (the old value all zeros).
    pushed = tmp_path / "created.log"
    hook = remote.origin / "hooks" / "update"
    hook.write_text(f'#!/bin/sh\ncase "$2" in *[!0]*) ;; *) echo "$1" >> {pushed} ;; esac\n')
    hook.chmod(0o755)
    result = wavegit(remote.clone, "run", "--continuous", "--json", timeout=120)
    assert result.returncode == 0, result.stderr
    waves = [json.loads(line)["wave_id"] for line in result.stdout.splitlines() if line.strip()]
    heartbeats = [ref for ref in pushed.read_text().split() if ref.startswith("refs/wavegit/heartbeat/")]
    # A look that finds nothing ready (the last claims, after each recorded wave) is a fetch, no heartbeat.
    assert len(waves) == 3 and sorted(heartbeats) == sorted(f"refs/wavegit/heartbeat/{w}" for w in waves)
