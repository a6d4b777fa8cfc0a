"""Path normalisation and ownership patterns (exact, ``dir/``, globs) with an exact overlap test.

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
paths are the same file when their per-character simple case folds are equal (``_fold_char``: what
APFS/NTFS-style folding does; ``ß`` is not ``ss``). ``overlaps(a, b)`` is exact: it is true iff some
valid path, existing or not, is owned by ``a`` and has the same fold as a path owned by ``b``. It
intersects automata (patterns over segments, globs over characters), never looks at a file system.
"""

from __future__ import annotations

import bisect
import functools
import re
import sys
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Generic, NamedTuple, TypeVar

# Records are NamedTuples, not dataclasses: this module is imported by every command (the pre-push hook
# included), and creating a dataclass costs ~0.4 ms of start-up, a NamedTuple a sixth of that.
K = TypeVar("K")


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
        _parse_segment(pattern, segment)
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


class _Star:
    """``*`` inside a segment: any run of characters, possibly empty."""

    def __repr__(self) -> str:
        return "STAR"


class _DoubleStar:
    """``**`` as a whole segment: zero or more segments."""

    def __repr__(self) -> str:
        return "DOUBLE_STAR"


STAR = _Star()
DOUBLE_STAR = _DoubleStar()
Token = CharSet | _Star
Glob = tuple[Token, ...]
"""One segment: ``?`` is a negated empty CharSet, a literal character a one-point CharSet."""
Segment = Glob | _DoubleStar


class Pattern(NamedTuple):
    """A parsed, normalised pattern."""

    text: str
    segments: tuple[Segment, ...]
    is_dir: bool
    literal: bool
    """No glob at all: owns exactly the paths that have it as a segment prefix."""


def _merge(ranges: Iterable[tuple[int, int]]) -> Ranges:
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
    return CharSet(negated, _merge(ranges)), i + 1


def _parse_segment(pattern: str, segment: str) -> Glob:
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
        DOUBLE_STAR if segment == "**" else _parse_segment(text, segment) for segment in body.split("/")
    )
    return Pattern(text, segments, is_dir, is_literal(text))


# --- case folding --------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def _fold_char(char: str) -> str:
    """Simple (one character to one character) case fold, as case-insensitive file systems do."""
    for folded in (char.casefold(), char.lower()):
        if len(folded) == 1:
            return folded
    return char


def fold(text: str) -> str:
    """The case-insensitive comparison key of a path or literal pattern."""
    if text.isascii():
        return text.lower()
    return "".join(_fold_char(char) for char in text)


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
            folded = ord(_fold_char(char))
            if folded != code:
                changed.append(code)
                preimages.setdefault(folded, []).append(code)
    return tuple(changed), {key: tuple(values) for key, values in preimages.items()}


def _fold_point(code: int) -> int:
    return ord(_fold_char(chr(code)))


def _fold_image(ranges: Ranges) -> Ranges:
    """The folds of every code point in ``ranges`` (a folded character is its own fold)."""
    if all(hi < 0x80 for _, hi in ranges):
        points = {_fold_point(code) for lo, hi in ranges for code in range(lo, hi + 1)}
        return _merge((code, code) for code in points)
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
    return _merge(image)


@functools.lru_cache(maxsize=4096)
def _fold_charset(charset: CharSet) -> CharSet:
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
        if all(_contains(charset.ranges, other) for other in (code, *preimages.get(code, ())))
    ]
    return CharSet(True, _merge((code, code) for code in excluded))


def _contains(ranges: Ranges, code: int) -> bool:
    return any(lo <= code <= hi for lo, hi in ranges)


@functools.lru_cache(maxsize=65536)
def _folded(pattern: str) -> Pattern:
    """The parsed pattern with every character position replaced by the set of its folds."""
    parsed = parse(pattern)
    segments = tuple(
        segment if isinstance(segment, _DoubleStar)
        else tuple(token if isinstance(token, _Star) else _fold_charset(token) for token in segment)
        for segment in parsed.segments
    )
    text = fold(parsed.text) if parsed.literal else parsed.text
    return Pattern(text, segments, parsed.is_dir, parsed.literal)


# --- matching ------------------------------------------------------------------------------------------


def _charset_regex(charset: CharSet) -> str:
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
        if isinstance(segment, _DoubleStar):
            parts.append("(?:/[^/]+)*")
        else:
            parts.append("/" + "".join(
                "[^/]*" if isinstance(token, _Star) else _charset_regex(token) for token in segment
            ))
    below = "/.+" if parsed.is_dir else "(?:/.+)?"
    return re.compile("".join(parts) + below, re.DOTALL)


