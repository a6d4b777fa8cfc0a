"""The git layer's common operations (the repository, history, refs, remotes, blobs, trees) and its typed
ids, on top of :func:`~wavegit.core.git._runner.run`; callers use them through :mod:`wavegit.core.git`."""

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple, NewType

from wavegit.core.git import _runner as git

CommitSha = NewType("CommitSha", str)
BlobSha = NewType("BlobSha", str)
TreeSha = NewType("TreeSha", str)
Branch = NewType("Branch", str)
"""A branch name without ``refs/heads/``."""
WaveId = NewType("WaveId", str)
"""``w-YYYYMMDD-HHMMSS-xxxx`` (see ``wavegit.attempts.wavebranch.new_wave_id``)."""

_HEX_DIGITS = frozenset("0123456789abcdef")


def is_object_id(text: str) -> bool:
    """Whether ``text`` is a full object id (SHA-1 or SHA-256, lower-case hex): then ``objects/XX/REST``
    names a loose object and no other file (no ``..``, no ``/``)."""
    return len(text) in (40, 64) and set(text) <= _HEX_DIGITS


C_LOCALE = {"LC_ALL": "C"}
"""Untranslated git messages, for callers that classify a failure by its text."""

_FETCH_TRIES = 3
FILE_MODE = "100644"
"""The mode of a plain file in a tree."""


# -- locating a repository -------------------------------------------------------------------------------

class Location(NamedTuple):
    root: Path
    git_dir: Path
    common_dir: Path


def locate(start: Path) -> Location | None:
    """Top of the work tree, git dir and common dir around ``start``; None when ``start`` is not inside a
    work tree."""
    result = git.run(["rev-parse", "--path-format=absolute", "--show-toplevel", "--git-dir",
                      "--git-common-dir"], cwd=start, check=False)
    lines = git.lines(result.stdout.rstrip("\n"))
    if result.returncode != 0 or len(lines) < 3:
        return None
    return Location(Path(lines[0]), Path(lines[1]), Path(lines[2]))


def remotes(root: Path) -> list[str]:
    return git.out(["remote"], cwd=root).split()


def remote_urls(root: Path) -> list[str]:
    """The fetch and push URLs of every remote, as configured (``remote.<name>.url``, ``.pushurl``) and as git
    uses them (``url.<base>.insteadOf`` and ``pushInsteadOf`` applied: ``local:x`` may be a path), asking
    git for those only when a rewrite is configured (one git call where there is none)."""
    urls_and_rewrites = r"^(remote\..*\.(push)?url|url\..*\.(push)?insteadof)$"
    listing = git.run(["config", "-z", "--get-regexp", urls_and_rewrites], cwd=root, check=False).stdout
    entries = [entry.split("\n", 1) for entry in listing.split("\0") if "\n" in entry]
    found = [value for key, value in entries if key.startswith("remote.")]
    if len(found) < len(entries):  # a rewrite: git applies it, as it does when it fetches or pushes
        for name in remotes(root):
            for push in ([], ["--push"]):
                found += git.lines(git.run(["remote", "get-url", *push, "--all", name], cwd=root,
                                           check=False).stdout.rstrip("\n"))
    return list(dict.fromkeys(found))


def config_value(root: Path, key: str) -> str | None:
    """The value of a git config ``key`` (None when unset or empty)."""
    return git.run(["config", "--get", key], cwd=root, check=False).stdout.strip() or None


def committer_ident(root: Path) -> str:
    """``Name <email>`` of the committer git would record here."""
    # GIT_COMMITTER_IDENT ends with "<timestamp> <tz>"; keep the name and email.
    return git.out(["var", "GIT_COMMITTER_IDENT"], cwd=root).rsplit(" ", 2)[0]


# -- revisions -------------------------------------------------------------------------------------------

def resolve_commit(root: Path, rev: str) -> CommitSha | None:
    """The commit ``rev`` names (peeling tags), or None when it names none."""
    result = git.run(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], cwd=root, check=False)
    return CommitSha(result.stdout.strip()) if result.returncode == 0 else None


