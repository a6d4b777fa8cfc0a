"""Every malformed tracker in tests/malformed/ is refused by `wavegit validate --file` with exit 2, one
`path:line:col:` line per problem at the documented place, no traceback and no commit; and `loads` on
mutated or garbage text only ever returns a Tracker or raises ValidationError.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.reliability import wavegit_in_process
from tests.helpers.repos import git, make_remote_repo, wavegit
from wavegit.core.errors import ValidationError
from wavegit.model import tracker

CORPUS = Path(__file__).parent / "malformed"
FILES = sorted(CORPUS.glob("*.yaml"))
EXPECT = re.compile(rb"^# fault: .* \| expect (\d+):(\d+) (.*)$")
PROBLEM_LINE = re.compile(r"^[^:]+:\d+:\d+: ")


def test_corpus_has_at_least_sixty_distinct_faults() -> None:
    assert len(FILES) >= 60
    assert all(EXPECT.match(f.read_bytes().split(b"\n", 1)[0]) for f in FILES)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_remote_repo(tmp_path_factory.mktemp("malformed")).clone


@pytest.mark.parametrize("fault", FILES, ids=[f.stem for f in FILES])
def test_validate_refuses_malformed_tracker_at_its_location(fault: Path, repo: Path) -> None:
    line, col, fragment = EXPECT.match(fault.read_bytes().split(b"\n", 1)[0]).groups()  # type: ignore[union-attr]
    head = git(repo, "rev-parse", "HEAD")
    shutil.copy(fault, repo / fault.name)
    # The first fault through a real process (exit code, streams, no traceback as a user sees them), the
    # rest through cli.main in this process: the same command path, without a process importing wavegit.
    run = wavegit if fault == FILES[0] else wavegit_in_process
    result = run(repo, "validate", "--file", fault.name)
    assert result.returncode == 2, result
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert lines and all(PROBLEM_LINE.match(text) for text in lines), result.stderr
    prefix = f"{fault.name}:{int(line)}:{int(col)}: "
    assert any(text.startswith(prefix) and fragment.decode() in text for text in lines), result.stderr
    assert result.stdout == ""
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "status", "--porcelain", "--untracked-files=no") == ""


VALID = """\
version: 1
items:
  - id: A-1
    title: "first: item"
    prompt: |
      do it
    owns: [src/a.py, "docs/**/*.md"]
    test: pytest -q
    depends_on: [B-2]
    status: todo
  - id: B-2
    prompt: other
    owns: [src/b/]
    test: 'true'
    priority: P1
    attempts: 1
    cost: 0.5
"""
YAMLISH = st.sampled_from([*"-:[]{},&*!|>'\"#%@`\\ \t\n", "\x00", "\x07", "é", "id", "items", "- ", ": "])


def _survives(text: str) -> None:
    for strict in (True, False):
        try:
            loaded = tracker.loads(text, strict=strict)
        except ValidationError as exc:
            assert exc.problems and all(p.line >= 1 and p.col >= 1 for p in exc.problems)
        else:
            assert isinstance(loaded, tracker.Tracker)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, len(VALID)), st.integers(0, 3), YAMLISH), min_size=1, max_size=6))
def test_loads_on_mutated_tracker_returns_tracker_or_validation_error(
        edits: list[tuple[int, int, str]]) -> None:
    text = VALID
    for position, cut, insert in edits:
        position = min(position, len(text))
        text = text[:position] + insert + text[position + cut:]
    _survives(text)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_loads_on_garbage_text_returns_tracker_or_validation_error(text: str) -> None:
    _survives(text)
