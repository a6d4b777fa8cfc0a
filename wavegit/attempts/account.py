"""What an agent CLI's log says about its run (:class:`Account`), and the bounds on what it may claim: the
log is the worker's output, which a worker controls, so amounts are believed only within what a report can
hold (:data:`MAX_TOKENS`, :func:`usd_amount`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

_Amount = TypeVar("_Amount", int, float)

MAX_TOKENS = 10**12
"""The most tokens one attempt may report (a worker wrote the log: larger counts are not believed)."""
MESSAGE_MAX_CHARS = 300
"""The longest agent message kept for an attempt's one-line error (the whole is in the log)."""


@dataclass(frozen=True)
class Account:
    """What an agent's log says about its run; None where it says nothing."""

    usd: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    error: str | None = None
    """The agent's own reason for failing (Claude's ``is_error`` result, a Codex ``turn.failed``)."""
    denied: str | None = None
    """What it was not allowed to do (Claude's ``permission_denials``): why an attempt failed, maybe."""
    found: bool = False
    """Whether the log held the agent's result (Claude) or a usage event (Codex) at all."""


def usd_amount(value: object, limit: float = 1e6) -> float | None:
    """``value`` as dollars when it is a number from 0 to ``limit``; else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        usd = float(value)
    except OverflowError:  # an int too large for a float
        return None
    return usd if 0 <= usd <= limit else None


def count(value: object) -> int | None:
    """``value`` as a token count when it is a whole number from 0 to :data:`MAX_TOKENS`; else None."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKENS:
        return None
    return value


def total(counts: Sequence[int | None]) -> int | None:
    """The sum of ``counts``; None when one is unknown."""
    if any(n is None for n in counts):
        return None
    return sum(n for n in counts if n is not None)


def most(amounts: Sequence[_Amount | None]) -> _Amount | None:
    """The largest of ``amounts``; None when one is unknown."""
    return None if any(a is None for a in amounts) else max(a for a in amounts if a is not None)


def short(text: str) -> str:
    """``text`` on one line, at most :data:`MESSAGE_MAX_CHARS` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= MESSAGE_MAX_CHARS else flat[:MESSAGE_MAX_CHARS - 3] + "..."
