"""The merge gate: believe a PR's wave report only when it is trustworthy, bound to the PR, and still true.

The rules (the trusted report comment, its bindings to the PR, then the work) are docs/security.md, "Who the
merge gate believes". A head brought up to date with the base keeps the report through
:mod:`wavegit.github.uptodate` and a verdict of its merged result (:mod:`wavegit.github.verdict`); a merge
queue's group is judged as the wave PR it adds (:func:`evaluate_merge_group`). Nothing from the PR is run.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from wavegit.attempts import wavebranch
from wavegit.core.errors import UsageError, ValidationError
from wavegit.core.git import WaveId
from wavegit.github import uptodate
from wavegit.github.api import Comment, GateClient, PullRequest, PullRequests, read_event, trusted_authors
from wavegit.github.verdict import Verdict
from wavegit.model import report, report_markdown
from wavegit.model.config import Config
from wavegit.model.lifecycle import Status
from wavegit.ownership.patterns import matches
from wavegit.trackerbranch.store import TrackerStore


@dataclass(frozen=True)
class GateResult:
    passed: bool
    reason: str
    """One line, also the commit status description."""
    head_sha: str


class Unbound(Exception):
    """A binding of the report to the PR failed; the message says which."""


def trusted_report(comments: Iterable[Comment], authors: Sequence[str]) -> Comment | None:
    """The latest edited report comment by a trusted author: one that starts with the marker, not text that
    quotes one."""
    trusted = [c for c in comments if c.author in authors and c.body.startswith(report_markdown.MARKER)]
    return max(trusted, key=lambda c: (c.updated_at, c.id), default=None)


def _short(sha: str | None) -> str:
    return (sha or "nothing")[:12]


def _wave_of(pr: PullRequest, repository: str) -> WaveId:
    """The wave id of the PR's head branch; Unbound unless it is a wave branch of ``repository``."""
    wave_id = wavebranch.parse_wave_branch(pr.head_ref)
    if wave_id is None:
        raise Unbound(f"not a wave's pull request: its head branch {pr.head_ref!r} is not wavegit/<wave-id>")
    if pr.head_repo != repository:
        raise Unbound(f"the head branch {pr.head_ref} is in {pr.head_repo or 'a deleted fork'}, not in "
                      f"{repository}: a fork's branch is never a wave")
    return wave_id


def _bind_report(wave: report.WaveReport, wave_id: WaveId, number: int) -> None:
    if wave.wave_id != wave_id or wave.branch != wavebranch.wave_branch(wave_id):
        raise Unbound(f"the report is about wave {wave.wave_id!r} (branch {wave.branch!r}), "
                      f"the PR's branch is {wavebranch.wave_branch(wave_id)}")
    if wave.pr != number:
        about = "no PR" if wave.pr is None else f"PR #{wave.pr}"
        raise Unbound(f"the report is about {about}, not #{number}")


def bound_report(client: PullRequests, pr: PullRequest, config: Config) -> report.WaveReport:
    """The PR's trusted report, bound to its wave and number (not yet to its head); Unbound says why not."""
    wave_id = _wave_of(pr, client.repository)
    if pr.base_ref != config.base_branch:
        # A PR retargeted to another branch would make that branch "the base" whose merges are believed.
        raise Unbound(f"the PR targets {pr.base_ref}, not the base branch {config.base_branch}")
    authors = trusted_authors(config.report_authors, client)
    comment = trusted_report(client.list_comments(pr.number), authors)
    if comment is None:
        raise Unbound(f"no wavegit report by a trusted author ({', '.join(authors)})")
    try:
        wave = report_markdown.parse_markdown(comment.body)
    except report.ReportError as exc:
        raise Unbound(f"the report comment cannot be read: {exc}") from None
    _bind_report(wave, wave_id, pr.number)
    return wave


def merges_since_report(client: GateClient, pr: PullRequest, wave: report.WaveReport) -> list[str]:
    """[] when the report describes the PR's head; the merges of the base after it when the PR was brought
    up to date ("Update branch", :mod:`wavegit.github.uptodate`); Unbound for any other head."""
    if wave.head_sha == pr.head_sha:
        return []
    if not wave.head_sha:
        raise Unbound(f"stale report: it describes {_short(wave.head_sha)}, "
                      f"the PR head is {_short(pr.head_sha)}")
    try:
        return uptodate.base_merges(client, wave.head_sha, pr.head_sha, pr.base_ref)
    except uptodate.NotUpToDate as exc:
        raise Unbound(str(exc)) from None


