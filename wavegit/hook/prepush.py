"""The pre-push check: refuse a push whose commits touch files owned by an item in flight in another wave.

Protocol (githooks(5)): git runs the hook with the remote's name and URL (both the URL when pushing to an
unnamed remote) and writes one line per ref to stdin: ``<local ref> <local oid> <remote ref> <remote oid>``.
An all-zero remote oid means the ref is new; ``(delete)`` with an all-zero local oid is a deletion. Object
ids are 40 (SHA-1) or 64 (SHA-256) hex digits. Lines are split from the right.

Which commits a push adds to a ref: those reachable from the local oid and from neither the remote oid (what
the ref has) nor the remote's tracker and base branches (``refs/remotes/<remote>/<branch>``: what has landed).
A commit that is only on some other remote branch is new to the target and checked: merging ``origin/feat``
into main brings in feat's commits, and a wave branch's work is not settled until it is merged.
Changed paths come from ONE ``git log --name-status`` call for all pushed commits (plus a ``rev-list`` per ref
when several refs are pushed at once), without rename detection, so a rename counts for both its old and its
new path. A merge commit counts for the paths where it differs
from every parent (``-c``: conflict resolutions and edits made in the merge); what it brings in from the
merged branch is that branch's own commits, which are checked themselves unless already on the remote.

Ownership comes from the items ``in_progress`` or ``review`` of the tracker at the remote-tracking tracker
branch ``refs/remotes/<remote>/<tracker_branch>`` (no network unless ``--fetch``). Branch names are those of
``wavegit.attempts.wavebranch``: the wave branch ``wavegit/<wave-id>`` and its per-item branches
``wavegit/items/<wave-id>/<item-id>`` (not ``wavegit/<wave-id>/<item-id>``: git cannot hold a ref and a
directory of refs with the same name). A per-item branch is checked against its whole wave, like the wave
branch.

- A path owned by an in-flight item is refused unless pushed to that item's wave branch (or a per-item branch
  of that wave).
- A path pushed to a wave branch must be owned by an in-flight item of that wave; anything else is refused.
- On the tracker branch, paths under ``.wavegit/`` are wavegit's own compare-and-swap commits and pass, but
  a push whose commits change the tracker file is refused when the tracker it leaves is invalid, and one
  that is not a fast-forward when the commits it drops include wavegit's own (``hook.tracker_guard``,
  imported only for such pushes: a parent of the usual push's new commits is the remote oid).
- Deleting a ref always passes; so does a ref that adds no commit (a new branch at an existing commit).
"""

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Generic, NamedTuple, TypeVar

from wavegit.core import git, parsecache
from wavegit.core.errors import UsageError, ValidationError
from wavegit.hook import freshness
from wavegit.ownership.index import OwnershipIndex

if TYPE_CHECKING:
    from wavegit.core.repo import Repo
    from wavegit.model.config import Config

# The hook runs on every push, so import time counts: the records others read are NamedTuples (a dataclass
# costs ~1 ms to create, a NamedTuple ~0.2 ms: its __new__ is compiled from source), the hook's own are plain
# tuples; annotations are not postponed (typing would compile each string annotation of a NamedTuple), and
# wavegit.model.tracker / wavegit.attempts.wavebranch are imported only when needed. wavegit.model.config and
# wavegit.core.repo are not imported here, so that `wavegit hook` can start the push's `git log` first and
# import them while it runs (see start_pushed_paths). wavegit.ownership.index is: `_InFlight` names it, and a
# string annotation would make typing run the process's first compile() (~3 ms: it builds Python's AST types).
T = TypeVar("T")
WAVE_REFS = "refs/heads/wavegit/"
"""``refs/heads/`` + ``wavegit.attempts.wavebranch.BRANCH_PREFIX``: checked before importing wavebranch (~5
ms)."""
_HEX_DIGITS = frozenset("0123456789abcdef")
_OID_LENGTHS = (40, 64)
STATE_PREFIX = ".wavegit/"
_COMMIT_MARK = "\x01"
DEFAULT_SETTLED = ("main",)
"""``Config()``'s tracker and base branch: what ``start_pushed_paths`` leaves out before reading config."""
DEFAULT_TRACKER = ("main", ".wavegit/tracker.yaml")
"""``Config()``'s tracker branch and path: what ``default_tracker_spec`` names before config is imported."""
_CACHE_FORMAT = "wavegit-hook-in-flight-3"


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


class Owner(NamedTuple):
    """What the hook needs of an item in flight."""

    id: str
    status: str
    wave: str | None
    pr: int | None
    owns: tuple[str, ...]


class Violation(NamedTuple):
    """A pushed path the push may not touch."""

    ref: str
    """The remote ref it was pushed to."""
    path: str
    owner: Owner | None
    """The in-flight item of another wave owning it; None: the path lies outside the pushed wave's items."""