@functools.lru_cache(maxsize=65536)
def _matcher(pattern: str, folded: bool) -> re.Pattern[str]:
    return _owner_regex(_folded(pattern) if folded else parse(pattern))


def _literal_owns(pattern: str, path: str) -> bool:
    if pattern.endswith("/"):
        return path.startswith(pattern) and len(path) > len(pattern)
    return path == pattern or (path.startswith(pattern) and path[len(pattern)] == "/")


def matches(pattern: str, path: str) -> bool:
    """Whether the normalised ``pattern`` owns the normalised repo-relative file ``path`` (case-sensitive)."""
    if is_literal(pattern):
        return _literal_owns(pattern, path)
    return _matcher(pattern, False).fullmatch("/" + path) is not None


def owns_folded(pattern: str, path: str) -> bool:
    """Whether ``pattern`` owns ``path`` when compared case-insensitively."""
    return _owns_folded(pattern, fold(path))


def _owns_folded(pattern: str, folded_path: str) -> bool:
    if is_literal(pattern):
        return _literal_owns(fold(pattern), folded_path)
    return _matcher(pattern, True).fullmatch("/" + folded_path) is not None


# --- overlap: automata intersection in folded space ----------------------------------------------------

_ANY_CHAR = CharSet(True, ())
_ANY_SEGMENT: Glob = (STAR,)
# A path segment may not be empty, ".", ".." or ".git" (folded). This small automaton tracks whether the
# characters read so far are a prefix of one of those; _OUTSIDE means they no longer are.
_OUTSIDE = "/"
_FORBIDDEN_STEPS: dict[str, dict[int, str]] = {
    "": {ord("."): "."},
    ".": {ord("."): "..", ord("g"): ".g"},
    ".g": {ord("i"): ".gi"},
    ".gi": {ord("t"): ".git"},
}
_SEGMENT_ACCEPTS = frozenset({".g", ".gi", _OUTSIDE})


def _path_char(code: int) -> bool:
    """Whether a folded path may contain this code point."""
    if code < 0x20 or 0x7F <= code <= 0x9F or code in (0x2F, 0x5C) or 0xD800 <= code <= 0xDFFF:
        return False
    char = chr(code)
    return _fold_char(char) == char and unicodedata.is_normalized("NFC", char)


def _intersect_ranges(a: Ranges, b: Ranges) -> Ranges:
    return _merge(
        (max(alo, blo), min(ahi, bhi)) for alo, ahi in a for blo, bhi in b if max(alo, blo) <= min(ahi, bhi)
    )


def _subtract_ranges(a: Ranges, b: Ranges) -> Ranges:
    result: list[tuple[int, int]] = []
    for lo, hi in a:
        for blo, bhi in b:
            if bhi < lo or blo > hi:
                continue
            if blo > lo:
                result.append((lo, blo - 1))
            lo = bhi + 1
            if lo > hi:
                break
        if lo <= hi:
            result.append((lo, hi))
    return tuple(result)


def _intersect(a: CharSet, b: CharSet) -> CharSet:
    if a.negated and b.negated:
        return CharSet(True, _merge(a.ranges + b.ranges))
    if a.negated:
        return CharSet(False, _subtract_ranges(b.ranges, a.ranges))
    if b.negated:
        return CharSet(False, _subtract_ranges(a.ranges, b.ranges))
    return CharSet(False, _intersect_ranges(a.ranges, b.ranges))


def _candidates(charset: CharSet) -> Iterator[int]:
    """The code points of ``charset`` in increasing order (lazily: callers stop at the first good one)."""
    spans = _subtract_ranges(((0, sys.maxunicode),), charset.ranges) if charset.negated else charset.ranges
    for lo, hi in spans:
        yield from range(lo, hi + 1)


def _has_char(charset: CharSet, excluded: Iterable[int]) -> bool:
    """Whether ``charset`` holds a folded path character other than ``excluded``."""
    skip = set(excluded)
    return any(code not in skip and _path_char(code) for code in _candidates(charset))


def _has_code(charset: CharSet, code: int) -> bool:
    return _contains(charset.ranges, code) != charset.negated


def _moves(glob: Glob, i: int) -> list[tuple[int, CharSet]]:
    """(next position, characters) for consuming one character at position ``i`` of ``glob``."""
    if i == len(glob):
        return []
    token = glob[i]
    if isinstance(token, _Star):
        return [(i, _ANY_CHAR)]
    return [(i + 1, token)]


