"""The merge gate: believe a PR's wave report only when it is trustworthy, bound to the PR, and still true.

The report is the wave's own report comment: a comment by one of ``config.report_authors`` that *starts*
with the report marker (the report comment always does; a reply, or any comment that merely quotes the
marker, does not; with several, the most recently edited wins). Every worker-supplied string in a comment
wavegit posts is escaped, so no comment but the report can carry the marker at all.

The report is then bound to the PR, and the gate fails, saying which binding failed, unless: the head
branch is ``wavegit/<wave-id>`` of this repository (not a fork's); the report's wave is that wave and its
PR this one; it describes the PR's current head; every item is verified, none violated its ownership, the
wave succeeded; the tracker on the tracker branch holds exactly the reported items in ``review`` for that
wave and this PR; and the PR's real changed files (from the API, every page) are all owned by those items.
Nothing from the PR is run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from wavegit import report, worktree
from wavegit.config import Config
from wavegit.errors import UsageError, ValidationError
from wavegit.github.api import Comment, PullRequest, PullRequests, read_event
from wavegit.lifecycle import Status
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


class Unbound(Exception):
    """A binding of the report to the PR failed; the message says which."""


def is_report(body: str) -> bool:
    """Whether ``body`` is a report comment (it starts with the marker), not text that quotes one."""
    return body.startswith(report.MARKER)


def trusted_report(comments: Iterable[Comment], authors: Sequence[str]) -> Comment | None:
    """The latest edited report comment (starting with the marker) by a trusted author."""
    trusted = [c for c in comments if c.author in authors and is_report(c.body)]
    return max(trusted, key=lambda c: (c.updated_at, c.id), default=None)


def _short(sha: str | None) -> str:
    return (sha or "nothing")[:12]


def _listing(found: Sequence[str]) -> str:
    shown = ", ".join(found[:SHOWN_PATHS])
    return shown + (f" and {len(found) - SHOWN_PATHS} more" if len(found) > SHOWN_PATHS else "")


def _wave_of(pr: PullRequest, repository: str) -> str:
    """The wave id of the PR's head branch; Unbound unless it is a wave branch of ``repository``."""
    wave_id = worktree.parse_wave_branch(pr.head_ref)
    if wave_id is None:
        raise Unbound(f"not a wave's pull request: its head branch {pr.head_ref!r} is not wavegit/<wave-id>")
    if pr.head_repo != repository:
        raise Unbound(f"the head branch {pr.head_ref} is in {pr.head_repo or 'a deleted fork'}, not in "
                      f"{repository}: a fork's branch is never a wave")
    return wave_id


def _bind_report(wave: report.WaveReport, wave_id: str, number: int, head_sha: str) -> None:
    if wave.wave_id != wave_id or wave.branch != worktree.wave_branch(wave_id):
        raise Unbound(f"the report is about wave {wave.wave_id!r} (branch {wave.branch!r}), "
                      f"the PR's branch is {worktree.wave_branch(wave_id)}")
    if wave.pr != number:
        about = "no PR" if wave.pr is None else f"PR #{wave.pr}"
        raise Unbound(f"the report is about {about}, not #{number}")
    if wave.head_sha != head_sha:
        raise Unbound(f"stale report: it describes {_short(wave.head_sha)}, "
                      f"the PR head is {_short(head_sha)}")


def _owned_patterns(store: TrackerStore, config: Config, wave_id: str, number: int,
                    item_ids: Sequence[str]) -> list[str]:
    """The union of the reported items' ownership patterns in the tracker on the tracker branch; Unbound
    unless that tracker holds exactly these items in ``review`` for wave ``wave_id`` and PR ``number``."""
    from wavegit import tracker

    snapshot = store.read()
    where = f"the tracker on {config.tracker_branch}"
    if snapshot.text is None:
        raise Unbound(f"not in {where}: {_listing(list(item_ids))}")
    try:
        loaded = tracker.loads(snapshot.text, strict=False)
    except ValidationError as exc:
        raise Unbound(f"{where} is invalid: {exc.problems[0]}") from None
    reported = set(item_ids)
    missing = [i for i in item_ids if loaded.get(i) is None]
    if missing:
        raise Unbound(f"not in {where}: {_listing(missing)}")
    items = [loaded.get(i) for i in item_ids]
    elsewhere = [f"{i.id} ({i.status}, wave {i.wave or 'none'})" for i in items
                 if i is not None and (i.status != Status.REVIEW or i.wave != wave_id)]
    if elsewhere:
        raise Unbound(f"not in review for wave {wave_id} in {where}: {_listing(elsewhere)}")
    other_pr = [f"{i.id} ({'no PR' if i.pr is None else f'#{i.pr}'})" for i in items
                if i is not None and i.pr != number]
    if other_pr:
        raise Unbound(f"not recorded for PR #{number} in {where}: {_listing(other_pr)}")
    unreported = [i.id for i in loaded.items
                  if i.wave == wave_id and i.status == Status.REVIEW and i.id not in reported]
    if unreported:
        raise Unbound(f"in review for wave {wave_id} in {where} but not in the report: "
                      f"{_listing(unreported)}")
    return [pattern for i in items if i is not None for pattern in i.owns]


def evaluate(client: PullRequests, number: int, config: Config, store: TrackerStore) -> GateResult:
    """The gate's verdict on PR ``number`` (no status is set)."""
    pr = client.pr_info(number)

    def fail(reason: str) -> GateResult:
        return GateResult(False, reason, pr.head_sha)

    try:
        wave_id = _wave_of(pr, client.repository)
        comment = trusted_report(client.list_comments(number), config.report_authors)
        if comment is None:
            return fail(f"no wavegit report by a trusted author ({', '.join(config.report_authors)})")
        try:
            wave = report.parse_markdown(comment.body)
        except report.ReportError as exc:
            return fail(f"the report comment cannot be read: {exc}")
        _bind_report(wave, wave_id, number, pr.head_sha)
        if wave.omitted.items:
            return fail(f"the report comment leaves out {wave.omitted.items} item(s) to fit GitHub's size "
                        "limit; the gate cannot check them")
        unverified = [item.id for item in wave.items if not item.verified]
        if unverified:
            return fail(f"not verified: {_listing(unverified)}")
        violated = [item.id for item in wave.items if item.ownership_violations]
        if violated:
            return fail(f"ownership violated by {_listing(violated)}")
        if not wave.success:
            return fail(f"wave {wave.wave_id} did not succeed (wave test or tracker update failed)")
        patterns = _owned_patterns(store, config, wave_id, number, [item.id for item in wave.items])
    except Unbound as exc:
        return fail(str(exc))
    outside = [path for path in client.pr_files(number)
               if not any(matches(pattern, path) for pattern in patterns)]
    if outside:
        return fail(f"{len(outside)} changed file(s) outside the wave's ownership: {_listing(outside)}")
    return GateResult(True, f"wave {wave.wave_id}: {len(wave.items)} item(s) verified, "
                            f"changes within ownership at {_short(pr.head_sha)}", pr.head_sha)


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
