"""``wavegit edit ID [--prompt TEXT | --prompt-file FILE] [--owns PATTERN...] [--test CMD] [--priority P]
[--title TEXT] [--depends-on [ID...]] [--worker NAME]``: change what an item asks for.

Each option is checked as ``add`` checks it, naming the option; what is refused and when nothing is written:
README, "A stuck item, by hand".
"""

from __future__ import annotations

import argparse

from wavegit.attempts import agents
from wavegit.commands._itemop import (
    Op,
    Outcome,
    Read,
    add_item_arguments,
    check_protected,
    estimate_seconds,
    run_op,
    suggest,
)
from wavegit.commands._prompt import add_prompt_arguments, prompt_from
from wavegit.core import schema
from wavegit.core.errors import UsageError, ValidationError
from wavegit.model import lifecycle, tracker
from wavegit.model.config import protected_of
from wavegit.ownership.patterns import PatternError, normalize
from wavegit.ownership.protected import DEFAULT_PROTECTED


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_item_arguments(parser)
    add_prompt_arguments(parser, required=False)
    parser.add_argument("--owns", nargs="+", metavar="PATTERN",
                        help="files, directories (dir/) or globs the item may change (replaces the list)")
    parser.add_argument("--test", metavar="CMD", help="command run in the item's worktree; exit 0 = verified")
    parser.add_argument("--priority", choices=tracker.PRIORITIES)
    parser.add_argument("--title", metavar="TEXT", help="a short name (empty: none)")
    parser.add_argument("--depends-on", nargs="*", metavar="ID",
                        help="the items it waits for (replaces the list; no ids: none)")
    parser.add_argument("--worker", metavar="NAME", help="the worker profile (config `workers`) that runs it "
                        "(empty: config `worker`)")
    parser.add_argument("--estimate-s", type=estimate_seconds, metavar="SECONDS",
                        help="how long its worker is expected to run; `run --continuous` starts the longest "
                        "first")


def run(args: argparse.Namespace) -> int:
    wanted = _wanted(args)

    def decide(read: Read) -> Outcome:
        item = read.item(args.id)
        lifecycle.check_editable(item)
        _check_dependencies(read, item.id, wanted.get("depends_on", ()))
        check_protected(wanted.get("owns", ()), protected_of(read.store.config) or DEFAULT_PROTECTED)
        agents.check_option(read.store.config, args.worker or None)
        changed = {name: value for name, value in wanted.items() if value != getattr(item, name)}
        if not changed:
            return Outcome(None, f"{item.id} already has these values")
        # An empty title or dependency list is no key at all, as `add` writes it.
        fields: dict[str, object | None] = {name: value if isinstance(value, float)  # 0 s is an estimate
                                            else (list(value) if isinstance(value, tuple) else value) or None
                                            for name, value in changed.items()}
        text = tracker.set_fields(read.text, item.id, {**fields, "updated_at": read.at})
        if "depends_on" in changed:
            try:
                tracker.loads(text, read.store.config.tracker_path)
            except ValidationError as exc:
                raise UsageError(f"--depends-on: {exc.problems[0].message}; nothing written") from exc
        return Outcome(text, f"{item.id}: edited {', '.join(changed)}")

    return run_op(args, Op("edit", args.id), decide)


def _wanted(args: argparse.Namespace) -> dict[str, schema.Value]:
    """The fields the options set, each checked as the tracker's schema checks it."""
    wanted: dict[str, schema.Value] = {}
    prompt = prompt_from(args)
    if prompt is not None:
        wanted["prompt"] = prompt
    if args.owns is not None:
        try:
            wanted["owns"] = tuple(normalize(pattern) for pattern in args.owns)
        except PatternError as exc:
            raise UsageError(f"--owns: {exc}") from exc
    if args.test is not None:
        wanted["test"] = str(args.test)
    if args.priority is not None:
        wanted["priority"] = str(args.priority)
    if args.title is not None:
        wanted["title"] = " ".join(str(args.title).split())
    if args.depends_on is not None:
        wanted["depends_on"] = tuple(dict.fromkeys(str(dep) for dep in args.depends_on))
    if args.worker is not None:
        wanted["worker"] = str(args.worker)
    if args.estimate_s is not None:
        wanted["estimate_s"] = float(args.estimate_s)
    if not wanted:
        raise UsageError("nothing to edit: give --prompt, --owns, --test, --priority, --title, "
                         "--depends-on, --worker or --estimate-s")
    for name, value in wanted.items():
        spec = tracker.ITEM_SCHEMA.field(name)
        if name == "worker" and value == "":
            continue  # no key at all, as an empty title is: the item runs config `worker` again
        complaint = spec.check(value) if spec is not None and spec.check is not None else None
        if complaint:
            raise UsageError(f"--{name.replace('_', '-')}: {complaint}")  # as add says it
    return wanted


def _check_dependencies(read: Read, item_id: str, depends_on: schema.Value) -> None:
    """Each of ``depends_on`` names another item of the tracker read (the nearest id suggested if not)."""
    known = [other.id for other in read.loaded.items]
    for dep in depends_on if isinstance(depends_on, tuple) else ():
        if dep == item_id:
            raise UsageError(f"--depends-on: {item_id} cannot depend on itself")
        if read.loaded.get(dep) is None:
            raise UsageError(f"--depends-on: no item {dep} in {read.store.config.tracker_path} on "
                             f"{read.store.target}{suggest(dep, known)}")
