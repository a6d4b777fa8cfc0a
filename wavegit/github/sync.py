"""``wavegit sync``: reconcile the tracker with what waves left behind — branches, pull requests, leases.

All tracker changes are one compare-and-swap commit (none when nothing changed, so a second run is a
no-op). The rules, per item:

- ``in_progress`` whose wave branch carries a commit with its ``Wavegit-Item`` trailer that is in the base
  branch (the rules below) -> ``done`` (the wave was merged before it was even recorded).
- ``in_progress`` with an expired lease (``claimed_at`` older than ``lease_ttl_s``; a missing or unreadable
  ``claimed_at`` counts as expired):
  - the wave branch does not exist on the remote (in this repository when there is no remote) -> ``todo``
    with ``attempts`` + 1, or ``failed`` once ``max_attempts`` is reached (no attempt counted when its
    scheduler is known gone: wavegit's own death is not the item's);
  - the wave branch exists (the scheduler died after the push, before the record): items with a commit
    on it -> ``review``; the others -> ``todo`` / ``failed`` as above.
  - The same at once, lease or not, when the wave's scheduler ran on this machine and is gone
    (``wavegit.core.wavelock``: its lock, in this clone or in its heartbeat's record, names a pid that
    ended or now runs another process; ``wavegit.trackerbranch.claims``).
- ``review`` with ``pr`` while GitHub is configured: the PR merged -> ``done`` (``merge_sha``), closed
  unmerged -> ``todo``; the report comment then says so.
- ``review`` otherwise: the item's changes in the base branch -> ``done``, by the rules of
  :mod:`wavegit.github.sync_merged` (ancestry, patch id, ``Wavegit-Item`` trailers of a squash, content), on
  the wave branch as the remote has it or as this repository does (a ``--no-push`` wave merged by hand); the
  change names the rule. A wave branch that is gone is not by itself a sign of a merge: such items stay in
  ``review`` unless a squash's trailers name them, and once it is gone here too, sync says so each time
  (:func:`stranded`), with the commands that settle them.

A shallow clone (``fetch-depth: 1`` in Actions) is deepened by that fetch (``--unshallow``): the rules
walk the base branch's history. When that fails, or the shallow repository has no remote, sync stops
(exit 2) rather than say "in sync" about items that were merged.

Then pruning, outside the commit: worktrees under ``<state dir>/worktrees/<wave>`` and item branches
``wavegit/items/<wave>/*`` of waves with no item left ``in_progress``. They are listed before the tracker
is read, so a wave that claims after that read cannot lose worktrees it has just created. Last, the
branches of waves with no item left ``in_progress`` or in ``review`` whose work is all in the base branch
are deleted (:mod:`wavegit.github.sync_branches`; ``keep_branches`` keeps them, and the item branches above).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import cache
from pathlib import Path

from wavegit.attempts import wavebranch, workspace
from wavegit.core import git, gitops, heartbeat, wavelock
from wavegit.core.errors import UsageError, WavegitError
from wavegit.core.repo import Repo
from wavegit.github import sync_branches, sync_merged
from wavegit.github.api import GitHubClient, mark_report_outcome, pr_state_for_sync
from wavegit.model import lifecycle, report, report_markdown, tracker
from wavegit.model.config import Config, protected_of
from wavegit.model.lifecycle import Status
from wavegit.trackerbranch import claims
from wavegit.trackerbranch.missing import no_tracker
from wavegit.trackerbranch.store import Change, Snapshot, TrackerStore, mutate

PR_RULE = "pr"
SYNC_MESSAGE = "wavegit: sync: reconcile in-flight items with branches, pull requests and leases"
_SEP = "\x1f"


@dataclass(frozen=True)
class ItemChange:
    """One item's status change, with the tracker fields it writes."""

    id: str
    wave: str | None
    old: str
    new: Status
    reason: str
    fields: Mapping[str, object | None] = field(compare=False)
    pr: int | None = None
    merge_sha: str | None = None
    rule: str | None = None
    """How a merge was found: ``pr``, or a rule of :mod:`wavegit.github.sync_merged`; None for other
    changes."""

    def line(self) -> str:
        how = f" by {self.rule}" if self.rule else ""
        return f"{self.id}: {self.old} -> {self.new}{how} ({self.reason})"

    def to_json(self) -> dict[str, object]:
        return {"kind": "item", "id": self.id, "wave": self.wave, "from": self.old, "to": self.new,
                "reason": self.reason, "pr": self.pr, "merge_sha": self.merge_sha, "rule": self.rule}


