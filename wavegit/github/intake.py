"""GitHub issues as backlog items: the issue form ``wavegit init --github`` writes, and reading it back.

GitHub renders a submitted issue form as Markdown, one ``### <label>`` heading per field with the answer
under it (``_No response_`` for an optional field left empty). :func:`item_from_issue` reads the answers
back into an item (``GH-<number>``, titled like the issue, ``issue: <number>``) or says, field by field, what
is wrong, for the reply on the issue.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from wavegit.github.api import Issue
from wavegit.model import tracker
from wavegit.ownership.patterns import PatternError, normalize
from wavegit.ownership.protected import DEFAULT_PROTECTED, reached, refusal

FORM_PATH = ".github/ISSUE_TEMPLATE/wavegit-item.yml"
PROMPT, OWNS, TEST, PRIORITY = "Prompt", "Owned paths", "Test command", "Priority"
NO_RESPONSE = "_No response_"
REPLY_MARKER = "<!-- wavegit:intake v1 -->"
"""Marks wavegit's one reply on an issue (edited in place on later runs, never posted twice)."""


def changed_since(issue: Issue, labelled_at: datetime) -> bool:
    """Whether ``issue`` changed after its label was put on (an edit, a comment, another label).

    A writer's label vouches for the text the writer saw; an author without write access may edit the
    issue afterwards (the API says when an issue last changed, not what changed), so such an issue waits
    for a new label.
    """
    return issue.updated_at is not None and issue.updated_at > labelled_at


_HEADING = re.compile(r"^### (.+?)\s*$", re.MULTILINE)


def form_text(label: str) -> str:
    """The issue form (``.github/ISSUE_TEMPLATE/wavegit-item.yml``); it labels new issues ``label``."""
    return f"""\
# Written by `wavegit init --github`: an issue filed with this form becomes a backlog item on the next
# `wavegit intake`, once someone with write access has labelled it {label!r} (the form labels it already;
# wavegit checks who did).
name: wavegit item
description: A unit of work for wavegit's workers
labels: [{label}]
body:
  - type: textarea
    id: prompt
    attributes:
      label: {PROMPT}
      description: What the worker is asked to do.
    validations:
      required: true
  - type: textarea
    id: owns
    attributes:
      label: {OWNS}
      description: The files, directories (trailing /) or globs the item may change, one per line.
      placeholder: |
        src/auth/limiter.py
        tests/auth/
    validations:
      required: true
  - type: input
    id: test
    attributes:
      label: {TEST}
      description: Run on a clean checkout of the worker's change; exit 0 means verified.
      placeholder: pytest -q tests/auth
    validations:
      required: true
  - type: dropdown
    id: priority
    attributes:
      label: {PRIORITY}
      options: [P2, P0, P1, P3]
      default: 0
    validations:
      required: false
"""


@dataclass(frozen=True)
class FormResult:
    item: tracker.Item | None
    problems: list[str]


ITEM_PREFIX = "GH-"


def item_id(number: int) -> str:
    return f"{ITEM_PREFIX}{number}"


def item_from_issue(issue: Issue, protected: tuple[str, ...] = DEFAULT_PROTECTED) -> FormResult:
    """The item issue ``issue``'s form asks for, or every problem with its answers (a pattern reaching one
    of the ``protected`` paths among them: the tracker would refuse the item, and the whole intake)."""
    answers = _answers(issue.body)
    problems: list[str] = []
    headings = [match.group(1) for match in _HEADING.finditer(issue.body.replace("\r\n", "\n"))]
    # An answer may itself hold a "### Owned paths" line: which of the two would the labeller have read?
    problems += [f"{name}: the form has this heading {headings.count(name)} times; keep the form's own one"
                 for name in (PROMPT, OWNS, TEST, PRIORITY) if headings.count(name) > 1]
    prompt = answers.get(PROMPT, "")
    if not prompt:
        problems.append(f"{PROMPT}: say what the worker should do")
    owns = []
    lines = [line.strip().removeprefix("- ").strip("`").strip()
             for line in answers.get(OWNS, "").splitlines()]
    for line in filter(None, lines):
        try:
            pattern = normalize(line)
        except PatternError as exc:
            problems.append(f"{OWNS}: {exc}")
            continue
        guard = reached(pattern, protected)
        if guard is not None:
            problems.append(f"{OWNS}: {refusal(pattern, guard)}")
        owns.append(pattern)
    if not any(lines):
        problems.append(f"{OWNS}: list the files the item may change, one per line")
    test = _unquoted(answers.get(TEST, ""))
    check = tracker.ITEM_SCHEMA.field("test")
    message = check.check(test) if check is not None and check.check is not None else None
    if message is not None:
        problems.append(f"{TEST}: {message}")
    priority = answers.get(PRIORITY) or "P2"
    if priority not in tracker.PRIORITIES:
        problems.append(f"{PRIORITY}: {priority!r} is not one of {', '.join(tracker.PRIORITIES)}")
    if problems:
        return FormResult(None, problems)
    item = tracker.Item(id=item_id(issue.number), title=issue.title, prompt=prompt, owns=tuple(owns),
                        test=test, priority=priority, issue=issue.number)
    return FormResult(item, [])


def _answers(body: str) -> dict[str, str]:
    """Heading -> answer of a rendered issue form; an empty or ``_No response_`` answer is ''."""
    found: dict[str, str] = {}
    text = body.replace("\r\n", "\n")
    headings = list(_HEADING.finditer(text))
    for n, heading in enumerate(headings):
        end = headings[n + 1].start() if n + 1 < len(headings) else len(text)
        answer = text[heading.end():end].strip()
        found.setdefault(heading.group(1), "" if answer == NO_RESPONSE else answer)
    return found


def _unquoted(text: str) -> str:
    """A command as typed, without the Markdown code fence or backticks people put around it."""
    fenced = re.fullmatch(r"```[\w-]*\n(.*?)\n?```", text, re.DOTALL)
    if fenced:
        text = fenced.group(1)
    return text.strip().strip("`").strip()
