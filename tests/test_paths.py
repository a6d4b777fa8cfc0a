"""Ownership patterns: normalisation, matching, the exact overlap test and the ownership index."""

from __future__ import annotations

import itertools
import marshal
import random
import sys
from functools import cache, lru_cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wavegit.paths import (
    FirstOverlap,
    OwnershipIndex,
    PatternError,
    fold,
    matches,
    normalize,
    overlaps,
    owns_folded,
)


@pytest.mark.parametrize(("raw", "canonical"), [
    ("src/a.py", "src/a.py"),
    ("./src/a.py", "src/a.py"),
    ("src//a.py", "src/a.py"),
    ("src/./a.py", "src/a.py"),
    ("././src/auth/", "src/auth/"),
    ("src/auth//", "src/auth/"),
    ("src/**/**/x.py", "src/**/x.py"),
    ("Cafe\u0301/menu.txt", "Caf\u00e9/menu.txt"),
    ("ab:c/d", "ab:c/d"),
    ("docs/[ab]*.md", "docs/[ab]*.md"),
    ("x/.gitignore", "x/.gitignore"),
    ("x/...", "x/..."),
])
def test_normalize_gives_the_canonical_form(raw: str, canonical: str) -> None:
    assert normalize(raw) == canonical
    assert normalize(canonical) == canonical


@pytest.mark.parametrize(("raw", "reason"), [
    ("", "empty"),
    ("/etc/passwd", "absolute"),
    ("C:/x", "absolute"),
    ("c:x", "absolute"),
    ("~/x", "absolute"),
    ("~", "absolute"),
    ("../x", "'..'"),
    ("a/../b", "'..'"),
    ("a/..", "'..'"),
    ("a\\b", "backslash"),
    ("a\x00b", "control character"),
    ("a\nb", "control character"),
    ("a\x85b", "control character"),
    (".", "whole repository"),
    ("./", "whole repository"),
    ("**", "whole repository"),
    ("**/**/", "whole repository"),
    (".git/config", "'.git'"),
    ("a/.GIT/x", "'.git'"),
    ("src/[ab", "unbalanced '['"),
    ("src/[]", "unbalanced '['"),
    ("src/[z-a]", "reversed range"),
])
def test_normalize_rejects_with_the_reason_and_a_fix(raw: str, reason: str) -> None:
    with pytest.raises(PatternError) as caught:
        normalize(raw)
    message = str(caught.value)
    assert reason in message
    assert repr(raw) in message
    assert ";" in message  # what is wrong; how to fix it


@pytest.mark.parametrize(("pattern", "path", "owned"), [
    ("src/a.py", "src/a.py", True),
    ("src/a.py", "src/a.pyc", False),
    ("src/a.py", "src/A.py", False),
    ("src/auth", "src/auth/x.py", True),
    ("src/auth", "src/authx.py", False),
    ("src/auth/", "src/auth/deep/x.py", True),
    ("src/auth/", "src/auth", False),
    ("src/*.py", "src/a.py", True),
    ("src/*.py", "src/.py", True),
    ("src/*.py", "src/sub/a.py", False),
    ("src/*", "src/sub/a.py", True),
    ("src/?.py", "src/ab.py", False),
    ("src/?.py", "src/b.py", True),
    ("src/[a-c].py", "src/b.py", True),
    ("src/[a-c].py", "src/d.py", False),
    ("src/[!a].py", "src/a.py", False),
    ("src/[!a].py", "src/b.py", True),
    ("src/[^a].py", "src/a.py", False),
    ("src/[]x].py", "src/].py", True),
    ("src/[*]", "src/*", True),
    ("src/[*]", "src/x", False),
    ("**/*.md", "README.md", True),
    ("**/*.md", "a/b/c/README.md", True),
    ("a/**/z", "a/z", True),
    ("a/**/z", "a/b/c/z/w", True),
    ("a/**/z", "b/z", False),
    ("a/**", "a", True),
    ("a/**/", "a", False),
    ("a/**/", "a/b", True),
    ("a/b*/", "a/bc", False),
    ("a/b*/", "a/bc/d", True),
])
def test_matches_table(pattern: str, path: str, owned: bool) -> None:
    assert matches(pattern, path) is owned


