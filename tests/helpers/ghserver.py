"""A small fake of the GitHub REST API for tests, backed by a real bare git repository.

It speaks the endpoints wavegit uses, with response shapes modelled on real GitHub responses (as
recorded in PyGithub's replay data) and GitHub's semantics: Contents ``sha`` compare-and-swap (409 on
a stale ``sha``), 422 on a non-fast-forward ref update, ``Link`` paging, comment authors taken from the
token, permissions, statuses and merges that move the bare repository's base branch.

As strict as GitHub where wavegit could get it wrong: installation tokens (``github-actions[bot]``, an App's
``<app>[bot]``) get 403 from ``GET /user``; a token's ``permissions:`` (:attr:`FakeGitHub.token_permissions`)
give 403 "Resource not accessible by integration" with ``X-Accepted-GitHub-Permissions``; every answer
carries ``X-RateLimit-*`` and a spent limit is a 403 until the reset; a PR's head may trail its branch
(``head_lag_reads``); the files of a PR stop at 3,000; a non-collaborator's permission is 200 ``none``
(``read`` on a public repository); Actions may be refused to open PRs (``actions_may_open_prs``).

Fault injection: a script of faults consumed one per request, and/or a random fraction, of 5xx answers,
secondary rate limits (403 + ``Retry-After``) and primary rate limits (403 + ``X-RateLimit-Reset``); a
fault may strike after the request was applied (the client then sees an error for a write that landed).
Every request is logged for counting. Tests may call git directly; this file is test support only.
"""

from __future__ import annotations

import base64
import copy
import json
import os
import random
import re
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

from tests.helpers.ghapp import AppError, FakeApp, basic_token, git_http_backend

JSON = Any
# A commit's fields as ``git show -s`` / ``git log`` format them, NUL-separated.
_COMMIT_FIELDS = "%T%x00%P%x00%an%x00%ae%x00%aI%x00%B"
_FULL_SHA = re.compile(r"[0-9a-f]{40}")
# A branch ref whose loose file or packed-refs line holds its value as is: components of plain characters,
# none starting with a dot or ending in ".lock" (git refuses those names; anything else goes to git itself).
_PLAIN_BRANCH = re.compile(r"refs/heads(?:/(?!\.)[A-Za-z0-9_.-]*[A-Za-z0-9_-](?<!\.lock))+")
ZERO_TIME = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _immutable(rev: str) -> bool:
    """Whether ``rev`` names the same object for ever once it names one: a full SHA, or a parent, peel or
    path of one."""
    return _FULL_SHA.match(rev) is not None and rev[40:41] in ("", "^", ":")


class ApiError(Exception):
    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


@dataclass(frozen=True)
class Fault:
    """One injected failure. ``kind``: "5xx", "secondary" (403 with ``Retry-After``), "secondary-bare"
    (403 naming a secondary rate limit, no ``Retry-After``, as GitHub often answers), "429" (no headers),
    "primary", "echo-auth" (a 500 whose message repeats the request's Authorization header, to prove
    clients scrub tokens) or "status" (``status`` and ``message`` as given). ``after``: apply the request
    first, then fail (a write that landed although the client saw an error)."""

    kind: str = "5xx"
    after: bool = False
    wait_s: int = 0
    status: int = 0
    message: str = ""


@dataclass
class LoggedRequest:
    method: str
    path: str
    query: dict[str, str]
    user: str | None
    status: int = 0
    fault: str | None = None
    token: str = ""
    """The token git sent (smart HTTP requests only)."""


@dataclass
class IssueRecord:
    number: int
    title: str
    body: str
    user: str
    created_at: str
    state: str = "open"
    labels: list[str] = field(default_factory=list)
    labelled: list[tuple[str, str, str]] = field(default_factory=list)
    """(who, label, when) of every ``labeled`` event, oldest first."""
    updated_at: str = ""
    """The last change: an edit (:meth:`FakeGitHub.edit_issue`), a comment or a label; else created_at."""


@dataclass
class PullRecord:
    number: int
    title: str
    body: str
    head: str
    base: str
    user: str
    created_at: str
    state: str = "open"
    merged: bool = False
    merge_commit_sha: str | None = None
    frozen_head_sha: str | None = None
    shown_head: str | None = None
    """The head answers show (it trails the branch while ``FakeGitHub.head_lag_reads`` lasts)."""
    lag_left: int | None = None
    closed_at: str | None = None
    merged_at: str | None = None
    head_repo: str | None = None
    """``owner/name`` of a fork the head branch lives in (None: this repository). The head's commits are
    read from the bare repository's branch ``head``, as GitHub keeps a fork PR's head in the base repo."""


@dataclass
class CommentRecord:
    id: int
    issue: int
    user: str
    body: str
    created_at: str
    updated_at: str


@dataclass
class StatusRecord:
    id: int
    sha: str
    state: str
    description: str
    context: str
    target_url: str | None
    user: str
    created_at: str


