"""Ownership patterns (exact, ``dir/``, globs): normalisation, parsing, case folding and matching.

Patterns and paths are repo-relative, ``/``-separated, in Unicode NFC (see ``normalize``).

Ownership semantics (gitignore-like):

- A pattern *owns* the file path X when X matches it, or when some ancestor directory of X matches it:
  ``src/auth`` owns ``src/auth`` and, if it is a directory, ``src/auth/x.py``.
- A trailing ``/`` (``src/auth/``) matches only as a directory: it owns what lies below, not a file of
  that name.
- Globs: ``*`` and ``?`` match within one segment (never ``/``); ``[abc]``, ``[a-z]``, ``[!x]`` (or
  ``[^x]``) match one character, ``]`` first in a class is a member; ``**`` as a whole segment matches
  zero or more segments (inside a segment it is just ``*``). There is no escape character (backslashes
  are rejected); write ``[*]`` for a literal ``*``.
- Segments ``.``, ``..`` and ``.git`` (any case) never occur in a repository path, so no pattern can own
  such a path.

``matches`` is case-sensitive (it checks the files a worker changed). ``overlaps`` and ``OwnershipIndex``
compare case-insensitively, because a repository may be checked out on a case-insensitive file system: two
paths are the same file when their per-character simple case folds are equal (``fold_char``: what
APFS/NTFS-style folding does; ``ß`` is not ``ss``). ``overlaps(a, b)`` is exact: it is true iff some
valid path, existing or not, is owned by ``a`` and has the same fold as a path owned by ``b``. It
intersects automata (patterns over segments, globs over characters), never looks at a file system; it
lives in ``wavegit.ownership.overlap``, the indexes in ``wavegit.ownership.index``.
"""

import functools
import re
import sys
import unicodedata
from collections.abc import Iterable
from typing import NamedTuple

# Records are NamedTuples, not dataclasses: this package is imported by every command (the pre-push hook
# included), and creating a dataclass costs ~0.4 ms of start-up, a NamedTuple a sixth of that.


class PatternError(ValueError):
    """An ownership pattern or path that is not allowed (message says why and how to fix it)."""


# --- normalisation -------------------------------------------------------------------------------------

_GLOB = re.compile(r"[*?\[]")
_BAD_CHAR = re.compile(r"[\x00-\x1f\x7f-\x9f\\]")


def _reject(pattern: str, what: str, fix: str) -> PatternError:
    return PatternError(f"pattern {pattern!r}: {what}; {fix}")


def normalize(pattern: str) -> str:
    """The canonical form of an ownership pattern or repo-relative path; raises PatternError.

    Strips leading ``./``, collapses ``//`` and ``/./`` and ``**/**``, applies Unicode NFC, and keeps a
    trailing ``/`` as the directory marker.
    """
    if not isinstance(pattern, str):
        raise PatternError(f"pattern {pattern!r}: not a string; write the path as text")
    if pattern.isascii():
        # Unchanged unless it may hold a glob, a bad character, an absolute or home-relative start, a drive
        # letter, an empty, ".", ".." or ".git" segment: C-level checks, as every pushed path comes here
        # (a dotfile takes the slow path, which keeps it as it is).
        if (pattern and pattern.isprintable() and "\\" not in pattern and "*" not in pattern
                and "?" not in pattern and "[" not in pattern and "//" not in pattern and "/." not in pattern
                and not pattern.startswith(("/", "~", ".")) and pattern[1:2] != ":"):
            return pattern
        text = pattern
    else:
        text = unicodedata.normalize("NFC", pattern)
    return _normalize_slow(pattern, text)


