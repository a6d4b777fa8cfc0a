"""The pre-push check: refuse a push whose commits touch files owned by an item in flight in another wave.

What the push carries (git's protocol lines, the commits it adds to each ref and the paths they change) is
``hook.pushed``'s. A commit that is only on some other remote branch is new to the target and checked:
merging ``origin/feat`` into main brings in feat's commits, and a wave branch's work is not settled until it
is merged. A merge commit counts for the paths where it differs from every parent (``-c``: conflict
resolutions and edits made in the merge); what it brings in from the merged branch is that branch's own
commits, which are checked themselves unless already on the remote.

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
  a push whose commits change the tracker file (or the config) is refused when the tracker it leaves is
  invalid or when its own commits (not wavegit's) change an item in flight, and one that is not a
  fast-forward when the commits it drops include wavegit's own
  (``hook.tracker_guard``, imported only for such pushes: a parent of the usual push's new commits is the
  remote oid).
- Deleting a ref passes, but for the tracker branch's (it would drop every claim and record, and the tracker:
  deleting then pushing an old commit anew would undo claims as a rewind does); so does a ref that adds no
  commit (a new branch at an existing commit).
"""

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from wavegit.core import git, parsecache
from wavegit.core.errors import UsageError, ValidationError
from wavegit.hook import freshness
from wavegit.hook.pushed import Background, PushedPaths, RefUpdate, only_deletions, pushed_changes
from wavegit.model import hookconfig
from wavegit.model.hookconfig import CONFIG_PATH, HookSettings
from wavegit.ownership.index import OwnershipIndex

if TYPE_CHECKING:
    from wavegit.core.repo import Repo
    from wavegit.model.config import Config

# The hook's speed rules (NamedTuple records, deferred imports) are ARCHITECTURE.md's, with their figures.
WAVE_REFS = "refs/heads/wavegit/"
"""``refs/heads/`` + ``wavegit.attempts.wavebranch.BRANCH_PREFIX``: checked before importing wavebranch."""
STATE_PREFIX = ".wavegit/"
_CACHE_FORMAT = "wavegit-hook-in-flight-5"


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


class Verdict(NamedTuple):
    violations: tuple[Violation, ...]
    """The collisions that refuse the push: on a branch of ``hook.refuse_on`` or a wave branch."""
    warnings: tuple[str, ...]
    refusals: tuple[str, ...] = ()
    """Whole-push refusals (a rewind of the tracker branch, an invalid tracker), one message each."""
    tolerated: tuple[Violation, ...] = ()
    """Collisions on other branches (a feature branch backed up): reported, the push goes on."""


def settings_of(config: "Config") -> HookSettings:
    """The keys of ``config`` the hook reads."""
    from wavegit.model.config import protected_of

    try:
        protected, error = protected_of(config), None
    except UsageError as exc:
        protected, error = None, str(exc)
    hook = config.hook
    return HookSettings(config.tracker_branch, config.base_branch, config.tracker_path, config.remote,
                        hook.strict, hook.max_age_s, hook.fetch_timeout_s, hook.refuse_on, protected, error)


def load_settings(repo: "Repo") -> HookSettings:
    """The config of ``repo`` as the hook reads it: cached (``wavegit.model.hookconfig``), else loaded as
    every command loads it (ValidationError, UsageError alike), then cached."""
    text = hookconfig.read_text(repo.root)
    found = hookconfig.cached(repo.cache_dir, text, os.environ) if text is not None else None
    if found is not None:
        return found
    from wavegit.model import config  # a changed config or environment: its schema checks them

    if text is None:  # unreadable: load_config says why
        return settings_of(config.load_config(repo.root, repo.cache_dir))
    settings = settings_of(config.config_from(text, repo.cache_dir, os.environ))
    variables = {var: os.environ.get(var) for _, _, var in config.env_targets()}
    hookconfig.remember(repo.cache_dir, text, variables, settings)
    return settings


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


_Row = tuple[str, str, str | None, int | None, tuple[str, ...]]
"""An ``Owner``'s fields: the hook makes an ``Owner`` only of the items a push collides with."""
_InFlight = tuple[tuple[_Row, ...], OwnershipIndex[int]]
"""(rows, owned): the items in flight, and an ownership index of their patterns keyed by position in rows
(not by id: in a tracker holding one id twice, the second item's wave answered for the first's paths)."""


def indexed(in_flight: Sequence[Owner]) -> _InFlight:
    """The rows of the items ``in_flight`` and an ownership index of their patterns."""
    from wavegit.ownership.patterns import PatternError

    index: OwnershipIndex[int] = OwnershipIndex()
    for position, item in enumerate(in_flight):
        for pattern in item.owns:
            try:
                index.add(position, pattern)
            except PatternError:
                continue  # an invalid pattern (reported by `wavegit validate`) owns no repository path
    return tuple((item.id, item.status, item.wave, item.pr, item.owns) for item in in_flight), index