@dataclass
class FakeGitHub:
    """The server's state and behaviour; start it with :func:`serve`."""

    bare: Path
    repo: str = "acme/widgets"
    tokens: dict[str, str] = field(default_factory=dict)
    """token -> user login."""
    permissions: dict[str, str] = field(default_factory=dict)
    """login -> admin | write | read (missing = none)."""
    installations: frozenset[str] = frozenset()
    """Logins of GitHub App installations (``GITHUB_TOKEN``'s ``github-actions[bot]`` is one): ``GET /user``
    answers them 403, as GitHub does."""
    viewer_denied: frozenset[str] = frozenset()
    """Logins whose GraphQL ``viewer`` query answers "Resource not accessible by integration"."""
    token_permissions: dict[str, dict[str, str]] = field(default_factory=dict)
    """token -> {resource: "read" | "write"} (contents, pull_requests, issues, statuses, actions), the
    ``permissions:`` of an installation token; a token not listed may do everything its login may. A
    resource missing from the mapping is "none". See :func:`_needed_permission`."""
    private: bool = True
    """A private repository: a non-collaborator's permission is ``none`` (public: ``read``)."""
    rate_limit: int = 5000
    """Requests per token and hour (``X-RateLimit-*`` on every answer; then 403 until the reset)."""
    default_branch: str = "main"
    base_url: str = ""
    faults: list[Fault | None] = field(default_factory=list)
    """Consumed one per request, before any random fault."""
    fault_rate: float = 0.0
    fault_kinds: tuple[str, ...] = ("5xx", "secondary")
    fault_after_rate: float = 0.5
    """Of random faults on writes, the fraction that strike after the write was applied."""
    seed: int = 0
    contents_limit: int = 1024 * 1024
    """Files larger than this come without content from GET contents (GitHub: 1 MB)."""
    head_lag_reads: int = 0
    """After a push, this many reads of the PR still show its old head (GitHub updates it asynchronously)."""
    files_limit: int = 3000
    """The most files GitHub lists for a pull request (``changed_files`` still counts them all)."""
    compare_files_limit: int = 300
    """The most files GitHub names in a comparison (``GET /compare/{base}...{head}``)."""
    actions_may_open_prs: bool = True
    """The repository setting "Allow GitHub Actions to create and approve pull requests" (off by default
    on GitHub): when False, the bot (``GITHUB_TOKEN``) gets 403 on opening a pull request."""
    app: FakeApp | None = None
    """A GitHub App installed on the repository (tests/helpers/ghapp.py): JWTs, minted tokens that expire."""
    dispatches: list[tuple[str, str, str]] = field(default_factory=list)
    """(workflow file, ref, who) of every ``workflow_dispatch`` GitHub accepted."""
    rulesets: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """branch -> the rules a ruleset enforces on it: a write there through the API is refused as GitHub
    refuses it, 409 (contents) or 422 (refs) "Repository rule violations found" and the rules, one a line."""
    mangle: dict[str, Callable[[JSON], JSON]] = field(default_factory=dict)
    """route name -> a function rewriting that route's JSON answer (malformed-response tests)."""
    requests: list[LoggedRequest] = field(default_factory=list)
    pulls: dict[int, PullRecord] = field(default_factory=dict)
    comments: dict[int, CommentRecord] = field(default_factory=dict)
    issues: dict[int, IssueRecord] = field(default_factory=dict)
    statuses: list[StatusRecord] = field(default_factory=list)
    _next_number: int = 1
    _next_id: int = 1000
    _ticks: int = 0
    _used: dict[tuple[str, int], int] = field(default_factory=dict)
    _lock: threading.RLock = field(default_factory=threading.RLock)
    _rng: random.Random = field(default_factory=random.Random)
    _commits: dict[str, tuple[str, str, str, str, str, str]] = field(default_factory=dict)
    """sha -> (tree, parents, author name, email, date, message) of a commit this repository was asked
    about: a commit never changes, and each API read of commits cost a git process per commit."""
    _found: dict[str, str] = field(default_factory=dict)
    """A revision named from a full SHA (``<sha>^{commit}``, ``<sha>:<path>``) -> the object it names, once
    found: objects never change, and the server's rev-parse processes were a fifth of a GitHub test's."""
    _diffs: dict[str, str] = field(default_factory=dict)
    """``<base>...<head>`` of two full SHAs -> its ``git diff --name-status`` (each page of a PR's files
    asked for it again)."""
    _walks: dict[tuple[str, str], tuple[str, int, int, list[str]]] = field(default_factory=dict)
    """(base, head) commits -> their merge base, behind and ahead counts and the commits from base to head:
    the same two commits were compared up to ten times in a test, three git processes each time."""

    def __post_init__(self) -> None:
        self._rng.seed(self.seed)

    def copy_onto(self, bare: Path) -> FakeGitHub:
        """A fake in this one's state serving ``bare`` (a copy of this one's repository), to serve anew: a
        world built once (a published wave, say) that each test then changes on its own."""
        with self._lock:
            state = {name: copy.deepcopy(getattr(self, name)) for name in _STATE}
            return replace(self, bare=bare, base_url="", _lock=threading.RLock(),
                           _rng=copy.deepcopy(self._rng), _commits=dict(self._commits),
                           _found=dict(self._found), _diffs=dict(self._diffs),
                           _walks=dict(self._walks), **state)

    # ---- helpers for tests (direct state changes, no HTTP) ----

    def add_comment(self, issue: int, user: str, body: str) -> CommentRecord:
        with self._lock:
            now = self._now()
            comment = CommentRecord(self._new_id(), issue, user, body, now, now)
            self.comments[comment.id] = comment
            if issue in self.issues:
                # GitHub counts a comment as a change of its issue.
                self.issues[issue].updated_at = now
            return comment

    def open_issue(self, title: str, body: str, user: str, labels: tuple[str, ...] = (),
                   labelled_by: str | None = None) -> IssueRecord:
        """An issue filed by ``user``; each of ``labels`` put on by ``labelled_by`` (default: ``user``)."""
        with self._lock:
            now = self._now()
            issue = IssueRecord(self._next_number, title, body, user, now, labels=list(labels),
                                labelled=[(labelled_by or user, label, now) for label in labels])
            self._next_number += 1
            self.issues[issue.number] = issue
            return issue

    def label_issue(self, number: int, label: str, by: str) -> None:
        with self._lock:
            issue = self.issues[number]
            if label not in issue.labels:
                issue.labels.append(label)
            issue.updated_at = self._now()
            issue.labelled.append((by, label, issue.updated_at))

    def edit_issue(self, number: int, body: str) -> None:
        """The issue's text edited (by its author, say): it changes ``updated_at``, no event."""
        with self._lock:
            self.issues[number].body = body
            self.issues[number].updated_at = self._now()

    def issue_comments(self, issue: int) -> list[CommentRecord]:
        with self._lock:
            return [c for c in self.comments.values() if c.issue == issue]

    def latest_status(self, sha: str, context: str) -> StatusRecord | None:
        with self._lock:
            mine = [s for s in self.statuses if s.sha == sha and s.context == context]
            return mine[-1] if mine else None

    def count(self, method: str | None = None, path_contains: str = "") -> int:
        with self._lock:
            return sum(1 for r in self.requests
                       if (method is None or r.method == method) and path_contains in r.path)

    def set_faults(self, faults: list[Fault | None]) -> None:
        with self._lock:
            self.faults = list(faults)

    # ---- git plumbing on the bare repository ----

    def git(self, *args: str, input: str | None = None, env: dict[str, str] | None = None) -> str:
        proc = subprocess.run(["git", *args], cwd=self.bare, input=input, capture_output=True, text=True,
                              env={**os.environ, **(env or {})}, check=False)
        if proc.returncode != 0:
            raise ApiError(500, f"git {args[0]} failed: {proc.stderr.strip()}")
        return proc.stdout.rstrip("\n")

    def _rev(self, rev: str) -> str | None:
        """What ``git rev-parse --verify -q REV`` says, None where it fails; a plain branch read from its
        ref file (what git itself reads) and a revision of a full SHA answered once, without a process."""
        name, peel = rev.removesuffix("^{commit}"), rev.endswith("^{commit}")
        if _PLAIN_BRANCH.fullmatch(name) and (sha := self._read_ref(name)) != "":
            return sha and (self._rev(f"{sha}^{{commit}}") if peel else sha)
        if rev in self._found:
            return self._found[rev]
        proc = subprocess.run(["git", "rev-parse", "--verify", "-q", rev], cwd=self.bare,
                              capture_output=True, text=True, check=False)
        found = proc.stdout.strip() if proc.returncode == 0 else None
        if found and _immutable(rev):
            self._found[rev] = found
        return found

    def _read_ref(self, ref: str) -> str | None:
        """The SHA in ``ref``'s loose file, else its packed-refs line; None when it has neither, "" when its
        value is no SHA (a symbolic ref: git resolves it). A loose ref is replaced by a rename and packing
        writes packed-refs before it deletes the loose file, so no read between two writes misses one."""
        try:
            value = (self.bare / ref).read_text().strip()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            try:
                packed = (self.bare / "packed-refs").read_text()
            except FileNotFoundError:
                return None
            found = re.search(rf"^([0-9a-f]{{40}}) {re.escape(ref)}$", packed, re.MULTILINE)
            return found.group(1) if found else None
        return value if _FULL_SHA.fullmatch(value) else ""

    def _branch_sha(self, branch: str) -> str | None:
        return self._rev(f"refs/heads/{branch}^{{commit}}")

    def _resolve_ref(self, ref: str) -> str | None:
        for candidate in (f"refs/heads/{ref}^{{commit}}", f"{ref}^{{commit}}"):
            sha = self._rev(candidate)
            if sha:
                return sha
        return None

    def _commit_with_tree(self, parent: str, tree: str, message: str, branch: str) -> str:
        env = {"GIT_COMMITTER_DATE": self._now(), "GIT_AUTHOR_DATE": self._now()}
        commit = self.git("commit-tree", tree, "-p", parent, "-m", message, env=env)
        # The server lock serialises writers; the old value still guards against a racing `git push`.
        self.git("update-ref", f"refs/heads/{branch}", commit, parent)
        return commit

    def _edit_tree(self, parent: str, edits: dict[str, str | None]) -> str:
        """The tree of ``parent`` with ``edits`` (path -> blob sha, or None to delete) applied."""
        with tempfile.TemporaryDirectory() as tmp:
            env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
            self.git("read-tree", parent, env=env)
            # --index-info works without a work tree (this repository is bare); mode 0 removes.
            lines = "".join(f"100644 blob {blob}\t{path}\n" if blob else f"0 {'0' * 40}\t{path}\n"
                            for path, blob in edits.items())
            self.git("update-index", "--index-info", input=lines, env=env)
            return self.git("write-tree", env=env)

    # ---- response shapes ----

    def _now(self) -> str:
        # A logical clock: every state change is one second later, so "latest" is well defined.
        self._ticks += 1
        return (ZERO_TIME + timedelta(seconds=self._ticks)).strftime("%Y-%m-%dT%H:%M:%SZ")

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    @property
    def api_repo(self) -> str:
        return f"{self.base_url}/repos/{self.repo}"

    def _user_json(self, login: str) -> JSON:
        return {"login": login, "id": sum(map(ord, login)) * 7919, "node_id": f"U_{login}",
                "url": f"{self.base_url}/users/{quote(login)}",
                "html_url": f"https://github.example/{login}",
                "type": "Bot" if login.endswith("[bot]") else "User", "site_admin": False}

    def _repo_json(self, full_name: str | None = None) -> JSON:
        owner, name = (full_name or self.repo).split("/")
        return {"id": 4242 if full_name is None else 4343, "node_id": "R_4242", "name": name,
                "full_name": full_name or self.repo, "private": False,
                "owner": self._user_json(owner), "url": self.api_repo,
                "html_url": f"https://github.example/{self.repo}", "default_branch": self.default_branch,
                "pulls_url": f"{self.api_repo}/pulls{{/number}}",
                "statuses_url": f"{self.api_repo}/statuses/{{sha}}",
                "contents_url": f"{self.api_repo}/contents/{{+path}}"}

    def _head_sha(self, pr: PullRecord) -> str:
        actual = pr.frozen_head_sha or self._branch_sha(pr.head) or ""
        if not self.head_lag_reads or pr.shown_head is None or actual == pr.shown_head:
            pr.shown_head, pr.lag_left = actual, None
            return actual
        # GitHub moves a PR's head some time after the push: the old one shows for a few more reads.
        pr.lag_left = self.head_lag_reads if pr.lag_left is None else pr.lag_left - 1
        if pr.lag_left > 0:
            return pr.shown_head
        pr.shown_head, pr.lag_left = actual, None
        return actual

    def _pull_json(self, pr: PullRecord) -> JSON:
        url = f"{self.api_repo}/pulls/{pr.number}"
        owner = self.repo.split("/")[0]
        head_owner = (pr.head_repo or self.repo).split("/")[0]
        return {
            "url": url, "id": 900000 + pr.number, "node_id": f"PR_{pr.number}",
            "html_url": f"https://github.example/{self.repo}/pull/{pr.number}",
            "issue_url": f"{self.api_repo}/issues/{pr.number}", "number": pr.number, "state": pr.state,
            "locked": False, "title": pr.title, "user": self._user_json(pr.user), "body": pr.body,
            "created_at": pr.created_at, "updated_at": pr.created_at, "closed_at": pr.closed_at,
            "merged_at": pr.merged_at, "merge_commit_sha": pr.merge_commit_sha, "draft": False,
            "commits_url": f"{url}/commits", "comments_url": f"{self.api_repo}/issues/{pr.number}/comments",
            "statuses_url": f"{self.api_repo}/statuses/{self._head_sha(pr)}",
            "head": {"label": f"{head_owner}:{pr.head}", "ref": pr.head, "sha": self._head_sha(pr),
                     "user": self._user_json(head_owner), "repo": self._repo_json(pr.head_repo)},
            "base": {"label": f"{owner}:{pr.base}", "ref": pr.base, "sha": self._branch_sha(pr.base) or "",
                     "user": self._user_json(owner), "repo": self._repo_json()},
            "merged": pr.merged, "mergeable": pr.state == "open", "mergeable_state": "clean",
        }

    def _comment_json(self, c: CommentRecord) -> JSON:
        return {"id": c.id, "node_id": f"IC_{c.id}", "url": f"{self.api_repo}/issues/comments/{c.id}",
                "html_url": f"https://github.example/{self.repo}/pull/{c.issue}#issuecomment-{c.id}",
                "issue_url": f"{self.api_repo}/issues/{c.issue}", "body": c.body,
                "user": self._user_json(c.user), "created_at": c.created_at, "updated_at": c.updated_at,
                "author_association": "MEMBER"}

    def _status_json(self, s: StatusRecord) -> JSON:
        return {"id": s.id, "node_id": f"SC_{s.id}", "url": f"{self.api_repo}/statuses/{s.sha}",
                "state": s.state, "description": s.description, "target_url": s.target_url,
                "context": s.context, "creator": self._user_json(s.user),
                "created_at": s.created_at, "updated_at": s.created_at}

    def _content_json(self, path: str, blob: str, ref: str, with_content: bool) -> JSON:
        url = f"{self.api_repo}/contents/{quote(path)}?ref={quote(ref)}"
        out: JSON = {"type": "file", "name": path.rsplit("/", 1)[-1], "path": path, "sha": blob,
                     "size": int(self.git("cat-file", "-s", blob)), "url": url,
                     "git_url": f"{self.api_repo}/git/blobs/{blob}",
                     "html_url": f"https://github.example/{self.repo}/blob/{ref}/{path}",
                     "download_url": None, "_links": {"self": url}}
        if with_content and out["size"] > self.contents_limit:
            # Like GitHub for files over 1 MB: no content here, the blob API has it.
            out["content"], out["encoding"] = "", "none"
        elif with_content:
            raw = self._blob_bytes(blob)
            encoded = base64.b64encode(raw).decode()
            # GitHub wraps the base64 text at 60 columns.
            out["content"] = "\n".join(encoded[i:i + 60] for i in range(0, len(encoded), 60)) + "\n"
            out["encoding"] = "base64"
        return out

    def _blob_bytes(self, sha: str) -> bytes:
        proc = subprocess.run(["git", "cat-file", "blob", sha], cwd=self.bare, capture_output=True,
                              check=False)
        if proc.returncode != 0:
            raise ApiError(404, "Not Found")
        return proc.stdout

    def _log(self, *revisions: str) -> list[str]:
        """The SHAs ``git log REVISIONS`` lists, in its order, each commit's fields read in the same git
        process (one process for a list of commits, not one per commit)."""
        out = self.git("log", "-z", f"--format=%H%x00{_COMMIT_FIELDS}", *revisions)
        fields = out.removesuffix("\0").split("\0") if out else []  # -z: each commit ends in a NUL
        shas = fields[::7]
        for i, sha in enumerate(shas):
            tree, parents, name, email, date, message = fields[7 * i + 1:7 * i + 7]
            self._commits[sha] = (tree, parents, name, email, date, message)
        return shas

    def _git_commit_json(self, sha: str) -> JSON:
        known = self._commits.get(sha)
        if known is None:
            tree, parents, name, email, date, message = self.git(
                "show", "-s", f"--format={_COMMIT_FIELDS}", sha).split("\0")
            known = (tree, parents, name, email, date, message)
            if _FULL_SHA.fullmatch(sha):  # not a name or an abbreviation, which may come to mean another
                self._commits[sha] = known
        tree, parents, name, email, date, message = known
        person = {"name": name, "email": email, "date": date}
        return {"sha": sha, "node_id": f"C_{sha}", "url": f"{self.api_repo}/git/commits/{sha}",
                "html_url": f"https://github.example/{self.repo}/commit/{sha}", "author": person,
                "committer": person, "message": message.rstrip("\n"),
                "tree": {"sha": tree, "url": f"{self.api_repo}/git/trees/{tree}"},
                "parents": [{"sha": p, "url": f"{self.api_repo}/git/commits/{p}"} for p in parents.split()]}

    def _ref_json(self, ref: str, sha: str) -> JSON:
        return {"ref": f"refs/{ref}", "node_id": f"REF_{ref}", "url": f"{self.api_repo}/git/refs/{ref}",
                "object": {"sha": sha, "type": "commit", "url": f"{self.api_repo}/git/commits/{sha}"}}

    # ---- paging ----

    def _page(self, items: list[JSON], query: dict[str, str], path: str) -> tuple[list[JSON], dict[str, str]]:
        per_page = min(int(query.get("per_page", "30")), 100)
        page = max(int(query.get("page", "1")), 1)
        last = max((len(items) + per_page - 1) // per_page, 1)
        links = []

        def link(n: int, rel: str) -> str:
            params = {**query, "per_page": str(per_page), "page": str(n)}
            qs = "&".join(f"{k}={quote(v, safe='')}" for k, v in params.items())
            return f'<{self.base_url}{path}?{qs}>; rel="{rel}"'

        if page < last:
            links += [link(page + 1, "next"), link(last, "last")]
        if page > 1:
            links += [link(1, "first"), link(page - 1, "prev")]
        headers = {"Link": ", ".join(links)} if links else {}
        return items[(page - 1) * per_page: page * per_page], headers

    # ---- request handling ----

    def handle(self, method: str, raw_path: str, headers: dict[str, str], body: bytes
               ) -> tuple[int, dict[str, str], JSON]:
        split = urlsplit(raw_path)
        query = {k: v[-1] for k, v in parse_qs(split.query).items()}
        with self._lock:
            if self.app is not None and self._is_app_route(split.path):
                return self._app_request(method, split.path, headers)
            user = self._authenticate(headers)
            entry = LoggedRequest(method, split.path, query, user)
            self.requests.append(entry)
            fault = self._pick_fault(method)
            limits = self._rate_headers(headers) if user is not None else {}
            try:
                if user is None:
                    raise ApiError(401, "Bad credentials")
                if limits.get("X-RateLimit-Remaining") == "-1":
                    raise ApiError(403, f"API rate limit exceeded for user ID {self._user_json(user)['id']}.",
                                   {**limits, "X-RateLimit-Remaining": "0"})
                self._check_permission(method, split.path, headers)
                if fault and not fault.after:
                    raise self._fault_error(fault, headers)
                if method == "DELETE" and split.path == "/installation/token":
                    status, extra, payload = self._revoke(headers)
                else:
                    status, extra, payload = self._dispatch(method, split.path, query, body, user)
                if fault:
                    raise self._fault_error(fault, headers)
            except ApiError as exc:
                entry.status = exc.status
                entry.fault = fault.kind if fault else None
                doc = "https://docs.github.com/rest"
                return exc.status, {**limits, **exc.headers}, {"message": exc.message,
                                                               "documentation_url": doc}
            entry.status = status
            return status, {**limits, **extra}, payload

    # ---- strictness: rate-limit headers and installation token permissions ----

    def _rate_headers(self, headers: dict[str, str]) -> dict[str, str]:
        """GitHub's ``X-RateLimit-*`` headers for this request (counted per token and hour);
        ``Remaining`` -1 says the limit is spent."""
        token = headers.get("authorization", "").partition(" ")[2].strip()
        window = int(time.time()) // 3600
        used = self._used.get((token, window), 0) + 1
        self._used[(token, window)] = used
        return {"X-RateLimit-Limit": str(self.rate_limit),
                "X-RateLimit-Remaining": str(max(self.rate_limit - used, -1)),
                "X-RateLimit-Used": str(min(used, self.rate_limit)),
                "X-RateLimit-Reset": str((window + 1) * 3600), "X-RateLimit-Resource": "core"}

    def _check_permission(self, method: str, path: str, headers: dict[str, str]) -> None:
        token = headers.get("authorization", "").partition(" ")[2].strip()
        granted = self.token_permissions.get(token)
        needed = _needed_permission(method, path)
        if granted is None or needed is None:
            return
        resource, level = needed
        have = granted.get(resource, "none")
        if have == "none" or (level == "write" and have != "write"):
            raise ApiError(403, "Resource not accessible by integration",
                           {"X-Accepted-GitHub-Permissions": f"{resource}={level}"})

    def _authenticate(self, headers: dict[str, str]) -> str | None:
        auth = headers.get("authorization", "")
        scheme, _, token = auth.partition(" ")
        if scheme.lower() not in ("token", "bearer"):
            return None
        return self.token_user(token.strip())

    def token_user(self, token: str) -> str | None:
        """Whose ``token`` is; None for an unknown, expired or revoked one (GitHub: 401 Bad credentials)."""
        if self.app is not None and self.app.expired(token):
            return None
        return self.tokens.get(token)

    # ---- a GitHub App: JWT routes, minted tokens, revocation (tests/helpers/ghapp.py) ----

    def _is_app_route(self, path: str) -> bool:
        return path.startswith("/app/") or path == f"/repos/{self.repo}/installation"

    def _app_request(self, method: str, path: str, headers: dict[str, str]
                     ) -> tuple[int, dict[str, str], JSON]:
        assert self.app is not None
        entry = LoggedRequest(method, path, {}, None)
        self.requests.append(entry)
        scheme, _, jwt_token = headers.get("authorization", "").partition(" ")
        minted_at = f"/app/installations/{self.app.installation_id}/access_tokens"
        try:
            if scheme.lower() != "bearer":
                raise AppError(401, "A JSON web token could not be decoded")
            self.app.check_jwt(jwt_token.strip())
            entry.user = f"app:{self.app.app_id}"
            if method == "GET" and path == f"/repos/{self.repo}/installation":
                status, payload = 200, self.app.installation_json(self.base_url, self.repo.split("/")[0])
            elif method == "POST" and path == minted_at:
                token, expires = self.app.mint()
                self.tokens[token] = self.app.login
                status, payload = 201, self.app.token_json(token, expires)
            else:
                raise AppError(404, "Not Found")
        except AppError as exc:
            status, payload = exc.status, {"message": exc.message,
                                           "documentation_url": "https://docs.github.com/rest"}
        entry.status = status
        return status, {}, payload

    def _revoke(self, headers: dict[str, str]) -> tuple[int, dict[str, str], JSON]:
        token = headers.get("authorization", "").partition(" ")[2].strip()
        if self.app is None or token not in self.app.minted:
            raise ApiError(403, "Resource not accessible by integration")
        self.tokens.pop(token, None)
        self.app.revoked.append(token)
        return 204, {}, None

    def _pick_fault(self, method: str) -> Fault | None:
        if self.faults:
            return self.faults.pop(0)
        if self.fault_rate and self._rng.random() < self.fault_rate:
            kind = self._rng.choice(self.fault_kinds)
            after = method != "GET" and self._rng.random() < self.fault_after_rate
            return Fault(kind=kind, after=after)
        return None

    def _fault_error(self, fault: Fault, headers: dict[str, str]) -> ApiError:
        if fault.kind == "secondary":
            return ApiError(403, "You have exceeded a secondary rate limit. Please wait a few minutes "
                                 "before you try again.", {"Retry-After": str(fault.wait_s)})
        if fault.kind == "primary":
            reset = int(time.time()) + fault.wait_s
            return ApiError(403, "API rate limit exceeded for user ID 1.",
                            {"X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": "0",
                             "X-RateLimit-Reset": str(reset), "X-RateLimit-Resource": "core"})
        if fault.kind == "secondary-bare":
            return ApiError(403, "You have exceeded a secondary rate limit. Please wait a few minutes "
                                 "before you try again.")
        if fault.kind == "429":
            return ApiError(429, "Too Many Requests")
        if fault.kind == "status":
            return ApiError(fault.status, fault.message)
        if fault.kind == "echo-auth":
            return ApiError(500, f"upstream refused header Authorization: {headers.get('authorization')}")
        return ApiError(502, "Server Error")

    def _dispatch(self, method: str, path: str, query: dict[str, str], body: bytes, user: str
                  ) -> tuple[int, dict[str, str], JSON]:
        data: JSON = json.loads(body) if body else {}
        if path == "/graphql" and method == "POST":
            if "viewer" not in str(data.get("query")):
                return 200, {}, {"errors": [{"type": "UNSUPPORTED", "message": "only viewer { login }"}]}
            if user in self.viewer_denied:
                return 200, {}, {"data": None, "errors": [
                    {"type": "FORBIDDEN", "path": ["viewer"],
                     "message": "Resource not accessible by integration"}]}
            return self._answer("graphql", 200, {}, {"data": {"viewer": {"login": user}}})
        if path == "/user" and method == "GET":
            if user in self.installations:
                raise ApiError(403, "Resource not accessible by integration")
            return self._answer("user", 200, {}, self._user_json(user))
        if path.startswith("/users/") and method == "GET":
            return self._answer("users", 200, {}, self._user_json(unquote(path[len("/users/"):])))
        prefix = f"/repos/{self.repo}"
        if not (path == prefix or path.startswith(prefix + "/")):
            raise ApiError(404, "Not Found")
        rest = path[len(prefix):]
        for route_method, pattern, name, handler in self._routes():
            match = re.fullmatch(pattern, rest)
            if match and route_method == method:
                status, extra, payload = handler(query=query, data=data, user=user, path=path,
                                                 **match.groupdict())
                return self._answer(name, status, extra, payload)
        raise ApiError(404, "Not Found")

    def _answer(self, name: str, status: int, extra: dict[str, str], payload: JSON
                ) -> tuple[int, dict[str, str], JSON]:
        if name in self.mangle:
            payload = self.mangle[name](payload)
        return status, extra, payload

    def _routes(self) -> Iterator[tuple[str, str, str, Callable[..., tuple[int, dict[str, str], JSON]]]]:
        yield "GET", r"", "repo", lambda **kw: (200, {}, self._repo_json())
        yield "GET", r"/pulls", "pulls", self._list_pulls
        yield "POST", r"/pulls", "create pull", self._create_pull
        yield "GET", r"/pulls/(?P<number>\d+)", "pull", self._get_pull
        yield "PATCH", r"/pulls/(?P<number>\d+)", "update pull", self._update_pull
        yield "PUT", r"/pulls/(?P<number>\d+)/merge", "merge", self._merge_pull
        yield "GET", r"/pulls/(?P<number>\d+)/files", "files", self._pull_files
        yield "GET", r"/issues", "issues", self._list_issues
        yield "GET", r"/issues/(?P<number>\d+)", "issue", self._get_issue
        yield "GET", r"/issues/(?P<number>\d+)/events", "issue events", self._issue_events
        yield "GET", r"/issues/(?P<number>\d+)/comments", "comments", self._list_comments
        yield "POST", r"/issues/(?P<number>\d+)/comments", "create comment", self._create_comment
        yield "GET", r"/issues/comments/(?P<cid>\d+)", "comment", self._get_comment
        yield "PATCH", r"/issues/comments/(?P<cid>\d+)", "edit comment", self._edit_comment
        yield "POST", r"/statuses/(?P<sha>[0-9a-f]{40})", "create status", self._create_status
        yield "GET", r"/commits/(?P<ref>.+)/status", "combined status", self._combined_status
        yield "GET", r"/commits", "commits", self._list_commits
        yield "GET", r"/collaborators/(?P<login>[^/]+)/permission", "permission", self._permission
        yield "GET", r"/contents/(?P<file>.+)", "get contents", self._get_contents
        yield "PUT", r"/contents/(?P<file>.+)", "put contents", self._put_contents
        yield "DELETE", r"/contents/(?P<file>.+)", "delete contents", self._delete_contents
        yield "GET", r"/git/ref/(?P<ref>.+)", "ref", self._get_ref
        yield "GET", r"/git/matching-refs/(?P<ref>.+)", "matching refs", self._matching_refs
        yield "PATCH", r"/git/refs?/(?P<ref>.+)", "update ref", self._update_ref
        yield "POST", r"/git/trees", "create tree", self._create_tree
        yield "GET", r"/git/commits/(?P<sha>[0-9a-f]{40})", "git commit", self._get_git_commit
        yield "GET", r"/compare/(?P<base>.+?)\.\.\.(?P<head>.+)", "compare", self._compare
        yield "GET", r"/git/blobs/(?P<sha>[0-9a-f]{40})", "blob", self._get_blob
        yield "POST", r"/git/commits", "create commit", self._create_commit
        yield ("POST", r"/actions/workflows/(?P<workflow>[^/]+)/dispatches", "dispatch",
               self._dispatch_workflow)

    def _pull(self, number: str) -> PullRecord:
        pr = self.pulls.get(int(number))
        if pr is None:
            raise ApiError(404, "Not Found")
        return pr

    def _list_pulls(self, query: dict[str, str], path: str, **_: Any) -> tuple[int, dict[str, str], JSON]:
        state = query.get("state", "open")
        owner = self.repo.split("/")[0]
        found = [p for p in sorted(self.pulls.values(), key=lambda p: -p.number)
                 if (state == "all" or p.state == state)
                 and ("head" not in query or query["head"] == f"{(p.head_repo or owner).split('/')[0]}:"
                                                              f"{p.head}")
                 and ("base" not in query or query["base"] == p.base)]
        # GitHub's list answers are "simple" pull requests, without merged/mergeable.
        simple = [{k: v for k, v in self._pull_json(p).items() if not k.startswith(("merged", "mergeable"))}
                  for p in found]
        page, headers = self._page(simple, query, path)
        return 200, headers, page

    def _create_pull(self, data: JSON, user: str, **_: Any) -> tuple[int, dict[str, str], JSON]:
        if user == BOT and not self.actions_may_open_prs:
            raise ApiError(403, "GitHub Actions is not permitted to create or approve pull requests.")
        head, base = data.get("head", ""), data.get("base", "")
        head = head.split(":", 1)[-1]
        if not self._branch_sha(head) or not self._branch_sha(base):
            raise ApiError(422, "Validation Failed")
        if any(p.head == head and p.base == base and p.state == "open" and p.head_repo is None
               for p in self.pulls.values()):
            raise ApiError(422, f"Validation Failed: A pull request already exists for {head}.")
        pr = PullRecord(self._next_number, data.get("title", ""), data.get("body") or "", head, base, user,
                        self._now())
        self._next_number += 1
        self.pulls[pr.number] = pr
        return 201, {"Location": f"{self.api_repo}/pulls/{pr.number}"}, self._pull_json(pr)

    def open_fork_pr(self, head_repo: str, head: str, base: str, user: str) -> int:
        """A PR from branch ``head`` of the fork ``head_repo`` (test set-up; the branch is in the bare
        repository); its number."""
        with self._lock:
            pr = PullRecord(self._next_number, f"from {head_repo}", "", head, base, user, self._now(),
                            head_repo=head_repo)
            self._next_number += 1
            self.pulls[pr.number] = pr
            return pr.number

    def _get_pull(self, number: str, **_: Any) -> tuple[int, dict[str, str], JSON]:
        # A full pull request (not a list entry) counts its files.
        pr = self._pull(number)
        return 200, {}, {**self._pull_json(pr), "changed_files": len(self._file_entries(pr))}

    def _update_pull(self, number: str, data: JSON, **_: Any) -> tuple[int, dict[str, str], JSON]:
        pr = self._pull(number)
        pr.title = data.get("title", pr.title)
        pr.body = data.get("body", pr.body)
        if data.get("state") == "closed" and pr.state == "open":
            self.close(pr.number)
        return 200, {}, self._pull_json(pr)

    def close(self, number: int) -> None:
        """Close a PR without merging (also used directly by tests)."""
        with self._lock:
            pr = self.pulls[number]
            pr.frozen_head_sha = self._head_sha(pr)
            pr.state, pr.closed_at = "closed", self._now()

    def merge(self, number: int) -> str:
        """Merge a PR with a merge commit on its base branch; the merge commit's SHA."""
        with self._lock:
            pr = self.pulls[number]
            if pr.state != "open":
                raise ApiError(405, "Pull Request is not mergeable")
            head, base = self._head_sha(pr), self._branch_sha(pr.base) or ""
            proc = subprocess.run(["git", "merge-tree", "--write-tree", base, head], cwd=self.bare,
                                  capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                raise ApiError(405, "Pull Request is not mergeable")
            tree = proc.stdout.split()[0]
            env = {"GIT_COMMITTER_DATE": self._now(), "GIT_AUTHOR_DATE": self._now()}
            message = f"Merge pull request #{number} from {self.repo.split('/')[0]}/{pr.head}"
            sha = self.git("commit-tree", tree, "-p", base, "-p", head, "-m", message, env=env)
            self.git("update-ref", f"refs/heads/{pr.base}", sha, base)
            pr.frozen_head_sha = head
            pr.state, pr.merged, pr.merge_commit_sha = "closed", True, sha
            pr.closed_at = pr.merged_at = self._now()
            return sha

    def _merge_pull(self, number: str, **_: Any) -> tuple[int, dict[str, str], JSON]:
        sha = self.merge(int(number))
        return 200, {}, {"sha": sha, "merged": True, "message": "Pull Request successfully merged"}

    def _pull_files(self, number: str, query: dict[str, str], path: str, **_: Any
                    ) -> tuple[int, dict[str, str], JSON]:
        # GitHub lists at most 3,000 files of a pull request; its ``changed_files`` counts them all.
        page, headers = self._page(self._file_entries(self._pull(number))[:self.files_limit], query, path)
        return 200, headers, page

    def _file_entries(self, pr: PullRecord) -> list[JSON]:
        head = self._head_sha(pr)
        # For a merged PR GitHub keeps the diff against the base it was opened on; the merge's first
        # parent stands in for it here.
        base = f"{pr.merge_commit_sha}^1" if pr.merged else (self._branch_sha(pr.base) or "")
        return self._diff_entries(base, head)

    def _diff_entries(self, base: str, head: str) -> list[JSON]:
        """The file entries of ``base...head`` (from their merge base to ``head``), as GitHub lists them."""
        between = f"{base}...{head}"
        out = self._diffs.get(between)
        if out is None:
            out = self.git("diff", "--name-status", "-z", "-M", between)
            if _immutable(base) and _immutable(head):
                self._diffs[between] = out
        fields = out.split("\0") if out else []
        files: list[JSON] = []
        names = {"A": "added", "M": "modified", "D": "removed", "R": "renamed", "T": "changed"}
        i = 0
        while i < len(fields) and fields[i]:
            code = fields[i]
            entry: JSON = {"status": names.get(code[0], "modified")}
            if code[0] in "RC":
                entry["previous_filename"], entry["filename"] = fields[i + 1], fields[i + 2]
                i += 3
            else:
                entry["filename"] = fields[i + 1]
                i += 2
            entry.update({"sha": head, "additions": 1, "deletions": 0, "changes": 1,
                          "blob_url": f"https://github.example/{self.repo}/blob/{head}/{entry['filename']}",
                          "raw_url": f"https://github.example/{self.repo}/raw/{head}/{entry['filename']}",
                          "contents_url": f"{self.api_repo}/contents/{quote(entry['filename'])}?ref={head}"})
            files.append(entry)
        return files

    def _issue_json(self, number: int) -> JSON:
        """Issue ``number`` as the issues API shows it; a pull request is an issue there too."""
        pr = self.pulls.get(number)
        if pr is not None:
            issue = IssueRecord(pr.number, pr.title, pr.body, pr.user, pr.created_at, pr.state)
        else:
            issue = self._issue(str(number))
        url = f"{self.api_repo}/issues/{number}"
        labels = [{"id": sum(map(ord, name)), "node_id": f"LA_{name}", "name": name,
                   "url": f"{self.api_repo}/labels/{name}", "color": "ededed", "default": False,
                   "description": None}
                  for name in issue.labels]
        found: JSON = {
            "url": url, "repository_url": self.api_repo, "labels_url": f"{url}/labels{{/name}}",
            "comments_url": f"{url}/comments", "events_url": f"{url}/events",
            "html_url": f"https://github.example/{self.repo}/issues/{number}", "id": 700000 + number,
            "node_id": f"I_{number}", "number": number, "title": issue.title,
            "user": self._user_json(issue.user), "labels": labels, "state": issue.state, "locked": False,
            "assignee": None, "assignees": [], "milestone": None,
            "comments": len(self.issue_comments(number)), "created_at": issue.created_at,
            "updated_at": issue.updated_at or issue.created_at, "closed_at": None,
            "author_association": "NONE", "body": issue.body}
        if pr is not None:
            found["pull_request"] = {"url": f"{self.api_repo}/pulls/{number}",
                                     "html_url": f"https://github.example/{self.repo}/pull/{number}"}
        return found

    def _issue(self, number: str) -> IssueRecord:
        issue = self.issues.get(int(number))
        if issue is None:
            raise ApiError(404, "Not Found")
        return issue

    def _thread(self, number: str) -> None:
        """Comments live on issues and pull requests alike."""
        if int(number) not in self.pulls:
            self._issue(number)

    def _list_issues(self, query: dict[str, str], path: str, **_: Any) -> tuple[int, dict[str, str], JSON]:
        state = query.get("state", "open")
        wanted = [name for name in query.get("labels", "").split(",") if name]
        numbers = sorted({*self.issues, *self.pulls}, reverse=query.get("direction", "desc") == "desc")
        found = [self._issue_json(n) for n in numbers]
        found = [i for i in found if (state == "all" or i["state"] == state)
                 and all(name in [label["name"] for label in i["labels"]] for name in wanted)]
        page, headers = self._page(found, query, path)
        return 200, headers, page

    def _get_issue(self, number: str, **_: Any) -> tuple[int, dict[str, str], JSON]:
        if int(number) not in self.pulls:
            self._issue(number)
        return 200, {}, self._issue_json(int(number))

    def _issue_events(self, number: str, query: dict[str, str], path: str, **_: Any
                      ) -> tuple[int, dict[str, str], JSON]:
        issue = self._issue(number)
        events: list[JSON] = [
            {"id": 800000 + n, "node_id": f"LE_{n}", "url": f"{self.api_repo}/issues/events/{800000 + n}",
             "actor": self._user_json(who), "event": "labeled", "commit_id": None, "commit_url": None,
             "created_at": at, "label": {"name": label, "color": "ededed"}}
            for n, (who, label, at) in enumerate(issue.labelled)]
        page, headers = self._page(events, query, path)
        return 200, headers, page

    def _list_comments(self, number: str, query: dict[str, str], path: str, **_: Any
                       ) -> tuple[int, dict[str, str], JSON]:
        self._thread(number)
        found = sorted((c for c in self.comments.values() if c.issue == int(number)), key=lambda c: c.id)
        page, headers = self._page([self._comment_json(c) for c in found], query, path)
        return 200, headers, page

    def _create_comment(self, number: str, data: JSON, user: str, **_: Any
                        ) -> tuple[int, dict[str, str], JSON]:
        self._thread(number)
        body = data.get("body")
        if not isinstance(body, str) or not body:
            raise ApiError(422, "Validation Failed")
        if len(body) > 65536:
            raise ApiError(422, "Validation Failed: body is too long (maximum is 65536 characters)")
        comment = self.add_comment(int(number), user, body)
        return 201, {"Location": f"{self.api_repo}/issues/comments/{comment.id}"}, self._comment_json(comment)

    def _comment(self, cid: str) -> CommentRecord:
        comment = self.comments.get(int(cid))
        if comment is None:
            raise ApiError(404, "Not Found")
        return comment

    def _get_comment(self, cid: str, **_: Any) -> tuple[int, dict[str, str], JSON]:
        return 200, {}, self._comment_json(self._comment(cid))

    def _edit_comment(self, cid: str, data: JSON, user: str, **_: Any) -> tuple[int, dict[str, str], JSON]:
        comment = self._comment(cid)
        if comment.user != user and self.permissions.get(user) != "admin":
            raise ApiError(403, "Resource not accessible by integration")
        if len(data.get("body", "")) > 65536:
            raise ApiError(422, "Validation Failed: body is too long (maximum is 65536 characters)")
        comment.body, comment.updated_at = data.get("body", comment.body), self._now()
        return 200, {}, self._comment_json(comment)

    def _create_status(self, sha: str, data: JSON, user: str, **_: Any) -> tuple[int, dict[str, str], JSON]:
        if data.get("state") not in ("error", "failure", "pending", "success") or not self._rev(sha):
            raise ApiError(422, "Validation Failed")
        status = StatusRecord(self._new_id(), sha, data["state"], data.get("description") or "",
                              data.get("context") or "default", data.get("target_url"), user, self._now())
        self.statuses.append(status)
        return 201, {}, self._status_json(status)

    def _combined_status(self, ref: str, **_: Any) -> tuple[int, dict[str, str], JSON]:
        sha = self._resolve_ref(ref)
        if sha is None:
            raise ApiError(404, "No commit found for SHA: " + ref)
        latest: dict[str, StatusRecord] = {}
        for s in self.statuses:
            if s.sha == sha:
                latest[s.context] = s
        states = {s.state for s in latest.values()}
        combined = ("failure" if states & {"failure", "error"} else
                    "pending" if "pending" in states or not states else "success")
        return 200, {}, {"state": combined, "sha": sha, "total_count": len(latest),
                         "statuses": [self._status_json(s) for s in latest.values()],
                         "repository": self._repo_json(), "commit_url": f"{self.api_repo}/commits/{sha}",
                         "url": f"{self.api_repo}/commits/{sha}/status"}

    def _list_commits(self, query: dict[str, str], path: str, **_: Any) -> tuple[int, dict[str, str], JSON]:
        sha = self._resolve_ref(query.get("sha", self.default_branch))
        if sha is None:
            raise ApiError(404, "Not Found")
        shas = self._log("--max-count=300", sha)
        commits = [{"sha": s, "url": f"{self.api_repo}/commits/{s}", "commit": self._git_commit_json(s)}
                   for s in shas]
        page, headers = self._page(commits, query, path)
        return 200, headers, page

    def _permission(self, login: str, **_: Any) -> tuple[int, dict[str, str], JSON]:
        login = unquote(login)
        # Any GitHub user gets an answer: a non-collaborator's permission is read (public) or none.
        permission = self.permissions.get(login) or ("none" if self.private else "read")
        return 200, {}, {"permission": permission, "role_name": permission, "user": self._user_json(login)}

    def _blob_at(self, ref: str, file: str) -> str | None:
        return self._rev(f"{ref}:{file}")

    def _get_contents(self, file: str, query: dict[str, str], **_: Any) -> tuple[int, dict[str, str], JSON]:
        file = unquote(file)
        ref = query.get("ref", self.default_branch)
        commit = self._resolve_ref(ref)
        blob = self._blob_at(commit, file) if commit else None
        if commit is None:
            raise ApiError(404, f"No commit found for the ref {ref}")
        if blob is None or self.git("cat-file", "-t", blob) != "blob":
            raise ApiError(404, "Not Found")
        return 200, {}, self._content_json(file, blob, ref, with_content=True)

    def _write_file(self, file: str, data: JSON, new_blob: str | None) -> tuple[int, dict[str, str], JSON]:
        branch = data.get("branch") or self.default_branch
        head = self._branch_sha(branch)
        if head is None:
            raise ApiError(404, f"Branch {branch} not found")
        self._check_rules(branch, 409)
        current = self._blob_at(head, file)
        given = data.get("sha")
        if current is not None and not given:
            raise ApiError(422, 'Invalid request.\n\n"sha" wasn\'t supplied.')
        if given and given != current:
            raise ApiError(409, f"{file} does not match {given}")
        if new_blob is None and current is None:
            raise ApiError(404, "Not Found")
        tree = self._edit_tree(head, {file: new_blob})
        commit = self._commit_with_tree(head, tree, data.get("message") or "", branch)
        content = self._content_json(file, new_blob, branch, with_content=False) if new_blob else None
        answer = {"content": content, "commit": self._git_commit_json(commit)}
        return (201 if current is None else 200), {}, answer

    def _dispatch_workflow(self, workflow: str, data: JSON, user: str, **_: Any
                           ) -> tuple[int, dict[str, str], JSON]:
        """GitHub reads the workflow file on the ref it is asked to run on: no such file is 404, no
        ``workflow_dispatch`` trigger in it (or no such ref) is 422."""
        workflow, ref = unquote(workflow), str(data.get("ref") or "")
        if self._blob_at(self.default_branch, f".github/workflows/{workflow}") is None:
            raise ApiError(404, "Not Found")
        head = self._branch_sha(ref.removeprefix("refs/heads/"))
        if head is None:
            raise ApiError(422, f"No ref found for: {ref}")
        blob = self._blob_at(head, f".github/workflows/{workflow}")
        if blob is None or "workflow_dispatch" not in self._blob_bytes(blob).decode("utf-8", "replace"):
            raise ApiError(422, "Workflow does not have 'workflow_dispatch' trigger")
        self.dispatches.append((workflow, ref, user))
        return 204, {}, None

    def _check_rules(self, branch: str, status: int) -> None:
        rules = self.rulesets.get(branch)
        if rules:
            listed = "".join(f"{rule}\n\n" for rule in rules)
            raise ApiError(status, f"Repository rule violations found\n\n{listed}")

    def _put_contents(self, file: str, data: JSON, **_: Any) -> tuple[int, dict[str, str], JSON]:
        try:
            raw = base64.b64decode(data.get("content", ""), validate=True)
        except ValueError as exc:
            raise ApiError(422, "content is not valid Base64") from exc
        blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=self.bare, input=raw,
                              capture_output=True, check=True).stdout.decode().strip()
        return self._write_file(unquote(file), data, blob)

    def _delete_contents(self, file: str, data: JSON, **_: Any) -> tuple[int, dict[str, str], JSON]:
        return self._write_file(unquote(file), data, None)

    def _get_ref(self, ref: str, **_: Any) -> tuple[int, dict[str, str], JSON]:
        sha = self._rev(f"refs/{ref}")
        if sha is None:
            raise ApiError(404, "Not Found")
        return 200, {}, self._ref_json(ref, sha)

    def _matching_refs(self, ref: str, query: dict[str, str], path: str, **_: Any
                       ) -> tuple[int, dict[str, str], JSON]:
        ref = unquote(ref)  # PyGithub sends heads%2Fwavegit%2F
        listing = self.git("for-each-ref", "--format=%(refname) %(objectname)", f"refs/{ref}*")
        refs = [self._ref_json(name.removeprefix("refs/"), sha)
                for name, sha in (line.split() for line in listing.splitlines())
                if name.startswith(f"refs/{ref}")]
        page, headers = self._page(refs, query, path)
        return 200, headers, page

    def _update_ref(self, ref: str, data: JSON, **_: Any) -> tuple[int, dict[str, str], JSON]:
        old, new = self._rev(f"refs/{ref}"), data.get("sha", "")
        if old is None:
            raise ApiError(422, "Reference does not exist")
        if not self._rev(f"{new}^{{commit}}"):
            raise ApiError(422, "Object does not exist")
        is_ff = subprocess.run(["git", "merge-base", "--is-ancestor", old, new], cwd=self.bare,
                               check=False).returncode == 0
        if not is_ff and not data.get("force"):
            raise ApiError(422, "Update is not a fast forward")
        self._check_rules(ref.removeprefix("heads/"), 422)
        self.git("update-ref", f"refs/{ref}", new, old)
        return 200, {}, self._ref_json(ref, new)

    def _create_tree(self, data: JSON, **_: Any) -> tuple[int, dict[str, str], JSON]:
        base = data.get("base_tree")
        edits: dict[str, str | None] = {}
        for entry in data.get("tree", []):
            if "content" in entry:
                edits[entry["path"]] = self.git("hash-object", "-w", "--stdin", input=entry["content"])
            else:
                edits[entry["path"]] = entry.get("sha")
        if base is None or not self._rev(f"{base}^{{tree}}"):
            raise ApiError(422, "Invalid tree info")
        # read-tree accepts a tree-ish, so the base tree can be edited like a commit's tree.
        tree = self._edit_tree(base, edits)
        return 201, {}, {"sha": tree, "url": f"{self.api_repo}/git/trees/{tree}", "tree": [],
                         "truncated": False}

    def _get_git_commit(self, sha: str, **_: Any) -> tuple[int, dict[str, str], JSON]:
        if self._rev(f"{sha}^{{commit}}") is None:
            raise ApiError(404, "Not Found")
        return 200, {}, self._git_commit_json(sha)

    def _compare(self, base: str, head: str, **_: Any) -> tuple[int, dict[str, str], JSON]:
        """``GET /compare/{base}...{head}``: status, counts, commits and (at most 300) files, like GitHub."""
        base_sha, head_sha = self._resolve_ref(unquote(base)), self._resolve_ref(unquote(head))
        if base_sha is None or head_sha is None:
            raise ApiError(404, "Not Found")
        merge_base, behind, ahead, commits = self._walk(base_sha, head_sha)
        status = ("identical" if not ahead and not behind else "ahead" if not behind
                  else "behind" if not ahead else "diverged")
        url = f"{self.api_repo}/compare/{base}...{head}"
        return 200, {}, {
            "url": url, "html_url": f"https://github.example/{self.repo}/compare/{base}...{head}",
            "status": status, "ahead_by": ahead, "behind_by": behind, "total_commits": ahead,
            "base_commit": {"sha": base_sha}, "merge_base_commit": {"sha": merge_base},
            "commits": [{"sha": c, "commit": commit, "parents": commit["parents"]}
                        for c in commits[:250] for commit in [self._git_commit_json(c)]],
            "files": self._diff_entries(base_sha, head_sha)[:self.compare_files_limit]}

    def _walk(self, base: str, head: str) -> tuple[str, int, int, list[str]]:
        """The merge base of commits ``base`` and ``head``, how many commits only ``base`` has (behind) and
        only ``head`` has (ahead), and those of ``base..head`` oldest first."""
        walk = self._walks.get((base, head))
        if walk is None:
            merge_base = self.git("merge-base", base, head)
            # One walk counts both sides: base's own commits (behind), then head's (ahead).
            counted = self.git("rev-list", "--left-right", "--count", f"{base}...{head}")
            behind, ahead = map(int, counted.split())
            walk = merge_base, behind, ahead, self._log("--reverse", f"{base}..{head}")
            self._walks[base, head] = walk
        return walk

    def _get_blob(self, sha: str, **_: Any) -> tuple[int, dict[str, str], JSON]:
        raw = self._blob_bytes(sha)
        return 200, {}, {"sha": sha, "node_id": f"B_{sha}", "size": len(raw),
                         "url": f"{self.api_repo}/git/blobs/{sha}", "content": base64.b64encode(raw).decode(),
                         "encoding": "base64"}

    def _create_commit(self, data: JSON, **_: Any) -> tuple[int, dict[str, str], JSON]:
        args = ["commit-tree", data.get("tree", ""), "-m", data.get("message", "")]
        for parent in data.get("parents", []):
            args += ["-p", parent]
        env = {"GIT_COMMITTER_DATE": self._now(), "GIT_AUTHOR_DATE": self._now()}
        sha = self.git(*args, env=env)
        return 201, {}, self._git_commit_json(sha)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() != "chunked":
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""
        chunks: list[bytes] = []
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                self.rfile.readline()
                return b"".join(chunks)
            chunks.append(self.rfile.read(size))
            self.rfile.readline()

    def _serve(self) -> None:
        body = self._body()
        headers = {k.lower(): v for k, v in self.headers.items()}
        fake = self.server.fake
        if self.path.startswith(f"/{fake.repo}.git/"):
            self._git(fake, headers, body)
            return
        status, extra, payload = fake.handle(self.command, self.path, headers, body)
        raw = b"" if status == 204 else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(raw)))
        self.send_header("X-GitHub-Media-Type", "github.v3; format=json")
        for name, value in extra.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(raw)

    def _git(self, fake: FakeGitHub, headers: dict[str, str], body: bytes) -> None:
        """git's smart HTTP: a token only as GitHub takes one from git (Basic ``x-access-token:<token>``)."""
        split = urlsplit(self.path)
        token = basic_token(headers.get("authorization", ""))
        with fake._lock:
            user = fake.token_user(token) if token else None
            fake.requests.append(LoggedRequest(self.command, split.path, {}, user, 200 if user else 401,
                                               token=token or ""))
        if user is None:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="GitHub"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        rest = split.path[len(f"/{fake.repo}.git"):]
        answer = git_http_backend(fake.bare, rest, self.command, split.query, headers, body, user)
        self.send_response(answer.status)
        for name, value in answer.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(answer.body)))
        self.end_headers()
        self.wfile.write(answer.body)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:
        return


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeGitHub


