"""A wave on GitHub: its pull request, its report comment and its gate status.

A :class:`Publisher` is the wave's ``Delivery`` (``wavegit.engine.pipeline``) when GitHub is configured:
after the push :meth:`Publisher.open_pr` opens (or updates) the PR of ``wavegit/<wave>``, so the record
commit carries ``pr: N``; after the record :meth:`Publisher.post_report` writes the report comment (one per
PR, edited in place), starts ``ci_workflows`` when publishing as the Actions bot and runs the gate here
(docs/action.md, "Why the wave job gates its own PR"): at most 10 API requests per wave, whatever its size,
plus one per CI workflow. Should rendering the comment fail, a minimal failed report is posted instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from wavegit.engine.pipeline import Delivery, NoDelivery
from wavegit.github import api, gate
from wavegit.github.api import GitHubClient
from wavegit.github.client import connect
from wavegit.model import report_markdown, tracker
from wavegit.model.config import Config
from wavegit.model.report import WaveReport
from wavegit.trackerbranch.store import TrackerStore

TITLE_ITEMS = 5
"""Item ids named in a PR title; the rest are counted."""


def pr_title(rep: WaveReport) -> str:
    ids = [item.id for item in rep.items if item.verified]
    more = len(ids) - TITLE_ITEMS
    named = ", ".join(ids[:TITLE_ITEMS]) + (f" and {more} more" if more > 0 else "")
    return f"wavegit {rep.wave_id}: {named or 'no verified items'}"


def pr_body(rep: WaveReport, issues: Mapping[str, int] | None = None) -> str:
    """What the wave changes, item by item; the details live in the report comment. ``issues``: item id ->
    the GitHub issue it came from; merging closes those of the verified items."""
    lines = [f"Wave `{rep.wave_id}` from base `{rep.base_sha[:12]}`: "
             f"{rep.verified_count} of {len(rep.items)} items verified.", ""]
    for item in rep.items:
        files = f"{len(item.files_changed)} file{'s' if len(item.files_changed) != 1 else ''}"
        lines.append(f"- `{item.id}`: {'verified' if item.verified else 'not verified'}, {files}")
    lines += ["", "The wavegit report comment below is kept up to date; the `wavegit/gate` status checks "
              "it. A comment `/wavegit retry <id>` or `/wavegit drop <id>` by someone with write access "
              "re-runs or removes one item."]
    closes = [(issues or {}).get(item.id) for item in rep.items if item.verified]
    if any(closes):
        lines += ["", *(f"Closes #{number}" for number in closes if number)]
    return "\n".join(lines) + "\n"


@dataclass
class Publisher:
    client: GitHubClient
    config: Config
    store: TrackerStore
    """Where the gate reads the items' ownership."""

    def open_pr(self, rep: WaveReport) -> int | None:
        """The number of the wave's pull request, opened or updated; None for a wave without a branch."""
        if not rep.branch:
            return None
        return self.client.find_or_create_pr(rep.branch, self.config.base_branch, pr_title(rep),
                                             pr_body(rep, self._issues())).number

    def _issues(self) -> dict[str, int]:
        """Item id -> its GitHub issue (``wavegit intake``), from the tracker branch."""
        snapshot = self.store.read()
        if snapshot.text is None:
            return {}
        loaded = tracker.loads(snapshot.text, self.config.tracker_path, strict=False)
        return {item.id: item.issue for item in loaded.items if item.issue is not None}

    def post_report(self, rep: WaveReport) -> int | None:
        """Write ``rep`` as the PR's report comment and set the gate status; the PR number."""
        number = rep.pr if rep.pr is not None else self.open_pr(rep)
        if number is None:
            return None
        rep.pr = number
        self.start_ci(rep)
        self.client.upsert_report_comment(number, report_body(rep), report_markdown.MARKER)
        gate.run_gate(self.client, number, self.config, self.store)
        return number

    def start_ci(self, rep: WaveReport) -> None:
        """Start the ``ci_workflows`` on the wave branch when we publish as ``github-actions[bot]``: GitHub
        starts no workflow for the pushes and pull requests of ``GITHUB_TOKEN`` (but does for its
        ``workflow_dispatch``), so the repository's required checks would never report on the wave's PR. A
        workflow that cannot be started is a note of the report, never the wave's failure."""
        if not self.config.ci_workflows or not rep.branch:
            return
        try:
            if self.client.whoami() != api.ACTIONS_BOT:
                return  # a GitHub App's or a person's pull request starts the workflows itself
        except api.GitHubError as exc:
            rep.notes.append(f"the CI workflows were not started: who publishes is unknown ({exc})")
            return
        for workflow in self.config.ci_workflows:
            try:
                self.client.dispatch_workflow(workflow, rep.branch)
            except api.GitHubError as exc:
                rep.notes.append(f"the CI workflow {workflow} was not started on {rep.branch}: {exc}")


def report_body(rep: WaveReport) -> str:
    """The report comment of ``rep``; a minimal failed report when the whole one cannot be rendered."""
    try:
        body = report_markdown.to_markdown(rep)
    except Exception as exc:  # whatever broke, the PR must still get a (failing) report
        # Only the fields the gate binds, all plain strings: this one renders whatever broke the other.
        where = report_markdown.FULL_REPORT.format(wave=rep.wave_id)
        minimal = WaveReport(
            wave_id=rep.wave_id, base_sha=rep.base_sha, head_sha=rep.head_sha, branch=rep.branch, pr=rep.pr,
            started_at=rep.started_at, finished_at=rep.finished_at, tracker_updated=rep.tracker_updated,
            notes=[f"the full report could not be rendered ({type(exc).__name__}: {str(exc)[:200]}); "
                   f"it is in {where} where the wave ran"])
        body = report_markdown.to_markdown(minimal)
    # A name with undecodable bytes (a lone surrogate) cannot be sent as UTF-8: send it escaped.
    return body.encode("utf-8", "backslashreplace").decode("utf-8")


def from_env(config: Config, store: TrackerStore) -> Publisher | None:
    """A publisher when GitHub is configured in the environment, else None."""
    settings = api.settings_from_env()
    return Publisher(connect(settings), config, store) if settings is not None else None


def delivery(config: Config, store: TrackerStore) -> Delivery:
    """Where a wave's pushed branch goes: GitHub when it is configured in the environment, else nowhere."""
    return from_env(config, store) or NoDelivery()
