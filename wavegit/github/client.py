"""The :class:`~wavegit.github.api.GitHubClient` on PyGithub (:func:`connect` builds it).

This module and :mod:`wavegit.github.retry` are the only ones that import PyGithub, and only when a client
is built or a call runs, so commands that do not talk to GitHub never load it. Every call goes through the
:class:`~wavegit.github.retry.Retrier`; the token never appears in an error or a log record.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, TypeVar

from wavegit.github.api import (
    ACTIONS_BOT,
    MAX_BODY_CHARS,
    MAX_STATUS_DESCRIPTION,
    STATUS_CONTEXT,
    Comment,
    Comparison,
    FileContent,
    GitHubClient,
    GitHubError,
    GitHubNotFound,
    Issue,
    Labelled,
    PullRequest,
    Settings,
    require_settings,
)
from wavegit.github.retry import Retrier, RetryPolicy, scrub_logs

if TYPE_CHECKING:
    from github.ContentFile import ContentFile
    from github.File import File
    from github.Issue import Issue as GhIssue
    from github.IssueComment import IssueComment
    from github.PullRequest import PullRequest as GhPullRequest
    from github.Repository import Repository

T = TypeVar("T")

INSTALLATION_TOKEN_PREFIX = "ghs_"
"""How GitHub's installation tokens begin (``GITHUB_TOKEN`` and a GitHub App's alike)."""

COMPARE_FILES_LIMIT = 300
"""GitHub names at most this many files in a comparison."""

ACTIONS_MAY_NOT_OPEN_PRS = "not permitted to create or approve pull requests"
"""GitHub's 403 to ``GITHUB_TOKEN`` while the repository setting that lets Actions open PRs is off."""


