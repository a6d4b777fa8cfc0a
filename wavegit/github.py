"""Everything that talks to GitHub, behind the small :class:`GitHubClient` interface (the
:class:`PullRequests` side used by the gate, sync, review and publish; the :class:`TrackerFiles` side used by
the tracker store).

This is the only module that imports PyGithub, and only when a client is built, so commands that do
not talk to GitHub never load it. Configuration comes from ``GITHUB_TOKEN``, ``GITHUB_REPOSITORY`` and
``GITHUB_API_URL`` (default ``https://api.github.com``; GitHub Enterprise and test servers alike).

Retries are wavegit's own (PyGithub's are switched off): ``Retry-After`` and ``X-RateLimit-Reset`` are
honoured, 5xx answers and secondary rate limits back off with jitter, all bounded by a deadline per
call. A create (pull request, comment) whose answer was lost may still have landed, so before trying it
again the client looks for it. The token never appears in an error or a log record.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import os
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

from wavegit import credentials
from wavegit.errors import EXIT_BAD_INPUT, EXIT_WORK_FAILED, UsageError, WavegitError

if TYPE_CHECKING:
    from github.ContentFile import ContentFile
    from github.IssueComment import IssueComment
    from github.PullRequest import PullRequest as GhPullRequest
    from github.Repository import Repository

T = TypeVar("T")

DEFAULT_API_URL = "https://api.github.com"
STATUS_CONTEXT = "wavegit/gate"
MAX_BODY_CHARS = 65536
"""GitHub's limit for pull request and comment bodies."""
MAX_STATUS_DESCRIPTION = 140
"""GitHub's limit for a commit status description."""


class GitHubError(WavegitError):
    """A GitHub API call failed (after retries, where retrying made sense)."""

    exit_code = EXIT_WORK_FAILED

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class GitHubNotFound(GitHubError):
    """The pull request, file or branch does not exist (bad input, exit 2)."""

    exit_code = EXIT_BAD_INPUT


class GitHubConflict(GitHubError):
    """A compare-and-swap write lost: stale Contents ``sha`` (409/422) or a non-fast-forward ref update."""


@dataclass(frozen=True)
class Settings:
    token: str
    repository: str
    """``owner/name``."""
    api_url: str = DEFAULT_API_URL
    login: str | None = None
    """Our own login when ``GET /user`` is not allowed (GitHub App tokens); from WAVEGIT_GITHUB_LOGIN."""

    def __repr__(self) -> str:
        # The token must never show up in a traceback or a log line.
        return f"Settings(repository={self.repository!r}, api_url={self.api_url!r}, token=***)"


