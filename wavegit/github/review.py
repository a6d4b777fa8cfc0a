"""Review commands in pull request comments: ``/wavegit retry <id>`` and ``/wavegit drop <id>``.

The first line of a comment that starts with ``/wavegit`` is the command. Only a writer (permission asked
through the API) is obeyed, and only about a ``review`` item of the PR's wave; anyone else gets a reply.

- **retry** runs the item again as a wave does (:func:`wavegit.github.scaleout.run_item`). Verified: the
  wave branch is rebuilt from the base with every item's own change in order, the item's replaced, and its
  ``attempts`` and ``cost`` recorded; not verified: only its ``cost`` is recorded.
- **drop** rebuilds the wave branch without the item and returns it to ``todo``; a wave's only item cannot
  be dropped (close the PR instead).

Both refuse a branch holding commits wavegit did not make, and a command superseded while it waited is
answered (docs/action.md). The rebuilt branch replaces the old one with a lease on the tip that was read;
``wave_test`` runs on it and the report comment and gate follow the new head. Every tracker commit carries
a ``Wavegit-Cost`` trailer for the day's budget. A reply's only marker names the command's comment (a
retried run never replies twice); whatever it quotes is escaped, so no reply passes for the report.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from tempfile import TemporaryDirectory

from wavegit.attempts import wavebranch
from wavegit.core import git
from wavegit.core.errors import EXIT_BAD_INPUT, EXIT_OK, EXIT_WORK_FAILED, UsageError
from wavegit.core.git import WaveId
from wavegit.core.repo import Repo
from wavegit.engine.claim import load_tracker
from wavegit.engine.outcome import item_report, item_update, wave_succeeded
from wavegit.engine.runs import Attempt, ItemRun, utc_now
from wavegit.engine.wave import collect
from wavegit.github import gate
from wavegit.github.api import WRITERS, Comment, GitHubClient, trusted_authors
from wavegit.github.publish import Publisher
from wavegit.github.review_check import has_command
from wavegit.github.scaleout import remote_wave_tip, run_item, wave_items
from wavegit.model import lifecycle, report, report_markdown, tracker
from wavegit.model.config import Config
from wavegit.model.lifecycle import Status
from wavegit.trackerbranch import budget
from wavegit.trackerbranch.mutation import mutate
from wavegit.trackerbranch.store import Change, Snapshot, TrackerStore

ACTIONS = ("retry", "drop")
_ID_RE = re.compile(r"[A-Za-z0-9._-]+\Z")
_SEP = "\x1f"


@dataclass(frozen=True)
class Command:
    action: str
    item_id: str


class Refused(UsageError):
    """The command cannot be carried out (malformed, unknown item, not in this wave): reply, exit 2."""


def parse_command(body: str) -> Command | None:
    """The command in a comment; None when the comment has none; Refused when it is malformed."""
    for line in body.splitlines():
        words = line.split()
        if not words or words[0] != "/wavegit":
            continue
        if len(words) == 3 and words[1] in ACTIONS and _ID_RE.match(words[2]):
            return Command(words[1], words[2])
        raise Refused("I could not read that command. Write `/wavegit retry <item-id>` or "
                      "`/wavegit drop <item-id>` on a line of its own.")
    return None


def defang(text: str) -> str:
    """``text`` with no HTML comment opener left: whatever a reply quotes, it carries no wavegit marker
    (the quoted parts are escaped already; this holds even for one that was not)."""
    return text.replace("<!--", "&lt;!--")


def reply_marker(comment_id: int) -> str:
    return f"<!-- wavegit:reply {comment_id} -->"


_REPLY_RE = re.compile(r"<!-- wavegit:reply ([0-9]+) -->")


@dataclass(frozen=True)
class Outcome:
    exit_code: int
    reply: str | None
    """What was said on the PR (None: the comment was not a command for us)."""


@dataclass
class Reviewer:
    """Carries out review commands on the PRs of this repository's waves."""

    repo: Repo
    config: Config
    store: TrackerStore
    client: GitHubClient

    def handle(self, number: int, comment: Comment) -> Outcome:
        """Act on ``comment`` of PR ``number`` and reply; the exit code (0, 1 not verified, 2 refused)."""
        try:
            command = parse_command(comment.body)
            if command is None or comment.author == self.client.whoami():
                return Outcome(EXIT_OK, None)
            if self.client.permission(comment.author) not in WRITERS:
                return self._reply(number, comment, EXIT_OK,
                                   f"Thanks @{comment.author}! Only people with write access to this "
                                   "repository can run wavegit commands, so nothing was changed.")
            self._answer_superseded(number, comment)
            code, text = self._act(number, command, comment.author)
        except Refused as exc:
            return self._reply(number, comment, EXIT_BAD_INPUT, f"@{comment.author}: {exc}")
        return self._reply(number, comment, code, f"@{comment.author}: {text}")

    def _answer_superseded(self, number: int, comment: Comment) -> None:
        """Reply to the writers' commands that came after the last answered one and before ``comment`` and
        got no answer: GitHub keeps one waiting run per pull request (the workflow's concurrency group) and
        cancels the older waiting one without a word, so its command was never run."""
        comments = self.client.list_comments(number)
        me = self.client.whoami()
        answered = {int(found) for c in comments if c.author == me
                    for found in _REPLY_RE.findall(c.body.partition("\n")[0])}
        since = max((c.id for c in comments if c.id in answered and c.id < comment.id), default=0)
        for waited in comments:
            if not (since < waited.id < comment.id) or waited.id in answered or waited.author == me \
                    or not has_command(waited.body) or self.client.permission(waited.author) not in WRITERS:
                continue
            try:
                earlier = parse_command(waited.body)
                what = f"`/wavegit {earlier.action} {earlier.item_id}`" if earlier else "your command"
            except Refused:
                what = "your command"
            self._reply(number, waited, EXIT_OK,
                        f"@{waited.author}: {what} was not run: the newer command of @{comment.author} "
                        f"(comment {comment.id}) replaced it while it waited, as GitHub keeps only the "
                        "newest waiting review run of a pull request. Comment it again if still wanted.")

    def _reply(self, number: int, comment: Comment, code: int, text: str) -> Outcome:
        marker = reply_marker(comment.id)
        self.client.upsert_report_comment(number, f"{marker}\n{defang(text)}\n", marker)
        return Outcome(code, text)

    def _current_report(self, number: int) -> report.WaveReport:
        authors = trusted_authors(self.config.report_authors, self.client)
        found = gate.trusted_report(self.client.list_comments(number), authors)
        if found is None:
            raise Refused(f"PR #{number} has no wavegit report to update.")
        try:
            return report_markdown.parse_markdown(found.body)
        except report.ReportError as exc:
            why = report_markdown.quote(exc)
            raise Refused(f"the report comment of PR #{number} cannot be read: {why}") from None

    def _act(self, number: int, command: Command, author: str) -> tuple[int, str]:
        pr = self.client.pr_info(number)
        wave_id = wavebranch.parse_wave_branch(pr.head_ref)
        if wave_id is None or pr.state != "open":
            raise Refused(f"PR #{number} is not an open wavegit wave "
                          f"(its branch is {report_markdown.quote(pr.head_ref)}).")
        snapshot = self.store.read()
        loaded = load_tracker(snapshot, self.repo, self.config)
        item = loaded.get(command.item_id)
        if item is None:
            raise Refused(f"there is no item `{command.item_id}` in the tracker.")
        if item.wave != wave_id or item.status != Status.REVIEW:
            raise Refused(f"`{item.id}` is not an item of wave `{wave_id}` under review "
                          f"(its status is {item.status}).")
        published = self._current_report(number)
        # The base the wave recorded; the branch must still grow from it.
        base, tip = published.base_sha, remote_wave_tip(self.repo, self.config, wave_id)
        if not git.is_ancestor(self.repo.root, base, tip):
            head = report_markdown.quote(pr.head_ref)
            raise Refused(f"{head} no longer grows from the wave's base {base[:12]}.")
        foreign = foreign_commits(self.repo, base, tip, published.head_sha or "")
        if foreign:
            head = report_markdown.quote(pr.head_ref)
            raise Refused(f"{head} has {len(foreign)} commit(s) wavegit did not make "
                          f"({'; '.join(foreign[:SHOWN_COMMITS])}"
                          f"{' and more' if len(foreign) > SHOWN_COMMITS else ''}). `/wavegit "
                          f"{command.action}` rebuilds the branch from the wave's base and would drop them, "
                          "so nothing was changed. Move the branch back to the reported head "
                          f"{(published.head_sha or '')[:12]} (an \"Update branch\" merge can be made again "
                          "afterwards) and comment again, or merge or close the pull request as it is.")
        on_branch = branch_items(self.repo, base, tip)
        if item.id not in on_branch:
            raise Refused(f"`{item.id}` has no commit on {report_markdown.quote(pr.head_ref)}.")
        members = wave_items(loaded, wave_id, Status.REVIEW)
        rebuild = Rebuild(self, number, wave_id, base, tip, snapshot, members, on_branch, published)
        if command.action == "drop":
            return rebuild.drop(item, author)
        return rebuild.retry(item, author)


