"""What wavegit needs from GitHub, without PyGithub: the :class:`PullRequests` side (used by the gate, sync,
review and publish) and the :class:`TrackerFiles` side (used by the tracker store), the records they return,
their errors, the settings from the environment and the Actions event file.

:mod:`wavegit.github.client` implements :class:`GitHubClient` on PyGithub; ``tests/helpers/fake_github.py``
is an in-memory one. Configuration comes from ``GITHUB_TOKEN`` (or a GitHub App's id and key,
:mod:`wavegit.github.appauth`), ``GITHUB_REPOSITORY`` and ``GITHUB_API_URL`` (default
``https://api.github.com``; GitHub Enterprise and test servers alike).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

from wavegit.core import credentials
from wavegit.core.errors import UsageError
from wavegit.github import appauth
from wavegit.github.errors import GitHubConflict as GitHubConflict
from wavegit.github.errors import GitHubError as GitHubError
from wavegit.github.errors import GitHubNotFound as GitHubNotFound
from wavegit.github.errors import GitHubRuleViolation as GitHubRuleViolation

DEFAULT_API_URL = "https://api.github.com"
STATUS_CONTEXT = "wavegit/gate"
MAX_BODY_CHARS = 65536
"""GitHub's limit for pull request and comment bodies."""
MAX_STATUS_DESCRIPTION = 140
"""GitHub's limit for a commit status description."""


@dataclass(frozen=True)
class Settings:
    token: str
    repository: str
    """``owner/name``."""
    api_url: str = DEFAULT_API_URL
    login: str | None = None
    """Our own login when ``GET /user`` is not allowed (GitHub App tokens); from WAVEGIT_GITHUB_LOGIN."""
    run_url: str | None = None
    """The Actions run we are part of (``$GITHUB_SERVER_URL/<repo>/actions/runs/$GITHUB_RUN_ID``): the
    ``wavegit/gate`` status links to it, so a reviewer gets from the check to its log in one click."""
    app: appauth.AppTokens | None = None
    """A GitHub App's tokens, minted by wavegit (:mod:`wavegit.github.appauth`); ``token`` is then ''."""

    def __repr__(self) -> str:
        # The token must never show up in a traceback or a log line.
        return f"Settings(repository={self.repository!r}, api_url={self.api_url!r}, token=***)"