@pytest.mark.parametrize(("a", "b", "expected"), [
    # literal files and directories: one a segment prefix of the other
    ("src/a.py", "src/a.py", True),
    ("src/a.py", "src/b.py", False),
    ("src/auth", "src/auth/x.py", True),
    ("src/auth/", "src/auth", True),
    ("src/auth/", "src/auth/x/", True),
    ("src/auth", "src/authz", False),
    # case-insensitive, by simple per-character folding
    ("SRC/Auth.py", "src/auth.PY", True),
    ("stra\u00dfe", "STRASSE", False),
    ("stra\u00dfe", "STRA\u1e9eE", True),
    ("\u212a/x", "k/x", True),
    # glob against literal
    ("src/*.py", "src/a.py", True),
    ("src/*.py", "src/A.PY", True),
    ("src/*.py", "src/a.md", False),
    ("src/*.py", "src/x/", False),
    ("src/*.py", "src/x.py/", True),
    ("src/*", "src/x/y/z", True),
    ("src/?", "src/ab", False),
    ("src/*/", "src/a", True),
    # glob against glob
    ("*.py", "*.md", False),
    ("a*", "*b", True),
    ("a/*/c", "a/b/*", True),
    ("a/?/c", "a/bb/c", False),
    ("[ab]x", "[bc]x", True),
    ("[ab]x", "[cd]x", False),
    ("[a-f]", "[F-K]", True),
    ("[!a]", "a", True),  # "A" is owned by [!a] and is the same file as "a"
    ("[!aA]", "a", False),
    ("[!kK]", "k", True),  # so is the Kelvin sign
    ("x/[!a]", "x/[!b]", True),
    ("[\u00c0-\u00c5]x", "\u00e3X", True),
    ("[!\u00c0\u00c1]", "\u00e0", True),
    ("[!\u00e0\u00c0]", "\u00e0", False),
    # ** as zero or more segments
    ("**/test_*.py", "src/tests/test_x.py", True),
    ("**/test_*.py", "src/tests/", True),
    ("**/test_*.py", "src/main.md", True),  # src/main.md/test_x.py, if main.md is a directory
    ("docs/", "src/**/*.md", False),
    ("a/**/b/", "a/b", True),
    ("a/**/z", "a/**/y", True),  # a/z/y
    ("a/**/z/", "b/**/y", False),
    ("a/**/z", "a/y/**", True),
    ("**/a/**", "**/b", True),
    # segments no path can have: ".", "..", ".git"
    (".?", "?.", False),
    (".*", "*.", True),
    (".[g]it", "*", False),
    ("x/.g[i]t*", "x/*", True),
])
def test_overlaps_table(a: str, b: str, expected: bool) -> None:
    assert overlaps(a, b) is expected
    assert overlaps(b, a) is expected


# --- overlaps() against brute force ---------------------------------------------------------------------
#
# Why the enumeration below is a proof for the generated patterns.
#
# 1. Depth. overlaps() searches a product of two segment automata; each automaton has states 0..m for its
#    m pattern segments plus "below a match" (m + 1). Take a shortest witness path. A step on which both
#    sides only loop (a ``**`` or "below a match" consuming a segment) can be deleted. A file pattern's
#    m -> m + 1 step can be merged into a later step or dropped (state m already accepts). So every step of a
#    shortest witness advances one side over a non-``**`` segment, or a directory pattern past its end:
#    depth <= G(a) + G(b) + dir(a) + dir(b), where G counts non-``**`` segments. The generator keeps
#    G + dir <= 2 per pattern, so depth <= 4 = MAX_DEPTH.
# 2. Name length. In a shortest witness segment every character is matched by a non-``*`` token on at least
#    one side (a character both ``*``s absorb can be deleted, as long as the segment stays non-empty). The
#    generator puts at most one non-``*`` token in a segment, so names of length <= 2 = MAX_NAME suffice.
# 3. Alphabet. Case-insensitively, paths x and y are the same file when fold(x) == fold(y). Tokens only
#    mention a, A, b: literals and positive classes draw from them; ``?``, ``*`` and negated classes that
#    exclude only a/A all admit "b". So a witness character outside the folded alphabet {a, b} can be
#    replaced by "b" on both sides. And every case variant of a (a, A) is in the alphabet.
# Hence two generated patterns overlap iff some enumerated x owned by a and y owned by b have equal folds.

