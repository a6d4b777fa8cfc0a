"""The exact overlap test of two ownership patterns: automata intersected in case-folded space.

``overlaps(a, b)`` is true iff some valid path, existing or not, is owned by ``a`` and has the same fold as a
path owned by ``b`` (see ``wavegit.ownership.patterns``). It never looks at a file system. The indexes
(``wavegit.ownership.index``) pick a query's candidates; ``overlapping_keys`` and ``lowest_meeting`` test
them.
"""

import functools
import re
import sys
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple, TypeVar

from wavegit.ownership.patterns import (
    STAR,
    CharSet,
    DoubleStar,
    Glob,
    Pattern,
    Ranges,
    Star,
    charset_regex,
    fold,
    fold_char,
    fold_charset,
    folded_pattern,
    glob_tail_dropped,
    in_ranges,
    is_literal,
    literal_head,
    merge_ranges,
    normalize,
    parse_segment,
)

K = TypeVar("K")

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
    return fold_char(char) == char and unicodedata.is_normalized("NFC", char)


def _intersect_ranges(a: Ranges, b: Ranges) -> Ranges:
    return merge_ranges(
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
        return CharSet(True, merge_ranges(a.ranges + b.ranges))
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
    return in_ranges(charset.ranges, code) != charset.negated


def _moves(glob: Glob, i: int) -> list[tuple[int, CharSet]]:
    """(next position, characters) for consuming one character at position ``i`` of ``glob``."""
    if i == len(glob):
        return []
    token = glob[i]
    if isinstance(token, Star):
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
        if i < len(a) and isinstance(a[i], Star):
            todo.append((i + 1, j, prefix))
        if j < len(b) and isinstance(b[j], Star):
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
    if isinstance(segment, DoubleStar):
        return _ANY_SEGMENT, i
    return segment, i + 1


def _pattern_accepts(pattern: Pattern, i: int) -> bool:
    m = len(pattern.segments)
    return i == m + 1 or (i == m and not pattern.is_dir)


def _skips(pattern: Pattern, i: int) -> bool:
    return i < len(pattern.segments) and isinstance(pattern.segments[i], DoubleStar)


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
        return _literal_overlap(fold(a), fold(b)) if is_literal(b) else literal_meets_glob(fold(a), b)
    if is_literal(b):
        return literal_meets_glob(fold(b), a)
    return globs_overlap(a, b)


Step = re.Pattern[str] | str | None
"""How a walk consumes one folded segment: a regex, the folded text of a plain ASCII segment (compared as
is, no regex needed), or None for ``**``."""


class Walk(NamedTuple):
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
    glob = tuple(token if isinstance(token, Star) else fold_charset(token)
                 for token in glob_tail_dropped(parse_segment(segment, segment)))
    source = "".join("[^/]*" if isinstance(token, Star) else charset_regex(token) for token in glob)
    return re.compile(source, re.DOTALL), _segments_meet(glob, _ANY_SEGMENT)


@functools.lru_cache(maxsize=65536)
def glob_walk(text: str) -> Walk:
    """The walk of the normalised glob pattern ``text``."""
    segments = (text[:-1] if text.endswith("/") else text).split("/")
    steps: list[Step] = []
    meets: list[bool] = []
    for segment in segments:
        if segment == "**":
            steps.append(None)
            meets.append(True)
        elif segment.isascii() and is_literal(segment):
            # normalize() rejects the names no path may have, and an ASCII name is its own NFC form.
            steps.append(fold(segment))
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

    head = literal_head(text)
    start = _closure(tuple(steps), (len(head.split("/")) if head else 0,))
    return Walk(tuple(steps), tuple(viable), any(universal_from(i) for i in start))


def _closure(steps: tuple[Step, ...], states: Iterable[int]) -> set[int]:
    """``states`` plus those reached by letting ``**`` match zero segments."""
    closed: set[int] = set()
    for i in states:
        closed.add(i)
        while i < len(steps) and steps[i] is None:
            i += 1
            closed.add(i)
    return closed


def literal_meets_glob(literal: str, pattern: str) -> bool:
    """``overlaps`` for a folded literal and a glob pattern, walking the literal's segments.

    Ownership is closed downwards, so they overlap iff the glob owns some path strictly below the
    literal: feed the literal's segments to the glob's automaton, then ask whether one more segment can
    lead to acceptance.
    """
    directory, _, name = literal.rstrip("/").rpartition("/")
    walk = glob_walk(pattern)
    return any(walk.viable[i] for i in _feed(walk, _states_below(pattern, directory), name))


@functools.lru_cache(maxsize=65536)
def _states_below(pattern: str, directory: str) -> frozenset[int]:
    """The walk states of ``pattern`` after the segments of the folded ``directory`` ("": the start).

    Memoised per directory: the files of one directory are often all checked against the same glob.
    """
    walk = glob_walk(pattern)
    states = _closure(walk.steps, (0,))
    for name in directory.split("/") if directory else ():
        states = _feed(walk, states, name)
    return frozenset(states)


def _feed(walk: Walk, states: Iterable[int], name: str) -> set[int]:
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
def globs_overlap(a: str, b: str) -> bool:
    """``overlaps`` by intersecting the owned-path automata of the two folded patterns."""
    pa, pb = folded_pattern(a), folded_pattern(b)
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


def literal_meets(glob: str, home: str) -> bool:
    """``overlaps`` of a glob and the folded literal ``home`` (filed at, above or below it)."""
    return glob_walk(glob).universal or literal_meets_glob(home, glob)


def overlapping_keys(text: str, literals: Iterable[tuple[K, str]], globs: Iterable[tuple[K, str]],
                     wanted: Callable[[K], bool]) -> Iterator[K]:
    """The lookup both ownership indexes make for the glob query ``text``: the keys of the filed ``literals``
    (key, folded home) at, above or below its literal prefix and of the filed ``globs`` (key, pattern) that
    overlap it, in the order given. A key is tested only if ``wanted`` (asked just before its test, so a
    caller may narrow it as hits come in).

    A literal at or above the query's prefix owns everything the query owns, so they overlap iff the query
    owns anything; one below it overlaps iff the query owns something there. A universal query (see
    ``Walk``) does both.
    """
    universal = glob_walk(text).universal
    for key, filed in literals:
        if wanted(key) and (universal or literal_meets_glob(filed, text)):
            yield key
    for key, glob in globs:
        if wanted(key) and globs_overlap(glob, text):
            yield key


def lowest_meeting(found: int | None, globs: Iterable[tuple[int, str]], home: str) -> int | None:
    """The lowest of ``found`` and the keys of the (key, glob) pairs that overlap the folded literal
    ``home`` (filed at, above or below it); a glob's exact test only when its key would be lower."""
    for key, glob in globs:
        if (found is None or key < found) and literal_meets(glob, home):
            found = key
    return found