def _owned_patterns(store: TrackerStore, config: Config, wave_id: WaveId, number: int,
                    item_ids: Sequence[str]) -> list[str]:
    """The union of the reported items' ownership patterns in the tracker on the tracker branch; Unbound
    unless that tracker holds exactly these items in ``review`` for wave ``wave_id`` and PR ``number``."""
    from wavegit.model import tracker

    snapshot = store.read()
    where = f"the tracker on {config.tracker_branch}"
    if snapshot.text is None:
        raise Unbound(f"not in {where}: {uptodate.listing(item_ids)}")
    try:
        loaded = tracker.loads(snapshot.text, strict=False)
    except ValidationError as exc:
        raise Unbound(f"{where} is invalid: {exc.problems[0]}") from None
    reported = set(item_ids)
    missing = [i for i in item_ids if loaded.get(i) is None]
    if missing:
        raise Unbound(f"not in {where}: {uptodate.listing(missing)}")
    items = [loaded.get(i) for i in item_ids]
    elsewhere = [f"{i.id} ({i.status}, wave {i.wave or 'none'})" for i in items
                 if i is not None and (i.status != Status.REVIEW or i.wave != wave_id)]
    if elsewhere:
        raise Unbound(f"not in review for wave {wave_id} in {where}: {uptodate.listing(elsewhere)}")
    other_pr = [f"{i.id} ({'no PR' if i.pr is None else f'#{i.pr}'})" for i in items
                if i is not None and i.pr != number]
    if other_pr:
        raise Unbound(f"not recorded for PR #{number} in {where}: {uptodate.listing(other_pr)}")
    unreported = [i.id for i in loaded.items
                  if i.wave == wave_id and i.status == Status.REVIEW and i.id not in reported]
    if unreported:
        raise Unbound(f"in review for wave {wave_id} in {where} but not in the report: "
                      f"{uptodate.listing(unreported)}")
    return [pattern for i in items if i is not None for pattern in i.owns]


def evaluate(client: GateClient, number: int, config: Config, store: TrackerStore,
             tested: Verdict | None = None) -> GateResult:
    """The gate's verdict on PR ``number`` (no status is set); ``tested``: the verdict of the tests run on
    its merged result, which a head brought up to date with the base needs."""
    pr = client.pr_info(number)
    try:
        wave, _, merges = _judge(client, pr, config, store)
        if merges:
            _require_tested(pr, wave, merges, tested)
    except Unbound as exc:
        return GateResult(False, str(exc), pr.head_sha)
    at = (f"at {_short(pr.head_sha)}" if not merges else
          f"at {_short(wave.head_sha)}, {pr.base_ref} merged in and tested at {_short(pr.head_sha)}")
    return GateResult(True, f"wave {wave.wave_id}: {len(wave.items)} item(s) verified, "
                            f"changes within ownership {at}", pr.head_sha)


def _judge(client: GateClient, pr: PullRequest, config: Config,
           store: TrackerStore) -> tuple[report.WaveReport, list[str], list[str]]:
    """The PR's report, its items' ownership patterns and the merges of the base after the reported head;
    Unbound unless the report binds, every item is verified and the PR's changed files are owned."""
    wave = bound_report(client, pr, config)
    merges = merges_since_report(client, pr, wave)
    if wave.omitted.items:
        raise Unbound(f"the report comment leaves out {wave.omitted.items} item(s) to fit GitHub's size "
                      "limit; the gate cannot check them")
    unverified = [item.id for item in wave.items if not item.verified]
    if unverified:
        raise Unbound(f"not verified: {uptodate.listing(unverified)}")
    violated = [item.id for item in wave.items if item.ownership_violations]
    if violated:
        raise Unbound(f"ownership violated by {uptodate.listing(violated)}")
    if not wave.success:
        raise Unbound(f"wave {wave.wave_id} did not succeed (wave test or tracker update failed)")
    patterns = _owned_patterns(store, config, wave.wave_id, pr.number, [item.id for item in wave.items])
    _require_owned(client.pr_files(pr.number), patterns)
    return wave, patterns, merges