def commit_of(root: Path, rev: str) -> CommitSha:
    """The commit ``rev`` names; a GitError ("Needed a single revision") when it names none."""
    return CommitSha(git.out(["rev-parse", "--verify", f"{rev}^{{commit}}"], cwd=root))


def tree_of(root: Path, rev: str) -> TreeSha:
    return TreeSha(git.out(["rev-parse", "--verify", f"{rev}^{{tree}}"], cwd=root))


def first_parent(root: Path, commit: CommitSha) -> CommitSha:
    return CommitSha(git.out(["rev-parse", "--verify", f"{commit}^1"], cwd=root))


def is_ancestor(root: Path, ancestor: str, descendant: str) -> bool:
    """Whether ``ancestor`` is reachable from ``descendant`` (a commit is its own ancestor; False when either
    is not a commit here)."""
    return git.run(["merge-base", "--is-ancestor", ancestor, descendant], cwd=root,
                   check=False).returncode == 0


def rev_list(root: Path, revs: Sequence[str], *, first_parent_only: bool = False,
             ancestry_path: bool = False) -> list[CommitSha]:
    """The commits ``git rev-list REVS`` lists, newest first."""
    options = ["--first-parent"] if first_parent_only else []
    options += ["--ancestry-path"] if ancestry_path else []
    return [CommitSha(sha) for sha in git.out(["rev-list", *options, *revs], cwd=root).split()]


def log(root: Path, revs: Sequence[str], fmt: str, *, first_parent_only: bool = False, reverse: bool = False,
        since: str | None = None, grep: str | None = None, max_count: int | None = None) -> str:
    """``git log --format=FMT`` of ``revs``; ``grep`` matches the message as a fixed string."""
    options = [f"--format={fmt}"]
    options += ["--first-parent"] if first_parent_only else []
    options += ["--reverse"] if reverse else []
    options += [f"--since={since}"] if since is not None else []
    options += ["--fixed-strings", f"--grep={grep}"] if grep is not None else []
    options += [f"--max-count={max_count}"] if max_count is not None else []
    return git.out(["log", *options, *revs], cwd=root)


def commit_message(root: Path, commit: CommitSha) -> str:
    return log(root, [commit], "%B", max_count=1)


# Porcelain `git log`, so pin everything user configuration could change in its output; the `-c` after
# `log` is the combined diff of merges.
_LOG_CHANGES = ("-c", "log.showSignature=false", "log", "-z", "--name-status", "--no-renames", "-c", "--root",
                "--no-color", "--no-ext-diff", "--no-textconv", git.SUBMODULE_CHANGES)


def log_changes(root: Path, mark: str, revs: Sequence[str] = (), commits: Sequence[str] = (), *,
                parents: bool = False) -> str:
    """``git log -z --format=<mark>%H --name-status`` (no renames, merges' combined diff) of ``revs``, or of
    exactly ``commits`` (``--no-walk``) when given; ``parents``: each commit as ``<mark>%H %P``."""
    args = [*_LOG_CHANGES, f"--format={mark}%H{' %P' if parents else ''}"]
    if commits:
        return git.out([*args, "--no-walk=unsorted", "--stdin"], cwd=root, input="\n".join(commits) + "\n")
    return git.out([*args, *revs], cwd=root)


# -- refs ------------------------------------------------------------------------------------------------

def for_each_ref(root: Path, prefix: str) -> dict[str, CommitSha]:
    """Full ref name -> the object it points at, for every ref under ``prefix``."""
    listing = git.out(["for-each-ref", "--format=%(objectname) %(refname)", prefix], cwd=root)
    found = {}
    for line in git.lines(listing):
        sha, _, ref = line.partition(" ")
        found[ref] = CommitSha(sha)
    return found


def ref_messages(root: Path, prefix: str) -> dict[str, str]:
    """Full ref name -> the message of the commit it points at, for every ref under ``prefix``."""
    listing = git.out(["for-each-ref", "--format=%(refname)%00%(contents)%00", prefix], cwd=root)
    fields = listing.split("\0")
    return {ref.strip("\n"): message for ref, message in zip(fields[::2], fields[1::2], strict=False)}


