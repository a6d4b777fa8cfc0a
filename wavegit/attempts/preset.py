"""What every agent preset is: how wavegit starts one CLI and reads what it streamed.

A :class:`Preset` is a handful of small functions, one per question wavegit asks of a CLI, so each CLI's
module (:mod:`wavegit.attempts.preset_claude`, :mod:`wavegit.attempts.preset_codex`) answers them alone:

- ``build`` and ``env``: its command line and the variables it gets for one :class:`Launch` (model, gateway,
  sandboxed or not);
- ``action``: the agent's current action (``Write src/a.py``) from one JSON line of its streamed output, which
  ``wavegit status`` shows while it runs (every line it streams also counts as output for ``idle_timeout_s``);
- ``read``: its account of the run (error, tokens, dollars) from the JSON lines of its log and the log's last
  line that is not JSON (what it said on stderr when it printed no result);
- ``permanent``: why a failed run will fail the same way on every try (a rejected key, an unknown model): the
  attempt counts once, is not retried, and no further attempt of that profile starts in the wave, unless the
  reason is one of ``item_bound`` (its maximum of turns: another item may well need fewer).

Everything here reads the worker's output, which a worker controls: bounded, and never believed beyond what
it can cost (:data:`MAX_TOKENS`, :func:`usd_amount`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from wavegit.attempts.logcap import CUT_MARK
from wavegit.attempts.processio import LINE_MAX_BYTES
from wavegit.core.jsondecode import reject_constant
from wavegit.core.terminal import inert

LOG_SCAN_BYTES = 4 * 1024 * 1024
"""How much of a log's end is scanned for an agent's JSON result or events."""
ACTION_MAX_CHARS = 200
"""The longest action text kept."""
MAX_TOKENS = 10**12
"""The most tokens one attempt may report (a worker wrote the log: larger counts are not believed)."""

_Amount = TypeVar("_Amount", int, float)


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


@dataclass(frozen=True)
class Launch:
    """One start of a preset's CLI."""

    model: str
    """The profile's ``model``; empty: the CLI's default."""
    sandboxed: bool
    """Inside wavegit's bwrap sandbox, which is then the boundary."""
    base_url: str = ""
    """The profile's ``base_url``: the model API (a gateway) it talks to; empty: the CLI's default."""


def _no_env(launch: Launch) -> dict[str, str]:
    del launch
    return {}


def _no_action(line: object) -> str | None:
    del line
    return None


def _runs_as_root(argv: Sequence[str]) -> str | None:
    del argv
    return None


def _never(account: Account) -> str | None:
    del account
    return None


@dataclass(frozen=True)
class Preset:
    """One agent CLI."""

    name: str
    credentials: tuple[str, ...]
    """Variables that carry its credentials, any one of which will do."""
    build: Callable[[Launch], list[str]]
    """The argv before the profile's extra args."""
    read: Callable[[Sequence[object], str], Account]
    """The account of a run from the JSON objects of its log, in order, and the log's last non-JSON line."""
    summed: bool = False
    """Whether the account is a sum over the whole stream (Codex's turns), not its last event (a result):
    a log cut short (``sandbox.log_bytes``) then holds no account."""
    tail: tuple[str, ...] = ()
    """Arguments after the profile's extra args (Codex's ``-``: the prompt on stdin)."""
    misread: tuple[str, ...] = ()
    """Variables users set for it that it does not read for its credentials (the preflight names the fix)."""
    unsandboxed: str = ""
    """What the report says of a run outside wavegit's sandbox, when it is given less there."""
    env: Callable[[Launch], dict[str, str]] = _no_env
    """Variables the CLI gets besides the worker's environment (its gateway, unattended-mode switches)."""
    home: Callable[[Launch], dict[str, str]] = _no_env
    """Files (path under HOME -> text) the CLI finds in the attempt's private HOME: its settings."""
    action: Callable[[object], str | None] = _no_action
    """The current action from one JSON object it streamed, or None when the object is no action."""
    permanent: Callable[[Account], str | None] = _never
    """Why a failed run (its account) will fail again on every try, or None when a retry may succeed."""
    item_bound: tuple[str, ...] = ()
    """The reasons of :attr:`permanent` that repeat for the item only: its other items still start."""
    refuses_root: Callable[[Sequence[str]], str | None] = _runs_as_root
    """Why it refuses to run as root outside wavegit's sandbox with this argv, with the fix; None: it runs."""
    npm: tuple[str, str] = ("", "")
    """Its npm package and the version CI and the GitHub Action pin (what the preflight says to install)."""

    def argv(self, launch: Launch, args: Sequence[str]) -> list[str]:
        return [*self.build(launch), *args, *self.tail]


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
    found = sum(n for n in counts if n is not None)
    return found if found <= MAX_TOKENS else None


