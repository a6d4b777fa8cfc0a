"""``wavegit intake``: turn labelled GitHub issues into backlog items, in one compare-and-swap commit.

Which issues are taken, the replies and the items dropped with their closed issues are README's "From GitHub
issues". Running it again takes nothing twice, nor an item that ``wavegit drop`` removed. Exit 0 (problems
are said on the issues and here), 2 bad input.
"""

from __future__ import annotations

import argparse

from wavegit.commands._write import add_write_arguments, landed, open_target
from wavegit.core import git, yamledit
from wavegit.core.errors import UsageError
from wavegit.github import api, intake
from wavegit.github.client import connect
from wavegit.model import tracker
from wavegit.model.config import protected_of
from wavegit.model.lifecycle import Status
from wavegit.ownership.protected import DEFAULT_PROTECTED
from wavegit.trackerbranch.mutation import mutate
from wavegit.trackerbranch.store import OP_TRAILER, Change, GitStore, Snapshot

_SEP = "\x1f"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--label", metavar="NAME", help="take issues with this label (default: intake_label)")
    add_write_arguments(parser)


def run(args: argparse.Namespace) -> int:
    settings = api.require_settings()
    target = open_target(args)
    store, tracker_path = target.store, target.config.tracker_path
    label = args.label or target.config.intake_label
    client = connect(settings)
    current = _load(store.read(), tracker_path)
    protected = protected_of(target.config) or DEFAULT_PROTECTED
    candidates, replies = _read_issues(client, label, {item.issue for item in current.items if item.issue},
                                       protected)
    closed = _closed_by_hand(client, current)
    added: list[tracker.Item] = []
    dropped: list[tracker.Item] = []
    collided: list[tracker.Item] = []
    undone: dict[str, str] = {}

    def apply(snapshot: Snapshot) -> Change | None:
        now = _load(snapshot, tracker_path)
        taken = {item.issue for item in now.items if item.issue is not None}
        ids = {item.id for item in now.items}
        new = [item for item in candidates if item.issue not in taken]
        undone.update(_dropped(store, snapshot, [item.id for item in new if item.id not in ids]))
        added[:] = [item for item in new if item.id not in ids and item.id not in undone]
        collided[:] = [item for item in new if item.id in ids]
        needed = {dep for item in now.items for dep in item.depends_on}
        dropped[:] = [item for item in now.items if item.issue in closed and item.status == Status.TODO
                      and item.id not in needed]
        if not added and not dropped:
            return None
        text = snapshot.text or ""
        for item in dropped:
            text = yamledit.remove_item(text, item.id)
        text = tracker.append_items(text, added)
        return Change(text)

    if candidates or closed:
        result = mutate(store, apply, message=f"wavegit: intake of issues labelled {label}",
                        deadline_s=args.deadline)
        if result.commit is not None:
            where = landed(result, store)
            print(f"took {len(added)} issues, dropped {len(dropped)} items: {where}")
            for item in dropped:
                print(f"dropped {item.id}: issue #{item.issue} was closed before any wave took it")
            for item in added:
                assert item.issue is not None
                replies[item.issue] = (f"Taken: this issue is backlog item `{item.id}` ({where}). Its wave's "
                                       "pull request closes it.")
        for item in candidates:
            if item.issue is not None and item.id in undone:
                # Else a drop would last until the next intake.
                replies[item.issue] = (f"Not taken again: its item `{item.id}` was dropped by commit "
                                       f"{undone[item.id][:12]}. Remove the `{label}` label (or close the "
                                       "issue); to take it again, add the item by hand.")
        for item in collided:
            assert item.issue is not None
            # Else the issue would wait, unanswered, on every intake.
            replies[item.issue] = (f"Not taken: the tracker already has an item `{item.id}` that is not this "
                                   "issue's. Someone with write access: rename that item, then wavegit "
                                   "takes this issue on its next intake.")
    for number, text in replies.items():
        client.upsert_report_comment(number, f"{intake.REPLY_MARKER}\n{text}", intake.REPLY_MARKER)
        print(f"#{number}: {text.splitlines()[0]}")
    if not replies and not dropped:
        print(f"nothing to take: no open issue labelled {label!r} is new")
    return 0