@dataclass(frozen=True)
class Pruned:
    """A leftover of a finished wave: its worktree directory or one of its item branches."""

    kind: str
    """``worktrees`` or ``branch``."""
    wave: str
    target: str

    def line(self) -> str:
        what = "worktrees" if self.kind == "worktrees" else "branch"
        return f"prune {what} {self.target} (wave {self.wave})"

    def to_json(self) -> dict[str, object]:
        return {"kind": "prune", "what": self.kind, "wave": self.wave, "target": self.target}


@dataclass
class SyncResult:
    items: list[ItemChange] = field(default_factory=list)
    pruned: list[Pruned] = field(default_factory=list)
    commit: str | None = None
    """The tracker commit; None when nothing changed or on a dry run."""
    errors: list[str] = field(default_factory=list)
    """What failed after the commit landed (report comments)."""
    branches: list[sync_branches.BranchFate] = field(default_factory=list)
    """Branches of settled waves deleted, or kept because they hold work not in the base branch."""
    stranded: list[Stranded] = field(default_factory=list)
    """Items left in review that nothing sync watches can move any more."""

    def lines(self) -> list[str]:
        """What changed (or, on a dry run, would change)."""
        return ([c.line() for c in self.items] + [p.line() for p in self.pruned]
                + [b.line() for b in self.branches if b.deleted])

    def notes(self) -> list[str]:
        """What sync leaves as it is and why: the branches it keeps (each once, when it becomes kept)."""
        return ([b.line() for b in self.branches if not b.deleted and not b.told]
                + [stuck.line for stuck in self.stranded])

    def to_json(self) -> list[dict[str, object]]:
        return ([c.to_json() for c in self.items] + [p.to_json() for p in self.pruned]
                + [b.to_json() for b in self.branches] + [stuck.to_json() for stuck in self.stranded])


@dataclass(frozen=True)
class Stranded:
    """An item in review whose wave branch is gone, on the remote and here, with its change not in the base
    branch and no pull request to ask: it stays in review (and holds its files) until someone decides."""

    id: str
    wave: str
    line: str

    def to_json(self) -> dict[str, object]:
        return {"kind": "stranded", "id": self.id, "wave": self.wave, "detail": self.line}


def stranded(items: Sequence[tracker.Item], changed: set[str], facts: Facts,
             config: Config) -> list[Stranded]:
    """The review items sync left as they are with nothing left to watch: no PR (or no GitHub to ask) and
    no wave branch anywhere (a wave branch that is gone is no sign of a merge), each with what to do."""
    found = []
    for item in items:
        if (item.status != Status.REVIEW or item.id in changed or item.wave is None
                or (item.pr is not None and facts.github is not None) or facts.refs.heads(item.wave)):
            continue
        branch = wavebranch.wave_branch(item.wave)
        where = f"on {facts.refs.where} and here" if facts.refs.remote else "here"
        found.append(Stranded(item.id, item.wave, (
            f"{item.id} stays in review: its wave branch {branch} is gone ({where}) and its change is not "
            f"in {config.base_branch}; `wavegit reopen {item.id} --reason ...` runs it again, `wavegit done "
            f"{item.id} --merge-sha SHA` records a merge sync cannot see")))
    return found