def is_valid_ref_name(root: Path, ref: str) -> bool:
    """Whether ``ref`` (a full name, e.g. ``refs/heads/wavegit/items/W/ID``) is a name git accepts for a
    ref (``git check-ref-format``): ids like ``a..b`` or ``x.lock`` are not."""
    return git.run(["check-ref-format", ref], cwd=root, check=False).returncode == 0


def update_ref(root: Path, ref: str, new: CommitSha, old: CommitSha | None = None, *,
               message: str | None = None, check: bool = True) -> bool:
    """Point ``ref`` at ``new``; when ``old`` is given, only if it points there now ("" = does not exist).
    Whether it moved; without ``check`` a failure returns False instead of raising."""
    reason = ["-m", message] if message is not None else []
    args = ["update-ref", *reason, ref, new, *([old] if old is not None else [])]
    return git.run(args, cwd=root, env=C_LOCALE, check=check).returncode == 0


def set_upstream(root: Path, branch: str, upstream: str) -> None:
    """Make local ``branch`` track ``upstream`` (``origin/<branch>``), as ``git switch`` sets up a new one."""
    git.run(["branch", "--set-upstream-to", upstream, branch], cwd=root, env=C_LOCALE)


def delete_refs(root: Path, refs: Mapping[str, CommitSha | None], *,
                remote: str | None = None) -> dict[str, str]:
    """Delete ``refs`` (full names), each -- when its expected old value is given -- only if it still points
    there; the refs that were not deleted -> why (empty: all were). Never raises.

    In this repository (no ``remote``) it is one transaction (``git update-ref --stdin``): all are deleted or
    none, and a ref that does not exist counts as deleted. On ``remote`` it is one ``git push``, the old
    values its leases: a refusal of one ref does not stop the others."""
    if not refs:
        return {}
    if remote is None:
        commands = "".join(f"delete {ref}{f' {old}' if old else ''}\n" for ref, old in refs.items())
        result = git.run(["update-ref", "--stdin"], cwd=root, input=commands, env=C_LOCALE, check=False)
        return dict.fromkeys(refs, result.stderr.strip() or "rejected") if result.returncode else {}
    leases = [f"--force-with-lease={ref}:{old}" for ref, old in refs.items() if old]
    args = ["push", "--porcelain", *leases, remote, *[f":{ref}" for ref in refs]]
    result = git.run(args, cwd=root, env=C_LOCALE, check=False)
    refused = {}
    for line in git.lines(result.stdout):
        flag, _, rest = line.partition("\t")
        if flag == "!":
            refspec, _, why = rest.partition("\t")
            refused[refspec.rpartition(":")[2]] = why or "rejected"  # "(delete):<ref>"
    if result.returncode != 0 and not refused:
        refused = dict.fromkeys(refs, git.GitError(args, result.returncode, result.stderr).args[0])
    return refused


# -- remotes ---------------------------------------------------------------------------------------------

def is_shallow(root: Path) -> bool:
    """Whether the repository is a shallow clone (``git clone --depth``, ``fetch-depth: 1`` in Actions): its
    history stops at grafted commits, so ancestry and merge questions get wrong answers."""
    return git.out(["rev-parse", "--is-shallow-repository"], cwd=root) == "true"