def most(amounts: Sequence[_Amount | None]) -> _Amount | None:
    """The largest of ``amounts``; None when one is unknown."""
    return None if any(a is None for a in amounts) else max(a for a in amounts if a is not None)


def parse_line(line: bytes | str) -> object:
    """The JSON value of one output line, or None when it is none (or longer than :data:`LINE_MAX_BYTES`)."""
    if len(line) > LINE_MAX_BYTES:
        return None
    text = line.decode("utf-8", errors="replace") if isinstance(line, bytes) else line
    text = text.strip()
    if not text.startswith("{"):
        return None
    try:
        return json.loads(text, parse_constant=reject_constant)
    except (ValueError, RecursionError):
        return None


def short(text: str) -> str:
    """``text`` on one line, at most :data:`ACTION_MAX_CHARS` characters, control characters escaped (the
    worker wrote it, and ``wavegit status`` prints it on a terminal)."""
    flat = inert(" ".join(text.split()))
    return flat if len(flat) <= ACTION_MAX_CHARS else flat[:ACTION_MAX_CHARS - 3] + "..."


def read_log(log_path: Path) -> tuple[list[object], str, bool]:
    """The JSON values of the lines of the last ``LOG_SCAN_BYTES`` of the log, its last line that is not
    JSON (stderr's last words; "" when there is none), and whether that is the whole output (nothing cut
    by the log's cap or left before the scan); nothing at all when an event line was spoiled."""
    values: list[object] = []
    last = ""
    whole = True
    for line in _log_lines(log_path):
        value = parse_line(line)
        if value is not None:
            values.append(value)
        elif line == _SCAN_CUT or line.startswith(CUT_MARK):
            whole = False
        elif _SPOILED.search(line):
            # Bytes written before an event on its line (a process holding the CLI's output, without a
            # newline, just before the CLI's own result): that event is lost, and what is left, a forged
            # $0 result included, would be the account.
            return [], "", False
        elif line.strip():
            last = line.strip()
    return values, last, whole


_SPOILED = re.compile(r'(?<!\\)"type"\s*:\s*"(?:result|turn\.completed)"')
"""An event that holds a preset's account (Claude's and Gemini's ``result``, each of Codex's
``turn.completed``) in a line that is no JSON: bytes before it on its line. Its ``type`` may come anywhere in
it (Claude Code 2.1.332 starts its result with ``{"duration_api_ms"``), but never escaped (text in a string).
Only those: a nested block (``[{"type": "tool_use"``) in a line cut by the log cap or too long to read is
no spoiling."""


def _log_lines(log_path: Path) -> Iterator[str]:
    try:
        with log_path.open("rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - LOG_SCAN_BYTES))
            text = fh.read().decode("utf-8", errors="replace")
    except OSError:
        return
    if size > LOG_SCAN_BYTES:
        yield _SCAN_CUT
    yield from text.splitlines()


_SCAN_CUT = "[the log's head, not scanned]"



def seed_home(home: Path, files: dict[str, str]) -> None:
    """Write ``files`` (path relative to ``home`` -> text) into a fresh private HOME, creating their folders.

    The worker owns that HOME, so nothing already there is followed or overwritten: each folder and file
    is created new (``O_EXCL``, no symlink), and one that exists keeps what it holds.
    """
    for relative, text in files.items():
        path = home / relative
        try:
            for folder in reversed(path.relative_to(home).parents[:-1]):
                (home / folder).mkdir(mode=0o700, exist_ok=True)
                if (home / folder).is_symlink():
                    raise FileExistsError(home / folder)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except FileExistsError:
            continue
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