class WaveRefs:
    """The wave branches and the base branch as the remote has them (this repository's, without one)."""

    def __init__(self, repo: Repo, config: Config) -> None:
        self.root = repo.root
        self.base_branch = config.base_branch
        remote = config.remote if repo.has_remote(config.remote) else None
        if remote is not None:
            prefix = f"refs/remotes/{remote}/"
            waves = f"{wavebranch.BRANCH_PREFIX}*"
            _fetch(repo.root, remote, [f"+refs/heads/{waves}:{prefix}{waves}", heartbeat.refspec(remote),
                                       f"+refs/heads/{config.base_branch}:{prefix}{config.base_branch}"],
                   unshallow=gitops.is_shallow(repo.root))
            self.where = remote
        else:
            if gitops.is_shallow(repo.root):
                raise UsageError(f"this repository is a shallow clone and has no remote {config.remote!r} to "
                                 "fetch its history from: merges cannot be found in a cut-off history "
                                 "(clone it in full, or set `remote`)")
            prefix = "refs/heads/"
            self.where = "this repository"
        self.remote = remote
        self.base = gitops.resolve_commit(repo.root, f"{prefix}{config.base_branch}")
        self.tips, self.item_tips = _branches(repo.root, prefix)
        # A `--no-push` wave's branch lives only here; merged by hand, it is found by its local tip.
        self.local_tips = _branches(repo.root, "refs/heads/")[0] if remote is not None else self.tips
        self.items_on = cache(self._items_on)
        self.merges = cache(self._merges)

    def tip(self, wave_id: str) -> str | None:
        return self.tips.get(wave_id)

    def heads(self, wave_id: str) -> list[sync_merged.Head]:
        """The wave branch's tips: on the remote, then (when it differs) in this repository."""
        found = []
        if wave_id in self.tips:
            found.append(sync_merged.Head(self.tips[wave_id], self.where if self.remote else "local"))
        local = self.local_tips.get(wave_id)
        if local is not None and local != self.tips.get(wave_id):
            found.append(sync_merged.Head(local, "local"))
        return found

    def branches(self) -> sync_branches.Branches:
        return sync_branches.Branches(self.root, self.remote, self.tips, self.item_tips, self.local_tips,
                                      self.merges)

    def _merges(self, wave_id: str) -> sync_merged.WaveMerges | None:
        if self.base is None:
            return None
        return sync_merged.WaveMerges(self.root, self.base, self.base_branch, wave_id, self.heads(wave_id))

    def _items_on(self, wave_id: str) -> frozenset[str]:
        """Items with a commit of this wave (``Wavegit-Item`` + ``Wavegit-Wave`` trailers) on its branch."""
        tip = self.tips.get(wave_id)
        if tip is None:
            return frozenset()
        fmt = (f"%(trailers:key={wavebranch.TRAILER_WAVE},valueonly,separator=%x20){_SEP}"
               f"%(trailers:key={wavebranch.TRAILER_ITEM},valueonly,separator=%x20)")
        listing = gitops.log(self.root, [tip], fmt, grep=f"{wavebranch.TRAILER_WAVE}: {wave_id}")
        found: set[str] = set()
        for line in listing.splitlines():
            waves, _, items = line.partition(_SEP)
            if wave_id in waves.split():
                found.update(items.split())
        return frozenset(found)


def _branches(root: Path, prefix: str) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """Wave id -> its wave branch's tip, and wave id -> {item branch: tip}, of the refs under ``prefix``."""
    waves: dict[str, str] = {}
    items: dict[str, dict[str, str]] = {}
    for ref, sha in gitops.for_each_ref(root, f"{prefix}{wavebranch.BRANCH_PREFIX}").items():
        name = ref.removeprefix(prefix)
        wave_id = wavebranch.parse_wave_branch(name)
        if wave_id is not None:
            waves[wave_id] = sha
        parsed = wavebranch.parse_item_branch(name)
        if parsed is not None:
            items.setdefault(parsed[0], {})[name] = sha
    return waves, items


