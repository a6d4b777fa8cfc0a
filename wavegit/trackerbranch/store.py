"""Compare-and-swap writes of the tracker (and wavegit's few other files) as git commits.

INTERFACE: ``Snapshot``, ``Change``, ``TrackerStore``, ``CasConflict`` and ``check_tracker_text`` (here) and
``wavegit.trackerbranch.mutation.mutate`` are what other modules and backends code against.
``GitStore`` is the git backend; the GitHub backend lives in ``wavegit.github.store``.
"""

import contextlib
import os
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, NamedTuple, Protocol

from wavegit.core import git
from wavegit.core.errors import EXIT_RACE_LOST, RaceLostError, WavegitError
from wavegit.core.repo import Repo
from wavegit.model.config import Config, protected_of

if TYPE_CHECKING:
    from wavegit.model.columns import Columns
    from wavegit.model.tracker import Tracker

OP_TRAILER = "Wavegit-Op"
"""Commit trailer carrying a mutation's operation id, so a retry can tell that its write already landed."""

# Reasons `git push --porcelain` gives when the branch moved under us (a lost race, worth retrying).
_RACE_REASONS = ("stale info", "fetch first", "non-fast-forward", "failed to update ref",
                 "failed to lock", "cannot lock ref", "incorrect old value")
# How git names a ref lock another process holds: a live writer's (a race) or one a killed git left behind.
_LOCK_HELD_RE = re.compile(r"Unable to create '([^']+\.lock)': File exists")

STALE_LOCK_S = 10.0
"""How long every write may fail on the same lock file, the branch not moving, before it is called stale.

A live git holds a ref lock for milliseconds; one that stays this long was left by a git that was killed
in the middle of a ref update (e.g. the remote's ``receive-pack``, between moving the branch and
releasing ``HEAD.lock``) and will never go away by itself.
"""


# NamedTuple records, not dataclasses: `plan` imports this module, and importing `dataclasses` and making a
# dataclass cost a warm plan milliseconds (ARCHITECTURE.md, speed rules). Hence no postponed annotations
# here either.

class Snapshot(NamedTuple):
    """The tracker as read from the tracker branch's head."""

    text: str | None
    """None when the tracker file does not exist at ``commit``."""
    blob_sha: git.BlobSha | None
    commit: git.CommitSha | None
    """None when the tracker branch does not exist yet."""


class Change(NamedTuple):
    tracker_text: str | None
    """The new tracker text; None leaves the tracker as it is."""
    files: Mapping[str, str | None] = MappingProxyType({})
    """Other repo paths to write (text) or delete (None) in the same commit, e.g. .wavegit/HALT."""
    exact: bool = False
    """Land only on the expected commit itself, never on a moved head with the same tracker blob: for a
    change whose preconditions live outside the tracker (a claim: HALT, the day's spend), which ``mutate``'s
    ``guard`` re-checks on the moved head. The git backend always writes this way."""


class CasConflict(WavegitError):
    """The branch moved since the snapshot was read. Internal: ``mutate`` catches it and retries."""

    exit_code = EXIT_RACE_LOST


class LockHeld(CasConflict):
    """The write failed on a lock file held by another (live or killed) git. Internal, like CasConflict."""

    def __init__(self, message: str, lock_file: str, *, on_remote: bool) -> None:
        super().__init__(message)
        self.lock_file = lock_file
        self.on_remote = on_remote


class StaleLockError(RaceLostError):
    """Every write failed on the same lock file for ``STALE_LOCK_S`` while the branch stood still.

    Exit 4 like any write that gave up; the message names the lock file.
    """


class RemoteError(git.GitError):
    """Fetching from or pushing to the remote failed for a reason other than a lost race."""

    def __init__(self, action: str, cause: git.GitError) -> None:
        super().__init__(cause.command[1:], cause.returncode, cause.stderr)
        self.args = (f"{action}: {_reason(cause.stderr)} (git exit {cause.returncode})",)