@dataclass
class Rebuild:
    """One wave branch being rebuilt from its base by a review command."""

    reviewer: Reviewer
    number: int
    wave_id: WaveId
    base: str
    tip: str
    """The remote wave branch's tip that was read: the push replaces it only if it is still there."""
    snapshot: Snapshot
    members: tuple[tracker.Item, ...]
    on_branch: dict[str, tuple[str, str]]
    """item id -> (its commit on the wave branch, the commit's message)."""
    published: report.WaveReport
    """The report comment as it was."""

    def retry(self, item: tracker.Item, author: str) -> tuple[int, str]:
        r = self.reviewer
        run = run_item(r.repo, r.config, r.store, self.wave_id, item, self.base, self.snapshot)
        if not run.verified:
            if run.cost > 0:  # it still spent: the cost goes on the item, the branch and status stay
                self._write(item.id, f"retry {item.id} in wave {self.wave_id}: not verified", run.cost,
                            lambda current: {"cost": round(current.cost + run.cost, 6)})
            why = report_markdown.quote(run.error)
            return EXIT_WORK_FAILED, (f"the retry of `{item.id}` was not verified ({why}); the wave branch "
                                      "and the item's status are unchanged (its cost is recorded).")
        runs = [run if other.id == item.id else self._delivered(other) for other in self.members
                if other.id in self.on_branch]
        rep = self._push_and_report(runs, f"{item.id} retried (`/wavegit retry` by @{author})", run)
        self._write(item.id, f"retry {item.id} in wave {self.wave_id}", run.cost, lambda current: (
            item_update(run, current, r.config, utc_now(), self.number).fields
            if current.wave == self.wave_id else None))
        self._post(rep)
        return EXIT_OK, (f"retried `{item.id}`: verified; `{rep.branch}` is now at "
                         f"{(rep.head_sha or '')[:12]}.")

    def drop(self, item: tracker.Item, author: str) -> tuple[int, str]:
        kept = [other for other in self.members if other.id in self.on_branch and other.id != item.id]
        if not kept:
            raise Refused(f"`{item.id}` is the only item of wave `{self.wave_id}`; close the pull request "
                          "instead (`wavegit sync` then returns it to todo).")
        rep = self._push_and_report([self._delivered(other) for other in kept],
                                    f"{item.id} dropped (`/wavegit drop` by @{author})", None)
        reason = f"dropped from PR #{self.number} by @{author}"
        self._write(item.id, f"drop {item.id} from wave {self.wave_id}", 0.0, lambda current: (
            lifecycle.reopen(reason, report.utc_timestamp()).fields
            if current.wave == self.wave_id else None))
        self._post(rep)
        return EXIT_OK, (f"dropped `{item.id}`: it is back to todo; `{rep.branch}` is now at "
                         f"{(rep.head_sha or '')[:12]}.")

    def _write(self, item_id: str, subject: str, usd: float,
               fields_of: Callable[[tracker.Item], Mapping[str, object | None] | None]) -> None:
        """One tracker commit setting ``fields_of(item)`` on the item as the tracker holds it then (nothing
        when it is gone or ``fields_of`` gives None), with the trailers the day's budget sums."""
        r = self.reviewer

        def apply(snapshot: Snapshot) -> Change | None:
            current = load_tracker(snapshot, r.repo, r.config).get(item_id)
            if snapshot.text is None or current is None or (fields := fields_of(current)) is None:
                return None
            return Change(tracker.set_fields(snapshot.text, item_id, fields))

        mutate(r.store, apply, message=f"wavegit: {subject}\n\n{wavebranch.TRAILER_WAVE}: {self.wave_id}\n"
                                       f"{budget.cost_trailer(usd)}")

    def _delivered(self, item: tracker.Item) -> ItemRun:
        """An item already on the branch, as the run whose commit is its own change on the base."""
        commit, message = self.on_branch[item.id]
        own = own_commit(self.reviewer.repo, git.CommitSha(self.base), git.CommitSha(commit), message)
        return ItemRun(item, attempts=[Attempt(1, "", "", self.base, utc_now(), commit=own, message=message)])

    def _push_and_report(self, runs: list[ItemRun], note: str, fresh: ItemRun | None) -> report.WaveReport:
        """Rebuild the branch from ``runs``, push it, and the report describing it (``fresh``: re-run)."""
        r = self.reviewer
        branch = wavebranch.wave_branch(self.wave_id)
        try:
            collected = collect(r.repo, r.config, self.wave_id, self.base, runs, push=True, lease=self.tip)
        finally:
            wavebranch.delete_branch(r.repo.root, branch)
        rep = self.published
        kept = {run.item.id for run in runs}
        gone = [one.id for one in rep.items if one.id not in kept]
        rep.items = [item_report(fresh, r.config) if fresh is not None and one.id == fresh.item.id else one
                     for one in rep.items if one.id in kept]
        rep.head_sha, rep.pr = collected.head, self.number
        rep.notes.append(note)
        if gone:
            rep.notes.append(f"no longer on {branch}: {', '.join(gone)}")
        if collected.wave_test is not None:
            rep.wave_test = collected.wave_test.to_report()
        rep.success = wave_succeeded(rep, collected.wave_test)
        rep.finished_at = report.utc_timestamp()
        return rep

    def _post(self, rep: report.WaveReport) -> None:
        r = self.reviewer
        if rep.head_sha and not wait_for_head(r.client, self.number, rep.head_sha, HEAD_WAIT_S):
            rep.notes.append(f"GitHub still showed the old head of PR #{self.number} after "
                             f"{HEAD_WAIT_S:g} s: comment `/wavegit gate` to check the new one")
        Publisher(r.client, r.config, r.store).post_report(rep)