def _fetch(root: Path, remote: str, refspecs: list[str], *, unshallow: bool) -> None:
    """Fetch the wave and base branches; in a shallow clone (``fetch-depth: 1``) their whole history too,
    which the merge rules walk (a cut-off base branch would make every merged item look unmerged)."""
    try:
        gitops.fetch(root, remote, refspecs, prune=True, unshallow=unshallow)
    except git.GitError as exc:
        if gitops.missing_remote_ref(exc):
            raise UsageError(f"the base branch does not exist on {remote}: {exc.stderr.strip()}") from exc
        if unshallow:
            raise _still_shallow(remote, exc.stderr.strip() or str(exc)) from exc
        raise
    if unshallow and gitops.is_shallow(root):
        # A remote that is itself shallow answers the fetch and leaves the history cut off.
        raise _still_shallow(remote, f"{remote} has no more history to give")


def _still_shallow(remote: str, why: str) -> UsageError:
    return UsageError(f"this repository is a shallow clone and fetching its whole history from {remote} "
                      f"failed ({why}): merges cannot be found in a cut-off history; clone in full "
                      "(`fetch-depth: 0` in actions/checkout)")


class Facts:
    """What the rules look at besides the tracker; every lookup is made at most once per sync."""

    def __init__(self, refs: WaveRefs, github: GitHubClient | None,
                 dead_waves: Mapping[str, str] | None = None) -> None:
        self.refs = refs
        self.github = github
        self.dead_waves = dead_waves or {}
        """Waves whose scheduler on this machine is gone, each with who it was (``claims.dead_waves``)."""
        self.pr_state: Callable[[int], tuple[str, str | None]] = cache(self._pr_state)

    def _pr_state(self, number: int) -> tuple[str, str | None]:
        assert self.github is not None
        return pr_state_for_sync(self.github, number)


def claimed_at(item: tracker.Item) -> datetime | None:
    """The claim time, or None when it is missing or not an ISO 8601 timestamp."""
    return claims.claim_time(item.claimed_at)


def lease_expired(item: tracker.Item, ttl_s: float, now: datetime) -> bool:
    claimed = claimed_at(item)
    return claimed is None or now - claimed >= timedelta(seconds=ttl_s)


def decide(item: tracker.Item, facts: Facts, config: Config, now: datetime) -> ItemChange | None:
    """The change the rules (module docstring) make to ``item``, or None."""
    if item.status == Status.REVIEW:
        return _review(item, facts, now)
    if item.status == Status.IN_PROGRESS:
        return _in_progress(item, facts, config, now)
    return None


def _review(item: tracker.Item, facts: Facts, now: datetime) -> ItemChange | None:
    if item.pr is not None and facts.github is not None:
        state, merge_sha = facts.pr_state(item.pr)
        if state == "merged":
            return _done(item, merge_sha, f"PR #{item.pr} merged", now, PR_RULE)
        if state == "closed":
            update = lifecycle.reopen(f"PR #{item.pr} was closed without merging", report.utc_timestamp(now))
            return _change(item, update, f"PR #{item.pr} closed without merging")
        return None
    if item.wave is None:
        return None
    return _done_if_merged(item, item.wave, facts, now)


