"""The declarative schema layer: YAML errors with positions, aliases, scalar typing, field checks."""

from __future__ import annotations

import time

import pytest

from wavegit import schema
from wavegit.errors import ValidationError

SCHEMA = schema.Schema("thing", (
    schema.Field("name", "str", required=True, hint="a name"),
    schema.Field("count", "int", check=schema.at_least(1)),
    schema.Field("ratio", "float"),
    schema.Field("enabled", "bool"),
    schema.Field("tags", "str_list", element_map=str.upper),
    schema.Field("mode", "str", choices=("fast", "slow")),
))


def _read(text: str) -> tuple[dict[str, schema.Value], list[str]]:
    where = schema.Located("f.yaml")
    root = schema.compose(text, "f.yaml")
    assert root is not None
    values = schema.read_mapping(root, SCHEMA, where)
    return values, [str(p) for p in where.problems]


def test_values_are_typed_like_safe_load() -> None:
    values, problems = _read("name: x\ncount: 0x10\nratio: 1_000.5\nenabled: Yes\ntags: [a, b]\nmode: fast\n")
    assert problems == []
    assert values == {"name": "x", "count": 16, "ratio": 1000.5, "enabled": True, "tags": ("A", "B"),
                      "mode": "fast"}


def test_all_problems_are_reported_at_once_with_positions() -> None:
    _, problems = _read("count: 0\nratio: x\nenabled: 3\ntags: [1]\nmode: Fast\nextra: 1\ncount: 2\n")
    assert problems == [
        "f.yaml:1:8: 'count' must be at least 1",
        "f.yaml:2:8: 'ratio' must be a number, got a string (hint: write a number, e.g. 0.5)",
        "f.yaml:3:10: 'enabled' must be true or false, got an integer (hint: write true or false)",
        "f.yaml:4:8: 'tags' must be a list of strings, got an integer (hint: put the element in quotes)",
        "f.yaml:5:7: 'mode' must be one of fast, slow, got 'Fast' (hint: did you mean 'fast'?)",
        "f.yaml:6:1: unknown key 'extra' in thing "
        "(hint: known keys: name, count, ratio, enabled, tags, mode)",
        "f.yaml:7:1: duplicate key 'count' (hint: each key may appear once per mapping)",
        "f.yaml:1:1: missing required key 'name' (hint: a name)",
    ]


def test_yaml_syntax_error_has_one_based_position() -> None:
    with pytest.raises(ValidationError) as caught:
        schema.compose("a: 1\nb: [1,\n", "f.yaml")
    problem = caught.value.problems[0]
    assert (problem.line, problem.col) == (3, 1) and "not valid YAML" in problem.message


def test_small_aliases_are_allowed() -> None:
    values, problems = _read("name: &n x\nmode: fast\ntags: &t [a]\n")
    assert problems == [] and values["tags"] == ("A",)


def test_billion_laughs_fails_fast() -> None:
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    started = time.perf_counter()
    with pytest.raises(ValidationError, match="alias bomb"):
        schema.compose("\n".join(lines) + "\n", "f.yaml")
    assert time.perf_counter() - started < 2.0


def test_recursive_alias_is_refused() -> None:
    with pytest.raises(ValidationError, match="recursive alias"):
        schema.compose("a: &x [1, *x]\n", "f.yaml")


def test_an_owns_list_with_one_bad_pattern_keeps_its_good_ones_for_non_strict_readers() -> None:
    from wavegit import tracker

    text = ("version: 1\nitems:\n  - id: A\n    prompt: p\n    owns: [src/a.py, ../escape]\n    test: t\n"
            "    status: in_progress\n")
    item = tracker.loads(text, strict=False).items[0]
    assert item.owns == ("src/a.py",)
    assert len(item.problems) == 1 and "'..'" in item.problems[0]
    with pytest.raises(ValidationError):
        tracker.loads(text, strict=True)
