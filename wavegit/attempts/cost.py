"""What a worker's attempt cost, in dollars and tokens: a command's ``{"usd": N}`` in ``$WAVEGIT_COST_FILE``
(``input_tokens`` and ``output_tokens`` may go with it); a preset's account in its log (Claude Code's JSON
result, Codex's usage events: :mod:`wavegit.attempts.agents`), with config ``prices`` turning tokens into
dollars where the agent reports only tokens. A preset's cost file is not read: the CLI's own account is what
it spent, and the commands its tools run (steered by whatever text the agent read) could write that file.

The worker wrote both files, so both are read as hostile: a regular file only, never a symlink, a FIFO or a
device (nothing blocks), a few kilobytes at most, and amounts that a report can hold.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from wavegit.attempts.agents import Agent
from wavegit.attempts.preset import MAX_TOKENS, Account, usd_amount
from wavegit.core.jsondecode import reject_constant
from wavegit.core.smallfile import read_small_file
from wavegit.model.config import ModelPrice

COST_FILE_MAX_BYTES = 4096
"""A cost file is ``{"usd": N}``: anything longer is not read."""


@dataclass(frozen=True)
class CostReading:
    """A worker's reported cost, and why it could not be read when it could not."""

    usd: float | None
    note: str | None
    input_tokens: int | None = None
    output_tokens: int | None = None
    error: str | None = None
    """The agent's own reason for failing, from its log (None for a command)."""
    denied: str | None = None
    """What the agent was not allowed to do, from its log."""
    permanent: str | None = None
    """Why the agent's failure will repeat on every try, from its log (:attr:`Preset.permanent`)."""

    @property
    def tokens(self) -> int | None:
        """Input plus output tokens, when both are known."""
        if self.input_tokens is None or self.output_tokens is None:
            return None
        return self.input_tokens + self.output_tokens


def cost_reading(cost_file: Path, log_path: Path, agent: Agent,
                 prices: Sequence[ModelPrice] = (), *, ended: bool = True, exited_ok: bool = False,
                 lost: str | None = None) -> CostReading:
    """The cost from ``cost_file`` (a command) or ``agent``'s log (a preset); dollars from ``prices`` for
    tokens alone. ``ended``: whether the worker ended by itself, not by a signal (a timeout's included);
    ``exited_ok``: whether it exited 0;
    ``lost``: why some of its output never reached the log (the disk refused a write), or None.

    A preset's CLI that did not end by itself wrote no account of its own: whatever its log holds was
    written by something else that holds its output (a tool of its, through ``/proc/PID/fd/1``), which then
    killed it or waited for the idle timeout, so that a forged $0 result or a forged "Not logged in" (its
    profile failed for good, every sibling not started) would be the last word. Such a run's account is
    unknown. So is that of a run whose output was not all logged: a tool that wrote a $0 result or "Not
    logged in" into the CLI's output and then filled the disk the log is on (its tree's) had the CLI's own
    result go unlogged, and the forged line was the log's last word.

    A failure that will repeat (:attr:`CostReading.permanent`) ends the CLI with an error (a 401, a 404, "Not
    logged in", its maximum of turns: exit 1). One that exited 0 without its result was stopped by
    something else: Claude Code 2.1.332 ends so on SIGINT, which a tool of its sent after writing "Not logged
    in" into its output, and that forged line was its last word.

    A ``note`` says the cost was reported but cannot be read (a bad cost file; a preset run without its
    result, or with tokens no price is set for): budgets count such an attempt as over their ceiling. A
    command that wrote no cost file has no note (a budget decides what reporting nothing means).
    """
    reading = _cost_file_reading(cost_file) if agent.preset is None else CostReading(None, None)
    account = agent.read_log(log_path) if ended and lost is None else Account()
    usd = reading.usd if reading.usd is not None else account.usd
    tokens_given = reading.input_tokens is not None
    inputs = reading.input_tokens if tokens_given else account.input_tokens
    outputs = reading.output_tokens if tokens_given else account.output_tokens
    note = reading.note
    if usd is None and inputs is not None and outputs is not None:
        price = next((p for p in prices if p.model == agent.model), None)
        if price is not None:
            usd = (inputs * price.input_per_mtok + outputs * price.output_per_mtok) / 1e6
        elif note is None and agent.preset is not None:
            note = (f"{agent.preset.name} run: {inputs + outputs} tokens but no dollars, and `prices` has no "
                    f"entry for model {agent.model or '(the CLI default: set `model` in the profile)'!r}")
    if usd is None and note is None and agent.preset is not None:
        # An agent always spends something: a run whose account cannot be read (killed, timed out,
        # crashed) cost an unknown amount, which a budget must count as over its ceiling.
        note = (f"{agent.preset.name} run: killed, so no account of its own in {log_path}" if not ended
                else f"{agent.preset.name} run: its output was not all logged ({lost}), so no account of its "
                f"own in {log_path}" if lost is not None
                else f"claude run: no result line with a readable total_cost_usd in {log_path}"
                if agent.preset.name == "claude"
                else f"{agent.preset.name} run: no readable usage in {log_path}")
    return CostReading(usd, note, inputs, outputs, account.error, account.denied,
                       agent.permanent(account) if account.error and not exited_ok else None)


MAX_ATTEMPT_USD = 1e6
"""The most one attempt may report: sums of larger ones overflow to infinity, which no report can hold."""


def _usd(value: object) -> float | None:
    return usd_amount(value, MAX_ATTEMPT_USD)


def _cost_file_reading(cost_file: Path) -> CostReading:
    try:
        text = read_small_file(cost_file, COST_FILE_MAX_BYTES, follow_symlinks=False).decode("utf-8")
    except FileNotFoundError:
        return CostReading(None, None)
    except (OSError, UnicodeDecodeError) as exc:
        return CostReading(None, f"cost file {cost_file}: unreadable ({exc})")
    try:
        data = json.loads(text, parse_constant=reject_constant)
    except ValueError as exc:
        return CostReading(None, f"cost file {cost_file}: invalid JSON ({exc})")
    if not isinstance(data, dict) or "usd" not in data:
        return CostReading(None, f'cost file {cost_file}: expected {{"usd": N}}')
    usd = _usd(data["usd"])
    if usd is None:
        return CostReading(None, f"cost file {cost_file}: usd must be a non-negative number up to "
                                 f"{MAX_ATTEMPT_USD:g}, got {data['usd']!r}")
    counts = [data.get(key) for key in ("input_tokens", "output_tokens")]
    if counts == [None, None]:
        return CostReading(usd, None)
    if not all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= MAX_TOKENS for n in counts):
        return CostReading(None, f"cost file {cost_file}: input_tokens and output_tokens must both be whole "
                                 f"numbers from 0 to {MAX_TOKENS}, got {counts[0]!r} and {counts[1]!r}")
    return CostReading(usd, None, counts[0], counts[1])