@functools.lru_cache(maxsize=65536)
def _segments_meet(a: Glob, b: Glob) -> bool:
    """Whether some valid folded segment matches both globs (product with the _FORBIDDEN_STEPS automaton)."""
    seen: set[tuple[int, int, str]] = set()
    todo = [(0, 0, "")]
    while todo:
        state = todo.pop()
        if state in seen:
            continue
        seen.add(state)
        i, j, prefix = state
        if i == len(a) and j == len(b) and prefix in _SEGMENT_ACCEPTS:
            return True
        if i < len(a) and isinstance(a[i], _Star):
            todo.append((i + 1, j, prefix))
        if j < len(b) and isinstance(b[j], _Star):
            todo.append((i, j + 1, prefix))
        steps = _FORBIDDEN_STEPS.get(prefix, {})
        for next_i, chars_a in _moves(a, i):
            for next_j, chars_b in _moves(b, j):
                chars = _intersect(chars_a, chars_b)
                todo.extend(
                    (next_i, next_j, after) for code, after in steps.items() if _has_code(chars, code)
                )
                if _has_char(chars, steps):
                    todo.append((next_i, next_j, _OUTSIDE))
    return False


def _pattern_moves(pattern: Pattern, i: int) -> tuple[Glob, int]:
    """(segment glob, next state) for consuming one segment in state ``i``.

    States 0..m walk the m pattern segments; m + 1 is "below a match", where any segment may follow.
    """
    m = len(pattern.segments)
    if i >= m:
        return _ANY_SEGMENT, m + 1
    segment = pattern.segments[i]
    if isinstance(segment, _DoubleStar):
        return _ANY_SEGMENT, i
    return segment, i + 1


def _pattern_accepts(pattern: Pattern, i: int) -> bool:
    m = len(pattern.segments)
    return i == m + 1 or (i == m and not pattern.is_dir)


def _skips(pattern: Pattern, i: int) -> bool:
    return i < len(pattern.segments) and isinstance(pattern.segments[i], _DoubleStar)


def _literal_overlap(a: str, b: str) -> bool:
    """Folded literal patterns overlap iff one is a segment prefix of the other (extend it with any name)."""
    a, b = a.rstrip("/"), b.rstrip("/")
    if len(a) > len(b):
        a, b = b, a
    return b == a or (b.startswith(a) and b[len(a)] == "/")


def overlaps(a: str, b: str) -> bool:
    """Whether some path (existing or not) is owned by both patterns, compared case-insensitively."""
    a, b = normalize(a), normalize(b)
    if is_literal(a):
        return _literal_overlap(fold(a), fold(b)) if is_literal(b) else _literal_meets_glob(fold(a), b)
    if is_literal(b):
        return _literal_meets_glob(fold(b), a)
    return _globs_overlap(a, b)


Step = re.Pattern[str] | str | None
"""How a walk consumes one folded segment: a regex, the folded text of a plain ASCII segment (compared as
is, no regex needed), or None for ``**``."""


class _Walk(NamedTuple):
    """A folded glob pattern, prepared for walking concrete folded segments through it."""

    steps: tuple[Step, ...]
    viable: tuple[bool, ...]
    """Per automaton state (0..m, m + 1 = below a match): whether acceptance can still be reached."""
    universal: bool
    """Owns something strictly below every path strictly below its literal prefix."""


@functools.lru_cache(maxsize=4096)
def _segment_step(segment: str) -> tuple[re.Pattern[str], bool]:
    """A segment's regex over one folded name, and whether some valid name matches it.

    Keyed by the segment's text, as many patterns share segments like ``*.py``.
    """
    glob = tuple(token if isinstance(token, _Star) else _fold_charset(token)
                 for token in _parse_segment(segment, segment))
    source = "".join("[^/]*" if isinstance(token, _Star) else _charset_regex(token) for token in glob)
    return re.compile(source, re.DOTALL), _segments_meet(glob, _ANY_SEGMENT)


@functools.lru_cache(maxsize=65536)
def _walk(text: str) -> _Walk:
    """The walk of the normalised glob pattern ``text``."""
    segments = (text[:-1] if text.endswith("/") else text).split("/")
    steps: list[Step] = []
    meets: list[bool] = []
    for segment in segments:
        if segment == "**":
            steps.append(None)
            meets.append(True)
        elif segment.isascii() and _GLOB.search(segment) is None:
            # normalize() rejects the names no path may have, and an ASCII name is its own NFC form.
            steps.append(segment.lower())
            meets.append(True)
        else:
            regex, ok = _segment_step(segment)
            steps.append(regex)
            meets.append(ok)
    viable = [True, True]
    for ok in reversed(meets):
        viable.insert(0, ok and viable[0])
    m = len(steps)
    # A segment of stars only (``*``, ``***``; not ``**``) matches any one name.
    any_name = [segment != "**" and not segment.strip("*") for segment in segments]

    def universal_from(i: int) -> bool:
        """Whether any sequence of one or more segments, fed from state ``i``, leaves acceptance reachable."""
        if i >= m or (steps[i] is None and viable[i]):
            return True
        return any_name[i] and any(universal_from(j) for j in _closure(tuple(steps), (i + 1,)))

    head = _literal_head(text)
    start = _closure(tuple(steps), (len(head.split("/")) if head else 0,))
    return _Walk(tuple(steps), tuple(viable), any(universal_from(i) for i in start))


