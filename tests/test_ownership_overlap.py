"""The exact overlap test (wavegit.ownership.overlap), against a table and brute-force enumeration."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers.ownership import MAX_DEPTH, all_paths, depth_needed, owned_folds, small_patterns
from wavegit.ownership.overlap import overlaps
from wavegit.ownership.patterns import matches, owns_folded


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


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(small_patterns(), small_patterns())
def test_overlaps_equals_brute_force_enumeration(a: str, b: str) -> None:
    depth = depth_needed(a) + depth_needed(b)
    assert depth <= MAX_DEPTH
    brute = not owned_folds(a, depth).isdisjoint(owned_folds(b, depth))
    assert overlaps(a, b) is brute


@given(small_patterns(), st.sampled_from(all_paths(3)))
def test_case_insensitive_ownership_is_ownership_of_some_case_variant(pattern: str, path: str) -> None:
    variants = ("".join(chars) for chars in itertools.product(*({c.lower(), c.upper()} for c in path)))
    assert owns_folded(pattern, path) is any(matches(pattern, variant) for variant in variants)


@pytest.mark.parametrize(("a", "b", "expected"), [
    # Windows drops a name's trailing dots and spaces: these are the same directory there.
    ("src/a./", "src/a/", True),
    ("src/a /", "src/a/", True),
    ("src/a. ./x.py", "src/A/", True),
    ("src/a../", "src/a/x.py", True),
    ("src/a./", "src/*.py", False),
    ("src/[a]./", "src/a/x", True),
    ("src/a*./", "src/a/", True),
    (".wavegit./", ".wavegit/config.yaml", True),
    # ...but a dot or space inside a name, or a name of dots only, is kept.
    ("src/a.b/", "src/a/", False),
    ("src/a b/", "src/a/", False),
    ("src/.../", "src/a/", False),
    ("src/.../*.py", "src/.../a.py", True),
])
def test_trailing_dots_and_spaces_of_a_name_make_no_other_file(a: str, b: str, expected: bool) -> None:
    assert overlaps(a, b) is expected and overlaps(b, a) is expected