def _in_progress(item: tracker.Item, facts: Facts, config: Config, now: datetime) -> ItemChange | None:
    wave = item.wave
    on_branch = wave is not None and item.id in facts.refs.items_on(wave)
    merges = facts.refs.merges(wave) if wave is not None else None
    if wave is not None and merges is not None and merges.has_item(item.id):
        done = _done_if_merged(item, wave, facts, now)
        if done is not None:
            return done
    dead = facts.dead_waves.get(wave) if wave is not None else None
    if dead is None and not lease_expired(item, config.lease_ttl_s, now):
        return None
    since = f"claimed at {item.claimed_at}" if claimed_at(item) else "no valid claimed_at"
    why = f"its scheduler ({dead}) is gone" if dead else f"lease expired ({since})"
    if wave is None or facts.refs.tip(wave) is None:
        branch = wavebranch.wave_branch(wave) if wave else "(no wave)"
        where = facts.refs.where
        return _release(item, config, f"{why}; no branch {branch} on {where}", now, counted=dead is None)
    if on_branch:
        # The wave's record is lost, not its attempt: one attempt, verified.
        update = lifecycle.record(item, verified=True, used=1, cost=0.0, error=None,
                                  max_attempts=config.max_attempts, at=report.utc_timestamp(now))
        return _change(item, update, f"recovered from {wavebranch.wave_branch(wave)}: the wave stopped "
                                     "before recording")
    return _release(item, config, f"{why}; {wavebranch.wave_branch(wave)} has no commit "
                                  "of this item", now, counted=dead is None)


def _release(item: tracker.Item, config: Config, reason: str, now: datetime, *, counted: bool) -> ItemChange:
    update = lifecycle.release(item, reason, config.max_attempts, report.utc_timestamp(now), counted=counted)
    if update.status == Status.FAILED:
        reason = f"{reason}; attempt {item.attempts + 1} of {config.max_attempts}"
    return _change(item, update, reason)


def _done_if_merged(item: tracker.Item, wave: str, facts: Facts, now: datetime) -> ItemChange | None:
    merges = facts.refs.merges(wave)
    merged = merges.item(item.id, item.owns) if merges is not None else None
    if merged is None:
        return None
    return _done(item, merged.commit, merged.reason, now, merged.rule)


def _done(item: tracker.Item, merge_sha: str | None, reason: str, now: datetime, rule: str) -> ItemChange:
    return _change(item, lifecycle.done(merge_sha, report.utc_timestamp(now)), reason, merge_sha, rule)


def _change(item: tracker.Item, update: lifecycle.Update, reason: str,
            merge_sha: str | None = None, rule: str | None = None) -> ItemChange:
    return ItemChange(item.id, item.wave, item.status, update.status, reason, update.fields, item.pr,
                      merge_sha, rule)


# -- pruning ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Leftovers:
    """Worktree directories and item branches per wave, as found before the tracker was read."""

    worktree_dirs: dict[str, Path]
    item_branches: dict[str, list[str]]

    def waves(self) -> set[str]:
        return set(self.worktree_dirs) | set(self.item_branches)


def find_leftovers(repo: Repo) -> Leftovers:
    root = repo.worktrees_dir
    dirs = {p.name: p for p in sorted(root.iterdir()) if p.is_dir() and wavebranch.WAVE_ID_RE.match(p.name)} \
        if root.is_dir() else {}
    branches: dict[str, list[str]] = {}
    for ref in gitops.for_each_ref(repo.root, f"refs/heads/{wavebranch.ITEM_BRANCH_PREFIX}"):
        parsed = wavebranch.parse_item_branch(ref)
        if parsed is not None:
            branches.setdefault(parsed[0], []).append(ref.removeprefix("refs/heads/"))
    return Leftovers(dirs, branches)


def prune(repo: Repo, leftovers: Leftovers, in_flight: set[str], *, dry_run: bool,
          branches: bool = True) -> list[Pruned]:
    """Remove the leftovers of waves not in ``in_flight`` (item branches only with ``branches``); what was
    (or, on a dry run, would be) removed."""
    done: list[Pruned] = []
    for wave_id in sorted(leftovers.waves() - in_flight):
        directory = leftovers.worktree_dirs.get(wave_id)
        if directory is not None:
            if not dry_run:
                workspace.remove(directory)
            done.append(Pruned("worktrees", wave_id, str(directory)))
        for branch in leftovers.item_branches.get(wave_id, []) if branches else []:
            if not dry_run:
                wavebranch.delete_branch(repo.root, branch)
            done.append(Pruned("branch", wave_id, branch))
    if not dry_run:
        # What a reaper that was killed (or never started) left of finished waves.
        workspace.empty_trash(repo.trash_dir)
    return done