@functools.lru_cache(maxsize=65536)
def _normalize_slow(pattern: str, text: str) -> str:
    if not text:
        raise _reject(pattern, "empty", "give a path relative to the repository root, e.g. src/app.py")
    bad = _BAD_CHAR.search(text)
    if bad is not None:
        if bad.group() == "\\":
            raise _reject(pattern, "contains a backslash", "separate directories with '/'")
        raise _reject(pattern, f"contains the control character {bad.group()!r}", "remove it")
    if text.startswith(("/", "~")) or re.match(r"[A-Za-z]:", text):
        raise _reject(pattern, "is absolute", "write it relative to the repository root, e.g. src/app.py")
    is_dir = text.endswith("/")
    segments: list[str] = []
    for segment in text.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            raise _reject(pattern, "has a '..' segment", "write it from the repository root, no '..'")
        if segment.casefold() == ".git":
            raise _reject(pattern, "has a '.git' segment", "git's own directory cannot be owned")
        if segment == "**" and segments and segments[-1] == "**":
            continue
        parse_segment(pattern, segment)
        segments.append(segment)
    if all(segment == "**" for segment in segments):
        raise _reject(pattern, "is the whole repository", "name the files or directories the item changes")
    return "/".join(segments) + ("/" if is_dir else "")


# --- parsing -------------------------------------------------------------------------------------------

Ranges = tuple[tuple[int, int], ...]


class CharSet(NamedTuple):
    """One character position of a glob: the code points in ``ranges``, or all but them if ``negated``."""

    negated: bool
    ranges: Ranges


class Star:
    """``*`` inside a segment: any run of characters, possibly empty."""

    def __repr__(self) -> str:
        return "STAR"


class DoubleStar:
    """``**`` as a whole segment: zero or more segments."""

    def __repr__(self) -> str:
        return "DOUBLE_STAR"


STAR = Star()
DOUBLE_STAR = DoubleStar()
Token = CharSet | Star
Glob = tuple[Token, ...]
"""One segment: ``?`` is a negated empty CharSet, a literal character a one-point CharSet."""
Segment = Glob | DoubleStar


class Pattern(NamedTuple):
    """A parsed, normalised pattern."""

    text: str
    segments: tuple[Segment, ...]
    is_dir: bool
    literal: bool
    """No glob at all: owns exactly the paths that have it as a segment prefix."""


def merge_ranges(ranges: Iterable[tuple[int, int]]) -> Ranges:
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if merged and lo <= merged[-1][1] + 1:
            if hi > merged[-1][1]:
                merged[-1] = (merged[-1][0], hi)
        else:
            merged.append((lo, hi))
    return tuple(merged)


def _parse_class(pattern: str, segment: str, start: int) -> tuple[CharSet, int]:
    """Parse the class opening at ``segment[start]``; return it and the index after its ``]``."""
    i = start + 1
    negated = i < len(segment) and segment[i] in "!^"
    if negated:
        i += 1
    ranges: list[tuple[int, int]] = []
    first = True
    while i < len(segment) and (first or segment[i] != "]"):
        first = False
        lo = segment[i]
        if i + 2 < len(segment) and segment[i + 1] == "-" and segment[i + 2] != "]":
            hi = segment[i + 2]
            if hi < lo:
                raise _reject(pattern, f"has the reversed range {lo}-{hi}", f"write {hi}-{lo}")
            ranges.append((ord(lo), ord(hi)))
            i += 3
        else:
            ranges.append((ord(lo), ord(lo)))
            i += 1
    if i >= len(segment):
        raise _reject(pattern, "has an unbalanced '['", "close the class with ']' or write '[[]' for a '['")
    return CharSet(negated, merge_ranges(ranges)), i + 1


def parse_segment(pattern: str, segment: str) -> Glob:
    tokens: list[Token] = []
    i = 0
    while i < len(segment):
        char = segment[i]
        if char == "*":
            if not tokens or tokens[-1] is not STAR:
                tokens.append(STAR)
            i += 1
        elif char == "?":
            tokens.append(CharSet(True, ()))
            i += 1
        elif char == "[":
            charset, i = _parse_class(pattern, segment, i)
            tokens.append(charset)
        else:
            tokens.append(CharSet(False, ((ord(char), ord(char)),)))
            i += 1
    return tuple(tokens)


