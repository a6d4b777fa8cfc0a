"""Generated ownership patterns small enough to check against brute-force enumeration of every path."""

from __future__ import annotations

import itertools
from functools import cache, lru_cache

from hypothesis import strategies as st

from wavegit.ownership.patterns import fold, matches, normalize

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


def depth_needed(pattern: str) -> int:
    body = pattern.rstrip("/")
    return sum(1 for segment in body.split("/") if segment != "**") + pattern.endswith("/")


@cache
def all_paths(depth: int) -> tuple[str, ...]:
    return tuple("/".join(parts) for n in range(1, depth + 1) for parts in itertools.product(NAMES, repeat=n))


@lru_cache(maxsize=4096)
def owned_folds(pattern: str, depth: int) -> frozenset[str]:
    return frozenset(fold(path) for path in all_paths(depth) if matches(pattern, path))
