"""What a wave knows about its items' runs: attempts, item runs, and where it tells what happens."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Protocol

from wavegit.attempts import preset, runner
from wavegit.model import tracker


class Events(Protocol):
    """Where a wave tells what happens (``wavegit.commands._progress.Progress``); thread-safe."""

    def event(self, item_id: str, state: str, detail: str = "", *, attempt: int | None = None) -> None: ...

    def note(self, text: str) -> None: ...


class NoEvents:
    """Events nobody watches."""

    def event(self, item_id: str, state: str, detail: str = "", *, attempt: int | None = None) -> None:
        del item_id, state, detail, attempt

    def note(self, text: str) -> None:
        del text


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass
class Attempt:
    """One try of one item, as the report and the tracker need it."""

    number: int
    worker: str
    prompt_sha256: str
    base: str
    started_at: datetime
    finished_at: datetime | None = None
    exit_code: int | None = None
    test_exit: int | None = None
    cost: float | None = None
    profile: str = ""
    model: str = ""
    input_tokens: int | None = None
    output_tokens: int | None = None
    log_path: Path | None = None
    test_log_path: Path | None = None
    killed: str | None = None
    error: str | None = None
    feedback: str = ""
    """What the next attempt is told (empty when verified)."""
    files_changed: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    commit: str | None = None
    """The item commit when verified."""
    message: str = ""
    """Its commit message (with the trailers)."""
    counted: bool = True
    """Whether it counts toward the item's attempts: False when wavegit, not the item, stopped it."""
    launch_failed: bool = False
    """Its worker or its test could not start: the same launch fails the same way until the setup changes."""
    permanent: str | None = None
    """Why its failure will repeat on every try (its agent's word: a rejected key, an unknown model)."""

    def failed(self, what: str, result: runner.ProcessResult, *, quote: bool = True) -> bool:
        """Whether ``result`` (of the ``what`` process: worker or test) ends the attempt, noting why: when it
        exited with an error, and ``quote``, with its :func:`last_words` (a traceback's exception, a failed
        assertion), so the report and ``status`` say why without the log."""
        if result.killed == "cancelled":
            self.error, self.counted, self.killed = "cancelled: the wave stopped", False, "cancelled"
            return True
        if result.launch_error is not None:
            # The setup's fault (a program missing or hidden by the sandbox), the same on every try: a test
            # that cannot start is neither counted nor retried, as a worker that cannot start is not.
            self.error, self.counted, self.launch_failed = f"{what} {result.describe()}", False, True
            return True
        if not result.ok:
            self.error = f"{what} {result.describe()}"
            said = last_words(result.tail(LAST_WORDS_LINES)) if quote and result.killed is None \
                and (result.exit_code or 0) > 0 else ""
            if said:
                self.error += f": {said}"
            return True
        return False


LAST_WORDS_LINES = 20
"""How many of a log's last lines are searched for a failed process's last words."""


FAILING_TEST = ("FAILED ", "ERROR ", "FAIL: ")
"""How pytest's short summary (the test and its assertion, on one line) and unittest name a failing test."""


def last_words(text: str) -> str:
    """The last line of ``text`` that is not blank, after the first failing test pytest or unittest named in
    it (``FAILED t.py::test_x - assert 1 == 2 (1 failed, 3 passed in 0.10s)``: which test, not only how
    many), each as a worker's text is shown (one line, capped, control characters escaped:
    :func:`preset.short`); "" when it holds none."""
    said = [line.strip().strip("=").strip() for line in text.splitlines()]
    said = [line for line in said if line]
    if not said:
        return ""
    test = next((line for line in said[:-1] if line.startswith(FAILING_TEST)), None)
    return f"{preset.short(test)} ({preset.short(said[-1])})" if test else preset.short(said[-1])


@dataclass
class ItemRun:
    item: tracker.Item
    attempts: list[Attempt] = field(default_factory=list)
    not_started: str | None = None
    """Why (another) attempt did not start: halted, budget, cancelled, no attempt left."""
    undelivered: str | None = None
    """Why a verified item's commit did not reach a pushed wave branch."""
    stopped_by_wave: bool = False
    """``not_started`` says the wave stopped starting attempts (Ctrl-C, SIGTERM, HALT, a budget reached):
    nothing about the item."""

    @property
    def commit(self) -> str | None:
        last = self.attempts[-1] if self.attempts else None
        return last.commit if last is not None else None

    @property
    def verified(self) -> bool:
        return self.commit is not None and self.undelivered is None

    @property
    def used(self) -> int:
        return sum(1 for a in self.attempts if a.counted)

    @property
    def cost(self) -> float:
        return sum(a.cost or 0.0 for a in self.attempts)

    @property
    def tokens(self) -> int | None:
        """Input plus output tokens over its attempts; None unless every attempt reported both."""
        counts = [(a.input_tokens, a.output_tokens) for a in self.attempts]
        if not counts or any(i is None or o is None for i, o in counts):
            return None
        return sum((i or 0) + (o or 0) for i, o in counts)

    @property
    def error(self) -> str | None:
        """Why it did not land, as the report says it."""
        return self._why(self.attempts, self.not_started)

    @property
    def item_error(self) -> str | None:
        """Why it did not land, as its tracker ``last_error`` keeps it: an attempt cancelled, or none started
        because the wave stopped (an interrupt, HALT, a budget), says nothing about the item, so it is left
        out; None: the item's own ``last_error`` stands (the next wave's worker is told it)."""
        return self._why([a for a in self.attempts if a.killed != "cancelled"],
                         None if self.stopped_by_wave else self.not_started)

    def _why(self, attempts: list[Attempt], not_started: str | None) -> str | None:
        if self.verified:
            return None
        if self.undelivered:
            return self.undelivered
        last = attempts[-1] if attempts else None
        if last is not None and last.error and (last.counted or not not_started):
            return last.error
        return not_started or (last.error if last else None)