# -- the whole sync -----------------------------------------------------------------------------------------

def _load(snapshot: Snapshot, repo: Repo, config: Config) -> tracker.Tracker:
    if snapshot.text is None or snapshot.blob_sha is None:
        raise no_tracker(repo.root, f"{config.tracker_path} on {config.tracker_branch}")
    return tracker.load_cached(snapshot.text, snapshot.blob_sha, repo.cache_dir, config.tracker_path,
                               protected=protected_of(config))


def sync(repo: Repo, config: Config, store: TrackerStore, *, github: GitHubClient | None = None,
         now: datetime | None = None, dry_run: bool = False) -> SyncResult:
    """Apply the rules in one compare-and-swap commit, prune, then update report comments."""
    moment = now or datetime.now(timezone.utc)
    leftovers = find_leftovers(repo)
    facts = Facts(WaveRefs(repo, config), github, claims.dead_waves(repo, config))
    seen: list[tuple[tracker.Tracker, list[ItemChange]]] = []

    def apply(snapshot: Snapshot) -> Change | None:
        loaded = _load(snapshot, repo, config)
        changes = [c for c in (decide(item, facts, config, moment) for item in loaded.items) if c is not None]
        seen[:] = [(loaded, changes)]
        if not changes:
            return None
        assert snapshot.text is not None
        return Change(tracker.set_items_fields(snapshot.text, {c.id: c.fields for c in changes}, loaded))

    result = SyncResult()
    if dry_run:
        apply(store.read())
    else:
        result.commit = mutate(store, apply, message=SYNC_MESSAGE).commit
        wavelock.forget(repo, facts.dead_waves)  # their claims are released now
    loaded, result.items = seen[0]
    new_status = {c.id: c.new for c in result.items}
    in_flight = {item.wave for item in loaded.items
                 if item.wave and new_status.get(item.id, item.status) == Status.IN_PROGRESS}
    result.pruned = prune(repo, leftovers, in_flight, dry_run=dry_run, branches=not config.keep_branches)
    if not config.keep_branches:
        unsettled = {item.wave for item in loaded.items if item.wave and new_status.get(item.id, item.status)
                     in (Status.IN_PROGRESS, Status.REVIEW)}
        result.branches = sync_branches.clean(facts.refs.branches(), unsettled, dry_run=dry_run,
                                              told_file=repo.kept_branches_file)
    result.stranded = stranded(loaded.items, set(new_status), facts, config)
    if github is not None and result.commit is not None:
        result.errors = update_comments(github, result.items)
    return result


def update_comments(github: GitHubClient, changes: list[ItemChange]) -> list[str]:
    """Say on each affected PR's report comment what sync did; the errors (the tracker commit stands)."""
    by_pr: dict[int, list[ItemChange]] = {}
    for change in changes:
        if change.pr is not None and change.old == Status.REVIEW and change.new in (Status.DONE, Status.TODO):
            by_pr.setdefault(change.pr, []).append(change)
    errors: list[str] = []
    for number, group in sorted(by_pr.items()):
        ids = ", ".join(c.id for c in group)
        merged = group[0].new == Status.DONE
        sha = (group[0].merge_sha or "")[:12]
        outcome = (f"merged{' as ' + sha if sha else ''}; `wavegit sync` marked {ids} done" if merged
                   else f"closed without merging; `wavegit sync` returned {ids} to todo")
        try:
            mark_report_outcome(github, number, report_markdown.MARKER, outcome)
        except WavegitError as exc:
            errors.append(f"PR #{number}: cannot update the report comment: {exc}")
    return errors