def _closure(steps: tuple[Step, ...], states: Iterable[int]) -> set[int]:
    """``states`` plus those reached by letting ``**`` match zero segments."""
    closed: set[int] = set()
    for i in states:
        closed.add(i)
        while i < len(steps) and steps[i] is None:
            i += 1
            closed.add(i)
    return closed


def _literal_meets_glob(literal: str, pattern: str) -> bool:
    """``overlaps`` for a folded literal and a glob pattern, walking the literal's segments.

    Ownership is closed downwards, so they overlap iff the glob owns some path strictly below the
    literal: feed the literal's segments to the glob's automaton, then ask whether one more segment can
    lead to acceptance.
    """
    directory, _, name = literal.rstrip("/").rpartition("/")
    walk = _walk(pattern)
    return any(walk.viable[i] for i in _feed(walk, _states_below(pattern, directory), name))


@functools.lru_cache(maxsize=65536)
def _states_below(pattern: str, directory: str) -> frozenset[int]:
    """The walk states of ``pattern`` after the segments of the folded ``directory`` ("": the start).

    Memoised per directory: the files of one directory are often all checked against the same glob.
    """
    walk = _walk(pattern)
    states = _closure(walk.steps, (0,))
    for name in directory.split("/") if directory else ():
        states = _feed(walk, states, name)
    return frozenset(states)


def _feed(walk: _Walk, states: Iterable[int], name: str) -> set[int]:
    """The states after consuming the folded segment ``name`` in any of ``states`` (empty: no match)."""
    m = len(walk.steps)
    after: list[int] = []
    for i in states:
        step = walk.steps[i] if i < m else None
        if i >= m:
            after.append(m + 1)
        elif step is None:
            after.append(i)
        elif step == name if isinstance(step, str) else step.fullmatch(name):
            after.append(i + 1)
    return _closure(walk.steps, after)


@functools.lru_cache(maxsize=65536)
def _globs_overlap(a: str, b: str) -> bool:
    """``overlaps`` by intersecting the owned-path automata of the two folded patterns."""
    pa, pb = _folded(a), _folded(b)
    seen: set[tuple[int, int]] = set()
    todo = [(0, 0)]
    while todo:
        state = todo.pop()
        if state in seen:
            continue
        seen.add(state)
        i, j = state
        if _pattern_accepts(pa, i) and _pattern_accepts(pb, j):
            return True
        if _skips(pa, i):
            todo.append((i + 1, j))
        if _skips(pb, j):
            todo.append((i, j + 1))
        glob_a, next_i = _pattern_moves(pa, i)
        glob_b, next_j = _pattern_moves(pb, j)
        if _segments_meet(glob_a, glob_b):
            todo.append((next_i, next_j))
    return False


# --- the ownership index -------------------------------------------------------------------------------


@functools.lru_cache(maxsize=65536)
def literal_prefix(pattern: str) -> str:
    """The folded leading segments of ``pattern`` before its first glob segment ("" if it starts with one)."""
    return _literal_head(normalize(pattern))


def _literal_head(text: str) -> str:
    """``literal_prefix`` of the normalised ``text``."""
    text = text.rstrip("/")
    match = _GLOB.search(text)
    if match is not None:
        text = text[:text.rfind("/", 0, match.start()) + 1].rstrip("/")
    return fold(text)


_Entry = tuple[str, bool, bool]
"""(home, literal, is_dir): ``home`` is a literal's folded text without its trailing '/', or a glob's folded
literal prefix. A plain tuple: the index makes one per distinct pattern and unpacks it on every query."""


_ENTRIES: dict[str, _Entry] = {}
"""Memo of ``_entry``, read inline on the hot paths (a dict lookup is cheaper than a cached call)."""