_LOGINS: dict[tuple[str, str], str] = {}
"""(API URL, credential) -> the login it posts as, learned once per process (every client shares it)."""


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
        app = settings.app
        self._retry = Retrier(self.policy, (lambda: app.minted) if app else settings.token)
        if settings.token:
            scrub_logs(settings.token)
        # PyGithub's own retry (which would repeat POSTs blindly) and its request throttling are off;
        # lazy objects make no request until a field is needed, which keeps the request count small.
        # An App's auth hands every request the current token, minting a new one shortly before expiry.
        auth = app.auth if app else Auth.Token(settings.token)
        self._github = Github(auth=auth, base_url=settings.api_url, retry=None,
                              timeout=self.policy.timeout_s, per_page=100, lazy=True,
                              seconds_between_requests=None, seconds_between_writes=None)
        self._repo: Repository = self._github.get_repo(settings.repository)
        self._login: str | None = settings.login or _LOGINS.get(self._identity_key)
        self._login_guessed = False

    # ---- identity ----

    @property
    def _identity_key(self) -> tuple[str, str]:
        app = self.settings.app
        return self.settings.api_url, app.identity if app else self.settings.token

    def whoami(self) -> str:
        """The login our token posts as, asked once per process and credential."""
        if self._login is None:
            def fetch() -> str:
                return _require(self._github.get_user().login, str, "user.login")

            def viewer() -> str:
                _, data = self._github.requester.graphql_query("query { viewer { login } }", {})
                login = ((data.get("data") or {}).get("viewer") or {}).get("login")
                return _require(login, str, "viewer.login")

            try:
                if self.settings.app or self.settings.token.startswith(INSTALLATION_TOKEN_PREFIX):
                    # An installation token (GITHUB_TOKEN, a GitHub App's) never may read GET /user.
                    raise GitHubError("who am I: GET /user is not for installation tokens", 403)
                self._login = self._retry.call("who am I (GET /user)", fetch)
            except GitHubError as exc:
                if exc.status not in (403, 404):
                    raise GitHubError(f"{exc}; set WAVEGIT_GITHUB_LOGIN to the token's login") from None
                # An App installation token (GITHUB_TOKEN is one) may not read GET /user; GraphQL's
                # viewer is the token's own login (`<app>[bot]`).
                try:
                    self._login = self._retry.call("who am I (GraphQL viewer)", viewer)
                except GitHubError:
                    if os.environ.get("GITHUB_ACTIONS") != "true":
                        raise GitHubError(f"{exc}; set WAVEGIT_GITHUB_LOGIN to the token's login") from None
                    # Most likely the Actions bot; the first comment we create says for sure.
                    self._login, self._login_guessed = ACTIONS_BOT, True
            if not self._login_guessed:
                _LOGINS[self._identity_key] = self._login
        return self._login

    def user_id(self, login: str) -> int:
        """The numeric id of the account ``login`` (a bot's noreply address carries it)."""
        return self._retry.call(f"read the user {login}",
                                lambda: _require(self._github.get_user(login).id, int, "user.id"))

    def _learn_login(self, created: Comment) -> Comment:
        """The author of a comment we just created is our login, whatever was guessed."""
        if self._login_guessed:
            self._login, self._login_guessed = created.author, False
            _LOGINS[self._identity_key] = created.author
        return created

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
            head_repo=_full_name(head.repo),
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
            if exc.status == 403 and ACTIONS_MAY_NOT_OPEN_PRS in str(exc):
                raise GitHubError(f"{exc} Turn on Settings > Actions > General > Workflow permissions > "
                                  "'Allow GitHub Actions to create and approve pull requests', or give the "
                                  "action a GitHub App token (docs/action.md)", exc.status) from None
            # 422 "already exists": somebody (or our own lost request) opened it meanwhile.
            found = self._retry.call(f"look for the PR of {branch}", lambda: self._open_pr(branch, base))
            if exc.status == 422 and found is not None:
                return found
            raise

    def pr_info(self, number: int) -> PullRequest:
        return self._retry.call(f"read PR #{number}", lambda: self._pull(self._repo.get_pull(number)))

    def pr_files(self, number: int) -> list[str]:
        def fetch() -> list[str]:
            pull = self._repo.get_pull(number)
            counted = _require(pull.changed_files, int, "pull.changed_files")
            paths, listed = _changed_paths(pull.get_files())
            if listed < counted:
                # The files endpoint stops at 3,000: what it leaves out cannot be checked, so fail closed.
                raise GitHubError(f"PR #{number} changes {counted} files but GitHub lists only {listed} "
                                  "(its API stops at 3,000): their ownership cannot be checked")
            return paths

        return self._retry.call(f"list the files of PR #{number}", fetch)

    def branch_tips(self, prefix: str) -> dict[str, str]:
        def fetch() -> dict[str, str]:
            refs = self._repo.get_git_matching_refs(f"heads/{prefix}")
            return {_require(ref.ref, str, "ref.ref").removeprefix("refs/heads/"):
                    _require(ref.object.sha, str, "ref.object.sha") for ref in refs}

        return self._retry.call(f"list the branches {prefix}*", fetch)

    # ---- history ----

    def commit_parents(self, sha: str) -> list[str]:
        def fetch() -> list[str]:
            return [_require(p.sha, str, "parent.sha") for p in self._repo.get_git_commit(sha).parents]

        return self._retry.call(f"read commit {sha[:12]}", fetch)

    def compare(self, base: str, head: str) -> Comparison:
        def fetch() -> Comparison:
            raw = self._repo.compare(base, head)
            paths, listed = _changed_paths(raw.files)
            return Comparison(_require(raw.status, str, "comparison.status"), paths,
                              listed < COMPARE_FILES_LIMIT)

        return self._retry.call(f"compare {base[:40]}...{head[:40]}", fetch)

    # ---- issues ----

    def _issue(self, raw: GhIssue) -> Issue:
        return Issue(number=_require(raw.number, int, "issue.number"),
                     title=_require(raw.title, str, "issue.title"),
                     body=raw.body if isinstance(raw.body, str) else "",
                     state=_require(raw.state, str, "issue.state"),
                     author=raw.user.login if raw.user is not None else "",
                     updated_at=raw.updated_at)

    def labelled_issues(self, label: str) -> list[Issue]:
        def fetch() -> list[Issue]:
            found = self._repo.get_issues(state="open", labels=[label], sort="created", direction="asc")
            # The issues API lists pull requests too; they are no backlog.
            return [self._issue(raw) for raw in found if raw.pull_request is None]

        return self._retry.call(f"list the open issues labelled {label!r}", fetch)

    def issue_info(self, number: int) -> Issue:
        return self._retry.call(f"read issue #{number}", lambda: self._issue(self._repo.get_issue(number)))

    def labelled_by(self, number: int, label: str) -> Labelled | None:
        def fetch() -> Labelled | None:
            found = None
            for event in self._repo.get_issue(number).get_events():
                if event.event == "labeled" and event.label is not None and event.label.name == label:
                    who = _require(event.actor.login, str, "event.actor.login") if event.actor else None
                    found = Labelled(who, _require(event.created_at, datetime, "event.created_at"))
            return found

        return self._retry.call(f"find who labelled issue #{number} {label!r}", fetch)

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
        return self._retry.call(f"list the comments of PR #{number}", lambda: [
            (self._comment(raw), raw) for raw in self._repo.get_issue(number).get_comments()])

    def list_comments(self, number: int) -> list[Comment]:
        return [c for c, _ in self._comments(number)]

    def _own_marked(self, number: int, marker: str) -> list[tuple[Comment, IssueComment]]:
        me = self.whoami()
        return [(c, raw) for c, raw in self._comments(number) if c.author == me and c.body.startswith(marker)]

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

        return self._learn_login(self._retry.call(
            f"comment on PR #{number}",
            lambda: self._comment(self._repo.get_issue(number).create_comment(body)),
            landed=landed))

    # ---- statuses and permissions ----

    def set_status(self, sha: str, state: str, description: str, context: str = STATUS_CONTEXT) -> None:
        if len(description) > MAX_STATUS_DESCRIPTION:
            description = description[:MAX_STATUS_DESCRIPTION - 1] + "…"

        def post() -> None:
            # The run's page when there is one (GitHub shows it as the check's "Details" link).
            link = {"target_url": self.settings.run_url} if self.settings.run_url else {}
            self._repo.get_commit(sha).create_status(state=state, description=description, context=context,
                                                     **link)

        self._retry.call(f"set status {context} on {sha[:12]}", post)

    def permission(self, user: str) -> str:
        try:
            return self._retry.call(f"read the permission of {user}",
                                    lambda: _require(self._repo.get_collaborator_permission(user), str,
                                                     "permission"))
        except GitHubNotFound:
            return "none"

    def dispatch_workflow(self, workflow: str, ref: str) -> None:
        self._retry.call(f"start the workflow {workflow} on {ref}",
                         lambda: self._repo.get_workflow(workflow).create_dispatch(ref, throw=True))

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


def _changed_paths(files: Iterable[File]) -> tuple[list[str], int]:
    """The paths of a files listing, and how many entries it had. A rename takes the file away from its
    old path too, so both sides count."""
    paths: dict[str, None] = {}
    listed = 0
    for raw in files:
        listed += 1
        paths[_require(raw.filename, str, "file.filename")] = None
        if raw.previous_filename is not None:
            paths[_require(raw.previous_filename, str, "file.previous_filename")] = None
    return list(paths), listed


def _full_name(repo: object) -> str:
    """``owner/name`` of a PR side's repository, '' when GitHub gives none (the fork was deleted)."""
    name = getattr(repo, "full_name", None) if repo is not None else None
    return name if isinstance(name, str) else ""


def _clip(body: str) -> str:
    """A body GitHub accepts; callers render within the limit, this only guards against a 422."""
    if len(body) <= MAX_BODY_CHARS:
        return body
    note = "\n\n… (truncated to GitHub's size limit)"
    return body[:MAX_BODY_CHARS - len(note)] + note


def connect(settings: Settings | None = None, policy: RetryPolicy | None = None) -> GitHubClient:
    """The client for the configured repository (settings from the environment by default)."""
    return PyGithubClient(settings or require_settings(), policy)