def fetch(root: Path, remote: str, refspecs: Sequence[str], *, prune: bool = False,
          unshallow: bool = False, timeout: float | None = None) -> None:
    """``git fetch`` of ``refspecs`` from ``remote``: quiet, no tags, no FETCH_HEAD; ``prune`` drops the
    tracking refs the refspecs cover that the remote no longer has; ``unshallow`` fetches the whole history
    a shallow clone lacks (``--unshallow``), so that it is shallow no more; ``timeout`` bounds each git call
    (``git.run``).

    Retried briefly while another process in this clone holds the lock of a ref this fetch writes ("cannot
    lock ref"). A lock on a ref the fetch force-rewrites (a ``+`` refspec: a tracking copy of the remote's)
    that stays for :data:`STALE_TRACKING_LOCK_S` was left by a git that died (a ``kill -9`` mid-fetch: a live
    one holds it for milliseconds); it is waited out that long and removed, once.
    """
    # No auto-maintenance: a `gc --auto` must not stall a claim or a launch; the user's own commands run it.
    args = ["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-auto-maintenance",
            *(["--prune"] if prune else []), *(["--unshallow"] if unshallow else []), remote, *refspecs]
    for attempt in range(_FETCH_TRIES):
        result = git.run(args, cwd=root, env=C_LOCALE, check=False, timeout=timeout)
        if result.returncode == 0:
            return
        if "cannot lock ref" not in result.stderr:
            raise git.GitError(args, result.returncode, result.stderr)
        if attempt < _FETCH_TRIES - 1:
            time.sleep(0.05 * (attempt + 1))
    if _wait_out_stale_lock(result.stderr, refspecs):
        result = git.run(args, cwd=root, env=C_LOCALE, check=False, timeout=timeout)
        if result.returncode == 0:
            return
    raise git.GitError(args, result.returncode, result.stderr)


STALE_TRACKING_LOCK_S = 2.0


def _wait_out_stale_lock(stderr: str, refspecs: Sequence[str]) -> bool:
    """Wait until the lock git names in ``stderr`` is gone, or removed once it is stale when it locks a ref
    that ``refspecs`` force-rewrite; whether the fetch is worth another try."""
    found = _ref_lock(stderr)
    if found is None or not any(_rewrites(spec, found[0]) for spec in refspecs):
        return False
    lock_file = Path(found[1])
    deadline = time.monotonic() + 2 * STALE_TRACKING_LOCK_S  # a lock taken again meanwhile is a live git's
    while time.monotonic() < deadline:
        try:
            age = time.time() - lock_file.stat().st_mtime
            if age > STALE_TRACKING_LOCK_S:
                lock_file.unlink()
                return True
        except FileNotFoundError:
            return True  # released: its holder was alive
        except OSError:
            return False
        time.sleep(min(0.1, STALE_TRACKING_LOCK_S - age + 0.01))
    return False


def _ref_lock(stderr: str) -> tuple[str, str] | None:
    """The first ref git could not lock in ``stderr`` and its lock file, both from one message, the lock that
    ref's own: another lock the same fetch met (``packed-refs.lock``, which a prune takes, perhaps held by a
    ``git gc``) belongs to its holder and is never removed under a tracking ref's name."""
    for line in stderr.split("\n"):
        said = _between(line, "cannot lock ref '", "': File exists")
        ref, _, lock = (said or "").partition("': Unable to create '")
        if ref and lock.endswith(f"/{ref}.lock"):
            return ref, lock
    return None


def _between(text: str, before: str, after: str) -> str | None:
    start = text.find(before)
    end = text.find(after, start + len(before)) if start >= 0 else -1
    return text[start + len(before):end] if end >= 0 else None


def _rewrites(refspec: str, ref: str) -> bool:
    """Whether the forced fetch ``refspec`` writes ``ref`` here (``+src:dst``, ``dst`` maybe one ``*``)."""
    if not refspec.startswith("+") or ":" not in refspec:
        return False
    head, star, tail = refspec.partition(":")[2].partition("*")
    if not star:
        return ref == head
    return ref.startswith(head) and ref.endswith(tail) and len(ref) > len(head) + len(tail)


def missing_remote_ref(error: git.GitError) -> bool:
    """Whether a failed :func:`fetch` failed because the remote has no such ref."""
    return "couldn't find remote ref" in error.stderr


def push(root: Path, remote: str, refspecs: Sequence[str], *, force: bool = False,
         lease: Mapping[str, str] | None = None, no_verify: bool = False,
         timeout: float | None = None) -> None:
    """``git push`` of ``refspecs``; ``lease``: ref -> the value it must have on the remote for the push to
    replace it (``--force-with-lease``); ``no_verify``: without the pre-push hook (wavegit's own metadata
    refs, which change no file)."""
    leases = [f"--force-with-lease={ref}:{old}" for ref, old in (lease or {}).items()]
    git.run(["push", "--quiet", *(["--force"] if force else []), *(["--no-verify"] if no_verify else []),
             *leases, remote, *refspecs], cwd=root, env=C_LOCALE, timeout=timeout)