def _entry(text: str) -> _Entry:
    """The index entry of the normalised pattern ``text``; memoised, as backlogs repeat patterns a lot."""
    entry = _ENTRIES.get(text)
    if entry is not None:
        return entry
    is_dir = text.endswith("/")
    if "*" in text or "?" in text or "[" in text:
        entry = _literal_head(text), False, is_dir
    else:
        body = text[:-1] if is_dir else text
        entry = body.lower() if body.isascii() else fold(body), True, is_dir
    if len(_ENTRIES) >= 1 << 16:
        _ENTRIES.clear()  # a bound, like the lru caches', for long-lived processes
    _ENTRIES[text] = entry
    return entry


IndexKey = tuple[str, bool, bool]
"""What the ownership indexes file a normalised pattern under: (folded home, literal, is_dir); see _Entry."""


def index_keys(texts: Iterable[str]) -> tuple[IndexKey, ...]:
    """The index keys of the normalised patterns ``texts``, to be stored next to them (see ``remember``)."""
    return tuple(_ENTRIES.get(text) or _entry(text) for text in texts)


def remember(texts: Iterable[str], keys: Iterable[IndexKey]) -> None:
    """Take the index keys of ``texts`` from a store (``index_keys``' answer) instead of folding again."""
    _ENTRIES.update(zip(texts, keys, strict=True))


def _parent(path: str) -> str:
    """The folded parent directory of a folded path ("" at the top)."""
    end = path.rfind("/")
    return path[:end] if end > 0 else ""


def _unmemoised(memo: Mapping[str, object], directory: str) -> tuple[str, list[str]]:
    """The nearest of ``directory`` and its ancestors that ``memo`` knows (or "" at the top), and the ones
    below it that it does not, deepest first. A loop, not recursion: a path may be very deep."""
    missing: list[str] = []
    known = directory
    while known not in memo:
        missing.append(known)
        if not known:
            break
        known = _parent(known)
    return known, missing


class _Above(Generic[K], NamedTuple):
    """What is filed at a directory or at any directory above it."""

    literals: frozenset[K]
    globs: tuple[tuple[K, str], ...]
    """Glob patterns (key, text), the ones filed at the root included."""


IndexTables = tuple[dict[str, set[K]], dict[str, set[K]], dict[str, set[tuple[K, str]]], dict[K, set[str]],
                    set[str], list[str]]
"""``OwnershipIndex.tables()``: its filed patterns and the tables derived from them."""


