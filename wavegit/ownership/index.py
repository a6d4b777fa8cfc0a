"""Ownership indexes: many patterns by owner key, asked "who conflicts with this pattern" and "who owns
this path" (``OwnershipIndex``), or "which lowest key overlaps this pattern" (``FirstOverlap``, for planning).

Both file patterns under folded text (literals under themselves, globs under their literal prefix), answer
a literal query with dict lookups, and a glob query with the one shared lookup ``overlapping_keys``.
"""

import bisect
import functools
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from typing import Generic, TypeVar

from wavegit.ownership.overlap import literal_meets, lowest_meeting, overlapping_keys
from wavegit.ownership.patterns import (
    PatternError,
    fold,
    literal_head,
    normalize,
    owns_folded_path,
    plain_folds,
)

K = TypeVar("K")


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
        entry = literal_head(text), False, is_dir
    else:
        body = text[:-1] if is_dir else text
        entry = fold(body), True, is_dir
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


_Above = tuple[frozenset[K], tuple[tuple[K, str], ...]]
"""What is filed at a directory or at any directory above it: the literals' keys, and the glob patterns (key,
text), the ones filed at the root included. A plain tuple, like ``_Up``: a generic NamedTuple class costs
about a millisecond of every hook's and plan's start-up."""


IndexTables = tuple[dict[str, set[K]], dict[str, set[K]], dict[str, set[tuple[K, str]]], set[str], list[str]]
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
        # Derived tables, valid while _current is True.
        self._current = False
        self._dirs: set[str] = set()
        """Every directory with something filed strictly below it ("" as soon as anything is filed)."""
        self._sorted: list[str] = []
        """Every filed text, sorted, so that the ones below a directory form one range."""
        self._above: dict[str, _Above[K] | None] = {}
        """Per directory reached by a query: what is filed at or above it (None: nothing)."""

    def add(self, key: K, pattern: str, *, assume_normalized: bool = False) -> None:
        """Record that ``key`` owns ``pattern``; raises PatternError for a bad one."""
        text = pattern if assume_normalized else normalize(pattern)
        home, literal, is_dir = _ENTRIES.get(text) or _entry(text)
        self._current = False
        if not literal:
            self._globs_at.setdefault(home, set()).add((key, text))
            return
        self._at.setdefault(home, set()).add(key)
        if not is_dir:
            self._files.setdefault(home, set()).add(key)

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
            self._add_globs(found, globs, home, literal_meets)
        if home in self._dirs:
            # Literals below the query always overlap it; globs when they own something there.
            for filed in self._below(home):
                at = self._at.get(filed)
                if at:
                    found |= at
                globs = self._globs_at.get(filed)
                if globs:
                    self._add_globs(found, globs, home, literal_meets)
        self._add_above(found, _parent(home), home, literal_meets)
        return found

    def owners(self, path: str, *, assume_normalized: bool = False) -> set[K]:
        """The keys owning the concrete file ``path`` (case-insensitively)."""
        text = (path if assume_normalized else normalize(path)).rstrip("/")
        folded = fold(text)
        if not self._current:
            self._derive()
        found = set(self._files.get(folded, ()))
        globs = self._globs_at.get(folded)
        if globs:
            self._add_globs(found, globs, folded, owns_folded_path)
        self._add_above(found, _parent(folded), folded, owns_folded_path)
        return found

    def owners_of(self, paths: Iterable[str]) -> dict[str, set[K]]:
        """``owners`` of many concrete paths: those with an owner, with their owners. A path is a name, not a
        pattern: one that ``normalize`` refuses (a backslash, a control character, an unbalanced '[') is
        looked up as it is, in NFC, so a directory above it that is owned owns it. Most paths of a push
        have no owner, so each is first ruled out with a few dict lookups (what is filed at it, and at or
        above its directory), without building a set."""
        if not self._current:
            self._derive()
        paths = list(paths)
        if (folds := plain_folds(paths)) is not None:
            return self._plain_owners_of(paths, folds)
        files, globs_at, above = self._files, self._globs_at, self._above
        owned: dict[str, set[K]] = {}
        for path in paths:
            try:
                text = normalize(path).rstrip("/")
            except PatternError:
                text = unicodedata.normalize("NFC", path)
            folded = fold(text)
            end = folded.rfind("/")
            parent = folded[:end] if end > 0 else ""
            up = above[parent] if parent in above else self._above_of(parent)
            if up is None and folded not in files and folded not in globs_at:
                continue
            keys = self.owners(text, assume_normalized=True)
            if keys:
                owned[path] = keys
        return owned

    def _plain_owners_of(self, paths: list[str], folds: list[str]) -> dict[str, set[K]]:
        """``owners_of`` for canonical ``paths`` folded as ``folds``: each distinct directory is looked up
        once; a path is asked about only when something is filed at it or at or above its directory, and
        when nothing is (the usual push) no path is visited one by one."""
        files, globs_at = self._files, self._globs_at
        busy = self._busy({folded.rpartition("/")[0] for folded in folds})
        if not busy and files.keys().isdisjoint(folds) and globs_at.keys().isdisjoint(folds):
            return {}
        owned: dict[str, set[K]] = {}
        for path, folded in zip(paths, folds, strict=True):
            if folded.rpartition("/")[0] in busy or folded in files or folded in globs_at:
                keys = self.owners(path, assume_normalized=True)
                if keys:
                    owned[path] = keys
        return owned

    def _busy(self, directories: set[str]) -> set[str]:
        """The ``directories`` with something filed at or above them (``_above_of`` is not None): each is
        walked up through a set of the filed texts, building nothing (most of a push's have nothing)."""
        if "" in self._globs_at:
            return directories  # a glob filed at the root may own anything
        filed = self._at.keys() | self._globs_at.keys()
        busy = set()
        for directory in directories:
            up = directory
            while up and up not in filed:
                up = up.rpartition("/")[0]
            if up:
                busy.add(directory)
        return busy

    def tables(self) -> IndexTables[K]:
        """Everything the index holds, derived tables included, as plain data (for a content-addressed cache:
        ``from_tables`` rebuilds the index without normalising, folding or filing a pattern again)."""
        if not self._current:
            self._derive()
        return self._at, self._files, self._globs_at, self._dirs, self._sorted

    @classmethod
    def from_tables(cls, tables: IndexTables[K]) -> "OwnershipIndex[K]":
        """The index ``tables()`` was taken from."""
        index: OwnershipIndex[K] = cls()
        index._at, index._files, index._globs_at, index._dirs, index._sorted = tables
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
        return _texts_below(self._sorted, directory)

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
                up = ((up[0] if up else frozenset()) | (literals or set()),
                      (up[1] if up else ()) + tuple(globs or ()))
            memo[current] = up
        return memo[directory]

    def _add_above(self, found: set[K], parent: str, home: str, meets: Callable[[str, str], bool]) -> None:
        """Add to ``found`` the keys owning ``parent`` or a directory above it that ``meets`` ``home``."""
        try:
            above = self._above[parent]
        except KeyError:
            above = self._above_of(parent)
        if above is not None:
            literals, globs = above
            found |= literals
            self._add_globs(found, globs, home, meets)

    @staticmethod
    def _add_globs(found: set[K], globs: Iterable[tuple[K, str]], home: str,
                   meets: Callable[[str, str], bool]) -> None:
        """Add to ``found`` the keys of ``globs`` with a pattern that ``meets(pattern, home)`` accepts."""
        found.update(key for key, other in globs if key not in found and meets(other, home))

    def _glob_conflicts(self, text: str, home: str) -> set[K]:
        prefixes = _segment_prefixes(home)
        below = self._below(home) if home in self._dirs else []
        at, globs_at = self._at, self._globs_at
        literals = ((key, filed) for filed in (*prefixes[1:], *below) for key in at.get(filed, ()))
        globs = (glob for filed in (*prefixes, *below) for glob in globs_at.get(filed, ()))
        found: set[K] = set()
        for key in overlapping_keys(text, literals, globs, lambda key: key not in found):
            found.add(key)
        return found