def settings_from_env(env: Mapping[str, str] | None = None) -> Settings | None:
    """GitHub settings from the environment; None when GITHUB_TOKEN or GITHUB_REPOSITORY is not set."""
    env = os.environ if env is None else env
    # A command that runs workers holds the token in memory only (wavegit.credentials).
    token = env.get("GITHUB_TOKEN", "") or credentials.held_token()
    repository = env.get("GITHUB_REPOSITORY", "")
    if not token or not repository:
        return None
    owner, sep, name = repository.partition("/")
    if not sep or not owner or not name or "/" in name:
        raise UsageError(f"GITHUB_REPOSITORY={repository!r} is not of the form owner/name")
    api_url = (env.get("GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/")
    if not api_url.startswith(("https://", "http://")):
        raise UsageError(f"GITHUB_API_URL={api_url!r} is not an http(s) URL")
    return Settings(token, repository, api_url, env.get("WAVEGIT_GITHUB_LOGIN") or None)


def require_settings(env: Mapping[str, str] | None = None) -> Settings:
    settings = settings_from_env(env)
    if settings is None:
        raise UsageError("GitHub is not configured: set GITHUB_TOKEN and GITHUB_REPOSITORY "
                         "(and GITHUB_API_URL for GitHub Enterprise)")
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

    def upsert_report_comment(self, number: int, body: str, marker: str) -> Comment:
        """Edit our own comment carrying ``marker`` in place, or create it; never a second one."""
        ...

    def set_status(self, sha: str, state: str, description: str, context: str = STATUS_CONTEXT) -> None: ...

    def permission(self, user: str) -> str:
        """``admin``, ``maintain``, ``write``, ``triage``, ``read`` or ``none``."""
        ...


class TrackerFiles(Protocol):
    """What the tracker store on GitHub (:mod:`wavegit.github_store`) needs: branches, files, commits."""

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


class GitHubClient(PullRequests, TrackerFiles, Protocol):
    """Everything wavegit needs from GitHub (what :func:`connect` returns)."""


def scrub(text: str, secret: str) -> str:
    """``text`` without ``secret`` (tokens must not leak into messages or logs)."""
    return text.replace(secret, "***") if secret else text


class _ScrubFilter(logging.Filter):
    def __init__(self, secret: str) -> None:
        super().__init__()
        self.secret = secret

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if self.secret in message:
            record.msg, record.args = scrub(message, self.secret), None
        return True


_SCRUBBED_LOGGERS = ("github.Requester", "urllib3.connectionpool")


@dataclass(frozen=True)
class RetryPolicy:
    deadline_s: float = 120.0
    """Total time one call may take, waits included."""
    backoff_s: float = 0.5
    """First backoff after a 5xx or a secondary rate limit without Retry-After; doubles, with jitter."""
    max_backoff_s: float = 30.0
    timeout_s: int = 30
    """Per HTTP request."""


class _Retrier:
    """Runs one API call with wavegit's retry rules (see the module docstring)."""

    def __init__(self, policy: RetryPolicy, token: str,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.policy = policy
        self.token = token
        self.sleep = sleep

    def call(self, what: str, fn: Callable[[], T], landed: Callable[[], T | None] | None = None) -> T:
        """``fn()`` with retries. For a create, ``landed`` looks for the object a lost answer may have
        created; it runs before every retry so the create is never repeated once it went through."""
        from github.GithubException import BadAttributeException, GithubException
        from requests.exceptions import RequestException

        deadline = time.monotonic() + self.policy.deadline_s
        attempt = 0
        retried = False
        while True:
            attempt += 1
            try:
                if retried and landed is not None:
                    found = landed()
                    if found is not None:
                        return found
                return fn()
            except GithubException as exc:
                wait = self._wait(exc, attempt)
                error = self._error(what, exc)
            except RequestException as exc:
                wait, error = self._backoff(attempt), GitHubError(
                    scrub(f"{what}: cannot reach GitHub: {type(exc).__name__}: {exc}", self.token))
            except BadAttributeException as exc:
                expected = getattr(exc.expected_type, "__name__", str(exc.expected_type))
                raise GitHubError(scrub(f"{what}: unexpected answer from GitHub: a field holds "
                                        f"{exc.actual_value!r}, expected {expected}", self.token)) from None
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise GitHubError(scrub(f"{what}: unexpected answer from GitHub ({type(exc).__name__}: "
                                        f"{exc})", self.token)) from None
            if wait is None:
                raise error from None
            if time.monotonic() + wait > deadline:
                raise GitHubError(f"{error} (gave up after {attempt} attempts within the "
                                  f"{self.policy.deadline_s:g}s deadline)", error.status) from None
            self.sleep(wait)
            retried = True

    def _backoff(self, attempt: int) -> float:
        ceiling = min(self.policy.backoff_s * 2 ** (attempt - 1), self.policy.max_backoff_s)
        return random.uniform(ceiling / 2, ceiling)

    def _wait(self, exc: object, attempt: int) -> float | None:
        """Seconds to wait before retrying ``exc``, or None when retrying cannot help."""
        status: int = getattr(exc, "status", 0) or 0
        headers = {str(k).lower(): str(v) for k, v in (getattr(exc, "headers", None) or {}).items()}
        retry_after = headers.get("retry-after", "")
        if retry_after.isdigit():
            return float(retry_after)
        reset = headers.get("x-ratelimit-reset", "")
        if status in (403, 429) and headers.get("x-ratelimit-remaining") == "0" and reset.isdigit():
            # Reset is whole epoch seconds; half a second more avoids waking just before it.
            return max(int(reset) - time.time(), 0.0) + 0.5
        if status >= 500 or status == 429 or (status == 403 and _is_rate_limit(_message(exc))):
            return self._backoff(attempt)
        return None

    def _error(self, what: str, exc: object) -> GitHubError:
        status: int = getattr(exc, "status", 0) or 0
        text = scrub(f"{what}: GitHub answered {status}: {_message(exc)}", self.token)
        if status == 404:
            return GitHubNotFound(text, status)
        if status == 409 or (status == 422 and ("sha" in text or "fast forward" in text)):
            return GitHubConflict(text, status)
        if status == 401:
            return GitHubError(f"{text} (check GITHUB_TOKEN)", status)
        return GitHubError(text, status)


def _message(exc: object) -> str:
    data = getattr(exc, "data", None)
    if isinstance(data, dict) and isinstance(data.get("message"), str):
        return str(data["message"]).splitlines()[0] if data["message"] else ""
    return str(data) if data is not None else str(exc)


def _is_rate_limit(message: str) -> bool:
    lowered = message.lower()
    return "rate limit" in lowered


def _require(value: object, kind: type[T], what: str) -> T:
    """``value`` when it has the type GitHub documents; a clear error instead of a crash otherwise."""
    if isinstance(value, bool) and kind is not bool:
        raise GitHubError(f"unexpected answer from GitHub: {what} is {value!r}, expected {kind.__name__}")
    if not isinstance(value, kind):
        raise GitHubError(f"unexpected answer from GitHub: {what} is "
                          f"{'missing' if value is None else repr(value)}, expected {kind.__name__}")
    return value


class PyGithubClient(GitHubClient):
    """:class:`GitHubClient` on PyGithub."""

    def __init__(self, settings: Settings, policy: RetryPolicy | None = None) -> None:
        from github import Auth, Github

        self.settings = settings
        self.repository = settings.repository
        self.policy = policy or RetryPolicy()
        self._retry = _Retrier(self.policy, settings.token)
        for name in _SCRUBBED_LOGGERS:
            logging.getLogger(name).addFilter(_ScrubFilter(settings.token))
        # PyGithub's own retry (which would repeat POSTs blindly) and its request throttling are off;
        # lazy objects make no request until a field is needed, which keeps the request count small.
        self._github = Github(auth=Auth.Token(settings.token), base_url=settings.api_url, retry=None,
                              timeout=self.policy.timeout_s, per_page=100, lazy=True,
                              seconds_between_requests=None, seconds_between_writes=None)
        self._repo: Repository = self._github.get_repo(settings.repository)
        self._login: str | None = settings.login

    # ---- identity ----

    def whoami(self) -> str:
        if self._login is None:
            def fetch() -> str:
                return _require(self._github.get_user().login, str, "user.login")

            try:
                self._login = self._retry.call("who am I (GET /user)", fetch)
            except GitHubError as exc:
                if exc.status not in (403, 404) or os.environ.get("GITHUB_ACTIONS") != "true":
                    raise GitHubError(f"{exc}; set WAVEGIT_GITHUB_LOGIN to the token's login") from None
                # GITHUB_TOKEN in Actions is an App token: GET /user is refused, the author is the bot.
                self._login = "github-actions[bot]"
        return self._login

    # ---- pull requests ----

    def _pull(self, raw: GhPullRequest, merged: bool | None = None) -> PullRequest:
        """Our record of ``raw``; ``merged`` is given for list answers, which do not carry the field."""
        if merged is None:
            merged = _require(raw.merged, bool, "pull.merged")
        head, base = raw.head, raw.base
        if head is None or base is None:
            raise GitHubError("unexpected answer from GitHub: pull.head or pull.base is missing")
        return PullRequest(
            number=_require(raw.number, int, "pull.number"),
            state=_require(raw.state, str, "pull.state"),
            merged=merged,
            head_sha=_require(head.sha, str, "pull.head.sha"),
            head_ref=_require(head.ref, str, "pull.head.ref"),
            base_ref=_require(base.ref, str, "pull.base.ref"),
            merge_sha=_require(raw.merge_commit_sha, str, "pull.merge_commit_sha") if merged else None,
            url=raw.html_url if isinstance(raw.html_url, str) else "",
        )

    def _open_pr(self, branch: str, base: str) -> PullRequest | None:
        owner = self.repository.split("/")[0]
        for raw in self._repo.get_pulls(state="open", head=f"{owner}:{branch}", base=base):
            return self._pull(raw, merged=False)
        return None

    def find_or_create_pr(self, branch: str, base: str, title: str, body: str) -> PullRequest:
        body = _clip(body)
        existing = self._retry.call(f"look for the PR of {branch}", lambda: self._open_pr(branch, base))
        if existing is not None:
            def update() -> PullRequest:
                raw = self._repo.get_pull(existing.number)
                raw.edit(title=title, body=body)
                return existing

            return self._retry.call(f"update PR #{existing.number}", update)
        try:
            return self._retry.call(
                f"open a PR for {branch}",
                lambda: self._pull(self._repo.create_pull(base=base, head=branch, title=title, body=body)),
                landed=lambda: self._open_pr(branch, base))
        except GitHubError as exc:
            # 422 "already exists": somebody (or our own lost request) opened it meanwhile.
            found = self._retry.call(f"look for the PR of {branch}", lambda: self._open_pr(branch, base))
            if exc.status == 422 and found is not None:
                return found
            raise

    def pr_info(self, number: int) -> PullRequest:
        return self._retry.call(f"read PR #{number}", lambda: self._pull(self._repo.get_pull(number)))

    def pr_files(self, number: int) -> list[str]:
        def fetch() -> list[str]:
            paths: dict[str, None] = {}
            for raw in self._repo.get_pull(number).get_files():
                paths[_require(raw.filename, str, "file.filename")] = None
                # A rename takes the file away from its old path too, so both sides count.
                if raw.previous_filename is not None:
                    paths[_require(raw.previous_filename, str, "file.previous_filename")] = None
            return list(paths)

        return self._retry.call(f"list the files of PR #{number}", fetch)

    # ---- comments ----

    def _comment(self, raw: IssueComment) -> Comment:
        user = raw.user
        return Comment(
            id=_require(raw.id, int, "comment.id"),
            author=_require(user.login if user is not None else None, str, "comment.user.login"),
            body=_require(raw.body, str, "comment.body"),
            created_at=_require(raw.created_at, datetime, "comment.created_at"),
            updated_at=_require(raw.updated_at, datetime, "comment.updated_at"),
        )

    def _comments(self, number: int) -> list[tuple[Comment, IssueComment]]:
        # The issue object is lazy: listing its comments is the only request.
        return [(self._comment(raw), raw) for raw in self._repo.get_issue(number).get_comments()]

    def list_comments(self, number: int) -> list[Comment]:
        return [c for c, _ in self._retry.call(f"list the comments of PR #{number}",
                                                lambda: self._comments(number))]

    def _own_marked(self, number: int, marker: str) -> list[tuple[Comment, IssueComment]]:
        me = self.whoami()
        return [(c, raw) for c, raw in self._retry.call(f"list the comments of PR #{number}",
                                                         lambda: self._comments(number))
                if c.author == me and marker in c.body]

    def upsert_report_comment(self, number: int, body: str, marker: str) -> Comment:
        if marker not in body:
            raise ValueError("the report comment body must carry its marker")
        body = _clip(body)
        mine = self._own_marked(number, marker)
        if mine:
            # Several of ours (left by an older wavegit or a manual copy): the oldest stays the one.
            target, raw = mine[0]
            if target.body == body:
                return target

            def edit() -> Comment:
                raw.edit(body)
                return self._comment(raw)

            return self._retry.call(f"edit comment {target.id} on PR #{number}", edit)

        def landed() -> Comment | None:
            found = self._own_marked(number, marker)
            return found[0][0] if found else None

        return self._retry.call(
            f"comment on PR #{number}",
            lambda: self._comment(self._repo.get_issue(number).create_comment(body)),
            landed=landed)

    # ---- statuses and permissions ----

    def set_status(self, sha: str, state: str, description: str, context: str = STATUS_CONTEXT) -> None:
        if len(description) > MAX_STATUS_DESCRIPTION:
            description = description[:MAX_STATUS_DESCRIPTION - 1] + "…"

        def post() -> None:
            self._repo.get_commit(sha).create_status(state=state, description=description, context=context)

        self._retry.call(f"set status {context} on {sha[:12]}", post)

    def permission(self, user: str) -> str:
        try:
            return self._retry.call(f"read the permission of {user}",
                                    lambda: _require(self._repo.get_collaborator_permission(user), str,
                                                     "permission"))
        except GitHubNotFound:
            return "none"

    # ---- contents and commits (the tracker store) ----

    def branch_head(self, branch: str) -> str | None:
        try:
            return self._retry.call(f"read branch {branch}", lambda: _require(
                self._repo.get_git_ref(f"heads/{branch}").object.sha, str, "ref.object.sha"))
        except GitHubNotFound:
            return None

    def get_contents(self, path: str, ref: str) -> FileContent | None:
        def fetch() -> FileContent:
            raw = self._repo.get_contents(path, ref=ref)
            if isinstance(raw, list):
                raise GitHubError(f"{path} at {ref} is a directory, not a file")
            return FileContent(path, self._decode(raw), _require(raw.sha, str, "content.sha"))

        try:
            return self._retry.call(f"read {path} at {ref}", fetch)
        except GitHubNotFound:
            return None

    def _decode(self, raw: ContentFile) -> str:
        encoded = raw.content
        if raw.encoding == "none" or not encoded:
            # Files over 1 MB come without content from the Contents API; the blob API has them.
            encoded = self._repo.get_git_blob(_require(raw.sha, str, "content.sha")).content
        try:
            return base64.b64decode(_require(encoded, str, "content")).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError) as exc:
            raise GitHubError(f"{raw.path}: content is not base64 UTF-8 text ({exc})") from None

    def put_contents(self, path: str, text: str | None, message: str, branch: str, sha: str | None) -> str:
        def put() -> str:
            result: Mapping[str, object]
            if text is None:
                result = self._repo.delete_file(path, message, sha or "", branch=branch)
            elif sha is None:
                result = self._repo.create_file(path, message, text, branch=branch)
            else:
                result = self._repo.update_file(path, message, text, sha, branch=branch)
            return _require(getattr(result.get("commit"), "sha", None), str, "commit.sha")

        return self._retry.call(f"write {path} on {branch}", put)

    def commit_files(self, branch: str, parent: str, files: Mapping[str, str | None], message: str) -> str:
        from github.InputGitTreeElement import InputGitTreeElement

        def commit() -> str:
            base = self._repo.get_git_commit(parent)
            elements = [InputGitTreeElement(path, "100644", "blob", content=text) if text is not None
                        else InputGitTreeElement(path, "100644", "blob", sha=None)
                        for path, text in files.items()]
            tree = self._repo.create_git_tree(elements, base.tree)
            new = self._repo.create_git_commit(message, tree, [base])
            self._repo.get_git_ref(f"heads/{branch}").edit(new.sha, force=False)
            return _require(new.sha, str, "commit.sha")

        return self._retry.call(f"commit {', '.join(files)} on {branch}", commit)

    def commit_messages(self, head: str, stop_at: str | None, limit: int = 300) -> list[str]:
        def fetch() -> list[str]:
            messages: list[str] = []
            for raw in self._repo.get_commits(sha=head):
                if raw.sha == stop_at or len(messages) >= limit:
                    break
                messages.append(_require(raw.commit.message, str, "commit.message"))
            return messages

        return self._retry.call(f"list the commits of {head[:12]}", fetch)


def _clip(body: str) -> str:
    """A body GitHub accepts; callers render within the limit, this only guards against a 422."""
    if len(body) <= MAX_BODY_CHARS:
        return body
    note = "\n\n… (truncated to GitHub's size limit)"
    return body[:MAX_BODY_CHARS - len(note)] + note


def connect(settings: Settings | None = None, policy: RetryPolicy | None = None) -> GitHubClient:
    """The client for the configured repository (settings from the environment by default)."""
    return PyGithubClient(settings or require_settings(), policy)


def pr_state_for_sync(client: PullRequests, number: int) -> tuple[str, str | None]:
    """(``open`` | ``merged`` | ``closed``, the merge commit when merged) of PR ``number``."""
    pr = client.pr_info(number)
    if pr.merged:
        return "merged", pr.merge_sha
    if pr.state not in ("open", "closed"):
        raise GitHubError(f"unexpected answer from GitHub: PR #{number} has state {pr.state!r}")
    return pr.state, None


OUTCOME_PREFIX = "> **wavegit:** "


def mark_report_outcome(client: PullRequests, number: int, marker: str, outcome: str) -> Comment | None:
    """Say ``outcome`` (e.g. "merged as abc123; items done") at the top of our report comment, in place.

    The line goes right after the marker line and replaces an earlier outcome line, so the report
    below (and its embedded JSON) is untouched. None when the PR has no report comment of ours.
    """
    me = client.whoami()
    mine = [c for c in client.list_comments(number) if c.author == me and marker in c.body]
    if not mine:
        return None
    first, _, rest = mine[0].body.partition("\n")
    if rest.startswith(OUTCOME_PREFIX):
        rest = rest.partition("\n")[2]
    return client.upsert_report_comment(number, f"{first}\n{OUTCOME_PREFIX}{outcome}\n{rest}", marker)
