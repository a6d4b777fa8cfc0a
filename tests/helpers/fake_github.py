"""An in-memory :class:`wavegit.github.api.GitHubClient`: pull requests, comments with authors, commit
statuses, permissions, changed files, and a branch/file/commit store for the tracker.

For fast unit tests of the gate, sync, review and publish logic: no HTTP, no PyGithub, no threads. The
real PyGithub path is proved against ``tests/helpers/ghserver.py``; this fake answers as that path does
(a missing PR is :class:`GitHubNotFound`, a stale write is :class:`GitHubConflict`, our own marked
comment is edited in place), so a test that passes here says something about the logic, not the wire.
Test-side set-up (a PR opened by someone, a comment by anyone, a merge) is plain methods on the object.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone

from wavegit.github.api import (
    STATUS_CONTEXT,
    Comment,
    FileContent,
    GitHubClient,
    GitHubConflict,
    GitHubNotFound,
    PullRequest,
)

BOT = "github-actions[bot]"
"""The token's login, as in ``tests/helpers/ghserver.py``."""
ALICE = "alice"
"""A maintainer with write access."""
MALLORY = "mallory"
"""Anyone with read access: can comment, cannot command."""
EPOCH = datetime(2026, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class Status:
    sha: str
    state: str
    description: str
    context: str


@dataclass(frozen=True)
class Commit:
    parent: str | None
    files: Mapping[str, str]
    """The whole tree: path -> text."""
    message: str


def blob_sha(text: str) -> str:
    """The git blob id of ``text`` (what the Contents API calls a file's ``sha``)."""
    data = text.encode("utf-8")
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class MemoryGitHub(GitHubClient):
    """One repository on an in-memory GitHub, seen with the token of ``login``."""

    repository: str = "acme/widgets"
    login: str = BOT
    permissions: dict[str, str] = field(default_factory=lambda: {BOT: "admin", ALICE: "write",
                                                                  MALLORY: "read"})
    """login -> permission (missing = ``none``)."""
    pulls: dict[int, PullRequest] = field(default_factory=dict)
    changed_files: dict[int, list[str]] = field(default_factory=dict)
    comments: dict[int, list[Comment]] = field(default_factory=dict)
    """PR number -> its comments, oldest first."""
    statuses: list[Status] = field(default_factory=list)
    dispatches: list[tuple[str, str]] = field(default_factory=list)
    """(workflow file, ref) of every workflow started."""
    branches: dict[str, str] = field(default_factory=dict)
    """branch -> commit id."""
    commits: dict[str, Commit] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)
    """The name of every interface method called, in order (what a test may count)."""
    pushed_parents: dict[str, list[str]] = field(default_factory=dict)
    """A PR head pushed by :meth:`push` -> its parents (the head before it)."""
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    # ---- set-up and inspection by tests (not part of the interface) ----

    def _tick(self) -> datetime:
        """A fresh, strictly later moment: comment times order like the calls that made them."""
        return EPOCH + timedelta(seconds=next(self._ids))

    def open_pr(self, head_ref: str, head_sha: str, files: list[str] | None = None,
                base_ref: str = "main", head_repo: str | None = None) -> int:
        """A PR someone opened of ``head_ref`` (in ``head_repo``, default this repository: a fork's
        otherwise) at ``head_sha`` changing ``files``; its number."""
        number = len(self.pulls) + 1
        self.pulls[number] = PullRequest(number, "open", False, head_sha, head_ref, base_ref, None,
                                         f"https://github.test/{self.repository}/pull/{number}",
                                         self.repository if head_repo is None else head_repo)
        self.changed_files[number] = list(files or [])
        self.comments[number] = []
        return number

    def push(self, number: int, head_sha: str, files: list[str]) -> None:
        """New commits on the PR's branch: a new head (on the old one) and changed files."""
        self.pushed_parents[head_sha] = [self.pulls[number].head_sha]
        self.pulls[number] = replace(self.pulls[number], head_sha=head_sha)
        self.changed_files[number] = list(files)

    def merge(self, number: int, merge_sha: str) -> None:
        self.pulls[number] = replace(self.pulls[number], state="closed", merged=True, merge_sha=merge_sha)

    def close(self, number: int) -> None:
        self.pulls[number] = replace(self.pulls[number], state="closed")

    def add_comment(self, number: int, author: str, body: str) -> Comment:
        """A comment by ``author`` (anyone may write anything, the marker included)."""
        moment = self._tick()
        comment = Comment(next(self._ids), author, body, moment, moment)
        self.comments[number].append(comment)
        return comment

    def edit_comment(self, number: int, comment_id: int, body: str) -> Comment:
        found = [i for i, c in enumerate(self.comments[number]) if c.id == comment_id]
        edited = replace(self.comments[number][found[0]], body=body, updated_at=self._tick())
        self.comments[number][found[0]] = edited
        return edited

    def latest_status(self, sha: str, context: str = STATUS_CONTEXT) -> Status | None:
        return next((s for s in reversed(self.statuses) if s.sha == sha and s.context == context), None)

    def seed_branch(self, branch: str, files: Mapping[str, str], message: str = "initial") -> str:
        """A branch whose one commit holds ``files``; the commit."""
        return self._commit(branch, None, dict(files), message)

    def file_at(self, branch: str, path: str) -> str | None:
        return self.commits[self.branches[branch]].files.get(path)

    # ---- pull requests, comments, statuses, permissions ----

    def whoami(self) -> str:
        self.calls.append("whoami")
        return self.login

    def find_or_create_pr(self, branch: str, base: str, title: str, body: str) -> PullRequest:
        self.calls.append("find_or_create_pr")
        for pr in self.pulls.values():
            if (pr.head_ref, pr.base_ref, pr.state) == (branch, base, "open"):
                return pr
        return self.pulls[self.open_pr(branch, self.branches.get(branch, "0" * 40), base_ref=base)]

    def _known(self, number: int, what: str) -> int:
        """``number``, or the 404 GitHub answers for a PR that does not exist."""
        if number not in self.pulls:
            raise GitHubNotFound(f"{what} of PR #{number}: GitHub answered 404: Not Found", 404)
        return number

    def pr_info(self, number: int) -> PullRequest:
        self.calls.append("pr_info")
        return self.pulls[self._known(number, "read")]

    def pr_files(self, number: int) -> list[str]:
        self.calls.append("pr_files")
        return list(self.changed_files[self._known(number, "list the files")])

    def branch_tips(self, prefix: str) -> dict[str, str]:
        self.calls.append("branch_tips")
        return {name: sha for name, sha in self.branches.items() if name.startswith(prefix)}

    def list_comments(self, number: int) -> list[Comment]:
        self.calls.append("list_comments")
        return list(self.comments[self._known(number, "list the comments")])

    def upsert_report_comment(self, number: int, body: str, marker: str) -> Comment:
        self.calls.append("upsert_report_comment")
        self._known(number, "comment on")
        if marker not in body:
            raise ValueError("the report comment body must carry its marker")
        mine = [c for c in self.comments[number] if c.author == self.login and c.body.startswith(marker)]
        if not mine:
            return self.add_comment(number, self.login, body)
        if mine[0].body == body:
            return mine[0]
        return self.edit_comment(number, mine[0].id, body)

    def set_status(self, sha: str, state: str, description: str, context: str = STATUS_CONTEXT) -> None:
        self.calls.append("set_status")
        self.statuses.append(Status(sha, state, description, context))

    def permission(self, user: str) -> str:
        self.calls.append("permission")
        return self.permissions.get(user, "none")

    def dispatch_workflow(self, workflow: str, ref: str) -> None:
        self.calls.append("dispatch_workflow")
        self.dispatches.append((workflow, ref))

    # ---- branches, files, commits (the tracker store) ----

    def _commit(self, branch: str, parent: str | None, files: dict[str, str], message: str) -> str:
        identity = f"{parent}\n{sorted(files.items())}\n{message}\n{next(self._ids)}"
        sha = hashlib.sha1(identity.encode()).hexdigest()
        self.commits[sha] = Commit(parent, files, message)
        self.branches[branch] = sha
        return sha

    def branch_head(self, branch: str) -> str | None:
        self.calls.append("branch_head")
        return self.branches.get(branch)

    def get_contents(self, path: str, ref: str) -> FileContent | None:
        self.calls.append("get_contents")
        text = self.commits[self.branches.get(ref, ref)].files.get(path)
        return None if text is None else FileContent(path, text, blob_sha(text))

    def put_contents(self, path: str, text: str | None, message: str, branch: str, sha: str | None) -> str:
        self.calls.append("put_contents")
        head = self.branches[branch]
        current = self.commits[head].files.get(path)
        if (None if current is None else blob_sha(current)) != sha:
            raise GitHubConflict(f"write {path} on {branch}: GitHub answered 409: does not match {sha}", 409)
        files = {p: t for p, t in self.commits[head].files.items() if p != path}
        if text is not None:
            files[path] = text
        return self._commit(branch, head, files, message)

    def commit_files(self, branch: str, parent: str, files: Mapping[str, str | None], message: str) -> str:
        self.calls.append("commit_files")
        if self.branches.get(branch) != parent:
            raise GitHubConflict(f"commit on {branch}: GitHub answered 422: not a fast forward", 422)
        tree = dict(self.commits[parent].files)
        for path, text in files.items():
            if text is None:
                tree.pop(path, None)
            else:
                tree[path] = text
        return self._commit(branch, parent, tree, message)

    def commit_parents(self, sha: str) -> list[str]:
        self.calls.append("commit_parents")
        if sha in self.commits:
            parent = self.commits[sha].parent
            return [] if parent is None else [parent]
        return list(self.pushed_parents.get(sha, []))

    def commit_messages(self, head: str, stop_at: str | None, limit: int = 300) -> list[str]:
        self.calls.append("commit_messages")
        messages: list[str] = []
        sha: str | None = head
        while sha is not None and sha != stop_at and len(messages) < limit:
            messages.append(self.commits[sha].message)
            sha = self.commits[sha].parent
        return messages