@dataclass
class Running:
    fake: FakeGitHub
    server: _Server
    thread: threading.Thread

    @property
    def url(self) -> str:
        return self.fake.base_url

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


# What requests change in a FakeGitHub, and the permissions a test takes from a token on its copy (the rest is
# its configuration, shared by a copy as it is).
_STATE = ("tokens", "permissions", "token_permissions", "dispatches", "requests", "pulls", "comments",
          "issues", "statuses", "_used", "faults", "rulesets", "mangle", "app")


def serve(fake: FakeGitHub) -> Running:
    """Start ``fake`` on 127.0.0.1 and a free port, in a background thread."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.fake = fake
    fake.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), name="ghserver", daemon=True)
    thread.start()
    return Running(fake, server, thread)


BOT = "github-actions[bot]"
BOT_TOKEN = "ghs_botTOKEN000000000000000000000000"
ALICE = "alice"
ALICE_TOKEN = "ghp_aliceTOKEN0000000000000000000000"
MALLORY = "mallory"
MALLORY_TOKEN = "ghp_malloryTOKEN00000000000000000000"
APP = "my-app[bot]"
"""A dedicated GitHub App's installation (its token cannot read ``GET /user``)."""
APP_TOKEN = "ghs_appTOKEN0000000000000000000000000"


