"""The verdict of the tests run on a wave PR's merged result (an "Update branch" head), as a JSON file.

The gate workflow's ``merged-test`` job, which holds no write token, writes it (``wavegit gate-test``) and
uploads it; the status job downloads it and hands it to ``wavegit gate --verdict FILE``. The gate believes a
verdict only about the PR it judges and its current head.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path

from wavegit.core import jsondecode
from wavegit.core.errors import UsageError


@dataclass(frozen=True)
class TestRun:
    name: str
    """The item id, or ``wave_test``."""
    command: str
    exit_code: int | None
    """None when the test did not finish (a timeout, a launch failure: ``error`` says which)."""
    error: str | None = None


@dataclass(frozen=True)
class Verdict:
    pr: int
    head_sha: str
    """The merged result that was tested: the PR's head when the job ran."""
    tested: bool
    """False when the head needed no test (the report describes it, or it is no wave's Update-branch head)."""
    passed: bool
    reason: str
    """One line."""
    tests: list[TestRun] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=2) + "\n"


def write_verdict(path: Path, verdict: Verdict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(verdict.to_json(), encoding="utf-8")


def read_verdict(path: Path) -> Verdict:
    """The verdict in ``path``; UsageError naming the file and what is wrong."""
    try:
        data = jsondecode.loads(path.read_text(encoding="utf-8"))
        return jsondecode.decode_object(Verdict, data, "$")
    except (OSError, ValueError) as exc:
        raise UsageError(f"--verdict {path}: not a wavegit verdict: {exc}") from None
