"""Cost ceilings: per wave (counted live while workers run) and per UTC day (read from the tracker history).

Every tracker commit that records spending (a wave's record, a review command's) carries a
``Wavegit-Cost: <usd>`` trailer, so a day's spend is the sum of those trailers over the tracker branch's
commits of that UTC day — one ``git log`` call, no extra state to keep. Fail closed: with a ceiling, a history
that cannot be read or a malformed trailer counts as exceeded, and so does an attempt whose reported cost
cannot be read (:class:`WaveSpend`).
"""

from __future__ import annotations

import math
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

from wavegit.core import git
from wavegit.core.errors import BudgetExceededError
from wavegit.core.git import GitError
from wavegit.model.config import Budget

TRAILER_COST = "Wavegit-Cost"
_RECORD_SEP = "\x1e"
_FIELD_SEP = "\x1f"


def format_usd(usd: float) -> str:
    """A cost as the trailer writes it: plain decimal, at most 6 places, no exponent."""
    text = f"{usd:.6f}".rstrip("0").rstrip(".")
    return text or "0"


def parse_usd(text: str) -> float:
    """A trailer's value; ValueError unless it is a finite, non-negative number."""
    value = float(text.strip())
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"not a cost: {text!r}")
    return value


def cost_trailer(usd: float) -> str:
    return f"{TRAILER_COST}: {format_usd(usd)}"


def day_spend(repo_root: Path, commit: str | None, now: datetime | None = None) -> float:
    """USD recorded by ``Wavegit-Cost`` trailers on commits reachable from ``commit`` of ``now``'s UTC day.

    Raises BudgetExceededError when the history cannot be read or a trailer is malformed (fail closed).
    """
    if commit is None:
        return 0.0
    moment = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    day_start = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    fmt = f"%cI{_FIELD_SEP}%(trailers:key={TRAILER_COST},valueonly,separator=%x1f){_RECORD_SEP}"
    # --since only prunes the walk (a day of slack for clock skew); the exact day is checked per commit.
    since = (day_start - timedelta(days=1)).isoformat()
    try:
        listing = git.log(repo_root, [commit], fmt, since=since)
    except GitError as exc:
        raise BudgetExceededError(f"cannot read the day's spend from the tracker history: {exc}") from exc
    total = 0.0
    for record in listing.split(_RECORD_SEP):
        date_text, _, values = record.strip("\n").partition(_FIELD_SEP)
        if not date_text or not values.strip():
            continue
        committed = datetime.fromisoformat(date_text).astimezone(timezone.utc)
        if committed.date() != day_start.date():
            continue
        for value in values.split(_FIELD_SEP):
            try:
                total += parse_usd(value)
            except ValueError as exc:
                raise BudgetExceededError(
                    f"cannot read the day's spend: malformed {TRAILER_COST} trailer {value.strip()!r} "
                    f"on a tracker commit of {day_start.date()}") from exc
    return total


def check_day(budget: Budget, repo_root: Path, commit: str | None, now: datetime | None = None) -> float:
    """The day's spend so far, with or without a day ceiling (the report shows it either way).

    BudgetExceededError when ``budget.day_usd`` is set and already reached, or set and the spend cannot be
    read (fail closed). Without a ceiling nothing gates on the spend: an unreadable history reads as 0.
    """
    try:
        spent = day_spend(repo_root, commit, now)
    except BudgetExceededError:
        if budget.day_usd > 0:
            raise
        return 0.0
    if budget.day_usd > 0 and spent >= budget.day_usd:
        raise BudgetExceededError(
            f"over the daily budget: spent ${format_usd(spent)} of ${format_usd(budget.day_usd)} today (UTC)")
    return spent


