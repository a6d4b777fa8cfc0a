"""The merge gate: believe a PR's wave report only when it is trustworthy and still true.

A report counts only when it is a comment by one of ``config.report_authors`` carrying the report
marker (anyone can paste the marker; only the author is checked, so forgeries are ignored); with
several, the most recently edited wins. The gate fails when there is no such report, when it describes
another head than the PR's current one, when an item is unverified or violated its ownership, when the
wave did not succeed, or when the PR's real changed files (from the API, every page) include a path that
none of the report's items owns in the tracker on the tracker branch. Nothing from the PR is run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from wavegit import report, worktree
from wavegit.config import Config
from wavegit.errors import UsageError, ValidationError
from wavegit.github.api import Comment, PullRequests, read_event
from wavegit.ownership.patterns import matches
from wavegit.store import TrackerStore

SHOWN_PATHS = 3
"""Paths named in a one-line reason; the rest are counted."""


@dataclass(frozen=True)
class GateResult:
    passed: bool
    reason: str
    """One line, also the commit status description."""
    head_sha: str


def trusted_report(comments: Iterable[Comment], authors: Sequence[str]) -> Comment | None:
    """The latest edited comment by a trusted author that carries the report marker."""
    trusted = [c for c in comments if c.author in authors and report.MARKER in c.body]
    return max(trusted, key=lambda c: (c.updated_at, c.id), default=None)


def _short(sha: str | None) -> str:
    return (sha or "nothing")[:12]


def _listing(found: Sequence[str]) -> str:
    shown = ", ".join(found[:SHOWN_PATHS])
    return shown + (f" and {len(found) - SHOWN_PATHS} more" if len(found) > SHOWN_PATHS else "")


def _owned_patterns(store: TrackerStore, item_ids: Sequence[str]) -> tuple[list[str], list[str]]:
    """(the union of the items' ownership patterns in the tracker, the ids the tracker lacks)."""
    from wavegit import tracker

    snapshot = store.read()
    if snapshot.text is None:
        return [], list(item_ids)
    loaded = tracker.loads(snapshot.text, strict=False)
    patterns: list[str] = []
    missing: list[str] = []
    for item_id in item_ids:
        item = loaded.get(item_id)
        if item is None:
            missing.append(item_id)
        else:
            patterns.extend(item.owns)
    return patterns, missing


def evaluate(client: PullRequests, number: int, config: Config, store: TrackerStore) -> GateResult:
    """The gate's verdict on PR ``number`` (no status is set)."""
    pr = client.pr_info(number)

    def fail(reason: str) -> GateResult:
        return GateResult(False, reason, pr.head_sha)

    comment = trusted_report(client.list_comments(number), config.report_authors)
    if comment is None:
        return fail(f"no wavegit report by a trusted author ({', '.join(config.report_authors)})")
    try:
        wave = report.parse_markdown(comment.body)
    except report.ReportError as exc:
        return fail(f"the report comment cannot be read: {exc}")
    if wave.head_sha != pr.head_sha:
        return fail(f"stale report: it describes {_short(wave.head_sha)}, "
                    f"the PR head is {_short(pr.head_sha)}")
    unverified = [item.id for item in wave.items if not item.verified]
    if unverified:
        return fail(f"not verified: {_listing(unverified)}")
    violated = [item.id for item in wave.items if item.ownership_violations]
    if violated:
        return fail(f"ownership violated by {_listing(violated)}")
    if not wave.success:
        return fail(f"wave {wave.wave_id} did not succeed (wave test or tracker update failed)")
    try:
        patterns, missing = _owned_patterns(store, [item.id for item in wave.items])
    except ValidationError as exc:
        return fail(f"the tracker on {config.tracker_branch} is invalid: {exc.problems[0]}")
    if missing:
        return fail(f"not in the tracker on {config.tracker_branch}: {_listing(missing)}")
    outside = [path for path in client.pr_files(number)
               if not any(matches(pattern, path) for pattern in patterns)]
    if outside:
        return fail(f"{len(outside)} changed file(s) outside the wave's ownership: {_listing(outside)}")
    return GateResult(True, f"wave {wave.wave_id}: {len(wave.items)} item(s) verified, "
                            f"changes within ownership at {_short(pr.head_sha)}", pr.head_sha)


def wave_of_commit(message: str) -> str | None:
    """The wave a commit message names in its ``Wavegit-Wave`` trailer, or None.

    A commit status belongs to a SHA, not to a PR: whichever PR carries a wave's commit, the status set on
    it is the one the wave's PR shows, so only the wave's verdict may be set there.
    """
    prefix = f"{worktree.TRAILER_WAVE}:"
    for line in message.splitlines():
        if line.startswith(prefix):
            return line.removeprefix(prefix).strip() or None
    return None


def run_gate(client: PullRequests, number: int, config: Config, store: TrackerStore) -> GateResult:
    """Evaluate PR ``number`` and set the ``wavegit/gate`` status on its head."""
    result = evaluate(client, number, config, store)
    client.set_status(result.head_sha, "success" if result.passed else "failure", result.reason)
    return result


def event_pr_number(event_path: str | None) -> int:
    """The PR number of a ``pull_request``/``pull_request_target`` or ``issue_comment`` event file."""
    event = read_event(event_path)
    if not isinstance(event, dict):
        raise UsageError(f"{event_path}: the event is not a JSON object")
    pull, issue = event.get("pull_request"), event.get("issue")
    if isinstance(pull, dict) and isinstance(pull.get("number"), int):
        return int(pull["number"])
    if isinstance(issue, dict) and isinstance(issue.get("pull_request"), dict) \
            and isinstance(issue.get("number"), int):
        return int(issue["number"])
    raise UsageError(f"{event_path}: not a pull_request event nor a comment on a pull request")
