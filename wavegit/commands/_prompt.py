"""The prompt options of ``add`` and ``edit``: ``--prompt TEXT`` or ``--prompt-file FILE`` (``-`` = stdin)."""

from __future__ import annotations

import argparse
from pathlib import Path

from wavegit.core.errors import UsageError
from wavegit.core.smallfile import as_text, read_named

PROMPT_MAX_BYTES = 4 << 20
"""Far past any prompt an agent could take in (its whole context is some 1 MB of text): the bound of reading
``--prompt-file``, which may name ``/dev/zero`` or a log file by mistake."""


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
    else:
        # Relative to -C, as git resolves paths.
        try:
            text = as_text(read_named(args.prompt_file, Path(args.directory), PROMPT_MAX_BYTES))
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"--prompt-file {args.prompt_file}: cannot read it ({exc})") from exc
    if not text.strip():
        raise UsageError("the prompt is empty: say what the worker should do")
    return text