ALPHABET = "abA"
MAX_NAME = 2
MAX_DEPTH = 4
NAMES = ["".join(chars) for n in range(1, MAX_NAME + 1) for chars in itertools.product(ALPHABET, repeat=n)]
ATOMS = ["a", "b", "A", "?", "[ab]", "[Ab]", "[!a]", "[!A]", "[!aA]"]
SEGMENT_GLOBS = ["*", *ATOMS, *(f"{atom}*" for atom in ATOMS), *(f"*{atom}" for atom in ATOMS), "*a*"]


@st.composite
def small_patterns(draw: st.DrawFn) -> str:
    globs = draw(st.lists(st.sampled_from(SEGMENT_GLOBS), min_size=1, max_size=2))
    is_dir = len(globs) == 1 and draw(st.booleans())
    segments: list[str] = []
    for glob in globs:
        if draw(st.booleans()):
            segments.append("**")
        segments.append(glob)
    if draw(st.booleans()):
        segments.append("**")
    return normalize("/".join(segments) + ("/" if is_dir else ""))


def _depth_needed(pattern: str) -> int:
    body = pattern.rstrip("/")
    return sum(1 for segment in body.split("/") if segment != "**") + pattern.endswith("/")


@cache
def _paths(depth: int) -> tuple[str, ...]:
    return tuple("/".join(parts) for n in range(1, depth + 1) for parts in itertools.product(NAMES, repeat=n))


@lru_cache(maxsize=4096)
def _owned_folds(pattern: str, depth: int) -> frozenset[str]:
    return frozenset(fold(path) for path in _paths(depth) if matches(pattern, path))


@settings(max_examples=300, deadline=None)
@given(small_patterns(), small_patterns())
def test_overlaps_equals_brute_force_enumeration(a: str, b: str) -> None:
    depth = _depth_needed(a) + _depth_needed(b)
    assert depth <= MAX_DEPTH
    brute = not _owned_folds(a, depth).isdisjoint(_owned_folds(b, depth))
    assert overlaps(a, b) is brute


@settings(max_examples=200, deadline=None)
@given(small_patterns(), st.sampled_from(_paths(3)))
def test_case_insensitive_ownership_is_ownership_of_some_case_variant(pattern: str, path: str) -> None:
    variants = ("".join(chars) for chars in itertools.product(*({c.lower(), c.upper()} for c in path)))
    assert owns_folded(pattern, path) is any(matches(pattern, variant) for variant in variants)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab/.~:*?[]\\ \t\x7fGIT")), max_size=8))
def test_normalize_fast_path_agrees_with_the_full_normalisation(text: str) -> None:
    from wavegit.paths import _normalize_slow

    try:
        slow: str | None = _normalize_slow(text, text)
    except PatternError:
        slow = None
    try:
        fast: str | None = normalize(text)
    except PatternError:
        fast = None
    assert fast == slow


# --- OwnershipIndex ------------------------------------------------------------------------------------


def _random_pattern(rng: random.Random) -> str:
    names = ["src", "Src", "tests", "a", "b", "x.py", "X.PY"]
    segments = [rng.choice(names + ["*", "*.py", "[ab]", "**", "?"] * (rng.random() < 0.3))
                for _ in range(rng.randint(1, 4))]
    try:
        return normalize("/".join(segments) + ("/" if rng.random() < 0.2 else ""))
    except PatternError:
        return "src"


