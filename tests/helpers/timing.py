"""Cost comparisons that hold on a busy machine: a measure is judged against a baseline measured in the
same test, never against a fixed number of seconds (load slows both alike)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def timed(fn: Callable[[], T]) -> tuple[T, float]:
    """``fn()`` and the seconds it took."""
    started = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - started


def fastest(fn: Callable[[], object], runs: int = 3) -> float:
    """The shortest of ``runs`` timings of ``fn()``: the one least disturbed by other processes."""
    return min(timed(fn)[1] for _ in range(runs))
