"""``wavegit status [WAVE] [--all] [--json]``: the live state of waves run from this repository.

Read from the waves' event logs (``<git dir>/wavegit/events/<wave>.jsonl``); what is shown is README's "Item
lifecycle". A killed scheduler never logs its end, so its lock (``wavegit.core.wavelock``, held from before
its claim until after it logs its end) tells the rest, or without one the process its log names.
"""

from __future__ import annotations

import argparse
import functools
import json
from collections.abc import Callable
from dataclasses import asdict
from datetime import datetime, timezone

from wavegit.commands._context import Context
from wavegit.core import wavelock
from wavegit.core.errors import UsageError
from wavegit.core.repo import Repo, discover
from wavegit.engine import eventlog
from wavegit.trackerbranch import claims

RUNNING, GONE, RELEASED, FINISHED = "running", "gone", "released", "finished"
"""What became of a wave's scheduler: ``scheduler`` in ``--json``."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("wave", nargs="?", metavar="WAVE", help="one wave (default: those not finished)")
    parser.add_argument("--all", action="store_true", help="every logged wave, finished ones too")
    parser.add_argument("--json", action="store_true", help="print the states as JSON")


def run(args: argparse.Namespace) -> int:
    repo = discover(args.directory)
    logs = sorted(repo.events_dir.glob("*.jsonl"), reverse=True) if repo.events_dir.is_dir() else []
    if args.wave:
        logs = [log for log in logs if log.stem == args.wave]
        if not logs:
            raise UsageError(f"{args.wave}: no event log of that wave in {repo.events_dir}")
    tracker = functools.cache(lambda: _fetched_claims(args))
    waves = [(wave, *_scheduler(repo, wave, tracker)) for wave in map(eventlog.read, logs)]
    if not (args.wave or args.all):
        waves = [entry for entry in waves if entry[1] in (RUNNING, GONE)]
    if args.json:
        print(json.dumps([{**asdict(wave), "scheduler": state} for wave, state, _ in waves]))
        return 0
    held = [] if args.wave else _held(*tracker(), {wave.wave_id for wave, _, _ in waves})
    watching = [] if args.wave else [f"a scheduler is watching for ready items ({lock.describe()}, since "
                                     f"{since}: `wavegit run --continuous --watch`)"
                                     for lock, since in wavelock.watchers(repo)]
    if not waves and not held:
        print("no wave is running" + ("" if args.all else " (--all lists finished ones)"))
    for wave, state, who in waves:
        print(_describe(wave, state, who))
    for line in [*held, *watching]:
        print(line)
    return 0


def _fetched_claims(args: argparse.Namespace) -> tuple[Context, tuple[claims.Claim, ...]]:
    """The claims in the tracker, fetched first (with the heartbeats), and the context that read them."""
    context = Context.open(args)
    store = context.store
    blob_sha = store.read_blob_sha(fetch=True)
    if blob_sha is None:
        return context, ()  # no tracker yet: nobody holds a claim
    # The claims from the planning columns `plan` reads too: a tenth of the items' load at 10,000 items.
    cols = store.planning_columns(blob_sha)
    return context, tuple(cols.claims)


def _held(context: Context, found: tuple[claims.Claim, ...], shown: set[str]) -> list[str]:
    """The claims held by waves this clone has no event log of shown: another clone's, another machine's,
    a dead one's."""
    now = datetime.now(timezone.utc)
    waves = claims.held(context.repo, context.config, found, now, fetched=True)
    return claims.lines([wave for wave in waves if wave.wave not in shown], now)


def _scheduler(repo: Repo, wave: eventlog.WaveState,
               tracker: Callable[[], tuple[Context, tuple[claims.Claim, ...]]]) -> tuple[str, str]:
    """The wave's scheduler state and, when a process is named, which (``pid N on HOST``); ``tracker``: the
    fetched claims, asked for only when a dead scheduler's lock is left here."""
    if wave.finished is not None:
        return FINISHED, ""
    lock = wavelock.read(repo, wave.wave_id)
    if lock is not None:
        # Another machine's lock (None) cannot be judged from here: it counts as running, as the lease does.
        if lock.alive() is not False:
            return RUNNING, lock.describe()
        # Another clone's `sync` or `release` may have returned its claims; this clone's next sync tidies.
        holding = any(claim[1] == wave.wave_id for claim in tracker()[1])
        return (GONE if holding else RELEASED), lock.describe()
    # No lock: the claims were returned already (sync, release), or the writer never held one (collect).
    writer = wavelock.from_record(wave.process)
    if writer is None or writer.alive() is not False:
        return RUNNING, ""
    return RELEASED, writer.describe()


def _describe(wave: eventlog.WaveState, state: str, who: str) -> str:
    if state == RUNNING:
        head = f"wave {wave.wave_id}: running since {wave.started_at}"
    elif state == GONE:
        head = (f"wave {wave.wave_id}: not finished, its scheduler ({who}) is gone (started "
                f"{wave.started_at}); `wavegit sync` here returns its claims (or `wavegit release --wave "
                f"{wave.wave_id}`)")
    elif state == RELEASED:
        head = (f"wave {wave.wave_id}: stopped without finishing (started {wave.started_at}): {who} is gone "
                "and its claims were returned")
    else:
        end = wave.finished or {}
        # As `run` ends its summary: a wave with some items verified and one failed was called "failed".
        verdict = "success" if end.get("success") else "not a success"
        verified = sum(1 for item in wave.items.values() if item.state == "verified")
        head = (f"wave {wave.wave_id}: {verdict}: {verified} of {len(wave.items)} verified, exit "
                f"{end.get('exit_code')} at {end.get('at')}; its report: `wavegit report {wave.wave_id}`")
    width = max((len(item_id) for item_id in wave.items), default=2)
    lines = [head]
    for item_id, item in wave.items.items():
        attempt = f"attempt {item.attempt}" if item.attempt else ""
        lines.append(f"  {item_id:<{width}}  {item.state:<11}  {attempt:<10}  {item.detail}".rstrip())
    return "\n".join(lines)
