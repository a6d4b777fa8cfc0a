"""wavegit.core.undecodable: text carrying bytes that were not UTF-8 becomes writable, and nothing else
changes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from wavegit.core.undecodable import escape, has_undecodable


def test_an_undecodable_byte_is_shown_as_its_hex_escape() -> None:
    text = b"bad\xff\xfename.txt".decode("utf-8", "surrogateescape")
    assert has_undecodable(text)
    assert escape(text) == "bad\\xff\\xfename.txt"
    assert escape("lone \ud800 surrogate") == "lone \\ud800 surrogate"


@given(st.binary(max_size=40))
def test_every_byte_string_read_by_git_becomes_encodable_text(data: bytes) -> None:
    text = data.decode("utf-8", "surrogateescape")
    escaped = escape(text)
    escaped.encode("utf-8")
    assert not has_undecodable(escaped)
    assert (escaped == text) == (not has_undecodable(text))


@given(st.text())
def test_valid_text_is_unchanged(text: str) -> None:
    if not has_undecodable(text):
        assert escape(text) == text