def standard_fake(bare: Path, **kwargs: Any) -> FakeGitHub:
    """The fake with three users: the Actions bot (admin), alice (write) and mallory (read); and a GitHub
    App installation (write). The bot and the App are installations: ``GET /user`` is 403 to them."""
    tokens = {BOT_TOKEN: BOT, ALICE_TOKEN: ALICE, MALLORY_TOKEN: MALLORY, APP_TOKEN: APP}
    permissions = {BOT: "admin", ALICE: "write", MALLORY: "read", APP: "write"}
    kwargs.setdefault("installations", frozenset({APP, BOT}))
    return FakeGitHub(bare=bare, tokens=tokens, permissions=permissions, **kwargs)


_RESOURCES = (("/actions/", "actions"), ("/pulls", "pull_requests"), ("/issues", "issues"),
              ("/statuses", "statuses"),
              ("/commits", "statuses"), ("/contents", "contents"), ("/git/", "contents"))


def _needed_permission(method: str, path: str) -> tuple[str, str] | None:
    """(resource, level) an installation token needs for ``method path``; None: metadata, always granted.
    A combined status is read with ``statuses``; the commit list and comments on a PR read as ``contents``
    and ``issues`` would be finer, but these are the permissions wavegit's jobs ask for."""
    _, _, rest = path.partition("/repos/")
    rest = "/" + rest.split("/", 2)[2] if rest.count("/") >= 2 else ""
    level = "read" if method == "GET" else "write"
    if rest.startswith("/commits") and not rest.endswith("/status"):
        return "contents", level
    for prefix, resource in _RESOURCES:
        if rest.startswith(prefix):
            return resource, level
    return None