# Records the hook builds on every run but nobody else reads are plain tuples (a NamedTuple class costs
# ~0.2 ms to create): (violations, unchecked): the refused paths, and the pushed paths the ownership index
# cannot look up (e.g. a name with a backslash or an unbalanced '[').
Findings = tuple[list[Violation], list[str]]


class Verdict(NamedTuple):
    violations: tuple[Violation, ...]
    """The collisions that refuse the push: on a branch of ``hook.refuse_on`` or a wave branch."""
    warnings: tuple[str, ...]
    refusals: tuple[str, ...] = ()
    """Whole-push refusals (a rewind of the tracker branch, an invalid tracker), one message each."""
    tolerated: tuple[Violation, ...] = ()
    """Collisions on other branches (a feature branch backed up): reported, the push goes on."""


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


def wave_of_ref(remote_ref: str) -> str | None:
    """The wave whose wave branch or per-item branch ``remote_ref`` is, or None."""
    if not remote_ref.startswith(WAVE_REFS):
        return None
    from wavegit.attempts import wavebranch

    item_branch = wavebranch.parse_item_branch(remote_ref)
    return item_branch[0] if item_branch else wavebranch.parse_wave_branch(remote_ref)


def settled_branches(tracker_branch: str, base_branch: str) -> tuple[str, ...]:
    """The branches whose commits have landed: the push's commits already on them are not checked again."""
    return tuple(dict.fromkeys((tracker_branch, base_branch)))


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
    """commit -> changed paths, from ``git.log_changes``; given ``parents`` (the log's ``parents``
    option), every listed commit's parents are added to it."""
    changed: dict[str, list[str]] = {}
    current: list[str] | None = None
    tokens = iter(output.split("\0"))
    for token in tokens:
        if token.startswith(_COMMIT_MARK):
            commit, *above = token[len(_COMMIT_MARK):].split(" ")
            current = changed.setdefault(commit, [])
            if parents is not None:
                parents.update(above)
        elif token.strip("\n"):
            path = next(tokens, None)  # without rename detection every status has exactly one path
            if current is None or path is None:
                raise git.GitError(["log", "--name-status"], 0, f"unexpected `git log` output near {token!r}")
            current.append(path)
    return changed


def pushed_changes(root: Path, updates: Sequence[RefUpdate], remote: str,
                   settled: Sequence[str] = DEFAULT_SETTLED) -> Pushed:
    """The paths each ref's new commits change (deletions left out), and the commits they rest on."""
    checked = [update for update in updates if not update.is_delete]
    if len(checked) == 1:
        # The usual push: one call lists the commits, their paths and their parents together.
        update, rests_on = checked[0], set[str]()
        log = git.log_changes(root, _COMMIT_MARK, _exclusions(update, remote, settled), parents=True)
        paths = {p for found in _parse_log(log, rests_on).values() for p in found}
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


def pushed_paths(root: Path, updates: Sequence[RefUpdate], remote: str,
                 settled: Sequence[str] = DEFAULT_SETTLED) -> dict[str, set[str]]:
    """remote ref -> paths changed by the commits the push adds to it (deletions left out)."""
    return pushed_changes(root, updates, remote, settled)[0]


_Row = tuple[str, str, str | None, int | None, tuple[str, ...]]
"""An ``Owner``'s fields: the hook makes an ``Owner`` only of the items a push collides with."""
_InFlight = tuple[dict[str, _Row], OwnershipIndex[str]]
"""(by id, owned): the items in flight by id, and an ownership index of their patterns."""


def _indexed(in_flight: Sequence[Owner]) -> _InFlight:
    from wavegit.ownership.patterns import PatternError

    index: OwnershipIndex[str] = OwnershipIndex()
    for item in in_flight:
        for pattern in item.owns:
            try:
                index.add(item.id, pattern)
            except PatternError:
                continue  # an invalid pattern (reported by `wavegit validate`) owns no repository path
    return {item.id: (item.id, item.status, item.wave, item.pr, item.owns) for item in in_flight}, index


def load_in_flight(repo: "Repo", config: "Config", remote: str) -> list[Owner]:
    """The in-flight items of the tracker at the remote-tracking tracker branch; UsageError if unreadable."""
    return [Owner(*row) for row in _load_in_flight(repo, config, remote)[0].values()]


def tracker_spec(remote: str, tracker_branch: str, tracker_path: str) -> str:
    """``<ref>:<path>`` of the tracker at the remote-tracking tracker branch."""
    return f"refs/remotes/{remote}/{tracker_branch}:{tracker_path}"


def default_tracker_spec(remote: str) -> str:
    """``tracker_spec`` under the default config: what the hook resolves before it reads the config."""
    return tracker_spec(remote, *DEFAULT_TRACKER)