def settings_from_env(env: Mapping[str, str] | None = None) -> Settings | None:
    """GitHub settings from the environment; None when GITHUB_TOKEN or GITHUB_REPOSITORY is not set."""
    env = os.environ if env is None else env
    # A command that runs workers holds the token in memory only (wavegit.core.credentials).
    token = env.get("GITHUB_TOKEN", "") or credentials.held_token()
    repository = env.get("GITHUB_REPOSITORY", "")
    if not repository:
        return None
    owner, sep, name = repository.partition("/")
    if not sep or not owner or not name or "/" in name:
        raise UsageError(f"GITHUB_REPOSITORY={repository!r} is not of the form owner/name")
    api_url = (env.get("GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/")
    if not api_url.startswith(("https://", "http://")):
        raise UsageError(f"GITHUB_API_URL={api_url!r} is not an http(s) URL")
    # The App's own tokens win over a GITHUB_TOKEN that is also there (the Actions default).
    app = appauth.for_process(repository, api_url, env)
    if app is None and not token:
        return None
    run_id, server = env.get("GITHUB_RUN_ID", ""), env.get("GITHUB_SERVER_URL", "").rstrip("/")
    run_url = f"{server}/{repository}/actions/runs/{run_id}" if run_id.isdigit() and server else None
    return Settings("" if app else token, repository, api_url, env.get("WAVEGIT_GITHUB_LOGIN") or None,
                    run_url, app)


def require_settings(env: Mapping[str, str] | None = None) -> Settings:
    settings = settings_from_env(env)
    if settings is None:
        raise UsageError("GitHub is not configured: set GITHUB_TOKEN (or a GitHub App's WAVEGIT_APP_ID and "
                         "WAVEGIT_APP_PRIVATE_KEY) and GITHUB_REPOSITORY (and GITHUB_API_URL for GitHub "
                         "Enterprise)")
    return settings


def read_event(event_path: str | None) -> object:
    """The parsed JSON of the GitHub Actions event file ``event_path`` (``$GITHUB_EVENT_PATH``)."""
    if not event_path:
        raise UsageError("--event needs GITHUB_EVENT_PATH (set by GitHub Actions)")
    try:
        return json.loads(Path(event_path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{event_path}: cannot read the event: {exc}") from None


@dataclass(frozen=True)
class PullRequest:
    number: int
    state: str
    """``open`` or ``closed``."""
    merged: bool
    head_sha: str
    head_ref: str
    base_ref: str
    merge_sha: str | None
    """The merge commit once merged (GitHub's test merge before that, which wavegit ignores)."""
    url: str
    head_repo: str = ""
    """``owner/name`` of the repository the head branch lives in ('' when GitHub names none: a deleted
    fork); a fork's PR has another one than ours."""


@dataclass(frozen=True)
class Comment:
    id: int
    author: str
    body: str
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class FileContent:
    path: str
    text: str
    sha: str
    """The blob SHA: the compare-and-swap token of the Contents API."""


class PullRequests(Protocol):
    """What the merge gate, sync, review and publish need from GitHub: pull requests, their comments
    (with authors), commit statuses and permissions. ``tests/helpers/fake_github.py`` is an in-memory one."""

    repository: str
    """``owner/name``."""

    def whoami(self) -> str:
        """The login of the token (the author of the comments we post)."""
        ...

    def find_or_create_pr(self, branch: str, base: str, title: str, body: str) -> PullRequest:
        """The open PR of ``branch`` into ``base`` with this title and body (updated), or a new one."""
        ...

    def pr_info(self, number: int) -> PullRequest:
        """PR ``number``; :class:`GitHubNotFound` when there is none."""
        ...

    def pr_files(self, number: int) -> list[str]:
        """Every path the PR changes (all pages; both sides of a rename)."""
        ...

    def list_comments(self, number: int) -> list[Comment]:
        """The PR's comments, oldest first."""
        ...

    def branch_tips(self, prefix: str) -> dict[str, str]:
        """Branch -> head SHA of every branch of the repository whose name starts with ``prefix``."""
        ...

    def upsert_report_comment(self, number: int, body: str, marker: str) -> Comment:
        """Edit our own comment that starts with ``marker`` in place, or create it; never a second one.

        Only a comment whose first characters are the marker is ours to edit: text quoted in another
        comment (a reply naming a worker's file) never makes that comment the report."""
        ...

    def set_status(self, sha: str, state: str, description: str, context: str = STATUS_CONTEXT) -> None: ...

    def permission(self, user: str) -> str:
        """``admin``, ``maintain``, ``write``, ``triage``, ``read`` or ``none``."""
        ...

    def dispatch_workflow(self, workflow: str, ref: str) -> None:
        """Start the Actions workflow file ``workflow`` on branch ``ref`` (its ``workflow_dispatch``)."""
        ...


@dataclass(frozen=True)
class Comparison:
    """``GET /compare/{base}...{head}``: how two commits relate, and what changed from their merge base."""

    status: str
    """``ahead`` (head descends from base), ``identical``, ``behind`` or ``diverged``."""
    files: list[str]
    """The paths changed from the merge base to ``head`` (both sides of a rename)."""
    complete: bool
    """False when GitHub cut the file list short (a comparison names at most 300 files)."""

    @property
    def contains_base(self) -> bool:
        """Whether ``head`` is ``base`` or descends from it."""
        return self.status in ("ahead", "identical")


class Histories(Protocol):
    """What the merge gate needs to follow a PR head's history: parents and comparisons of commits."""

    def commit_parents(self, sha: str) -> list[str]:
        """The parents of commit ``sha``, first parent first; :class:`GitHubNotFound` when there is none."""
        ...

    def compare(self, base: str, head: str) -> Comparison:
        """``base...head`` (commits or branch names)."""
        ...


class GateClient(PullRequests, Histories, Protocol):
    """What the merge gate needs from GitHub."""


class TrackerFiles(Protocol):
    """What the tracker store on GitHub (:mod:`wavegit.github.store`) needs: branches, files, commits."""

    repository: str

    def branch_head(self, branch: str) -> str | None: ...

    def get_contents(self, path: str, ref: str) -> FileContent | None: ...

    def put_contents(self, path: str, text: str | None, message: str, branch: str, sha: str | None) -> str:
        """Write (or with None delete) one file; only if its blob is still ``sha``. The new commit."""
        ...

    def commit_files(self, branch: str, parent: str, files: Mapping[str, str | None], message: str) -> str:
        """Commit ``files`` (None: delete) on ``parent``; ``branch`` moves only if still at ``parent``."""
        ...

    def commit_messages(self, head: str, stop_at: str | None, limit: int = 300) -> list[str]:
        """Messages of ``head`` and its ancestors, newest first, down to (not including) ``stop_at``."""
        ...


@dataclass(frozen=True)
class Issue:
    number: int
    title: str
    body: str
    state: str
    """``open`` or ``closed``."""
    author: str = ""
    updated_at: datetime | None = None
    """The last change of any kind (an edit of its text, a comment, a label)."""


@dataclass(frozen=True)
class Labelled:
    """A ``labeled`` event: who put the label on and when."""

    who: str | None
    at: datetime


class Issues(Protocol):
    """What ``wavegit intake`` needs: labelled issues, who labelled them, and replying on them (a reply is
    our own comment carrying a marker, edited in place: :meth:`PullRequests.upsert_report_comment`)."""

    def labelled_issues(self, label: str) -> list[Issue]:
        """The open issues (never pull requests) carrying ``label``, oldest first."""
        ...

    def issue_info(self, number: int) -> Issue:
        """Issue ``number``; :class:`GitHubNotFound` when there is none."""
        ...

    def labelled_by(self, number: int, label: str) -> Labelled | None:
        """The latest ``labeled`` event of ``label`` on issue ``number``; None if nobody put it there."""
        ...


class GitHubClient(PullRequests, TrackerFiles, Issues, Histories, Protocol):
    """Everything wavegit needs from GitHub (what :func:`wavegit.github.client.connect` returns)."""


ACTIONS_BOT = "github-actions[bot]"
"""The login of every workflow's ``GITHUB_TOKEN``."""
WRITERS = ("admin", "maintain", "write")
"""The permissions whose holders wavegit obeys: a review command, an intake label (which asks to run agent
code)."""


def trusted_authors(configured: tuple[str, ...], client: PullRequests) -> tuple[str, ...]:
    """Whose report comments wavegit believes, the one rule for the gate, ``run``, ``collect``, review
    commands and merge groups: ``report_authors`` and the identity our token posts as (learned once per
    process: ``GET /user`` for a user's token, GraphQL ``viewer`` for an installation's), since whoever
    holds the token may set the gate's status anyway, so believing its reports grants nothing more.
    Never ``github-actions[bot]`` unless configured: every workflow of the repository posts as that login."""
    try:
        me = client.whoami()
    except GitHubError:
        return configured
    return configured if me == ACTIONS_BOT or me in configured else (*configured, me)


@dataclass(frozen=True)
class SyncPullRequests:
    """Pull requests as ``wavegit sync`` asks about them (``wavegit.sync.rules.PullRequests``): their state,
    and a line on our report comment (the one under ``marker``)."""

    client: PullRequests
    marker: str

    def state(self, number: int) -> tuple[str, str | None]:
        """(``open`` | ``merged`` | ``closed``, the merge commit when merged) of PR ``number``."""
        pr = self.client.pr_info(number)
        if pr.merged:
            return "merged", pr.merge_sha
        if pr.state not in ("open", "closed"):
            raise GitHubError(f"unexpected answer from GitHub: PR #{number} has state {pr.state!r}")
        return pr.state, None

    def mark_outcome(self, number: int, outcome: str) -> None:
        mark_report_outcome(self.client, number, self.marker, outcome)


OUTCOME_PREFIX = "> **wavegit:** "


def mark_report_outcome(client: PullRequests, number: int, marker: str, outcome: str) -> Comment | None:
    """Say ``outcome`` (e.g. "merged as abc123; items done") at the top of our report comment, in place.

    The line goes right after the marker line and replaces an earlier outcome line, so the report
    below (and its embedded JSON) is untouched. None when the PR has no report comment of ours.
    """
    me = client.whoami()
    mine = [c for c in client.list_comments(number) if c.author == me and c.body.startswith(marker)]
    if not mine:
        return None
    first, _, rest = mine[0].body.partition("\n")
    if rest.startswith(OUTCOME_PREFIX):
        rest = rest.partition("\n")[2]
    return client.upsert_report_comment(number, f"{first}\n{OUTCOME_PREFIX}{outcome}\n{rest}", marker)
