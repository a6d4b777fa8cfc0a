"""Ownership patterns: normalisation and matching (wavegit.ownership.patterns)."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wavegit.ownership.patterns import PatternError, _normalize_slow, matches, normalize, owns_folded


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


@given(st.text(alphabet=st.sampled_from(list("ab/.~:*?[]\\ \t\x7fGIT")), max_size=8))
def test_normalize_fast_path_agrees_with_the_full_normalisation(text: str) -> None:
    try:
        slow: str | None = _normalize_slow(text, text)
    except PatternError:
        slow = None
    try:
        fast: str | None = normalize(text)
    except PatternError:
        fast = None
    assert fast == slow


def test_a_decomposed_path_matches_the_pattern_of_its_composed_form() -> None:
    # One normalisation everywhere: the worker's changed paths are compared in NFC, as patterns are.
    nfd = unicodedata.normalize("NFD", "src/caf\u00e9/menu.txt")
    assert matches("src/caf\u00e9/", nfd) and owns_folded("SRC/CAF\u00c9/", nfd)
    assert not matches("src/cafe/", nfd)