Resolved = tuple[str, str | None]
"""(spec, object name): what a tracker spec resolved to before the config was read (see
``repo.discover_resolving``)."""


def _load_in_flight(repo: "Repo", config: "Config", remote: str, resolved: Resolved | None = None
                    ) -> _InFlight:
    """``load_in_flight``, with the items by id and the ownership index of their patterns.

    They are cached by the tracker's blob SHA (content-addressed, never stale) apart from the full parse,
    so a warm hook costs one ``git cat-file --batch-check`` -- or no git process at all when ``resolved``
    already names the object at the tracker's spec: no tracker text, no 10,000-item parse.
    """
    spec = tracker_spec(remote, config.tracker_branch, config.tracker_path)
    # The tracker path is part of the format: messages name it.
    fmt = f"{_CACHE_FORMAT}:{config.tracker_path}"
    cached = None
    if resolved is not None and resolved[0] == spec and resolved[1] is not None:
        # Entries are written for blobs only, so a hit needs no type check; a miss takes the usual way.
        cached = parsecache.read(_cache_entry(repo, resolved[1]), fmt)
    if not isinstance(cached, tuple):
        blob = git.blob_at(repo.root, spec)
        if blob is None:
            raise UsageError(f"no tracker at {spec} (fetch it, or run the hook with --fetch)")
        entry = _cache_entry(repo, blob)
        cached = parsecache.read(entry, fmt)
        if not isinstance(cached, tuple):
            cached = _parse_in_flight(repo, config, spec, blob)
            parsecache.write(entry, fmt, cached)
    status, payload = cached
    if status != "ok":
        raise UsageError(str(payload))
    by_id, tables = payload
    return by_id, OwnershipIndex.from_tables(tables)


def _cache_entry(repo: "Repo", blob_sha: str) -> Path:
    return repo.cache_dir / f"hook-in-flight-{blob_sha}.marshal"


def _parse_in_flight(repo: "Repo", config: "Config", spec: str, blob_sha: str) -> tuple[str, object]:
    """("ok", (in-flight rows by id, their index's tables)) or ("error", message), from the full (cached)
    tracker parse. The index is content-addressed data too: a warm hook loads it instead of filing each
    pattern."""
    from wavegit.model import lifecycle, tracker
    from wavegit.model.config import protected_of

    text = git.read_blob(repo.root, git.BlobSha(blob_sha))
    try:
        loaded = tracker.load_cached(text, blob_sha, repo.cache_dir, config.tracker_path, strict=False,
                                     protected=protected_of(config))
    except ValidationError as exc:
        return "error", f"the tracker at {spec} is invalid: {exc.problems[0] if exc.problems else exc}"
    rows = tuple((item.id, item.status, item.wave, item.pr, item.owns) for item in loaded.items
                 if item.status in lifecycle.IN_FLIGHT)
    by_id, index = _indexed([Owner(*row) for row in rows])
    return "ok", (by_id, index.tables())


def find_violations(changed: Mapping[str, Iterable[str]], in_flight: Sequence[Owner],
                    tracker_branch: str) -> Findings:
    """Every pushed path the rules of the module docstring refuse, in ref and path order."""
    return _violations(changed, _indexed(in_flight), tracker_branch)


def _violations(changed: Mapping[str, Iterable[str]], in_flight: _InFlight, tracker_branch: str) -> Findings:
    by_id, index = in_flight
    tracker_ref = f"refs/heads/{tracker_branch}"
    found: Findings = ([], [])
    for ref in sorted(changed):
        wave = wave_of_ref(ref)
        pushed = sorted(path for path in set(changed[ref])
                        if ref != tracker_ref or not path.startswith(STATE_PREFIX))
        owned, invalid = index.owners_of(pushed)
        unchecked = set(invalid)
        for path in pushed:
            if path in unchecked:
                found[1].append(path)
                continue
            keys = owned.get(path)
            if not keys:  # the usual case: nobody in flight owns it
                if wave is not None:
                    found[0].append(Violation(ref, path, None))
                continue
            found[0].extend(Violation(ref, path, Owner(*by_id[key])) for key in sorted(keys)
                            if wave is None or by_id[key][2] != wave)
    return found


def refuses(config: "Config", remote_ref: str) -> bool:
    """Whether a collision pushed to ``remote_ref`` refuses the push: on a wave branch (or item branch),
    and on the branches ``hook.refuse_on`` names (by default the base and tracker branches)."""
    names = config.hook.refuse_on or settled_branches(config.tracker_branch, config.base_branch)
    if "*" in names or wave_of_ref(remote_ref) is not None:
        return True
    return remote_ref.startswith("refs/heads/") and remote_ref[len("refs/heads/"):] in names