class PushOutcome(NamedTuple):
    args: list[str]
    result: git.GitResult
    rejected: list[str]
    """The ``--porcelain`` lines of refs the remote refused (``!\\t...``)."""

    @property
    def ok(self) -> bool:
        return self.result.returncode == 0 and not self.rejected

    def error(self, detail: str | None = None) -> git.GitError:
        """The failure as a GitError; ``detail`` in place of git's stderr."""
        if git.RULESET_REFUSAL in self.result.stderr:
            return git.RuleViolation(self.args, self.result.returncode, self.result.stderr)
        stderr = self.result.stderr if detail is None else detail
        return git.GitError(self.args, self.result.returncode, stderr)


def push_with_lease(root: Path, remote: str, commit: CommitSha, ref: str,
                    old: CommitSha | None, also: Sequence[str] = (), tracking: str | None = None
                    ) -> PushOutcome:
    """Set ``ref`` on ``remote`` to ``commit`` only if it is at ``old`` there (None: absent), the
    compare-and-swap of a remote ref; a refusal is returned, not raised, for the caller to classify.
    ``also``: refspecs pushed with it atomically (every ref is updated, or none). ``tracking``: the local
    ref that copies ``ref``, which the push moves once it landed, as it does the remote-tracking refs the
    remote's fetch refspecs name (one ``update-ref`` fewer)."""
    # A `-c` key ends at its first "=": a remote named with one (git allows it) has its ref moved after.
    named = tracking is not None and "=" not in remote
    copy = ["-c", f"remote.{remote}.fetch=+{ref}:{tracking}"] if named else []
    args = [*copy, "push", "--porcelain", *(["--atomic"] if also else []),
            f"--force-with-lease={ref}:{old or ''}", remote, f"{commit}:{ref}", *also]
    result = git.run(args, cwd=root, env=C_LOCALE, check=False)
    pushed = PushOutcome(args, result, [line for line in git.lines(result.stdout) if line.startswith("!\t")])
    if tracking is not None and not named and pushed.ok:
        update_ref(root, tracking, commit, check=False)
    return pushed


def create_bundle(root: Path, bundle: Path, refs: Sequence[str]) -> None:
    """A git bundle file holding ``refs`` and their history (fetch from it with :func:`fetch`)."""
    git.run(["bundle", "create", "--quiet", str(bundle), *refs], cwd=root)


# -- objects ---------------------------------------------------------------------------------------------

def read_blob(root: Path, blob: BlobSha) -> str:
    return git.run(["cat-file", "blob", blob], cwd=root).stdout


def blob_at(root: Path, spec: str) -> BlobSha | None:
    """The blob ``<rev>:<path>`` names, without reading it; None when it names no blob."""
    # "<sha> blob <size>", or "<spec> missing" (and for a directory "<sha> tree <size>").
    found = git.out(["cat-file", "--batch-check"], cwd=root, input=spec + "\n").split()
    return BlobSha(found[0]) if len(found) == 3 and found[1] == "blob" else None


def read_blob_at(root: Path, spec: str) -> tuple[BlobSha, str] | None:
    """(blob sha, text) of ``<rev>:<path>``; None when it names no blob."""
    result = git.run(["cat-file", "--batch"], cwd=root, input=spec + "\n")
    header, _, rest = result.stdout.partition("\n")
    fields = header.split()
    if len(fields) != 3 or fields[1] != "blob":
        return None
    return BlobSha(fields[0]), rest[:-1]  # --batch ends each object with a newline of its own