def _path_like(pattern: str) -> str:
    """A concrete path the random ``pattern`` owns."""
    return pattern.replace("**", "deep").replace("*", "q").replace("?", "r").replace("[ab]", "b").rstrip("/")


@pytest.mark.parametrize("seed", range(8))
def test_index_agrees_with_pairwise_overlaps_and_matches(seed: int) -> None:
    rng = random.Random(seed)
    owned = {key: [_random_pattern(rng) for _ in range(rng.randint(1, 4))] for key in range(60)}
    index: OwnershipIndex[int] = OwnershipIndex()
    for key, patterns in owned.items():
        for pattern in patterns:
            index.add(key, pattern)
    for _ in range(80):
        query = _random_pattern(rng)
        expected = {key for key, patterns in owned.items() if any(overlaps(p, query) for p in patterns)}
        assert index.conflicts(query) == expected, query
        path = _path_like(query)
        owners = {key for key, patterns in owned.items() if any(owns_folded(p, path) for p in patterns)}
        assert index.owners(path) == owners, path


@pytest.mark.parametrize("seed", range(8))
def test_first_overlap_is_the_lowest_key_pairwise_overlaps_finds(seed: int) -> None:
    rng = random.Random(seed)
    owned = [(rng.randrange(40), _random_pattern(rng)) for _ in range(rng.randint(1, 60))]
    first = FirstOverlap(owned)
    rebuilt = FirstOverlap.from_tables(marshal.loads(marshal.dumps(first.tables())))
    for _ in range(80):
        query = _random_pattern(rng)
        expected = min((key for key, pattern in owned if overlaps(pattern, query)), default=None)
        assert first.first(query) == expected, query
        assert first.first(query) == expected, query  # the memoised answer too
        assert rebuilt.first(query) == expected, query


def test_first_overlap_per_list_is_first_of_the_first_hit_or_the_lowest_of_all() -> None:
    first = FirstOverlap([(4, "a/x"), (2, "b/"), (9, "c/*.py")])
    lists = [("z", "a", "b/q"), ("c/m.py", "b"), ("z",), ()]
    assert first.per_list(lists, first_hit=True) == [4, 9, None, None]
    assert first.per_list(lists, first_hit=False) == [2, 2, None, None]


def test_first_overlap_sees_literals_above_below_and_globs_around_a_literal_query() -> None:
    first = FirstOverlap([(5, "src/"), (3, "src/auth/x.py"), (7, "docs/*.md"), (1, "*.rst"), (2, "a/*/b")])
    assert first.first("src/auth/x.py") == 3
    assert first.first("src/Auth/y.py") == 5
    assert first.first("src") == 3
    assert first.first("docs/guide.md") == 7
    assert first.first("docs/guide.rst") is None
    assert first.first("notes.RST") == 1
    assert first.first("a/q") == 2
    assert first.first("a/q/c") is None
    assert first.first("README") is None


@pytest.mark.parametrize("seed", range(4))
def test_index_rebuilt_from_its_marshalled_tables_answers_like_the_original(seed: int) -> None:
    rng = random.Random(seed)
    index: OwnershipIndex[str] = OwnershipIndex()
    for key in range(30):
        for _ in range(rng.randint(1, 3)):
            index.add(f"k{key}", _random_pattern(rng))
    rebuilt: OwnershipIndex[str] = OwnershipIndex.from_tables(marshal.loads(marshal.dumps(index.tables())))
    for _ in range(60):
        query = _random_pattern(rng)
        path = _path_like(query)
        assert rebuilt.conflicts(query) == index.conflicts(query), query
        assert rebuilt.owners(path) == index.owners(path), path