def _unchecked(config: "Config", what: str, warnings: list[str]) -> None:
    """Warn that ``what`` went unchecked -- or, with ``hook.strict``, refuse the push."""
    if config.hook.strict:
        raise UsageError(f"{what}; refusing the push because hook.strict is true "
                         "(`git push --no-verify` skips this check at your own risk)")
    warnings.append(f"warning: {what} (set hook.strict: true in .wavegit/config.yaml to refuse instead)")


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


def check_push(repo: "Repo", config: "Config", remote: str, url: str, updates: Sequence[RefUpdate], *,
               fetch: bool | None = False, pushed: PushedPaths | None = None,
               resolved: Resolved | None = None) -> Verdict:
    """What the pre-push hook decides for ``updates`` pushed to ``remote``.

    ``fetch``: True, refresh the tracker branch from the remote first; None, only when the copy is older than
    ``hook.max_age_s`` (``wavegit.hook.freshness``); False, never.

    Pushing to an unnamed remote (git passes the URL as the name) uses ``config.remote`` for both the
    tracker and the "already on the remote" exclusion. ``pushed``: ``start_pushed_paths`` of the same
    updates, already running (started again when it was for another remote or other settled branches).
    ``resolved``: a tracker spec guessed before the config was read and what it named then; used only when
    it is the spec ``config`` gives, and never with ``fetch``.
    """
    if only_deletions(updates):
        return Verdict((), ())
    tracking = remote if remote != url else config.remote
    # What the base branch has has landed; the tracker branch's commits only when it refuses collisions:
    # one that warns may hold an in-flight file pushed there to be moved onto the base branch later.
    settled = tuple(branch for branch in settled_branches(config.tracker_branch, config.base_branch)
                    if branch == config.base_branch or refuses(config, f"refs/heads/{branch}"))
    warnings: list[str] = []
    if fetch is None:
        fetch = not freshness.is_fresh(repo, tracking, config.tracker_branch, config.hook.max_age_s)
    if pushed is not None and (fetch or pushed.remote != tracking or pushed.settled != settled):
        pushed.join()
        pushed = None  # started for another remote or branches, or before the fetch: not the paths to check
    if fetch:
        resolved = None  # resolved before the fetch moves the tracker branch
        failed = freshness.refresh(repo, tracking, config.tracker_branch, config.hook.fetch_timeout_s)
        if failed is not None:
            warnings.append(failed)
    # The in-flight items are read and indexed while `git log` lists the pushed paths.
    in_flight = Background(lambda: _load_in_flight(repo, config, tracking, resolved))
    try:
        changed, rests_on = pushed.result() if pushed is not None else \
            pushed_changes(repo.root, updates, tracking, settled)
    finally:
        in_flight.join()
    tracker_ref = f"refs/heads/{config.tracker_branch}"
    # A push with the remote oid among its new commits' parents is a fast-forward; only another one (rare)
    # costs the `git log` of what it drops.
    unsure = [u for u in updates if u.remote_ref == tracker_ref and not u.is_new and not u.is_delete
              and u.remote_oid not in rests_on.get(u.remote_ref, ())]
    refusals: list[str] = []
    touched = config.tracker_path in changed.get(tracker_ref, ())
    if unsure or touched:
        from wavegit.hook import tracker_guard  # rare pushes: the usual one imports nothing more

        refusals += tracker_guard.rewind_refusals(repo.root, unsure, config.tracker_branch)
        if touched:
            local = next(u.local_oid for u in updates if u.remote_ref == tracker_ref and not u.is_delete)
            refusals += tracker_guard.tracker_refusals(repo.root, repo.cache_dir, tracker_ref, local,
                                                       config.tracker_path)
    if not any(changed.values()):
        return Verdict((), tuple(warnings), tuple(refusals))
    try:
        loaded = in_flight.result()
    except UsageError as exc:
        _unchecked(config, f"{exc}; the push is not checked against work in flight", warnings)
        return Verdict((), tuple(warnings), tuple(refusals))
    violations, unchecked = _violations(changed, loaded, config.tracker_branch)
    if any(v.owner is not None and v.owner.status == "review" for v in violations):
        from wavegit.hook import landing  # a push colliding with a wave in review: rare

        violations, landed = landing.less_landing(repo.root, updates, tracking, violations)
        if landed:
            warnings.append(f"this push lands wave {', '.join(landed)} as pushed (its in-flight files as on "
                            f"{tracking}/wavegit/<wave>), whose items are in review: run `wavegit sync` to "
                            "mark them done")
    if unchecked:
        listed = ", ".join(repr(path) for path in unchecked)
        _unchecked(config, f"pushed paths wavegit cannot look up were not checked against work in flight: "
                   f"{listed}", warnings)
    refusing = {ref: refuses(config, ref) for ref in {v.ref for v in violations}}
    return Verdict(tuple(v for v in violations if refusing[v.ref]), tuple(warnings), tuple(refusals),
                   tuple(v for v in violations if not refusing[v.ref]))