def read_commit_and_blob(root: Path, rev: str,
                         path: str) -> tuple[CommitSha | None, tuple[BlobSha, str] | None]:
    """The commit ``rev`` names (None: none) and the (blob sha, text) of ``path`` in it (None: no such
    file), from one ``git cat-file --batch`` where ``resolve_commit`` and ``read_blob_at`` take two."""
    commit = f"{rev}^{{commit}}"
    raw = git.run(["cat-file", "--batch"], cwd=root, input=f"{commit}\n{commit}:{path}\n").stdout.encode(
        "utf-8", "surrogateescape")
    # Each answer is "<sha> <type> <size>\n<content>\n", or "<spec> missing\n" (ambiguous, ...).
    header, _, rest = raw.partition(b"\n")
    fields = header.split()
    if len(fields) != 3 or fields[1] != b"commit":
        return None, None
    header, _, rest = rest[int(fields[2]) + 1:].partition(b"\n")
    found = header.split()
    named = CommitSha(fields[0].decode())
    if len(found) != 3 or found[1] != b"blob":
        return named, None
    return named, (BlobSha(found[0].decode()), rest[:int(found[2])].decode("utf-8", "surrogateescape"))


def blob_id(text: str, like: str) -> BlobSha:
    """The blob id of ``text`` exactly (``git hash-object --stdin``'s, without a git process): ``like`` is
    an object id of the same repository, whose length tells SHA-1 from SHA-256."""
    import hashlib  # OpenSSL's, 3.8 ms: only the tracker's writers need it, never the hook nor plan

    data = text.encode("utf-8", "surrogateescape")
    digest = hashlib.sha256() if len(like) == 64 else hashlib.sha1()
    digest.update(b"blob %d\0" % len(data))
    digest.update(data)
    return BlobSha(digest.hexdigest())


def hash_file(worktree: Path, path: str) -> BlobSha:
    """The blob id of the file ``path`` as ``git add`` would store it (through the user's filters)."""
    return BlobSha(git.out(["hash-object", "--", path], cwd=worktree))


class TreeEntry(NamedTuple):
    mode: str
    kind: str
    sha: BlobSha
    path: str


def ls_tree(root: Path, treeish: str, paths: Sequence[str]) -> list[TreeEntry]:
    """The entries of ``paths`` (full-tree paths) in ``treeish``."""
    listing = git.out(["ls-tree", "-z", "--full-tree", treeish, "--", *paths], cwd=root)
    entries = []
    for entry in filter(None, listing.split("\0")):
        meta, _, path = entry.partition("\t")
        mode, kind, sha = meta.split()
        entries.append(TreeEntry(mode, kind, BlobSha(sha), path))
    return entries


def build_tree(root: Path, index: Path, parent: str | None, blobs: Mapping[str, BlobSha | None], *,
               modes: Mapping[str, str] | None = None) -> TreeSha:
    """``parent``'s tree (empty when None) with ``blobs`` written (path -> blob sha, mode 100644 unless
    ``modes`` says otherwise) or removed (None), built in the scratch index file ``index``."""
    env = {"GIT_INDEX_FILE": str(index)}
    if parent:
        git.run(["read-tree", parent], cwd=root, env=env)
    mode = modes or {}
    added = "".join(f"{mode.get(path, FILE_MODE)} {sha}\t{path}\0" for path, sha in blobs.items() if sha)
    if added:
        git.run(["update-index", "-z", "--add", "--index-info"], cwd=root, env=env, input=added)
    removed = [path for path, sha in blobs.items() if sha is None]
    if removed:
        git.run(["update-index", "--force-remove", "--", *removed], cwd=root, env=env)
    return TreeSha(git.out(["write-tree"], cwd=root, env=env))


def changed_paths(root: Path, base: str, tree: str) -> list[str]:
    """Every path that differs between the trees of ``base`` and ``tree`` (no rename detection), sorted."""
    raw = git.out(["diff-tree", "-r", "-z", "--no-renames", git.SUBMODULE_CHANGES, "--name-only", base, tree],
                  cwd=root)
    return sorted(path for path in raw.split("\0") if path)


def commit_tree(root: Path, tree: TreeSha, parents: Sequence[CommitSha], message: str) -> CommitSha:
    """A commit of ``tree`` with ``parents`` (plumbing: no hooks, no index, no work tree)."""
    args = ["commit-tree", tree]
    for parent in parents:
        args += ["-p", parent]
    return CommitSha(git.out(args, cwd=root, input=message))


# -- a checkout's index and worktrees --------------------------------------------------------------------


# -- merges by content and branch cleanup (``wavegit sync``) ---------------------------------------------