def merge_group_event(head_sha: str, pr: int, pr_head: str, base_sha: str, base: str = "main") -> JSON:
    """The ``merge_group`` (``checks_requested``) event GitHub sends for a merge queue's group that adds PR
    ``pr`` (at ``pr_head``) on ``base``: its temporary branch is ``gh-readonly-queue/<base>/pr-<N>-<sha>``."""
    return {"action": "checks_requested", "merge_group": {
        "head_sha": head_sha, "head_ref": f"refs/heads/{queue_branch(pr, pr_head, base)}",
        "base_sha": base_sha, "base_ref": f"refs/heads/{base}",
        "head_commit": {"id": head_sha, "tree_id": "", "message": f"Merge pull request #{pr}"}}}


def queue_branch(pr: int, pr_head: str, base: str = "main") -> str:
    """A merge queue's temporary branch for PR ``pr`` at ``pr_head``."""
    return f"gh-readonly-queue/{base}/pr-{pr}-{pr_head}"


def github_env(running: Running, token: str = BOT_TOKEN) -> dict[str, str]:
    """The environment that points wavegit (and PyGithub) at the fake."""
    return {"GITHUB_TOKEN": token, "GITHUB_REPOSITORY": running.fake.repo, "GITHUB_API_URL": running.url}


@contextmanager
def running(bare: Path, **kwargs: Any) -> Iterator[Running]:
    """:func:`standard_fake` on ``bare``, served for the duration of the block."""
    with served(standard_fake(bare, **kwargs)) as server:
        yield server


@contextmanager
def served(fake: FakeGitHub) -> Iterator[Running]:
    """``fake`` served for the duration of the block."""
    server = serve(fake)
    try:
        yield server
    finally:
        server.stop()
