"""The wave report: its model and its JSON (the comment's Markdown is :mod:`wavegit.model.report_markdown`).

The JSON is what ``run --json`` prints and the PR comment embeds (README, "Using it") plus extras
(attempt records, log tails, budget and wave-test details, notes). :meth:`WaveReport.from_json` validates
strictly, because the gate reads it back from a PR comment: wrong types, missing or unknown fields and
malformed timestamps raise :class:`ReportError` naming the JSON path.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from wavegit.core import jsondecode
from wavegit.core.git import WaveId
from wavegit.core.terminal import inert_json

_TS_RE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|\+00:00)")


def _check_timestamp(value: object) -> str | None:
    if isinstance(value, str) and _TS_RE.fullmatch(value):
        try:
            datetime.fromisoformat(value.replace("Z", "+00:00"))
            return None
        except ValueError as exc:
            return f"is not a real time: {exc}"
    return f"expected an ISO 8601 UTC timestamp like 2026-01-01T00:00:00Z, got {value!r}"


_TS = {jsondecode.CHECK: _check_timestamp}
"""The metadata of a timestamp field."""


class ReportError(ValueError):
    """A report that cannot be read: the message starts with the JSON path (``$.items[0].id``)."""


def utc_timestamp(moment: datetime | None = None) -> str:
    """ISO 8601 UTC with a ``Z``, to the second: the only timestamp format reports use."""
    moment = moment or datetime.now(timezone.utc)
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def item_test_log(log_path: Path) -> Path:
    """An attempt's item test log, beside its worker's log ``log_path`` (``A-1.log``: ``A-1.test.log``)."""
    return log_path.with_suffix(".test.log")


@dataclass(kw_only=True)
class AttemptRecord:
    """One run of the worker on one item: what a retry is told and what the report proves."""

    attempt: int
    worker: str
    """What ran it: ``deep (claude, opus)`` (profile, preset, model), ``worker (command)``."""
    prompt_sha256: str
    base_commit: str
    started_at: str = field(metadata=_TS)
    finished_at: str = field(metadata=_TS)
    exit_code: int | None = None
    test_exit: int | None = None
    cost: float | None = None
    profile: str = ""
    """The worker profile (``worker`` for config ``worker``)."""
    model: str = ""
    """The model its preset asked for; empty for the CLI's default or a command."""
    input_tokens: int | None = None
    output_tokens: int | None = None
    log_path: str = ""
    killed: str | None = None
    error: str | None = None
    violated: bool = False
    """It changed files outside the item's ``owns`` (a violation, whatever its test said)."""
    counted: bool = True
    """Whether it counts against the item's ``max_attempts`` (a worker that could not be launched: no)."""

    def failure_log(self) -> str:
        """The log that says why it failed: its test's when the test ran and failed, else its worker's."""
        if self.log_path and self.test_exit not in (None, 0):
            return str(item_test_log(Path(self.log_path)))
        return self.log_path


@dataclass(kw_only=True)
class ItemReport:
    id: str
    title: str = ""
    """The item's title in the tracker (may be empty)."""
    status: str
    verified: bool = False
    attempts: int = 0
    exit_code: int | None = None
    test_exit: int | None = None
    duration_s: float = 0.0
    files_changed: list[str] = field(default_factory=list)
    ownership_violations: list[str] = field(default_factory=list)
    cost: float | None = None
    tokens: int | None = None
    """Input plus output tokens of its attempts, when every attempt reported them."""
    error: str | None = None
    log_tail: str = ""
    attempt_records: list[AttemptRecord] = field(default_factory=list)


@dataclass(kw_only=True)
class SkippedItem:
    id: str
    reason: str


@dataclass(kw_only=True)
class BudgetReport:
    wave_usd_limit: float = 0.0
    day_usd_limit: float = 0.0
    wave_spent_usd: float = 0.0
    day_spent_usd: float = 0.0
    wave_tokens_limit: int = 0
    wave_spent_tokens: int = 0
    exceeded: bool = False