def is_literal(pattern: str) -> bool:
    """Whether the normalised ``pattern`` has no glob characters."""
    return _GLOB.search(pattern) is None


@functools.lru_cache(maxsize=65536)
def parse(pattern: str) -> Pattern:
    """Parse a normalised pattern (normalising it first if needed)."""
    text = normalize(pattern)
    is_dir = text.endswith("/")
    body = text[:-1] if is_dir else text
    segments: tuple[Segment, ...] = tuple(
        DOUBLE_STAR if segment == "**" else parse_segment(text, segment) for segment in body.split("/")
    )
    return Pattern(text, segments, is_dir, is_literal(text))


@functools.lru_cache(maxsize=65536)
def ownable(pattern: str) -> str:
    """``normalize`` for an ownership pattern an item declares: also refuses one that owns every path.

    ``**`` is refused by ``normalize``; ``*``, ``**/*``, ``*/**``, ``?*`` own every path as well, as does
    any spelling whose one glob segment matches every name (``*`` and ``?*`` per segment, with ``**``s).
    """
    text = normalize(pattern)
    if _owns_every_path(text):
        raise _reject(pattern, "is the whole repository", "name the files or directories the item changes")
    return text


# The code points a name may hold (no control character, '/' or '\\'; surrogates are no characters).
_NAME_CHARS: Ranges = ((0x20, 0x2E), (0x30, 0x5B), (0x5D, 0x7E), (0xA0, 0xD7FF), (0xE000, sys.maxunicode))


def _owns_every_path(text: str) -> bool:
    """Whether the normalised ``text`` owns every path: it owns every one-segment path (ownership is closed
    downwards), so it is no directory pattern, has one segment besides ``**``s, and that glob matches every
    non-empty name: stars, with at most one character position that takes every name character."""
    if text.endswith("/") or is_literal(text):
        return False
    globs = [segment for segment in text.split("/") if segment != "**"]
    if len(globs) != 1:
        return not globs
    tokens = parse_segment(text, globs[0])
    positions = [token for token in tokens if isinstance(token, CharSet)]
    return STAR in tokens and len(positions) <= 1 and all(map(_takes_every_name_char, positions))


def _takes_every_name_char(charset: CharSet) -> bool:
    if charset.negated:
        return not any(lo <= vhi and vlo <= hi for lo, hi in charset.ranges for vlo, vhi in _NAME_CHARS)
    return all(any(lo <= vlo and vhi <= hi for lo, hi in charset.ranges) for vlo, vhi in _NAME_CHARS)


# --- case folding --------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def fold_char(char: str) -> str:
    """Simple (one character to one character) case fold, as case-insensitive file systems do."""
    for folded in (char.casefold(), char.lower()):
        if len(folded) == 1:
            return folded
    return char


def fold(text: str) -> str:
    """The case-insensitive comparison key of a path or literal pattern.

    Windows also drops a name's trailing dots and spaces (``src/a./`` and ``src/a /`` are ``src/a/``),
    so the key drops them too (``_name_tail_dropped``).
    """
    # Every pushed path comes here (the pre-push hook): C-level checks first.
    folded = text.lower() if text.isascii() else "".join(fold_char(char) for char in text)
    if "./" in folded or " /" in folded or folded[-1:] in _NAME_TAIL:
        return _name_tail_dropped(folded)
    return folded


_NAME_TAIL = (".", " ")

# Anything in the lower-cased paths, each framed by '/', that may make ``normalize`` change one or raise (a
# glob, a backslash, '//': an empty segment or path or an absolute start, '/~': a home-relative start, a '.',
# '..' or '.git' segment) or make ``fold`` drop a name's tail ('./', ' /'); ':' anywhere, '~' starting and
# '.git' ending any name are stricter than needed: they only send the paths the one-by-one way. A two-letter
# mark costs a pass over the text (~25 ns a path), a letter almost nothing: the marks are few.
_NOT_PLAIN = ("\\", "*", "?", "[", ":", "//", "./", " /", "/~", ".git/")


