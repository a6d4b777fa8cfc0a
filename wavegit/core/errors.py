"""Errors that end a command, each with the exit code of the interface contract.

0 ok, 1 the work failed, 2 bad input or configuration, 3 halted or over budget,
4 lost a compare-and-swap race after all retries.
"""

from typing import NamedTuple

EXIT_OK = 0
EXIT_WORK_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_HALTED = 3
EXIT_RACE_LOST = 4
EXIT_INTERRUPTED = 130
"""Ctrl-C or SIGTERM (128 + SIGINT, as a shell reports it)."""


class WavegitError(Exception):
    """An error the CLI reports as one clear message and an exit code (never a traceback)."""

    exit_code = EXIT_BAD_INPUT


class UsageError(WavegitError):
    """Bad command line, path or configuration."""


# A NamedTuple, not a dataclass: every command imports this module first, and creating a dataclass costs
# ~0.4 ms (after importing dataclasses), a NamedTuple a sixth of that.
class Problem(NamedTuple):
    """One validation problem, located in a file."""

    path: str
    line: int
    col: int
    message: str
    item_id: str | None = None
    hint: str | None = None

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}:{self.col}: "
        item = f"item {self.item_id}: " if self.item_id else ""
        hint = f" (hint: {self.hint})" if self.hint else ""
        return f"{where}{item}{self.message}{hint}"


class ValidationError(WavegitError):
    """A file failed validation; every problem is reported at once."""

    def __init__(self, problems: list[Problem] | tuple[Problem, ...], note: str = "") -> None:
        """``note``: a last line after the problems (``note: ...``), such as where the file was read."""
        self.problems = tuple(problems)
        super().__init__("\n".join([*(str(p) for p in self.problems), *([f"note: {note}"] if note else [])]))


class HaltedError(WavegitError):
    exit_code = EXIT_HALTED


class BudgetExceededError(WavegitError):
    exit_code = EXIT_HALTED


def ruleset_refusal(what: str, rules: list[str]) -> str:
    """The one-line message of a write the repository's rules (a GitHub ruleset) refused: bad configuration,
    never a lost race, so it names the rules instead of inviting a retry."""
    named = "; ".join(rules) or "no rule named"
    return (f"{what}: refused by the repository's rules: {named} (let wavegit's identity bypass that "
            "ruleset, or exempt the branch from it: docs/action.md)")


class RaceLostError(WavegitError):
    """A compare-and-swap write kept losing until its deadline passed."""

    exit_code = EXIT_RACE_LOST