@pytest.mark.parametrize("seed", range(4))
def test_owners_of_many_paths_is_owners_of_each_and_lists_the_invalid_ones(seed: int) -> None:
    rng = random.Random(seed)
    index: OwnershipIndex[int] = OwnershipIndex()
    for key in range(30):
        index.add(key, _random_pattern(rng))
    pushed = [_path_like(_random_pattern(rng)) for _ in range(80)] + ["a\\b", "src/../x", "SRC/X.PY"]
    owned, invalid = index.owners_of(pushed)
    assert invalid == ["a\\b", "src/../x"]
    expected = {path: index.owners(path) for path in pushed if path not in invalid}
    assert owned == {path: keys for path, keys in expected.items() if keys}


def test_index_remove_forgets_every_pattern_of_a_key() -> None:
    index: OwnershipIndex[str] = OwnershipIndex()
    index.add("A", "src/auth/")
    index.add("A", "docs/*.md")
    index.add("B", "src/auth/login.py")
    assert index.conflicts("src/AUTH/login.py") == {"A", "B"}
    index.remove("A")
    assert "A" not in index
    assert index.conflicts("src/auth/login.py") == {"B"}
    assert index.conflicts("docs/x.md") == set()
    assert index.owners("docs/x.md") == set()


def test_index_owners_respects_directory_patterns() -> None:
    index: OwnershipIndex[str] = OwnershipIndex()
    index.add("dir", "src/auth/")
    index.add("file", "src/auth")
    index.add("glob", "src/*/")
    assert index.owners("src/auth") == {"file"}
    assert index.owners("src/Auth/x.py") == {"dir", "file", "glob"}


@settings(max_examples=150, deadline=None)
@given(st.lists(small_patterns(), min_size=1, max_size=8), st.lists(small_patterns(), min_size=1, max_size=6))
def test_index_of_generated_patterns_answers_exactly_what_pairwise_overlaps_does(owned: list[str],
                                                                                 queries: list[str]) -> None:
    index: OwnershipIndex[int] = OwnershipIndex()
    for key, pattern in enumerate(owned):
        index.add(key, pattern, assume_normalized=True)
    for query in queries:
        expected = {key for key, pattern in enumerate(owned) if overlaps(pattern, query)}
        assert index.conflicts(query, assume_normalized=True) == expected, query
        assert index.conflicts(query) == expected, query


def test_index_sees_patterns_added_or_removed_after_a_query() -> None:
    index: OwnershipIndex[str] = OwnershipIndex()
    index.add("A", "src/a.py")
    assert index.conflicts("src/") == {"A"}
    assert index.owners("src/b/x.py") == set()
    index.add("B", "src/b/")
    index.add("C", "*.md")
    assert index.conflicts("src/") == {"A", "B"}
    assert index.conflicts("src/b/x.py") == {"B"}
    assert index.owners("src/b/x.py") == {"B"}
    assert index.conflicts("README.md") == {"C"}
    index.remove("A")
    index.remove("C")
    assert index.conflicts("src/") == {"B"}
    assert index.conflicts("README.md") == set()


def test_index_glob_that_can_own_no_path_conflicts_with_nothing() -> None:
    # ".gi[t]" only matches ".git", a name no repository path has, so the pattern owns nothing.
    index: OwnershipIndex[str] = OwnershipIndex()
    index.add("dir", "src")
    index.add("empty", "src/.gi[t]/")
    assert not overlaps("src", "src/.gi[t]/")
    assert index.conflicts("src/.gi[t]/") == set()
    assert index.conflicts("src") == {"dir"}
    assert index.conflicts("src/*") == {"dir"}


def test_index_answers_for_a_path_deeper_than_the_recursion_limit() -> None:
    deep = "/".join(["d"] * (sys.getrecursionlimit() + 100))
    index: OwnershipIndex[str] = OwnershipIndex()
    index.add("top", "d/")
    index.add("glob", "d/**/leaf.py")
    assert index.owners(deep + "/leaf.py") == {"top", "glob"}
    assert index.conflicts(deep + "/other.py") == {"top", "glob"}
