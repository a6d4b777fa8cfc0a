"""What a push carries: git's pre-push protocol lines (``RefUpdate``) and the paths their new commits change.

Protocol (githooks(5)): git runs the hook with the remote's name and URL (both the URL when pushing to an
unnamed remote) and writes one line per ref to stdin: ``<local ref> <local oid> <remote ref> <remote oid>``.
An all-zero remote oid means the ref is new; ``(delete)`` with an all-zero local oid is a deletion. Object
ids are 40 (SHA-1) or 64 (SHA-256) hex digits. Lines are split from the right.

Which commits a push adds to a ref: those reachable from the local oid and from neither the remote oid (what
the ref has) nor the remote's settled branches (``refs/remotes/<remote>/<branch>``: what has landed). Changed
paths come from ONE ``git log --name-status`` call for all pushed commits (plus a ``rev-list`` per ref when
several refs are pushed at once), without rename detection, so a rename counts for both its old and its new
path. The rules that judge them are ``hook.prepush``'s.
"""

import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Generic, NamedTuple, TypeVar

from wavegit.core import git
from wavegit.core.errors import UsageError

T = TypeVar("T")
_HEX_DIGITS = frozenset("0123456789abcdef")
_OID_LENGTHS = (40, 64)
_COMMIT_MARK = "%x00\x01"
"""``git.log_changes``' mark before each commit: with ``-z`` git writes it as an empty name, which no path
is, then \\x01; so NUL NUL \\x01 starts a commit, a path (even one starting with \\x01) never does."""
_COMMIT_START = "\0\0\x01"
DEFAULT_SETTLED = ("main",)
"""``Config()``'s tracker and base branch: what ``start_pushed_paths`` leaves out before reading config."""


class RefUpdate(NamedTuple):
    """One line of the pre-push protocol."""

    local_ref: str
    local_oid: str
    remote_ref: str
    remote_oid: str

    @property
    def is_delete(self) -> bool:
        return _is_zero(self.local_oid)

    @property
    def is_new(self) -> bool:
        return _is_zero(self.remote_oid)


def _is_zero(oid: str) -> bool:
    return not oid.strip("0")


def parse_updates(text: str) -> list[RefUpdate]:
    """The ref updates of git's pre-push stdin; UsageError naming the line for anything malformed."""
    updates = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.rsplit(" ", 3)
        if len(fields) != 4 or not all(fields):
            raise UsageError(f"stdin line {number}: expected '<local ref> <local oid> <remote ref> "
                             f"<remote oid>', got {line!r}")
        local_ref, local_oid, remote_ref, remote_oid = fields
        for oid in (local_oid, remote_oid):
            if len(oid) not in _OID_LENGTHS or not _HEX_DIGITS.issuperset(oid):
                raise UsageError(f"stdin line {number}: {oid!r} is not an object id "
                                 "(40 or 64 lowercase hex digits)")
        if len(local_oid) != len(remote_oid):
            raise UsageError(f"stdin line {number}: SHA-1 and SHA-256 object ids mixed")
        if local_ref == "(delete)" and not _is_zero(local_oid):
            raise UsageError(f"stdin line {number}: '(delete)' must come with an all-zero local object id")
        updates.append(RefUpdate(local_ref, local_oid, remote_ref, remote_oid))
    return updates


def updates_from_pre_commit(env: Mapping[str, str]) -> tuple[str, str, list[RefUpdate]]:
    """(remote, url, updates) from the ``PRE_COMMIT_*`` variables pre-commit sets for pre-push hooks.

    pre-commit passes one ref as ``FROM_REF..TO_REF`` (for a new branch FROM_REF is the parent of its first
    new commit). When the push carries a whole history down to its root commit, pre-commit gives no range
    at all: there is nothing to compare with, so no update is checked.
    """
    remote = env.get("PRE_COMMIT_REMOTE_NAME", "")
    if not remote:
        raise UsageError("--pre-commit: PRE_COMMIT_REMOTE_NAME is not set (run it from a pre-commit "
                         "pre-push stage)")
    url = env.get("PRE_COMMIT_REMOTE_URL", remote)
    to_oid, from_oid = env.get("PRE_COMMIT_TO_REF", ""), env.get("PRE_COMMIT_FROM_REF", "")
    if not to_oid or not from_oid:
        return remote, url, []
    line = " ".join((env.get("PRE_COMMIT_LOCAL_BRANCH") or "HEAD", to_oid,
                     env.get("PRE_COMMIT_REMOTE_BRANCH") or "HEAD", from_oid))
    return remote, url, parse_updates(line)


def only_deletions(updates: Sequence[RefUpdate]) -> bool:
    """True when the push adds nothing to the remote (no update, or only deletions): nothing to check."""
    return all(update.is_delete for update in updates)


