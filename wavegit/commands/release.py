"""``wavegit release --wave W``: return the claims of a wave whose scheduler is gone, now.

Each item the wave still holds gets what ``sync`` gives a wave whose scheduler is gone
(``wavegit.sync.rules``; README, "A wave killed with kill -9"). The scheduler is judged from this clone's
lock, else the wave's heartbeat (fetched first); a live process on this machine is refused (exit 2). One
compare-and-swap commit with a ``Wavegit-Op: release W`` trailer; a wave released already is exit 0.
"""

from __future__ import annotations

import argparse
from datetime import datetime, timezone

from wavegit.attempts import wavebranch
from wavegit.commands._itemop import Op, Outcome, Read, run_op, suggest
from wavegit.commands._write import add_write_arguments, open_target
from wavegit.core import heartbeat, wavelock
from wavegit.core.errors import EXIT_OK, UsageError
from wavegit.core.git import WaveId
from wavegit.model import tracker
from wavegit.model.lifecycle import Status
from wavegit.sync import rules
from wavegit.sync.refs import WaveRefs
from wavegit.trackerbranch import claims


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--wave", required=True, metavar="W", help="the wave id, e.g. w-20260101-120000-ab12")
    add_write_arguments(parser)


def run(args: argparse.Namespace) -> int:
    wave = wavebranch.wave_option(args.wave)
    context = open_target(args)
    repo, config = context.repo, context.config
    remote = config.remote if repo.has_remote(config.remote) else None
    heartbeat.fetch(repo, remote)
    lock = wavelock.read(repo, wave)
    beat = heartbeat.read(repo, remote).get(wave)
    scheduler = lock or (beat.scheduler if beat else None)
    alive = None if scheduler is None else scheduler.alive()
    if scheduler is not None and alive:
        raise UsageError(f"wave {wave}'s scheduler is alive on this machine ({scheduler.describe()}): stop "
                         f"it (kill {scheduler.pid}) or let it finish; nothing written")
    who = _who(scheduler, alive, beat)
    # sync's rules for a wave whose scheduler is gone, applied to this wave alone.
    facts = rules.Facts(WaveRefs(context.repo, context.config), None,
                        {wave: f"{who}; released by `wavegit release`"})
    op = Op("release", wave)

    def decide(read: Read) -> Outcome:
        held = [item for item in read.loaded.items
                if item.wave == wave and item.status == Status.IN_PROGRESS]
        if not held:
            return _nothing_held(read, op, wave)
        now = datetime.now(timezone.utc)
        changes = [change for item in held if (change := rules.decide(item, facts, context.config, now))]
        text = tracker.set_items_fields(read.text, {change.id: change.fields for change in changes})
        moves = "; ".join(f"{change.id}: {change.old} -> {change.new}" for change in changes)
        return Outcome(text, f"released wave {wave} (its scheduler: {who}): {moves}")

    code = run_op(args, op, decide, context)
    if lock is not None and alive is False:
        wavelock.remove(context.repo, wave)
    if code == EXIT_OK and beat is not None:
        heartbeat.delete_gone(repo, remote, [wave])  # it holds no claim now: nobody is to read that beat
    return code


def _who(scheduler: wavelock.SchedulerLock | None, alive: bool | None, beat: heartbeat.Beat | None) -> str:
    """The scheduler as the release message names it."""
    if scheduler is None:
        return "unknown: no lock in this clone and no heartbeat from the remote"
    if alive is False:
        return f"{scheduler.describe()}, gone"
    age = (f", last heartbeat {claims.duration(beat.age_s(datetime.now(timezone.utc)))} ago" if beat
           else "")
    return f"{scheduler.describe()}, another machine{age}"


def _nothing_held(read: Read, op: Op, wave: WaveId) -> Outcome:
    earlier = read.earlier(op)
    if earlier is not None:
        return Outcome(None, f"wave {wave} was released already by commit {earlier[:12]}")
    items = [item for item in read.loaded.items if item.wave == wave]
    if items:
        states = ", ".join(f"{item.id} {item.status}" for item in items)
        return Outcome(None, f"wave {wave} holds no claim in progress ({states})")
    if read.ran(wave):
        # Its items have left it (recorded, released, moved on): a wave that ran is not an unknown one.
        return Outcome(None, f"wave {wave} holds no claim: its items have all left it")
    known = {item.wave for item in read.loaded.items if item.wave}
    raise UsageError(f"no item of wave {wave} in the tracker on {read.store.target}{suggest(wave, known)}")