class TrackerStore(Protocol):
    target: str
    """Where writes land, for messages (e.g. ``origin/main``)."""

    def read(self) -> Snapshot: ...

    def read_file(self, snapshot: Snapshot, path: str) -> str | None: ...

    def read_head_file(self, path: str) -> str | None:
        """``path`` at the branch head as it is now (None: no such file), without reading the tracker."""
        ...

    def write(self, expected: Snapshot, change: Change, message: str) -> str:
        """Commit ``change`` only if the tracker blob is still ``expected.blob_sha``; the new commit.

        Raises ValidationError (nothing written) when ``change.tracker_text`` is not a valid tracker
        (see ``check_tracker_text``), and CasConflict when the branch moved since ``expected``.
        """
        ...

    def contains_op(self, head: Snapshot, since: Snapshot, op_id: str) -> bool:
        """Whether a commit after ``since.commit`` up to ``head.commit`` carries ``Wavegit-Op: op_id``."""
        ...


def tracker_source(target: str, path: str, blob_sha: str) -> str:
    """Which tracker was read, for output: ``origin/main:.wavegit/tracker.yaml blob 1a2b3c4d5e6f``."""
    return f"{target}:{path} blob {blob_sha[:12]}"


def known(store: TrackerStore) -> Snapshot | None:
    """:meth:`GitStore.known` for any store: other backends read the remote's head at every write."""
    return store.known() if isinstance(store, GitStore) else None


def check_tracker_text(text: str, path: str, blob_sha: str | None = None,
                       cache_dir: Path | None = None, protected: tuple[str, ...] | None = None) -> None:
    """Raise ValidationError unless ``text`` is a valid tracker; every backend calls this before writing.

    ``protected``: the config's protected paths (``config.protected_of``; None: the defaults)."""
    # Imported here: the tracker module pulls in YAML, which commands that only read refs do not need.
    from wavegit.model import tracker

    if blob_sha is not None:
        tracker.load_cached(text, blob_sha, cache_dir, path, strict=True, protected=protected)
    else:
        tracker.loads(text, path, strict=True, protected=protected)