HEAD_WAIT_S = 30.0
"""How long a rebuilt wave waits for GitHub to show its pushed head on the PR before the gate judges it."""


def wait_for_head(client: GitHubClient, number: int, sha: str, wait_s: float) -> bool:
    """Whether PR ``number`` shows head ``sha`` within ``wait_s``: GitHub updates a PR's head some time after
    the push, and a gate run before that would judge (and set its status on) the old head."""
    deadline = time.monotonic() + wait_s
    while client.pr_info(number).head_sha != sha:
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.5)
    return True


SHOWN_COMMITS = 3
"""Foreign commits named in a refusal; the rest are counted."""


def foreign_commits(repo: Repo, base: str, tip: str, reported: str) -> list[str]:
    """The commits on the wave branch (``base..tip``, first parent, newest first) that wavegit did not make,
    one line each: those after the head the report describes (an "Update branch" merge, a person's push)
    and those without a ``Wavegit-Item`` trailer. Retry and drop rebuild the branch from its item commits,
    so they would silently drop every one of these."""
    fmt = f"%H{_SEP}%an{_SEP}%s{_SEP}%(trailers:key={wavebranch.TRAILER_ITEM},valueonly,separator=%x20)"
    root = repo.root
    known = git.resolve_commit(root, reported) is not None and git.is_ancestor(root, reported, tip)
    listing = git.log(root, [f"{base}..{tip}"], fmt, first_parent_only=True)
    found, after = [], tip != reported
    for line in git.lines(listing):
        commit, author, subject, item_id = line.split(_SEP, 3)
        if known and commit == reported:
            after = False
        if after or not item_id.strip():
            who, what = report_markdown.quote(author), report_markdown.quote(subject)
            found.append(f"{commit[:12]} by {who}: {what}")
    return found