def _read_issues(client: api.GitHubClient, label: str, taken: set[int], protected: tuple[str, ...]
                 ) -> tuple[list[tracker.Item], dict[int, str]]:
    """The items the new labelled issues ask for, and the reply to every issue that is not taken."""
    candidates: list[tracker.Item] = []
    replies: dict[int, str] = {}
    for issue in client.labelled_issues(label):
        if issue.number in taken:
            continue
        labelled = client.labelled_by(issue.number, label)
        who = labelled.who if labelled is not None else None
        permission = client.permission(who) if who else "none"
        if labelled is None or permission not in api.WRITERS:
            by = f"@{who}" if who else "nobody known"
            replies[issue.number] = (f"Not taken: the `{label}` label was put here by {by}, who has "
                                     f"`{permission}` access. wavegit takes issues labelled by someone with "
                                     "write access.")
            continue
        author_writes = bool(issue.author) and client.permission(issue.author) in api.WRITERS
        if intake.changed_since(issue, labelled.at) and not author_writes:
            replies[issue.number] = (f"Not taken: this issue changed after @{who} labelled it `{label}`, and "
                                     "a label vouches only for the text it was put on. Someone with write "
                                     "access: read it again, then remove the label and put it back.")
            continue
        form = intake.item_from_issue(issue, protected)
        if form.item is None:
            listing = "\n".join(f"- {problem}" for problem in form.problems)
            replies[issue.number] = (f"Not taken yet: the form needs fixing.\n\n{listing}\n\nEdit the "
                                     "issue; wavegit reads it again on its next intake (once labelled "
                                     "again, if its author has no write access).")
            continue
        candidates.append(form.item)
    return candidates, replies


def _dropped(store: GitStore, snapshot: Snapshot, item_ids: list[str]) -> dict[str, str]:
    """Item id -> the commit that dropped it (its ``Wavegit-Op: drop ID`` trailer) on the tracker branch,
    for those of ``item_ids`` ever dropped; one ``git log`` for all of them."""
    if not item_ids or snapshot.commit is None:
        return {}
    wanted = set(item_ids)
    listing = git.log(store.repo.root, [snapshot.commit],
                         f"%H{_SEP}%(trailers:key={OP_TRAILER},valueonly,separator=%x1f)",
                         grep=f"{OP_TRAILER}: drop {intake.ITEM_PREFIX}")
    found: dict[str, str] = {}
    for line in git.lines(listing):
        commit, _, values = line.partition(_SEP)
        for value in values.split(_SEP):
            op, _, item_id = value.partition(" ")
            if op == "drop" and item_id in wanted:
                found.setdefault(item_id, commit)
    return found


def _closed_by_hand(client: api.GitHubClient, current: tracker.Tracker) -> set[int]:
    """The issues of items still ``todo`` that someone closed: their items go (no wave will close them).

    An issue that is gone (deleted, transferred) is not taken for closed: its item stays, said here, and
    the other issues are still read (one missing issue made every intake fail)."""
    waiting = [item.issue for item in current.items if item.issue is not None and item.status == Status.TODO]
    closed = set()
    for number in waiting:
        try:
            state = client.issue_info(number).state
        except api.GitHubError as exc:
            if not isinstance(exc, api.GitHubNotFound) and exc.status != 410:
                raise
            print(f"#{number}: the issue is gone ({exc}); its item is left as it is")
            continue
        if state == "closed":
            closed.add(number)
    return closed


def _load(snapshot: Snapshot, tracker_path: str) -> tracker.Tracker:
    if snapshot.text is None:
        raise UsageError(f"no {tracker_path} on the tracker branch: run `wavegit init` first")
    return tracker.loads(snapshot.text, tracker_path)


