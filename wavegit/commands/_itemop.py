"""What the commands that change items by hand share (``done``, ``reopen``, ``block``, ``drop``, ``edit``,
``release``): one compare-and-swap commit each, with a ``Wavegit-Op: <op> <subject>`` trailer (README, "A
stuck item, by hand").

A command decides on the tracker it read (:class:`Read`) and returns the new text and one line saying what
changed, or no text and a line saying why nothing had to (a retried command is exit 0 and writes nothing).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from wavegit.attempts import wavebranch
from wavegit.commands._context import Context
from wavegit.commands._write import add_write_arguments, landed, open_target
from wavegit.core import git, schema
from wavegit.core.errors import UsageError
from wavegit.core.git import WaveId
from wavegit.model import lifecycle, report, tracker
from wavegit.ownership.protected import REFUSAL_HINT, reached, refusal
from wavegit.trackerbranch.missing import no_tracker
from wavegit.trackerbranch.mutation import mutate
from wavegit.trackerbranch.store import OP_TRAILER, Change, GitStore, Snapshot

_SEP = "\x1f"


@dataclass(frozen=True)
class Op:
    """One change by hand: its command (``done``), its subject (an item or wave id), a longer reason."""

    name: str
    subject: str
    body: str = ""

    @property
    def trailer(self) -> str:
        return f"{self.name} {self.subject}"

    def message(self) -> str:
        # The trailer in a paragraph of its own: a reason that looks like a trailer (`Wavegit-Op: drop B`)
        # stays body text, which git does not read as trailers.
        body = f"\n\n{self.body.strip()}" if self.body.strip() else ""
        return f"wavegit: {self.trailer}{body}\n\n{OP_TRAILER}: {self.trailer}\n"


@dataclass(frozen=True)
class Outcome:
    text: str | None
    """The new tracker text; None: nothing to write."""
    said: str
    """What changed, or why nothing had to."""


@dataclass(frozen=True)
class Read:
    """The tracker a change by hand decides on."""

    loaded: tracker.Tracker
    text: str
    snapshot: Snapshot
    store: GitStore
    at: str
    """The time the change is stamped with (``updated_at``)."""

    def item(self, item_id: str) -> tracker.Item:
        """The item ``item_id``; exit 2 naming the nearest known id (never the id itself) when unknown."""
        found = self.loaded.get(item_id)
        if found is not None:
            return found
        where = f"{self.store.config.tracker_path} on {self.store.target}"
        dropped = self.earlier(Op("drop", item_id))
        if dropped is not None:
            raise UsageError(f"no item {item_id} in {where}: it was dropped by commit {dropped[:12]}")
        known = (other.id for other in self.loaded.items)
        raise UsageError(f"no item {item_id} in {where}{suggest(item_id, known)}")

    def earlier(self, op: Op) -> str | None:
        """The commit on the tracker branch, up to this read, that made ``op`` (its trailer); None if none."""
        return self._carrying(OP_TRAILER, op.trailer)

    def ran(self, wave: WaveId) -> bool:
        """Whether a commit on the tracker branch, up to this read, carries ``wave``'s trailer (its claim,
        its record, its items once merged)."""
        return self._carrying(wavebranch.TRAILER_WAVE, wave) is not None

    def _carrying(self, key: str, value: str) -> str | None:
        """The newest commit on the tracker branch, up to this read, with the trailer ``key: value``."""
        if self.snapshot.commit is None:
            return None
        listing = git.log(self.store.repo.root, [self.snapshot.commit],
                          f"%H{_SEP}%(trailers:key={key},valueonly,separator=%x1f)", grep=f"{key}: {value}")
        for line in git.lines(listing):
            commit, _, values = line.partition(_SEP)
            if value in values.split(_SEP):
                return commit
        return None

    def change(self, item: tracker.Item, update: lifecycle.Update, note: str = "") -> Outcome:
        """``update`` applied to ``item``, said as ``ID: old -> new``."""
        text = tracker.set_fields(self.text, item.id, update.fields)
        return Outcome(text, f"{item.id}: {item.status} -> {update.status}{note}")


Decide = Callable[[Read], Outcome]


def suggest(word: str, known: Iterable[str]) -> str:
    """``; did you mean 'X'?`` for the nearest of ``known`` other than ``word`` itself, or nothing."""
    guess = schema.nearest(word, tuple(k for k in known if k != word))
    return f"; did you mean '{guess}'?" if guess else ""


def estimate_seconds(text: str) -> float:
    """``--estimate-s``: a finite number of seconds (its sign is the schema's to judge, as in the file)."""
    import math

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds (e.g. 900)")
    return value


def add_item_arguments(parser: argparse.ArgumentParser, *, reason: str | None = None) -> None:
    """The item id, ``--reason`` (with help ``reason``) if wanted, ``--push`` and ``--deadline``."""
    parser.add_argument("id", metavar="ID", help="the item's id")
    if reason is not None:
        parser.add_argument("--reason", required=True, metavar="TEXT", help=reason)
    add_write_arguments(parser)


def reason_of(args: argparse.Namespace) -> str:
    reason = " ".join(str(args.reason).split())
    if not reason:
        raise UsageError("--reason must not be empty: say why")
    return reason


def run_op(args: argparse.Namespace, op: Op, decide: Decide, context: Context | None = None) -> int:
    """Read, ``decide``, write in one compare-and-swap commit (re-deciding after a lost race); print it."""
    context = context or open_target(args)
    store, path = context.store, context.config.tracker_path
    said: list[str] = []

    def apply(snapshot: Snapshot) -> Change | None:
        if snapshot.text is None or snapshot.blob_sha is None:
            raise no_tracker(store.repo.root, f"{store.target}:{path}")
        loaded = tracker.load_cached(snapshot.text, snapshot.blob_sha, store.cache_dir, path)
        try:
            outcome = decide(Read(loaded, snapshot.text, snapshot, store, report.utc_timestamp()))
        except lifecycle.NotAllowed as exc:
            raise UsageError(f"{exc}; nothing written") from exc
        said[:] = [outcome.said]
        return None if outcome.text is None else Change(outcome.text)

    result = mutate(store, apply, message=op.message(), deadline_s=args.deadline)
    if result.commit is None:
        print(f"{said[0]}; nothing written")
    else:
        print(f"{said[0]}: {landed(result, store)}")
    return 0


def check_protected(owns: schema.Value, protected: tuple[str, ...]) -> None:
    """No pattern of ``owns`` (``add``'s or ``edit``'s ``--owns``) reaches a protected path: named by its
    option, with the way out (not at a line of a tracker that is never written)."""
    for pattern in owns if isinstance(owns, tuple) else ():
        guard = reached(str(pattern), protected)
        if guard is not None:
            raise UsageError(f"--owns: {refusal(str(pattern), guard)} (hint: {REFUSAL_HINT})")