def branch_items(repo: Repo, base: str, tip: str) -> dict[str, tuple[str, str]]:
    """The item commits from ``base`` to ``tip``, oldest first: id -> (commit, message)."""
    fmt = f"%H{_SEP}%(trailers:key={wavebranch.TRAILER_ITEM},valueonly,separator=%x20){_SEP}%B%x00"
    listing = git.log(repo.root, [f"{base}..{tip}"], fmt, first_parent_only=True, reverse=True)
    found: dict[str, tuple[str, str]] = {}
    for record in listing.split("\0"):
        if not record.strip():
            continue
        commit, item_id, message = record.strip("\n").split(_SEP, 2)
        if item_id.strip():
            found[item_id.strip()] = (commit, message)
    return found


def own_commit(repo: Repo, base: git.CommitSha, commit: git.CommitSha, message: str) -> git.CommitSha:
    """``commit``'s own change (against its first parent) as a commit on ``base``.

    Items own disjoint paths, so the change is the set of paths it touched, taken as they are in
    ``commit``; a scratch index applies them to ``base``'s tree without a work tree.
    """
    changes = git.own_changes(repo.root, commit)
    blobs = {change.path: None if change.deleted else change.sha for change in changes}
    with TemporaryDirectory() as scratch:
        tree = git.build_tree(repo.root, Path(scratch) / "index", base, blobs,
                                 modes={change.path: change.mode for change in changes})
    return git.commit_tree(repo.root, tree, [base], message)