class GitStore:
    """The tracker on a branch of this repository, published to ``config.remote`` when it exists.

    Commits are built with plumbing in a private index; the user's index and work tree are never
    touched, with one exception: in a repo without the remote, when the tracker branch is checked out
    and the changed files are clean there, they are brought up to date so ``git status`` stays clean.
    """

    def __init__(self, repo: Repo, config: Config) -> None:
        self.repo = repo
        self.config = config
        self.branch_ref = f"refs/heads/{config.tracker_branch}"
        self.remote = config.remote if repo.has_remote(config.remote) else None
        self.tracking_ref = f"refs/remotes/{config.remote}/{config.tracker_branch}"
        self.target = f"{self.remote}/{config.tracker_branch}" if self.remote else config.tracker_branch
        self.cache_dir = repo.cache_dir
        """Parse cache for trackers, keyed by blob SHA (shared with plan, ls, validate)."""
        self._riding = threading.local()

    @property
    def _riders(self) -> tuple[str, ...]:
        riders: Callable[[], Sequence[str]] | None = getattr(self._riding, "refspecs", None)
        return tuple(riders()) if riders is not None and self.remote else ()

    @contextlib.contextmanager
    def riding(self, refspecs: Callable[[], Sequence[str]]) -> Iterator[None]:
        """Within it, every tracker commit this thread writes is pushed with the refspecs ``refspecs()`` gives
        at its push, in one atomic push (all land, or none): a wave's branch with its record (another wave's
        thread, or the claims of a rolling scheduler, write without them). A refusal of any of them fails the
        write (a lost race only when the tracker's own ref lost it), and the caller pushes them on their own.
        Asked at the push, not before: the claim reads and plans while its first heartbeat is made."""
        self._riding.refspecs = refspecs
        try:
            yield
        finally:
            self._riding.refspecs = None

    def read(self, fetch: bool = True) -> Snapshot:
        """The tracker at the branch head (the remote's, fetched first unless ``fetch`` is False)."""
        if self.remote and fetch:
            self._fetch()
        commit, found = git.read_commit_and_blob(self.repo.root, self.read_ref, self.config.tracker_path)
        if commit is None:
            return Snapshot(None, None, None)
        if found is None:
            return Snapshot(None, None, commit)
        blob_sha, text = found
        return Snapshot(text, blob_sha, commit)

    def known(self) -> Snapshot | None:
        """The tracker as this clone last fetched it (or last pushed it), without asking the remote: what
        ``mutate`` first rests a write on (its ``known``). None without a remote or before any fetch."""
        if self.remote is None:
            return None
        snapshot = self.read(fetch=False)
        return snapshot if snapshot.commit is not None else None

    def read_blob_sha(self, fetch: bool = True) -> git.BlobSha | None:
        """The tracker's blob SHA at the branch head (None: no branch or no file), without reading the blob.

        One git process, reading only the commit's trees. For read-only callers that look the blob up in a
        content-addressed cache first (``wavegit plan``) and call ``read_blob`` only on a miss; writers use
        ``read``, whose snapshot pairs the blob with its commit.
        """
        return self.read_blob_shas([self.config.tracker_path], fetch=fetch).get(self.config.tracker_path)

    def read_blob_shas(self, paths: list[str], fetch: bool = True) -> dict[str, git.BlobSha]:
        """The blob SHAs of those of ``paths`` that are files at the branch head, in the same one git
        process as ``read_blob_sha`` (``plan`` learns of ``.wavegit/HALT`` at no extra cost)."""
        if self.remote and fetch:
            self._fetch()
        try:
            entries = git.ls_tree(self.repo.root, f"{self.read_ref}^{{commit}}", paths)
        except git.GitError:
            return {}  # no such branch
        return {entry.path: entry.sha for entry in entries if entry.kind == "blob"}

    def as_fetched_hint(self) -> str:
        """What to add to a problem of the tracker read without fetching: the remote's may be fixed already
        ("" without a remote, whose local branch is the tracker itself)."""
        if not self.remote:
            return ""
        return (f"this is {self.target} as last fetched; `wavegit pull` fetches the remote's, which may be "
                "fixed already")

    def require_base_branch(self) -> None:
        """UsageError (exit 2), as ``run`` gives it, when the config's base branch does not exist as last
        fetched (the remote's, else here): a wave branches from it and obeys the config committed there."""
        base = self.config.base_branch
        ref = f"refs/remotes/{self.remote}/{base}" if self.remote else f"refs/heads/{base}"
        if ref == self.read_ref or git.resolve_commit(self.repo.root, ref) is not None:
            return  # the tracker was read from it, or it exists
        from wavegit.model.governing import require_base  # only on this error: not on plan's path
        from wavegit.model.hookconfig import read_file

        require_base(self.repo, self.config, ref, read_file(self.repo.root) or None, os.environ)

    @property
    def read_ref(self) -> str:
        """The ref the tracker is read from: the remote's tracker branch as last fetched, else the local
        branch."""
        return self.tracking_ref if self.remote else self.branch_ref

    def source(self, blob_sha: str) -> str:
        """Which tracker a command read, for its output (:func:`tracker_source`)."""
        return tracker_source(self.target, self.config.tracker_path, blob_sha)

    def read_blob(self, blob_sha: git.BlobSha) -> str:
        """The text of the blob ``blob_sha`` (e.g. from ``read_blob_sha``)."""
        return git.read_blob(self.repo.root, blob_sha)

    def load_head(self, *, fetch: bool = False, strict: bool = False) -> "tuple[Tracker, str]":
        """The parsed tracker at the branch head and its blob SHA, through the parse cache (the blob is
        read only on a miss); a clear error (exit 2) when there is no tracker yet."""
        from wavegit.model import tracker

        blob_sha = self.read_blob_sha(fetch=fetch)
        if blob_sha is None:
            from wavegit.trackerbranch.missing import no_tracker  # only on this error: not on plan's path

            raise no_tracker(self.repo.root, f"{self.target}:{self.config.tracker_path}")
        loaded = tracker.load_blob(blob_sha, lambda: self.read_blob(blob_sha), self.cache_dir,
                                   self.config.tracker_path, strict=strict,
                                   protected=protected_of(self.config))
        return loaded, blob_sha

    def planning_columns(self, blob_sha: git.BlobSha) -> "Columns":
        """The planning columns of the tracker blob ``blob_sha`` (``plan``, ``ls``, ``status``: no Items),
        through their parse cache, read leniently (an invalid item is listed with its problems)."""
        from wavegit.model import plancache

        return plancache.load_columns(blob_sha, lambda: self.read_blob(blob_sha), self.cache_dir,
                                      self.config.tracker_path, strict=False,
                                      protected=protected_of(self.config))

    def read_head_file(self, path: str) -> str | None:
        # One fetch and one ls-tree: the HALT read before a wave's launches never reads the tracker's blob.
        blob_sha = self.read_blob_shas([path]).get(path)
        return None if blob_sha is None else self.read_blob(blob_sha)

    def read_file(self, snapshot: Snapshot, path: str) -> str | None:
        if snapshot.commit is None:
            return None
        found = git.read_blob_at(self.repo.root, f"{snapshot.commit}:{path}")
        return None if found is None else found[1]

    def write(self, expected: Snapshot, change: Change, message: str) -> str:
        from wavegit.core import fastimport  # only writers need it; plan and the hook start without it

        texts = dict(change.files)
        if change.tracker_text is not None:
            # Named here, not by a git process, when the parent's id tells the repository's hash (the first
            # commit of a branch is checked uncached).
            tracker_sha = git.blob_id(change.tracker_text, expected.commit) if expected.commit else None
            check_tracker_text(change.tracker_text, self.config.tracker_path, tracker_sha, self.cache_dir,
                               protected_of(self.config))
            texts[self.config.tracker_path] = change.tracker_text
        commit = fastimport.commit(self.repo.root, expected.commit, texts, message)
        if self.remote:
            self._push(expected, commit)
        else:
            self._update_local(expected, commit, {path: None if text is None else git.blob_id(text, commit)
                                                  for path, text in texts.items()})
        return commit

    def contains_op(self, head: Snapshot, since: Snapshot, op_id: str) -> bool:
        if head.commit is None:
            return False
        revs = [head.commit] if since.commit is None else [f"{since.commit}..{head.commit}"]
        values = git.log(self.repo.root, revs, f"%(trailers:key={OP_TRAILER},valueonly)")
        return op_id in values.split()

    def local_head(self) -> str | None:
        """The local tracker branch's commit (which, with a remote, is not where the tracker is read)."""
        return git.resolve_commit(self.repo.root, self.branch_ref)

    def _fetch(self) -> None:
        assert self.remote is not None
        from wavegit.core import heartbeat  # who holds the tracker's claims comes with it

        try:
            # Pruned: a heartbeat copy its wave deleted (a fetch raced the deletion) goes at the next fetch.
            git.fetch(self.repo.root, self.remote, [f"+{self.branch_ref}:{self.tracking_ref}",
                                                       heartbeat.refspec(self.remote)], prune=True)
        except git.GitError as exc:
            if not git.missing_remote_ref(exc):
                what = f"cannot fetch {self.config.tracker_branch} from {self.remote}"
                raise RemoteError(what, exc) from exc
            # The branch does not exist on the remote (yet): forget any stale tracking ref.
            if refused := git.delete_refs(self.repo.root, {self.tracking_ref: None}):
                why = refused[self.tracking_ref]
                raise WavegitError(f"cannot forget {self.tracking_ref}: {why}") from exc

    def _push(self, expected: Snapshot, commit: git.CommitSha) -> None:
        assert self.remote is not None
        pushed = git.push_with_lease(self.repo.root, self.remote, commit, self.branch_ref, expected.commit,
                                     also=self._riders, tracking=self.tracking_ref)
        rejected = pushed.rejected
        if pushed.ok:
            return
        stderr = pushed.result.stderr
        if git.RULESET_REFUSAL in stderr:
            raise pushed.error()
        # Only the tracker's own line tells a lost race: a rider refused as non-fast-forward is no race.
        own = [line for line in rejected if line.split("\t")[1:2] == [f"{commit}:{self.branch_ref}"]]
        if any("atomic transaction failed" in line for line in own):
            # The remote's transaction failed as a whole: its message names the ref that failed it, and why.
            own = [line for line in stderr.splitlines() if f"'{self.branch_ref}'" in line]
        if any(reason in line for line in own for reason in _RACE_REASONS):
            held = _LOCK_HELD_RE.search(stderr)
            if held:
                raise LockHeld(f"{self.target} is locked by another git", held.group(1), on_remote=True)
            raise CasConflict(f"{self.target} moved while writing")
        detail = None
        if rejected:
            # The rejection's reason first, then what the remote's hooks said, if anything.
            said = [line.removeprefix("remote:").strip() for line in stderr.splitlines()
                    if line.startswith("remote:") and line.removeprefix("remote:").strip()]
            detail = rejected[0].split("\t")[-1] + (f"; the remote said: {' / '.join(said)}" if said else "")
        raise RemoteError(f"cannot push the tracker commit to {self.target}", pushed.error(detail))

    def _update_local(self, expected: Snapshot, commit: git.CommitSha,
                      blobs: Mapping[str, git.BlobSha | None]) -> None:
        from wavegit.trackerbranch import (
            checkout_sync,  # only a local-only write needs it; the read paths start faster
        )

        old = self._blobs_at(expected.commit, list(blobs))
        checkout = checkout_sync.prepare(self.repo, self.branch_ref, old, blobs)
        try:
            git.update_ref(self.repo.root, self.branch_ref, commit, expected.commit or git.CommitSha(""),
                              message="wavegit: tracker commit")
        except git.GitError as exc:
            held = _LOCK_HELD_RE.search(exc.stderr)
            if held:
                what = f"{self.target} is locked by another git"
                raise LockHeld(what, held.group(1), on_remote=False) from exc
            if "cannot lock ref" in exc.stderr or self.local_head() != expected.commit:
                raise CasConflict(f"{self.target} moved while writing") from exc
            raise
        if checkout is not None:
            try:
                git.refresh_files(checkout.worktree, checkout.paths)  # index entries and files
            except git.GitError as exc:
                # The commit has landed; a checkout we could not refresh only makes `git status` noisy.
                import logging  # only this rare warning logs; importing logging costs every command ~4 ms

                logging.getLogger(__name__).warning(
                    "wavegit: committed %s but could not update %s in %s: %s",
                    commit[:12], ", ".join(checkout.paths), checkout.worktree, exc)

    def _blobs_at(self, commit: git.CommitSha | None, paths: list[str]) -> dict[str, git.BlobSha | None]:
        found: dict[str, git.BlobSha | None] = dict.fromkeys(paths)
        if commit is None:
            return found
        for entry in git.ls_tree(self.repo.root, commit, paths):
            if entry.kind == "blob" and entry.path in found:
                found[entry.path] = entry.sha
        return found


def unique_id() -> str:
    """128 random bits as 32 hex digits (what ``uuid.uuid4().hex`` gives, without importing uuid)."""
    return os.urandom(16).hex()


def _reason(stderr: str) -> str:
    """The most telling line of git's stderr: the first fatal/error line, else the last line."""
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    for line in lines:
        if line.startswith(("fatal:", "error:", "[")):
            return line
    return lines[-1] if lines else "no output"
