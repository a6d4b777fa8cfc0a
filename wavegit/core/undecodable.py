"""Text made from bytes that were not UTF-8 (git's paths and stderr, read with ``surrogateescape``), made
writable: a lone surrogate cannot be encoded as UTF-8, so one left in a tracker field, a report or a log
line would fail the write (or, written byte for byte, make the file invalid UTF-8 and invalid YAML)."""

from __future__ import annotations


def has_undecodable(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate (an undecodable byte, or a broken code point)."""
    return not text.isascii() and any("\ud800" <= char <= "\udfff" for char in text)


def escape(text: str) -> str:
    """``text`` with each undecodable byte as ``\\xNN`` (other lone surrogates as ``\\udNNN``)."""
    if not has_undecodable(text):
        return text
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        # A surrogate no byte decodes to (not from surrogateescape): its code point, escaped.
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