def _texts_below(texts: list[str], directory: str) -> list[str]:
    """The sorted ``texts`` strictly below ``directory`` ("" = the root: all of them)."""
    if not directory:
        return texts
    prefix = directory + "/"
    start = bisect.bisect_left(texts, prefix)
    # Every text starting with ``prefix`` sorts before ``prefix`` + the last code point.
    return texts[start:bisect.bisect_left(texts, prefix + "\U0010ffff", start)]


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
    def from_tables(cls, tables: FirstOverlapTables) -> "FirstOverlap":
        """The ``FirstOverlap`` that ``tables()`` was taken from, without filing a pattern again."""
        built = cls(())
        built._at, built._down, built._globs_at, built._globs_down = tables
        return built

    def per_list(self, lists: Iterable[Iterable[str]], *, first_hit: bool) -> list[int | None]:
        """The lowest key overlapping, for each list of normalised patterns, its first pattern that overlaps
        something (``first_hit``), or any of its patterns. One call for many lists, as planning asks
        about thousands of items: most of their patterns are answered from the memo, and a literal one
        (the usual kind) is looked up inline, in a few dict lookups, not in a call per pattern."""
        memo, above, down, globs_down = self._memo, self._above, self._down, self._globs_down
        entries = _ENTRIES
        found: list[int | None] = []
        for patterns in lists:
            best: int | None = None
            for pattern in patterns:
                if pattern in memo:
                    key = memo[pattern]
                else:
                    home, literal, _ = entries.get(pattern) or _entry(pattern)
                    if not literal:
                        key = self._first_glob(pattern, home)
                    else:
                        end = home.rfind("/")
                        parent = home[:end] if end > 0 else ""
                        key, globs = above.get(parent) or self._above_of(parent)
                        below = down.get(home)
                        if below is not None and (key is None or below < key):
                            key = below
                        if globs or home in globs_down:
                            key = lowest_meeting(key, (*globs, *globs_down.get(home, ())), home)
                    memo[pattern] = key
                if key is not None and (best is None or key < best):
                    best = key
                    if first_hit:
                        break
            found.append(best)
        return found

    def _first_glob(self, text: str, home: str) -> int | None:
        """The lowest key overlapping the glob ``text`` (filed at ``home``), found as ``conflicts`` does."""
        if self._homes is None:
            self._homes = sorted(self._at)
        at, prefixes = self._at, _segment_prefixes(home)
        above = [(at[filed], filed) for filed in prefixes[1:] if filed in at]
        # The literals strictly below the prefix, lowest key first: once one meets the query, no later one can
        # be lower, and ``wanted`` skips their tests.
        below = sorted((at[filed], filed) for filed in _texts_below(self._homes, home))
        globs = [glob for filed in prefixes[:-1] for glob in self._globs_at.get(filed, ())]
        globs.extend(self._globs_down.get(home, ()))
        hits: list[int] = []  # each lower than the one before
        for key in overlapping_keys(text, (*above, *below), globs, lambda key: not hits or key < hits[-1]):
            hits.append(key)
        return hits[-1] if hits else None

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