class WaveSpend:
    """The running cost of one wave in dollars and tokens, shared by its worker threads.

    Fail closed: an attempt whose reported cost cannot be read (:func:`unreadable`), or that reports none
    under a ceiling (:meth:`record`), counts as reaching the ceiling: no new attempt starts once one is seen.
    """

    def __init__(self, limit_usd: float, limit_tokens: int = 0, *, day: bool = False) -> None:
        """``day``: ``limit_usd`` is what is left of the day's ceiling, not the wave's own."""
        self.limit_usd = limit_usd
        self.limit_tokens = limit_tokens
        self.day = day
        self._spent = 0.0
        self._tokens = 0
        self._unreadable: list[str] = []
        self._lock = threading.Lock()

    def record(self, what: str, usd: float | None, tokens: int | None, note: str | None) -> None:
        """One attempt's reading (``what`` names it in notes): what it spent is added; a ``note`` (its cost
        could not be read) or, under a ceiling, no amount of that ceiling's kind is an unreadable cost."""
        with self._lock:
            self._spent += usd or 0.0
            self._tokens += tokens or 0
        missing = [kind for kind, limit, amount in (("dollars", self.limit_usd, usd),
                                                    ("tokens", self.limit_tokens, tokens))
                   if limit > 0 and amount is None]
        if note is not None:
            self.unreadable(f"{what}: {note}")
        elif missing:
            self.unreadable(f"{what}: the worker reported no {' and no '.join(missing)} "
                            "(a worker reports them in $WAVEGIT_COST_FILE, a preset in its output)")

    @property
    def tokens(self) -> int:
        with self._lock:
            return self._tokens

    def unreadable(self, note: str) -> None:
        """An attempt spent an amount that cannot be read (``note`` says why)."""
        with self._lock:
            self._unreadable.append(note)

    @property
    def spent(self) -> float:
        with self._lock:
            return self._spent

    @property
    def has_unreadable(self) -> bool:
        with self._lock:
            return bool(self._unreadable)

    @property
    def notes(self) -> tuple[str, ...]:
        """One line per unreadable cost, for the report."""
        ceiling = self.limit_usd > 0 or self.limit_tokens > 0
        what = "counted as over the ceiling" if ceiling else "not counted (no ceiling is set)"
        with self._lock:
            return tuple(f"unreadable cost, {what}: {note}" for note in self._unreadable)

    @property
    def ceiling(self) -> str:
        """Which dollar ceiling ``limit_usd`` is, as a stopped item's reason names it."""
        return "the day's" if self.day else "wave"

    def reached(self) -> str:
        """Which ceilings are reached, with the amounts, for the items left not started."""
        with self._lock:
            reasons = []
            if self.limit_usd > 0 and self._spent >= self.limit_usd:
                allowed = "left today" if self.day else "allowed"
                reasons.append(f"${format_usd(self._spent)} spent of ${format_usd(self.limit_usd)} {allowed}")
            if self.limit_tokens > 0 and self._tokens >= self.limit_tokens:
                reasons.append(f"{self._tokens:,} of {self.limit_tokens:,} tokens")
            if self._unreadable and (self.limit_usd > 0 or self.limit_tokens > 0):
                reasons.append("a cost that could not be read")
            return "; ".join(reasons)

    @property
    def exceeded(self) -> bool:
        """Whether a ceiling (if any) is reached, so that no new attempt may start: :meth:`reached` names
        one."""
        return bool(self.reached())


def over_ceiling(budget: Budget, wave_spent: float, day_spent: float, *, unreadable: bool = False,
                 wave_tokens: int = 0) -> bool:
    """Whether a finished wave went past a ceiling: its own (dollars or tokens), or the day's with this wave
    counted (``day_spent`` includes it). Concurrent attempts can overshoot a ceiling that stopped new ones;
    an ``unreadable`` cost is over any ceiling there is."""
    if budget.wave_usd <= 0 and budget.day_usd <= 0 and budget.wave_tokens <= 0:
        return False
    return (unreadable or (budget.wave_usd > 0 and wave_spent > budget.wave_usd)
            or (budget.day_usd > 0 and day_spent > budget.day_usd)
            or (budget.wave_tokens > 0 and wave_tokens > budget.wave_tokens))