def _require_owned(paths: Iterable[str], patterns: Sequence[str]) -> None:
    outside = [path for path in paths if not any(matches(pattern, path) for pattern in patterns)]
    if outside:
        raise Unbound(f"{len(outside)} changed file(s) outside the wave's ownership: "
                      f"{uptodate.listing(outside)}")


def _require_tested(pr: PullRequest, wave: report.WaveReport, merges: Sequence[str],
                    tested: Verdict | None) -> None:
    merged = (f"the head {_short(pr.head_sha)} merges {pr.base_ref} into the reported head "
              f"{_short(wave.head_sha)} ({len(merges)} merge(s))")
    if tested is None or not tested.tested or tested.pr != pr.number or tested.head_sha != pr.head_sha:
        raise Unbound(f"{merged}: the tests must pass on the merged result (the gate workflow's "
                      "merged-test job runs them)")
    if not tested.passed:
        raise Unbound(f"{merged}: the tests failed on the merged result: {tested.reason}")


QUEUE_BRANCH = re.compile(r"(?:refs/heads/)?gh-readonly-queue/(?P<base>.+)/pr-(?P<number>[0-9]+)-[0-9a-f]{40}"
                          r"\Z")
"""The temporary branch of a merge queue's group, named after the base and the PR it adds."""


@dataclass(frozen=True)
class MergeGroup:
    """A ``merge_group`` event: the queue's temporary branch and its head, which needs the status."""

    head_sha: str
    head_ref: str
    base_ref: str
    pr: int
    """The PR this group adds to the queue (the last of its entries), from the branch's name."""


def evaluate_merge_group(client: GateClient, group: MergeGroup, config: Config,
                         store: TrackerStore) -> GateResult:
    """The gate on a merge queue's group that adds wave PR ``group.pr``: the PR passes its own checks (the
    report binds to it, or to its head before merges of the base), the group's head contains the reported
    head (the queue's "merge" method), and the change the group's head adds to the queue (against its
    first parent) is within the wave's ownership."""
    pr = client.pr_info(group.pr)
    try:
        wave, patterns, _ = _judge(client, pr, config, store)
        if not client.compare(wave.head_sha or "", group.head_sha).contains_base:
            raise Unbound(f"the group's head {_short(group.head_sha)} does not contain the reported head "
                          f"{_short(wave.head_sha)} (the merge queue must use the merge method)")
        parents = client.commit_parents(group.head_sha)
        added = client.compare(parents[0], group.head_sha) if parents else None
        if added is None or not added.complete:
            raise Unbound(f"what the group's head {_short(group.head_sha)} adds cannot be listed")
        _require_owned(added.files, patterns)
    except Unbound as exc:
        return GateResult(False, f"merge group of PR #{group.pr}: {exc}", group.head_sha)
    return GateResult(True, f"merge group of PR #{group.pr}: wave {wave.wave_id}: {len(wave.items)} item(s) "
                            f"verified, changes within ownership at {_short(group.head_sha)}",
                      group.head_sha)


def run_gate(client: GateClient, number: int, config: Config, store: TrackerStore,
             tested: Verdict | None = None) -> GateResult:
    """Evaluate PR ``number`` and set the ``wavegit/gate`` status on its head."""
    return post_status(client, evaluate(client, number, config, store, tested))


def post_status(client: PullRequests, result: GateResult) -> GateResult:
    """Set the ``wavegit/gate`` status ``result`` describes on its commit."""
    client.set_status(result.head_sha, "success" if result.passed else "failure", result.reason)
    return result


def event_merge_group(event_path: str | None) -> MergeGroup | None:
    """The merge group of a ``merge_group`` event file; None for any other event."""
    event = read_event(event_path)
    group = event.get("merge_group") if isinstance(event, dict) else None
    if not isinstance(group, dict):
        return None
    head_sha, head_ref, base_ref = (group.get(key) for key in ("head_sha", "head_ref", "base_ref"))
    if not (isinstance(head_sha, str) and isinstance(head_ref, str) and isinstance(base_ref, str)):
        raise UsageError(f"{event_path}: the merge_group event has no head_sha, head_ref and base_ref")
    queued = QUEUE_BRANCH.match(head_ref)
    if queued is None:
        raise UsageError(f"{event_path}: the merge group's branch {head_ref!r} is not "
                         "gh-readonly-queue/<base>/pr-<number>-<sha>")
    return MergeGroup(head_sha, head_ref, base_ref.removeprefix("refs/heads/"), int(queued["number"]))


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
