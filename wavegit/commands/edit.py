"""``wavegit edit ID [--prompt TEXT | --prompt-file FILE] [--owns PATTERN...] [--test CMD] [--priority P]
[--worker NAME]``: change what an item asks for.

Each option is checked as ``add`` checks it, naming the option. An item in flight is refused (its worker
has its prompt; its ownership is held). One compare-and-swap commit with a ``Wavegit-Op: edit ID`` trailer;
values equal to the item's are exit 0 with nothing written.
"""

from __future__ import annotations

import argparse

from wavegit import agents, lifecycle, schema, tracker
from wavegit.commands._itemop import Op, Outcome, Read, add_item_arguments, run_op
from wavegit.commands._prompt import add_prompt_arguments, prompt_from
from wavegit.errors import UsageError
from wavegit.ownership.patterns import PatternError, normalize


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_item_arguments(parser)
    add_prompt_arguments(parser, required=False)
    parser.add_argument("--owns", nargs="+", metavar="PATTERN",
                        help="files, directories (dir/) or globs the item may change (replaces the list)")
    parser.add_argument("--test", metavar="CMD", help="command run in the item's worktree; exit 0 = verified")
    parser.add_argument("--priority", choices=tracker.PRIORITIES)
    parser.add_argument("--worker", metavar="NAME", help="the worker profile (config `workers`) that runs it")


def run(args: argparse.Namespace) -> int:
    wanted = _wanted(args)

    def decide(read: Read) -> Outcome:
        item = read.item(args.id)
        lifecycle.check_editable(item)
        agents.check_option(read.store.config, args.worker)
        changed = {name: value for name, value in wanted.items() if value != getattr(item, name)}
        if not changed:
            return Outcome(None, f"{item.id} already has these values")
        fields: dict[str, object | None] = {name: list(value) if isinstance(value, tuple) else value
                                            for name, value in changed.items()}
        text = tracker.set_fields(read.text, item.id, {**fields, "updated_at": read.at})
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
    if args.worker is not None:
        wanted["worker"] = str(args.worker)
    if not wanted:
        raise UsageError("nothing to edit: give --prompt, --owns, --test, --priority or --worker")
    for name, value in wanted.items():
        spec = tracker.ITEM_SCHEMA.field(name)
        complaint = spec.check(value) if spec is not None and spec.check is not None else None
        if complaint:
            raise UsageError(f"--{name}: '{name}' {complaint}")
    return wanted
