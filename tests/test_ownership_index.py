"""The ownership indexes (wavegit.ownership.index) answer exactly what pairwise overlaps and matches do."""

from __future__ import annotations

import marshal
import random
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers.ownership import small_patterns
from wavegit.ownership.index import FirstOverlap, OwnershipIndex
from wavegit.ownership.overlap import overlaps
from wavegit.ownership.patterns import PatternError, fold, normalize, owns_folded, plain_folds


def _first(lookup: FirstOverlap, pattern: str) -> int | None:
    """The lowest key overlapping the one normalised ``pattern``."""
    return lookup.per_list(((pattern,),), first_hit=True)[0]


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
        assert _first(first, query) == expected, query
        assert _first(first, query) == expected, query  # the memoised answer too
        assert _first(rebuilt, query) == expected, query


def test_first_overlap_per_list_is_first_of_the_first_hit_or_the_lowest_of_all() -> None:
    first = FirstOverlap([(4, "a/x"), (2, "b/"), (9, "c/*.py")])
    lists = [("z", "a", "b/q"), ("c/m.py", "b"), ("z",), ()]
    assert first.per_list(lists, first_hit=True) == [4, 9, None, None]
    assert first.per_list(lists, first_hit=False) == [2, 2, None, None]


def test_first_overlap_sees_literals_above_below_and_globs_around_a_literal_query() -> None:
    first = FirstOverlap([(5, "src/"), (3, "src/auth/x.py"), (7, "docs/*.md"), (1, "*.rst"), (2, "a/*/b")])
    assert _first(first, "src/auth/x.py") == 3
    assert _first(first, "src/Auth/y.py") == 5
    assert _first(first, "src") == 3
    assert _first(first, "docs/guide.md") == 7
    assert _first(first, "docs/guide.rst") is None
    assert _first(first, "notes.RST") == 1
    assert _first(first, "a/q") == 2
    assert _first(first, "a/q/c") is None
    assert _first(first, "README") is None


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


def _random_index_and_paths(rng: random.Random) -> tuple[OwnershipIndex[int], list[str]]:
    """An index of 30 random patterns, and 80 paths like such patterns (owned by some, most by none)."""
    index: OwnershipIndex[int] = OwnershipIndex()
    for key in range(30):
        index.add(key, _random_pattern(rng))
    return index, [_path_like(_random_pattern(rng)) for _ in range(80)]


@pytest.mark.parametrize("seed", range(4))
def test_owners_of_many_paths_is_owners_of_each_and_of_a_name_no_pattern_spells_as_it_is(seed: int) -> None:
    index, pushed = _random_index_and_paths(random.Random(seed))
    index.add(99, "src/")
    odd = ["a\\b", "src/../x", "src/a[b", "src/tab\there", "src/caf\u0065\u0301\\x"]
    owned = index.owners_of([*pushed, "SRC/X.PY", *odd])
    assert [path for path in odd if 99 in owned.get(path, ())] == odd[1:]
    expected = {path: index.owners(path) for path in (*pushed, "SRC/X.PY")}
    assert {path: keys for path, keys in owned.items() if path not in odd} == {
        path: keys for path, keys in expected.items() if keys}


@pytest.mark.parametrize("seed", range(4))
def test_owners_of_many_plain_paths_at_once_is_owners_of_each(seed: int) -> None:
    # Printable ASCII paths that normalize keeps (dotfiles, mixed case): matched in one batch, not one by one.
    index, pushed = _random_index_and_paths(random.Random(seed))
    pushed += ["SRC/X.PY", ".env", "src/.x.py", "a b/c"]
    assert plain_folds(pushed) is not None
    assert index.owners_of(pushed) == {path: index.owners(path) for path in pushed if index.owners(path)}


@given(st.lists(st.text(alphabet="aB./ _~:*[\\\tg.it", max_size=8), min_size=1, max_size=4))
def test_plain_folds_are_each_paths_fold_or_none(paths: list[str]) -> None:
    folds = plain_folds(paths)
    if folds is not None:  # every path is its own canonical form, folded by lower-casing
        assert folds == [fold(normalize(path)) for path in paths]
        assert all(normalize(path) == path for path in paths)


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


def test_index_sees_patterns_added_after_a_query() -> None:
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