class OwnershipIndex(Generic[K]):
    """Patterns by owner key, answering "who conflicts with this pattern" and "who owns this path" fast.

    Everything is filed under folded text: literal patterns under themselves, glob patterns under their
    literal prefix (the segments before the first glob). Two literals overlap iff one is a segment prefix of
    the other, so a literal query is a few dict lookups: what is filed at it, whether anything is filed
    below it (a set of directories), and what is filed at its ancestors (memoised per directory, as queries
    share directories). Only glob patterns filed at a compatible prefix (or, for a glob query, the literal
    patterns there) need the exact automaton test, compiled once per pattern. Build the index, then query
    it: a change drops the derived tables, and the next query rebuilds them.

    ``assume_normalized=True`` skips ``normalize`` for patterns already in canonical form (``Item.owns`` of
    a loaded tracker); anything else must not be passed that way. Case-insensitive, like ``overlaps``.
    """

    def __init__(self) -> None:
        self._at: dict[str, set[K]] = {}
        """Literal patterns (directory ones without their trailing '/')."""
        self._files: dict[str, set[K]] = {}
        """Literal non-directory patterns (a directory pattern does not own a file of its own name)."""
        self._globs_at: dict[str, set[tuple[K, str]]] = {}
        """Glob patterns by their literal prefix."""
        self._patterns: dict[K, set[str]] = {}
        # Derived tables, valid while _current is True.
        self._current = False
        self._dirs: set[str] = set()
        """Every directory with something filed strictly below it ("" as soon as anything is filed)."""
        self._sorted: list[str] = []
        """Every filed text, sorted, so that the ones below a directory form one range."""
        self._above: dict[str, _Above[K] | None] = {}
        """Per directory reached by a query: what is filed at or above it (None: nothing)."""

    def __len__(self) -> int:
        return len(self._patterns)

    def __contains__(self, key: object) -> bool:
        return key in self._patterns

    def add(self, key: K, pattern: str, *, assume_normalized: bool = False) -> None:
        """Record that ``key`` owns ``pattern``; raises PatternError for a bad one."""
        text = pattern if assume_normalized else normalize(pattern)
        home, literal, is_dir = _ENTRIES.get(text) or _entry(text)
        self._patterns.setdefault(key, set()).add(text)
        self._current = False
        if not literal:
            self._globs_at.setdefault(home, set()).add((key, text))
            return
        self._at.setdefault(home, set()).add(key)
        if not is_dir:
            self._files.setdefault(home, set()).add(key)

    def remove(self, key: K) -> None:
        """Forget every pattern of ``key`` (no-op for an unknown key)."""
        for text in self._patterns.pop(key, set()):
            home, literal, _ = _entry(text)
            self._current = False
            if not literal:
                self._globs_at[home].discard((key, text))
                continue
            self._at[home].discard(key)
            self._files.get(home, set()).discard(key)

    def conflicts(self, pattern: str, *, assume_normalized: bool = False) -> set[K]:
        """The keys with a pattern that overlaps ``pattern`` (see ``overlaps``)."""
        text = pattern if assume_normalized else normalize(pattern)
        home, literal, _ = _ENTRIES.get(text) or _entry(text)
        if not self._current:
            self._derive()
        if not literal:
            return self._glob_conflicts(text, home)
        at = self._at.get(home)
        found = set(at) if at else set()
        globs = self._globs_at.get(home)
        if globs:
            self._add_globs(found, globs, home, _literal_meets)
        if home in self._dirs:
            # Literals below the query always overlap it; globs when they own something there.
            for filed in self._below(home):
                at = self._at.get(filed)
                if at:
                    found |= at
                globs = self._globs_at.get(filed)
                if globs:
                    self._add_globs(found, globs, home, _literal_meets)
        self._add_above(found, _parent(home), home, _literal_meets)
        return found

    def owners(self, path: str, *, assume_normalized: bool = False) -> set[K]:
        """The keys owning the concrete file ``path`` (case-insensitively)."""
        text = (path if assume_normalized else normalize(path)).rstrip("/")
        folded = text.lower() if text.isascii() else fold(text)
        if not self._current:
            self._derive()
        found = set(self._files.get(folded, ()))
        globs = self._globs_at.get(folded)
        if globs:
            self._add_globs(found, globs, folded, _owns_folded)
        self._add_above(found, _parent(folded), folded, _owns_folded)
        return found

    def owners_of(self, paths: Iterable[str]) -> tuple[dict[str, set[K]], list[str]]:
        """``owners`` of many concrete paths: those with an owner, with their owners; and the paths that
        raise PatternError. Most paths of a push have no owner, so each is first ruled out with a few dict
        lookups (what is filed at it, and at or above its directory), without building a set."""
        if not self._current:
            self._derive()
        files, globs_at, above = self._files, self._globs_at, self._above
        owned: dict[str, set[K]] = {}
        invalid: list[str] = []
        for path in paths:
            try:
                text = normalize(path).rstrip("/")
            except PatternError:
                invalid.append(path)
                continue
            folded = text.lower() if text.isascii() else fold(text)
            end = folded.rfind("/")
            parent = folded[:end] if end > 0 else ""
            up = above[parent] if parent in above else self._above_of(parent)
            if up is None and folded not in files and folded not in globs_at:
                continue
            keys = self.owners(text, assume_normalized=True)
            if keys:
                owned[path] = keys
        return owned, invalid

    def tables(self) -> IndexTables[K]:
        """Everything the index holds, derived tables included, as plain data (for a content-addressed cache:
        ``from_tables`` rebuilds the index without normalising, folding or filing a pattern again)."""
        if not self._current:
            self._derive()
        return self._at, self._files, self._globs_at, self._patterns, self._dirs, self._sorted

    @classmethod
    def from_tables(cls, tables: IndexTables[K]) -> OwnershipIndex[K]:
        """The index ``tables()`` was taken from."""
        index: OwnershipIndex[K] = cls()
        index._at, index._files, index._globs_at, index._patterns, index._dirs, index._sorted = tables
        index._current = True
        return index

    def _derive(self) -> None:
        dirs: set[str] = set()
        for home in (*self._at, *self._globs_at):
            # Stop at the first directory already known: its ancestors are known too.
            end = home.rfind("/")
            while end > 0 and home[:end] not in dirs:
                dirs.add(home[:end])
                end = home.rfind("/", 0, end)
        if self._at or self._globs_at:
            dirs.add("")
        self._dirs = dirs
        self._sorted = sorted({*self._at, *self._globs_at})
        self._above = {}
        self._current = True

    def _below(self, directory: str) -> list[str]:
        """The filed texts strictly below ``directory`` ("" = the root: all of them)."""
        texts = self._sorted
        if not directory:
            return texts
        prefix = directory + "/"
        start = bisect.bisect_left(texts, prefix)
        # Every text starting with ``prefix`` sorts before ``prefix`` + the last code point.
        return texts[start:bisect.bisect_left(texts, prefix + "\U0010ffff", start)]

    def _above_of(self, directory: str) -> _Above[K] | None:
        """What is filed at ``directory`` or above it (None: nothing), memoised.

        Iterative, not recursive: a pushed path may be thousands of directories deep.
        """
        memo = self._above
        known, missing = _unmemoised(memo, directory)
        up = memo.get(known)
        for current in reversed(missing):
            literals = self._at.get(current) if current else None
            globs = self._globs_at.get(current)
            if literals or globs:
                up = _Above((up.literals if up else frozenset()) | (literals or set()),
                            (up.globs if up else ()) + tuple(globs or ()))
            memo[current] = up
        return memo[directory]

    def _add_above(self, found: set[K], parent: str, home: str, meets: Callable[[str, str], bool]) -> None:
        """Add to ``found`` the keys owning ``parent`` or a directory above it that ``meets`` ``home``."""
        try:
            above = self._above[parent]
        except KeyError:
            above = self._above_of(parent)
        if above is not None:
            found |= above.literals
            self._add_globs(found, above.globs, home, meets)

    @staticmethod
    def _add_globs(found: set[K], globs: Iterable[tuple[K, str]], home: str,
                   meets: Callable[[str, str], bool]) -> None:
        """Add to ``found`` the keys of ``globs`` with a pattern that ``meets(pattern, home)`` accepts."""
        found.update(key for key, other in globs if key not in found and meets(other, home))

    def _glob_conflicts(self, text: str, home: str) -> set[K]:
        found: set[K] = set()
        filed_above = _segment_prefixes(home)
        below = self._below(home) if home in self._dirs else []
        # A literal at or above the query's prefix owns everything the query owns, so they overlap iff the
        # query owns anything; one below it overlaps iff the query owns something there. A universal query
        # (see _Walk) does both.
        universal = _walk(text).universal
        for filed in (*filed_above[1:], *below):
            keys = self._at.get(filed)
            if keys and not keys <= found and (universal or _literal_meets_glob(filed, text)):
                found |= keys
        for filed in (*filed_above, *below):
            globs = self._globs_at.get(filed)
            if globs:
                self._add_globs(found, globs, text, _globs_overlap)
        return found