@dataclass(kw_only=True)
class WaveTestReport:
    command: str = ""
    exit_code: int | None = None
    log_path: str = ""
    log_tail: str = ""
    """The end of its output when it failed (empty when it passed)."""


@dataclass(kw_only=True)
class Omitted:
    """What this copy of a report leaves out to fit one PR comment (all zero: it is whole)."""

    items: int = 0
    skipped: int = 0
    notes: int = 0
    files_changed: dict[str, int] = field(default_factory=dict)
    """item id -> entries left out of its ``files_changed``."""
    ownership_violations: dict[str, int] = field(default_factory=dict)
    """item id -> entries left out of its ``ownership_violations`` (never all of them)."""
    clipped_strings: int = 0
    full_report: str = ""
    """Where the whole report is."""

    def __bool__(self) -> bool:
        return bool(self.items or self.skipped or self.notes or self.files_changed
                    or self.ownership_violations or self.clipped_strings)


@dataclass(kw_only=True)
class WaveReport:
    wave_id: WaveId
    base_sha: str
    head_sha: str | None = None
    branch: str | None = None
    pr: int | None = None
    success: bool = False
    items: list[ItemReport] = field(default_factory=list)
    skipped: list[SkippedItem] = field(default_factory=list)
    halted: bool = False
    budget: BudgetReport = field(default_factory=BudgetReport)
    wave_test: WaveTestReport = field(default_factory=WaveTestReport)
    tracker_updated: bool = False
    notes: list[str] = field(default_factory=list)
    config_source: str = ""
    """Where the config the wave obeyed was read: ``origin/main:.wavegit/config.yaml``, or the checkout."""
    tracker_source: str = ""
    """The tracker the wave claimed from: ``origin/main:.wavegit/tracker.yaml blob 1a2b3c4d5e6f``."""
    sandbox: str = ""
    """How workers ran: ``bwrap`` or ``none`` (unsandboxed; a note says why when it was not asked for)."""
    phase: str = "done"
    """Where the wave ended: ``preflight``, ``claim``, ``run``, ``collect``, ``record`` (an error stopped it
    there), or ``done`` (it ran to its end; nothing selected included)."""
    halt_reason: str | None = None
    """Why no (new) attempt started because of ``.wavegit/HALT``: who halted, when, why."""
    ceiling_reason: str | None = None
    """Which cost ceiling stopped or was passed by the wave, with the amounts."""
    error: str | None = None
    """The first error that stopped or spoiled the wave (its message), else null."""
    exit_code: int = 0
    """The exit code of ``wavegit run`` for this wave."""
    omitted: Omitted = field(default_factory=Omitted)
    """Set only in a report comment's shortened copy (``report_markdown.to_markdown``)."""
    started_at: str = field(metadata=_TS)
    finished_at: str | None = field(default=None, metadata=_TS)

    def to_json(self, *, indent: int | None = 2) -> str:
        """JSON with keys in the documented (field) order; ``indent=None`` for the compact form."""
        separators = (",", ": ") if indent is not None else (",", ":")
        return inert_json(json.dumps(dataclasses.asdict(self), indent=indent, separators=separators,
                                     ensure_ascii=False, allow_nan=False))

    @classmethod
    def from_json(cls, text: str) -> WaveReport:
        """Parse and validate untrusted JSON; :class:`ReportError` says what is wrong and where."""
        try:
            data = jsondecode.loads(text)
        except ValueError as exc:
            raise ReportError(f"$: invalid JSON: {exc}") from exc
        try:
            return jsondecode.decode_object(cls, data, "$")
        except jsondecode.DecodeError as exc:
            raise ReportError(str(exc)) from None

    @property
    def verified_count(self) -> int:
        return sum(1 for item in self.items if item.verified)

    @property
    def total_cost(self) -> float | None:
        costs = [item.cost for item in self.items if item.cost is not None]
        return sum(costs) if costs else None