def tracker_spec(remote: str, tracker_branch: str, tracker_path: str) -> str:
    """``<ref>:<path>`` of the tracker at the remote-tracking tracker branch."""
    return f"refs/remotes/{remote}/{tracker_branch}:{tracker_path}"


def _load_in_flight(repo: "Repo", config: HookSettings, remote: str) -> _InFlight:
    """The in-flight items of the tracker at the remote-tracking tracker branch, by id, and the ownership
    index of their patterns; UsageError if unreadable.

    They are cached by the tracker's blob SHA (content-addressed, never stale) apart from the full parse,
    so a warm hook costs one ``git cat-file --batch-check``: no tracker text, no 10,000-item parse.
    """
    spec = tracker_spec(remote, config.tracker_branch, config.tracker_path)
    # The tracker path is part of the format: messages name it.
    fmt = f"{_CACHE_FORMAT}:{config.tracker_path}"
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
    rows, tables = payload
    return rows, OwnershipIndex.from_tables(tables)


def _cache_entry(repo: "Repo", blob_sha: str) -> Path:
    return repo.cache_dir / f"hook-in-flight-{blob_sha}.marshal"


def _parse_in_flight(repo: "Repo", config: HookSettings, spec: str, blob_sha: str) -> tuple[str, object]:
    """("ok", (the in-flight rows, their index's tables)) or ("error", message), from the full (cached)
    tracker parse. The index is content-addressed data too: a warm hook loads it instead of filing each
    pattern."""
    from wavegit.model import lifecycle, tracker

    text = git.read_blob(repo.root, git.BlobSha(blob_sha))
    try:
        # Not ``guards()``: protected paths only add item problems here, and a config whose own are invalid
        # (an ``allow_protected`` typo) must not leave the push unchecked (the cache key ignores them too).
        loaded = tracker.load_cached(text, blob_sha, repo.cache_dir, config.tracker_path, strict=False,
                                     protected=config.protected)
    except ValidationError as exc:
        return "error", f"the tracker at {spec} is invalid: {exc.problems[0] if exc.problems else exc}"
    rows, index = indexed([Owner(item.id, item.status, item.wave, item.pr, item.owns)
                           for item in loaded.items if item.status in lifecycle.IN_FLIGHT])
    return "ok", (rows, index.tables())


def find_violations(changed: Mapping[str, Iterable[str]], in_flight: _InFlight,
                    tracker_branch: str) -> list[Violation]:
    """Every pushed path the rules of the module docstring refuse, in ref and path order; ``in_flight`` is
    ``indexed``'s answer."""
    rows, index = in_flight
    tracker_ref = f"refs/heads/{tracker_branch}"
    found: list[Violation] = []
    for ref in sorted(changed):
        wave = wave_of_ref(ref)
        owned = index.owners_of(changed[ref])
        # Off a wave branch only the owned paths can be refused: the usual push owns none of its thousands,
        # which are neither sorted nor filtered (2,000 paths: 3.8 M instructions of the hook's 154 M).
        listed = sorted(set(changed[ref]) if wave is not None else owned)
        for path in listed if ref != tracker_ref else [p for p in listed if not p.startswith(STATE_PREFIX)]:
            keys = owned.get(path)
            if keys:
                found.extend(Violation(ref, path, Owner(*rows[key])) for key in sorted(keys)
                             if wave is None or rows[key][2] != wave)
            else:
                found.append(Violation(ref, path, None))
    return found


def refuses(config: HookSettings, remote_ref: str) -> bool:
    """Whether a collision pushed to ``remote_ref`` refuses the push: on a wave branch (or item branch),
    and on the branches ``hook.refuse_on`` names (by default the base and tracker branches)."""
    names = config.refuse_on or settled_branches(config.tracker_branch, config.base_branch)
    if "*" in names or wave_of_ref(remote_ref) is not None:
        return True
    return remote_ref.startswith("refs/heads/") and remote_ref[len("refs/heads/"):] in names


def _unchecked(config: HookSettings, what: str, warnings: list[str]) -> None:
    """Warn that ``what`` went unchecked -- or, with ``hook.strict``, refuse the push."""
    if config.strict:
        raise UsageError(f"{what}; refusing the push because hook.strict is true "
                         "(`git push --no-verify` skips this check at your own risk)")
    warnings.append(f"warning: {what} (set hook.strict: true in .wavegit/config.yaml to refuse instead)")


