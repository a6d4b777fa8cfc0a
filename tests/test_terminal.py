"""Text made inert for a terminal: what is escaped, and the printable fast path that skips none of it."""

from __future__ import annotations

import pytest

from wavegit.core import terminal

# Every character either function escapes, with the text around it that a title or a log line would have.
ESCAPED = [*map(chr, [*range(0x20), *range(0x7f, 0xa0), *range(0x202a, 0x202f), *range(0x2066, 0x206a)])]


@pytest.mark.parametrize("char", ESCAPED, ids=lambda c: f"U+{ord(c):04X}")
def test_inert_escapes_every_control_and_bidi_character_inside_printable_text(char: str) -> None:
    text = f"title {char}end"
    assert char not in terminal.inert(text)
    if char not in "\n\t":
        assert char not in terminal.inert_lines(f"line one\n\t{text}")


def test_printable_text_comes_back_unchanged_and_newlines_and_tabs_survive_inert_lines() -> None:
    assert terminal.inert("Add the parser (ITEM-12) — ünïcode ok") == "Add the parser (ITEM-12) — ünïcode ok"
    assert terminal.inert_lines("a\n\tb\n") == "a\n\tb\n"
    assert terminal.inert("a\nb") == "a\\x0ab"


def test_an_undecodable_file_name_byte_is_escaped_by_inert_lines() -> None:
    name = b"bad\xff.txt".decode("utf-8", "surrogateescape")
    assert terminal.inert_lines(f"changed {name}\n") == "changed bad\\xff.txt\n"
