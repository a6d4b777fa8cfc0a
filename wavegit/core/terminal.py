"""Text made safe for a terminal: what wavegit prints quotes workers and trackers (file names, errors, log
lines, titles), and a control sequence in one, printed raw, would move the cursor, rewrite the screen, retitle
the window or (OSC 52) set the clipboard of the terminal that runs wavegit.

:func:`inert` makes one field safe; :func:`inert_output` makes everything a command prints safe, whatever
path its text took: its standard output and error write every control character but newline and tab as a
``\\xNN`` escape (and an undecodable byte of a file name as ``\\xNN`` too, where it would fail the write).
Only the live progress view writes its own cursor moves, to the stream :func:`raw` returns.
"""

from __future__ import annotations

import contextlib
import functools
import io
import sys
from collections.abc import Iterator
from typing import TextIO

from wavegit.core.undecodable import escape

# C0 and C1 controls and DEL (terminal escapes, carriage returns, bells) and the bidirectional overrides
# and isolates (text shown in another order than it reads).
_INERT = {code: f"\\x{code:02x}" for code in [*range(0x20), *range(0x7f, 0xa0)]}
_INERT.update({code: f"\\u{code:04x}" for code in [*range(0x202a, 0x202f), *range(0x2066, 0x206a)]})
_INERT_LINES = {code: text for code, text in _INERT.items() if chr(code) not in "\n\t"}


@functools.cache
def _json_inert() -> dict[int, str]:
    """In a JSON document, the same characters (and lone surrogates: undecodable bytes of a file name) as
    JSON's own escapes, so that the document stays valid once printed through :func:`inert_output`. Built
    on first use: its 2,120 entries were 8 M instructions of every command's start, the pre-push hook's
    included (a reports-only table)."""
    return {code: f"\\u{code:04x}" for code in [*_INERT_LINES, *range(0xd800, 0xe000)]}


def inert_json(document: str) -> str:
    """A JSON ``document`` written with ``ensure_ascii=False``, its control, bidirectional and surrogate
    characters escaped as JSON does (``\\u009b``): the same value, printable as it is."""
    return document.translate(_json_inert())


def inert(text: str) -> str:
    """``text`` safe to print on a terminal as one field: every control character as a ``\\xNN`` escape."""
    # Every character escaped is unprintable, and ``isprintable`` is a tenth of the cost of ``translate``:
    # `ls` of 10,000 items makes 60,000 cells.
    return text if text.isprintable() else text.translate(_INERT)


def inert_lines(text: str) -> str:
    """``text`` safe to print on a terminal, its newlines and tabs kept."""
    if text.replace("\n", "").replace("\t", "").isprintable():
        return text
    return escape(text).translate(_INERT_LINES)


class _InertStream(io.TextIOBase):
    """A text stream writing to ``terminal`` only what :func:`inert_lines` leaves."""

    def __init__(self, terminal: TextIO) -> None:
        super().__init__()
        self.terminal = terminal

    def write(self, text: str) -> int:
        self.terminal.write(inert_lines(text))
        return len(text)

    def flush(self) -> None:
        self.terminal.flush()

    def isatty(self) -> bool:
        return self.terminal.isatty()

    def fileno(self) -> int:
        return self.terminal.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self.terminal.encoding


@contextlib.contextmanager
def inert_output() -> Iterator[None]:
    """Within: ``sys.stdout`` and ``sys.stderr`` print only inert text (restored after)."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _InertStream(saved[0]), _InertStream(saved[1])
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def raw(stream: TextIO) -> TextIO:
    """The terminal behind ``stream`` when :func:`inert_output` wrapped it, else ``stream``: for the progress
    view's own cursor moves, whose texts are made inert field by field."""
    return stream.terminal if isinstance(stream, _InertStream) else stream
