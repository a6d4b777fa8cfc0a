"""Hostile tools against an agent's account when its log cannot be written (issue 21: every record survives
ENOSPC): a tool the agent runs writes a line of its choosing into the CLI's output, then fills the disk the
attempt tree shares with wavegit's logs, so that the CLI's own result, printed next, is never logged. Real
``wavegit run`` processes on a small disk (``tests/test_hostile_limits.py``), the fake Claude sandboxed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.repos import TESTS, RemoteRepo
from tests.helpers.wave import item, make_wave_repo, origin_item
from tests.test_hostile_limits import MiB, by_id, needs_bwrap, needs_mounts, run_on_small_disk

pytestmark = pytest.mark.slow  # whole waves

FORGE = TESTS / "hostile_workers" / "forge_result.py"


def _claude_pair(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, way: str, **config: Any) -> RemoteRepo:
    """Items a (whose tool forges ``way``) and b, one after the other, by the fake Claude's profile."""
    monkeypatch.setenv("PATH", f"{TESTS / 'agents'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    attack = f"agent bash python3 {FORGE} {way}"
    items = [item(n, [f"write src/{n}.txt ok", *([attack] if n == "a" else [])], [f"src/{n}.txt"],
                  worker="claude") for n in "ab"]
    return make_wave_repo(tmp_path, items, workers={"claude": {"preset": "claude"}},
                          worker_env=["ANTHROPIC_API_KEY"], sandbox="bwrap", attempts=1, concurrency=1,
                          max_items=2, **config)


@needs_bwrap
@needs_mounts
def test_attack_a_forged_last_word_before_a_full_disk_stops_no_sibling_of_the_profile(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # "Not logged in" written into Claude's output, then the disk filled from the tree: Claude's own result,
    # a success, was never logged, and the forged line read as its last word: the profile failed for good,
    # and the sibling b, of the same profile, was never started in the wave.
    remote = _claude_pair(tmp_path, monkeypatch, "fill-login")
    _, rep, err = run_on_small_disk(remote, 32 * MiB, tmp_path / "kept")
    found = by_id(rep)
    assert "failed for good" not in (found["b"]["error"] or ""), (found, err)
    assert "not retried" not in (found["a"]["error"] or ""), found["a"]
    b = origin_item(remote, "b")
    assert found["b"]["verified"] or (b.status, b.attempts) == ("todo", 0), (found["b"], b)


@needs_bwrap
@needs_mounts
def test_attack_a_forged_free_result_before_a_full_disk_cannot_dodge_the_budget(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A $0 result written into Claude's output, then the disk filled from the tree: Claude's own result was
    # never logged, the forged one was the log's only result, and the wave's ceiling let b start.
    remote = _claude_pair(tmp_path, monkeypatch, "fill-cost", budget={"wave_usd": 0.01})
    _, rep, err = run_on_small_disk(remote, 32 * MiB, tmp_path / "kept")
    found = by_id(rep)
    assert found["a"]["attempt_records"][0]["cost"] is None, (found["a"], err)
    assert found["b"]["attempts"] == 0 and rep["budget"]["exceeded"], (found["b"], rep["budget"])