def check_push(repo: "Repo", config: HookSettings, remote: str, url: str, updates: Sequence[RefUpdate], *,
               fetch: bool | None = False, pushed: PushedPaths | None = None) -> Verdict:
    """What the pre-push hook decides for ``updates`` pushed to ``remote``.

    ``fetch``: True, refresh the tracker branch from the remote first; None, only when the copy is older than
    ``hook.max_age_s`` (``wavegit.hook.freshness``); False, never.

    Pushing to an unnamed remote (git passes the URL as the name) uses ``config.remote`` for both the
    tracker and the "already on the remote" exclusion. ``pushed``: ``start_pushed_paths`` of the same
    updates, already running (started again when it was for another remote or other settled branches).
    """
    tracker_ref = f"refs/heads/{config.tracker_branch}"
    refusals: list[str] = []
    if any(u.is_delete and u.remote_ref == tracker_ref for u in updates):
        from wavegit.hook import tracker_guard

        refusals.append(tracker_guard.deletion_refusal(tracker_ref))
    if only_deletions(updates):
        return Verdict((), (), tuple(refusals))
    tracking = remote if remote != url else config.remote
    # What the base branch has has landed; the tracker branch's commits only when it refuses collisions:
    # one that warns may hold an in-flight file pushed there to be moved onto the base branch later.
    settled = tuple(branch for branch in settled_branches(config.tracker_branch, config.base_branch)
                    if branch == config.base_branch or refuses(config, f"refs/heads/{branch}"))
    warnings: list[str] = []
    if fetch is None:
        fetch = not freshness.is_fresh(repo, tracking, config.tracker_branch, config.max_age_s)
    if pushed is not None and (fetch or pushed.remote != tracking or pushed.settled != settled):
        pushed.join()
        pushed = None  # started for another remote or branches, or before the fetch: not the paths to check
    if fetch:
        failed = freshness.refresh(repo, tracking, config.tracker_branch, config.fetch_timeout_s)
        if failed is not None:
            warnings.append(failed)
    # The in-flight items are read and indexed while `git log` lists the pushed paths.
    in_flight = Background(lambda: _load_in_flight(repo, config, tracking))
    try:
        changed, rests_on = pushed.result() if pushed is not None else \
            pushed_changes(repo.root, updates, tracking, settled)
    finally:
        in_flight.join()
    # A push with the remote oid among its new commits' parents is a fast-forward; only another one (rare)
    # costs the `git log` of what it drops.
    unsure = [u for u in updates if u.remote_ref == tracker_ref and not u.is_new and not u.is_delete
              and u.remote_oid not in rests_on.get(u.remote_ref, ())]
    # The tracker is checked when the push changes it, or the config (its protected paths) on the tracker or
    # the base branch: the tracker pushed, else the remote's as last fetched.
    on_tracker = changed.get(tracker_ref, set())
    tracker_pushed = config.tracker_path in on_tracker
    on_base = changed.get(f"refs/heads/{config.base_branch}", set())
    config_pushed = CONFIG_PATH in on_tracker or CONFIG_PATH in on_base
    if unsure or tracker_pushed or config_pushed:
        from wavegit.hook import tracker_guard  # rare pushes: the usual one imports nothing more

        refusals += tracker_guard.rewind_refusals(repo.root, unsure, config.tracker_branch)
        if tracker_pushed:
            forward = [u for u in updates if u.remote_ref == tracker_ref and not u.is_new and not u.is_delete]
            refusals += tracker_guard.in_flight_refusals(repo.root, repo.cache_dir, forward,
                                                         config.tracker_path)
        if tracker_pushed or config_pushed:
            left = next((u.local_oid for u in updates if u.remote_ref == tracker_ref and not u.is_delete),
                        f"refs/remotes/{tracking}/{config.tracker_branch}")
            # The protected paths of the config the push leaves (the base branch's governs), not the
            # checkout's file, which need not be what is pushed.
            leaving = next((u.local_oid for ref in (f"refs/heads/{config.base_branch}", tracker_ref)
                            if CONFIG_PATH in changed.get(ref, ()) for u in updates
                            if u.remote_ref == ref and not u.is_delete), None)
            guards = config.guards() if leaving is None else \
                tracker_guard.pushed_protected(repo, leaving, refusals)
            refusals += tracker_guard.tracker_refusals(repo.root, repo.cache_dir, tracker_ref, left,
                                                       config.tracker_path, guards,
                                                       removable=not tracker_pushed)
    if not any(changed.values()):
        return Verdict((), tuple(warnings), tuple(refusals))
    try:
        loaded = in_flight.result()
    except UsageError as exc:
        _unchecked(config, f"{exc}; the push is not checked against work in flight", warnings)
        return Verdict((), tuple(warnings), tuple(refusals))
    violations = find_violations(changed, loaded, config.tracker_branch)
    if any(v.owner is not None and v.owner.status == "review" for v in violations):
        from wavegit.hook import landing  # a push colliding with a wave in review: rare

        violations, landed = landing.less_landing(repo.root, updates, tracking, violations)
        if landed:
            waves = f"wave {landed[0]}" if len(landed) == 1 else f"waves {', '.join(landed)}"
            warnings.append(f"this push lands {waves} as pushed (in-flight files as on "
                            f"{tracking}/wavegit/<wave>), whose items are in review: run `wavegit sync` to "
                            "mark them done")
    refusing = {ref: refuses(config, ref) for ref in {v.ref for v in violations}}
    return Verdict(tuple(v for v in violations if refusing[v.ref]), tuple(warnings), tuple(refusals),
                   tuple(v for v in violations if not refusing[v.ref]))