def _exclusions(update: RefUpdate, remote: str, settled: Sequence[str]) -> list[str]:
    """rev-list arguments that leave out what the target ref and the settled branches already have."""
    known = [] if update.is_new else [update.remote_oid]
    # --ignore-missing: on a forced push the remote oid may not exist locally, nor a remote-tracking ref.
    return ["--ignore-missing", update.local_oid, "--not", *known,
            *(f"refs/remotes/{remote}/{branch}" for branch in settled)]


Pushed = tuple[dict[str, set[str]], dict[str, set[str]]]
"""What ``pushed_changes`` found, per remote ref: (paths, rests_on): the paths changed by the commits the
push adds to the ref, and the parents of those new commits (with ``rev-list --boundary``: the ones not new):
when the remote oid is one, the push is a fast-forward."""


def _parse_log(output: str, parents: set[str] | None = None) -> dict[str, list[str]]:
    """commit -> changed paths, from ``git.log_changes`` with ``_COMMIT_MARK``; given ``parents`` (the log's
    ``parents`` option), every listed commit's parents are added to it.

    Each commit is ``<sha> <parents>`` then (status, path) names: without rename detection every status has
    exactly one path, so the paths are every other name, taken by slicing (not one by one: a push may list
    thousands)."""
    changed: dict[str, list[str]] = {}
    before, *commits = f"\0{output}".split(_COMMIT_START) if output else ("",)
    if before:
        raise git.GitError(["log", "--name-status"], 0, f"unexpected `git log` output near {before[:80]!r}")
    for listing in commits:
        header, *names = listing.split("\0")
        # A merge's names start with an empty one; the log ends with a NUL.
        if names and not names[-1]:
            names.pop()
        if names and not names[0]:
            del names[0]
        commit, *above = header.split(" ")
        if len(names) % 2:
            raise git.GitError(["log", "--name-status"], 0, f"unexpected `git log` output for {commit}")
        changed[commit] = names[1::2]
        if parents is not None:
            parents.update(above)
    return changed


def pushed_changes(root: Path, updates: Sequence[RefUpdate], remote: str,
                   settled: Sequence[str] = DEFAULT_SETTLED) -> Pushed:
    """The paths each ref's new commits change (deletions left out), and the commits they rest on."""
    checked = [update for update in updates if not update.is_delete]
    if len(checked) == 1:
        # The usual push: one call lists the commits, their paths and their parents together.
        update, rests_on = checked[0], set[str]()
        log = git.log_changes(root, _COMMIT_MARK, _exclusions(update, remote, settled), parents=True)
        paths = set[str]().union(*_parse_log(log, rests_on).values())
        return {update.remote_ref: paths}, {update.remote_ref: rests_on}
    listed = {u.remote_ref: git.rev_list(root, ["--boundary", *_exclusions(u, remote, settled)])
              for u in checked}
    commits = {ref: [c for c in found if not c.startswith("-")] for ref, found in listed.items()}
    rests = {ref: {c[1:] for c in found if c.startswith("-")} for ref, found in listed.items()}
    wanted = list(dict.fromkeys(c for found in commits.values() for c in found))
    if not wanted:  # `git log --stdin` with no input would fall back to HEAD
        return {ref: set() for ref in commits}, rests
    by_commit = _parse_log(git.log_changes(root, _COMMIT_MARK, commits=wanted))
    return {ref: {p for c in found for p in by_commit.get(c, ())} for ref, found in commits.items()}, rests


class Background(threading.Thread, Generic[T]):
    """``work()`` running in a thread (git processes run side by side, Python fills the waits)."""

    def __init__(self, work: Callable[[], T]) -> None:
        super().__init__(daemon=True)
        self._work = work
        self._value: T | None = None
        self._error: BaseException | None = None
        self.start()

    def run(self) -> None:
        try:
            self._value = self._work()
        except BaseException as exc:  # handed to result()'s caller
            self._error = exc

    def result(self) -> T:
        """What ``work()`` returned, once it has; what it raised is raised here."""
        self.join()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]


class PushedPaths(Background[Pushed]):
    """``pushed_changes`` running, with the remote and settled branches it was started for."""

    def __init__(self, directory: Path, updates: Sequence[RefUpdate], remote: str,
                 settled: Sequence[str]) -> None:
        self.remote = remote
        self.settled = tuple(settled)
        super().__init__(lambda: pushed_changes(directory, updates, remote, settled))


def start_pushed_paths(directory: str | Path, updates: Sequence[RefUpdate], remote: str) -> PushedPaths:
    """``pushed_changes`` started in the background from anywhere in the repository (git finds its root), so
    that it runs while the caller discovers the repository and reads the config. For ``check_push``'s
    ``pushed``: only for a named remote and without ``fetch`` (a fetch moves what the log leaves out); it
    assumes the default tracker and base branch, and check_push starts again if the config names others."""
    return PushedPaths(Path(directory), updates, remote, DEFAULT_SETTLED)