_PRINTABLE = bytes(range(0x20, 0x7F))


def plain_folds(paths: list[str]) -> list[str] | None:
    """``fold(normalize(path))`` of each of ``paths`` when every path is printable ASCII that ``normalize``
    keeps as it is and ``fold`` only lower-cases (git's usual paths), checked and folded for all at once in
    C-level string passes; None when one may not be: then each path goes through ``normalize`` and ``fold``.

    A push lists thousands of paths: one by one, the two calls were most of the pre-push hook's matching.
    """
    text = "\n".join(paths)
    # Printable ASCII but for the separators: nothing else is left once the printable bytes are deleted.
    if not text.isascii() or text.encode().translate(None, _PRINTABLE) != b"\n" * (len(paths) - 1):
        return None
    folded = text.lower()
    framed = f"/{folded}/".replace("\n", "/")
    if any(mark in framed for mark in _NOT_PLAIN):
        return None
    return folded.split("\n")


def _name_tail_dropped(text: str) -> str:
    """Each segment of ``text`` without its trailing dots and spaces (one that is nothing else is kept)."""
    return "/".join(segment.rstrip(". ") or segment for segment in text.split("/"))


_TAIL_CHARS = (CharSet(False, ((0x2E, 0x2E),)), CharSet(False, ((0x20, 0x20),)))


def glob_tail_dropped(glob: Glob) -> Glob:
    """``glob`` without its trailing literal dots and spaces (``_name_tail_dropped`` for a glob segment)."""
    end = len(glob)
    while end and glob[end - 1] in _TAIL_CHARS:
        end -= 1
    return glob[:end] if end else glob


@functools.lru_cache(maxsize=1)
def _fold_tables() -> tuple[tuple[int, ...], dict[int, tuple[int, ...]]]:
    """Code points whose fold differs (sorted), and each folded code point's other preimages.

    Built once, lazily: only classes with non-ASCII members need it.
    """
    changed: list[int] = []
    preimages: dict[int, list[int]] = {}
    chunk = 512
    for start in range(0, sys.maxunicode + 1, chunk):
        text = "".join(map(chr, range(start, min(start + chunk, sys.maxunicode + 1))))
        # Most blocks have no case at all: skip them with one C-level comparison.
        if text.casefold() == text and text.lower() == text:
            continue
        for code, char in enumerate(text, start):
            folded = ord(fold_char(char))
            if folded != code:
                changed.append(code)
                preimages.setdefault(folded, []).append(code)
    return tuple(changed), {key: tuple(values) for key, values in preimages.items()}


def _fold_point(code: int) -> int:
    return ord(fold_char(chr(code)))


def _fold_image(ranges: Ranges) -> Ranges:
    """The folds of every code point in ``ranges`` (a folded character is its own fold)."""
    if all(hi < 0x80 for _, hi in ranges):
        points = {_fold_point(code) for lo, hi in ranges for code in range(lo, hi + 1)}
        return merge_ranges((code, code) for code in points)
    changed = _fold_tables()[0]
    image: list[tuple[int, int]] = []
    for lo, hi in ranges:
        start = lo
        for code in changed:
            if lo <= code <= hi:
                if start < code:
                    image.append((start, code - 1))
                image.append((_fold_point(code), _fold_point(code)))
                start = code + 1
        if start <= hi:
            image.append((start, hi))
    return merge_ranges(image)


@functools.lru_cache(maxsize=4096)
def fold_charset(charset: CharSet) -> CharSet:
    """The set of folds of the characters ``charset`` matches, as a set over folded characters."""
    if not charset.ranges:
        return charset
    image = _fold_image(charset.ranges)
    if not charset.negated:
        return CharSet(False, image)
    # A folded character is excluded only if every character folding to it is excluded.
    preimages = _fold_tables()[1]
    excluded = [
        code for lo, hi in image for code in range(lo, hi + 1)
        if all(in_ranges(charset.ranges, other) for other in (code, *preimages.get(code, ())))
    ]
    return CharSet(True, merge_ranges((code, code) for code in excluded))