def _literal_meets(glob: str, home: str) -> bool:
    """``overlaps`` of a glob and the folded literal ``home`` (filed at, above or below it)."""
    return _walk(glob).universal or _literal_meets_glob(home, glob)


@functools.lru_cache(maxsize=65536)
def _segment_prefixes(path: str) -> tuple[str, ...]:
    """"" and every segment prefix of the folded ``path``, shortest first, ending with ``path`` itself."""
    if not path:
        return ("",)
    prefixes = [""]
    slash = path.find("/")
    while slash != -1:
        prefixes.append(path[:slash])
        slash = path.find("/", slash + 1)
    prefixes.append(path)
    return tuple(prefixes)


_Up = tuple[int | None, tuple[tuple[int, str], ...]]
"""The lowest literal key filed at or above a directory, and the (key, glob) pairs filed there."""


FirstOverlapTables = tuple[dict[str, int], dict[str, int], dict[str, list[tuple[int, str]]],
                           dict[str, list[tuple[int, str]]]]
"""``FirstOverlap.tables()``: lowest keys at and at-or-below each literal home, globs at and at-or-below."""


class FirstOverlap:
    """The lowest integer key with a pattern that overlaps a query: ``min(OwnershipIndex.conflicts(q))``.

    Built once from normalised (key, pattern) pairs, then only queried. A literal query, by far the usual
    kind, costs a few dict lookups: two literals overlap iff one is a segment prefix of the other, so a
    table of the lowest key filed at or below each directory (``_down``) and one of the lowest key filed at
    each literal (``_at``, read for the query's ancestors) answer it; only globs filed at, below or above the
    query need the exact automaton test. A glob query is answered as ``OwnershipIndex`` does, from the same
    tables and the sorted literals. Answers are memoised per query text.
    """

    def __init__(self, owned: Iterable[tuple[int, str]]) -> None:
        self._at: dict[str, int] = {}
        self._down: dict[str, int] = {}
        self._globs_at: dict[str, list[tuple[int, str]]] = {}
        self._globs_down: dict[str, list[tuple[int, str]]] = {}
        self._memo: dict[str, int | None] = {}
        self._above: dict[str, _Up] = {}
        """Per directory reached by a query: ``_above_of`` it."""
        self._homes: list[str] | None = None
        """The literals' folded homes, sorted (those below a directory form one range); for glob queries."""
        at, down = self._at, self._down
        for key, text in owned:
            home, literal, _ = _ENTRIES.get(text) or _entry(text)
            if not literal:
                self._globs_at.setdefault(home, []).append((key, text))
                for filed in _segment_prefixes(home):
                    self._globs_down.setdefault(filed, []).append((key, text))
                continue
            if at.get(home, key) >= key:
                at[home] = key
            end = len(home)
            # Walk up until a directory already holds a key at least as low: its ancestors do too.
            while end > 0 and down.get(home[:end], key) >= key:
                down[home[:end]] = key
                end = home.rfind("/", 0, end)

    def tables(self) -> FirstOverlapTables:
        """What it was built into, as plain data (for a content-addressed cache; see ``from_tables``)."""
        return self._at, self._down, self._globs_at, self._globs_down

    @classmethod
    def from_tables(cls, tables: FirstOverlapTables) -> FirstOverlap:
        """The ``FirstOverlap`` that ``tables()`` was taken from, without filing a pattern again."""
        built = cls(())
        built._at, built._down, built._globs_at, built._globs_down = tables
        return built

    def first(self, pattern: str) -> int | None:
        """The lowest key overlapping the normalised ``pattern`` (None: none)."""
        memo = self._memo
        return memo[pattern] if pattern in memo else self._first(pattern)

    def _first(self, pattern: str) -> int | None:
        """``first`` of a pattern not asked about before (most are not: a membership test, not a raised
        KeyError, tells)."""
        home, literal, _ = _ENTRIES.get(pattern) or _entry(pattern)
        if not literal:
            found = self._first_glob(pattern, home)
        else:
            end = home.rfind("/")
            parent = home[:end] if end > 0 else ""
            found, globs = self._above.get(parent) or self._above_of(parent)
            below = self._down.get(home)
            if below is not None and (found is None or below < found):
                found = below
            globs_below = self._globs_down.get(home)
            if globs or globs_below:
                for key, glob in (*globs, *(globs_below or ())):
                    if (found is None or key < found) and _literal_meets(glob, home):
                        found = key
        self._memo[pattern] = found
        return found

    def per_list(self, lists: Iterable[Iterable[str]], *, first_hit: bool) -> list[int | None]:
        """``first`` for each list of normalised patterns: of its first pattern that overlaps something
        (``first_hit``), or the lowest over all its patterns. One call for many lists, as planning asks
        about thousands of items and most of their patterns are answered from the memo."""
        memo, first = self._memo, self._first
        found: list[int | None] = []
        for patterns in lists:
            best: int | None = None
            for pattern in patterns:
                key = memo[pattern] if pattern in memo else first(pattern)
                if key is not None and (best is None or key < best):
                    best = key
                    if first_hit:
                        break
            found.append(best)
        return found

    def _first_glob(self, text: str, home: str) -> int | None:
        """``first`` of the glob ``text`` filed at ``home``: ``OwnershipIndex._glob_conflicts``' checks."""
        if self._homes is None:
            self._homes = sorted(self._at)
        prefixes = _segment_prefixes(home)
        universal = _walk(text).universal
        found: int | None = None
        # A literal at or above the prefix owns all the query owns: they overlap iff the query owns anything.
        for filed in prefixes[1:]:
            at = self._at.get(filed)
            if at is not None and (found is None or at < found) and (
                    universal or _literal_meets_glob(filed, text)):
                found = at
        homes = self._homes
        start = bisect.bisect_left(homes, home + "/") if home else 0
        end = bisect.bisect_left(homes, home + "/\U0010ffff", start) if home else len(homes)
        # The literals strictly below the prefix, lowest key first: the first that meets the query is the one.
        for key, filed in sorted((self._at[filed], filed) for filed in homes[start:end]):
            if found is not None and key >= found:
                break
            if universal or _literal_meets_glob(filed, text):
                found = key
                break
        globs = [glob for filed in prefixes[:-1] for glob in self._globs_at.get(filed, ())]
        for key, glob in (*globs, *self._globs_down.get(home, ())):
            if (found is None or key < found) and _globs_overlap(glob, text):
                found = key
        return found

    def _above_of(self, directory: str) -> _Up:
        """The lowest literal key filed at ``directory`` or above it, and the globs filed there; memoised.

        Iterative, from the nearest memoised ancestor down: a pattern may be very deep.
        """
        memo = self._above
        known, missing = _unmemoised(memo, directory)
        best, globs = memo.get(known, (None, ()))
        for current in reversed(missing):
            key = self._at.get(current) if current else None
            if key is not None and (best is None or key < best):
                best = key
            more = self._globs_at.get(current)
            if more:
                globs = (*globs, *more)
            memo[current] = best, globs
        return memo[directory]
