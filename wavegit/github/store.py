"""The tracker store on GitHub's API, usable without a checkout.

A change of the tracker alone is one Contents API ``PUT`` whose ``sha`` is the tracker's blob SHA: the
compare-and-swap GitHub itself enforces (409 on a stale ``sha``), so unrelated commits on the branch do
not make it fail. A change that also writes other files (e.g. ``.wavegit/HALT``) must be one commit, so
it goes through the Git Data API (tree, commit, ref update without force): the branch moves only if it
is still at the snapshot's commit (422 otherwise). Either loss is a ``CasConflict`` for ``mutation.mutate``,
which re-reads and looks for its operation id in the new commits (``contains_op``) before retrying: a
409 after a retried request may just mean our own write landed.
"""

from __future__ import annotations

from wavegit.core import git
from wavegit.core.errors import UsageError
from wavegit.github.api import GitHubClient, GitHubConflict
from wavegit.model.config import Config, protected_of
from wavegit.trackerbranch.store import OP_TRAILER, CasConflict, Change, Snapshot, check_tracker_text


class GitHubStore:
    """:class:`wavegit.trackerbranch.store.TrackerStore` on the Contents and Git Data APIs."""

    def __init__(self, client: GitHubClient, config: Config) -> None:
        self.client = client
        self.branch = config.tracker_branch
        self.path = config.tracker_path
        self.protected = protected_of(config)
        self.target = f"{client.repository}@{self.branch} (GitHub API)"

    def read(self) -> Snapshot:
        # The branch head first, then the file at that exact commit: a consistent snapshot even if
        # the branch moves between the two requests.
        commit = self.client.branch_head(self.branch)
        if commit is None:
            return Snapshot(None, None, None)
        content = self.client.get_contents(self.path, commit)
        if content is None:
            return Snapshot(None, None, git.CommitSha(commit))
        return Snapshot(content.text, git.BlobSha(content.sha), git.CommitSha(commit))

    def read_head_file(self, path: str) -> str | None:
        commit = self.client.branch_head(self.branch)
        content = None if commit is None else self.client.get_contents(path, commit)
        return None if content is None else content.text

    def read_file(self, snapshot: Snapshot, path: str) -> str | None:
        if snapshot.commit is None:
            return None
        content = self.client.get_contents(path, snapshot.commit)
        return None if content is None else content.text

    def write(self, expected: Snapshot, change: Change, message: str) -> str:
        if expected.commit is None:
            raise UsageError(f"branch {self.branch} does not exist on GitHub ({self.client.repository}); "
                             "create it first (wavegit writes the tracker through the API only onto a "
                             "branch that exists)")
        if change.tracker_text is not None:
            check_tracker_text(change.tracker_text, self.path, protected=self.protected)
        try:
            # The contents API compares only the file's blob; the git data API moves the branch from
            # `expected.commit` only, which an exact change needs.
            if not change.files and not change.exact:
                if change.tracker_text is None:
                    return expected.commit
                return self.client.put_contents(self.path, change.tracker_text, message, self.branch,
                                                expected.blob_sha)
            files: dict[str, str | None] = dict(change.files)
            if change.tracker_text is not None:
                files[self.path] = change.tracker_text
            return self.client.commit_files(self.branch, expected.commit, files, message)
        except GitHubConflict as exc:
            raise CasConflict(f"{self.target} moved: {exc}") from None

    def contains_op(self, head: Snapshot, since: Snapshot, op_id: str) -> bool:
        if head.commit is None or head.commit == since.commit:
            return False
        trailer = f"{OP_TRAILER}: {op_id}"
        messages = self.client.commit_messages(head.commit, since.commit)
        return any(trailer in message.splitlines() for message in messages)