def in_ranges(ranges: Ranges, code: int) -> bool:
    return any(lo <= code <= hi for lo, hi in ranges)


@functools.lru_cache(maxsize=65536)
def folded_pattern(pattern: str) -> Pattern:
    """The parsed pattern with every character position replaced by the set of its folds."""
    parsed = parse(pattern)
    segments = tuple(
        segment if isinstance(segment, DoubleStar)
        else tuple(token if isinstance(token, Star) else fold_charset(token)
                   for token in glob_tail_dropped(segment))
        for segment in parsed.segments
    )
    text = fold(parsed.text) if parsed.literal else parsed.text
    return Pattern(text, segments, parsed.is_dir, parsed.literal)


# --- matching ------------------------------------------------------------------------------------------


def charset_regex(charset: CharSet) -> str:
    members = "".join(
        re.escape(chr(lo)) if lo == hi else f"{re.escape(chr(lo))}-{re.escape(chr(hi))}"
        for lo, hi in charset.ranges
    )
    if charset.negated:
        return f"[^/{members}]"
    return f"[{members}]"


def _owner_regex(parsed: Pattern) -> re.Pattern[str]:
    """A regex over ``"/" + path`` that matches the paths ``parsed`` owns."""
    parts: list[str] = []
    for segment in parsed.segments:
        if isinstance(segment, DoubleStar):
            parts.append("(?:/[^/]+)*")
        else:
            parts.append("/" + "".join(
                "[^/]*" if isinstance(token, Star) else charset_regex(token) for token in segment
            ))
    below = "/.+" if parsed.is_dir else "(?:/.+)?"
    return re.compile("".join(parts) + below, re.DOTALL)


@functools.lru_cache(maxsize=65536)
def _matcher(pattern: str, folded: bool) -> re.Pattern[str]:
    return _owner_regex(folded_pattern(pattern) if folded else parse(pattern))


def _literal_owns(pattern: str, path: str) -> bool:
    if pattern.endswith("/"):
        return path.startswith(pattern) and len(path) > len(pattern)
    return path == pattern or (path.startswith(pattern) and path[len(pattern)] == "/")


def matches(pattern: str, path: str) -> bool:
    """Whether the normalised ``pattern`` owns the repo-relative file ``path`` (case-sensitive).

    ``path`` is compared in NFC, as patterns are: a file written decomposed (macOS) is the same file.
    """
    if not path.isascii():
        path = unicodedata.normalize("NFC", path)
    if is_literal(pattern):
        return _literal_owns(pattern, path)
    return _matcher(pattern, False).fullmatch("/" + path) is not None


def owns_folded(pattern: str, path: str) -> bool:
    """Whether ``pattern`` owns ``path`` (in NFC, as ``matches``) when compared case-insensitively."""
    return owns_folded_path(pattern, fold(path if path.isascii() else unicodedata.normalize("NFC", path)))


def owns_folded_path(pattern: str, folded_path: str) -> bool:
    """``owns_folded`` for a path already folded (``fold``)."""
    if is_literal(pattern):
        return _literal_owns(fold(pattern), folded_path)
    return _matcher(pattern, True).fullmatch("/" + folded_path) is not None


# --- literal prefix ------------------------------------------------------------------------------------


def literal_head(text: str) -> str:
    """The folded leading segments of the normalised pattern ``text`` before its first glob segment ("" if it
    starts with one): where the ownership indexes file a glob."""
    text = text.rstrip("/")
    match = _GLOB.search(text)
    if match is not None:
        text = text[:text.rfind("/", 0, match.start()) + 1].rstrip("/")
    return fold(text)
