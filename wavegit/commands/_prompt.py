"""The prompt options of ``add`` and ``edit``: ``--prompt TEXT`` or ``--prompt-file FILE`` (``-`` = stdin)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from wavegit.core.errors import UsageError


def add_prompt_arguments(parser: argparse.ArgumentParser, *, required: bool) -> None:
    prompt = parser.add_mutually_exclusive_group(required=required)
    prompt.add_argument("--prompt", metavar="TEXT", help="what the worker is asked to do")
    prompt.add_argument("--prompt-file", metavar="FILE", help="read the prompt from FILE ('-' = stdin)")


def prompt_from(args: argparse.Namespace) -> str | None:
    """The prompt the options give; None when neither was given. An empty one is bad input."""
    if args.prompt is not None:
        text = str(args.prompt)
    elif args.prompt_file is None:
        return None
    elif args.prompt_file == "-":
        text = sys.stdin.read()
    else:
        # Relative to -C, as git resolves paths.
        path = Path(args.directory) / args.prompt_file
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"--prompt-file {args.prompt_file}: cannot read it ({exc})") from exc
    if not text.strip():
        raise UsageError("the prompt is empty: say what the worker should do")
    return text
