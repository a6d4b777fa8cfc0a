"""The declarative schema layer: YAML errors with positions, aliases, scalar typing, field checks."""

from __future__ import annotations

import re
from typing import Annotated, NamedTuple

import pytest

from tests.helpers.timing import fastest
from wavegit.core import schema, yamlcompose, yamlread
from wavegit.core.errors import ValidationError

SCHEMA = schema.Schema("thing", (
    schema.Field("name", "str", required=True, hint="a name"),
    schema.Field("count", "int", check=schema.at_least(1)),
    schema.Field("ratio", "float"),
    schema.Field("enabled", "bool"),
    schema.Field("tags", "str_list", element_map=str.upper),
    schema.Field("mode", "str", choices=("fast", "slow")),
))


def _read(text: str, declared: schema.Schema = SCHEMA) -> tuple[dict[str, schema.Value], list[str]]:
    where = yamlread.Located("f.yaml", text)
    root = yamlcompose.compose(text, "f.yaml")
    assert root is not None
    values = yamlread.read_mapping(root, declared, where)
    return values, [str(p) for p in where.problems]


class Section(NamedTuple):
    flag: Annotated[bool, schema.key("a flag")] = False


class Record(NamedTuple):
    name: Annotated[str, schema.key("a name", required=True, hint="a name")] = ""
    count: Annotated[int | None, schema.key("how many", schema.at_least(1))] = None
    when: Annotated[str | None, schema.key("a moment", text=True)] = None
    tags: Annotated[tuple[str, ...], schema.key("labels", element_map=str.upper)] = ()
    section: Annotated[Section, schema.key("a nested mapping")] = Section()
    position: int = 0
    """Not read from YAML: no key."""


def test_a_record_declares_its_schema_once_and_the_schema_reads_yaml() -> None:
    derived = schema.record_schema("record", Record)
    assert [(spec.name, spec.kind, spec.doc) for spec in derived.fields] == [
        ("name", "str", "a name"), ("count", "int", "how many"), ("when", "text", "a moment"),
        ("tags", "str_list", "labels"), ("section", "map", "a nested mapping")]
    section = derived.field("section")
    assert section is not None and section.nested is not None and section.nested.names == ("flag",)
    values, problems = _read("when: 2026-01-01\ntags: [a]\nsection: {flag: yes}\ncount: 0\nposition: 1\n",
                             derived)
    assert values == {"when": "2026-01-01", "tags": ("A",), "section": {"flag": True}}
    assert problems == ["f.yaml:4:8: 'count' must be at least 1",
                        "f.yaml:5:1: unknown key 'position' in record (hint: did you mean 'section'?)",
                        "f.yaml:1:1: missing required key 'name' (hint: a name)"]


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
        yamlcompose.compose("a: 1\nb: [1,\n", "f.yaml")
    problem = caught.value.problems[0]
    assert (problem.line, problem.col) == (3, 1) and "not valid YAML" in problem.message


def test_small_aliases_are_allowed() -> None:
    values, problems = _read("name: &n x\nmode: fast\ntags: &t [a]\n")
    assert problems == [] and values["tags"] == ("A",)


def test_billion_laughs_fails_fast() -> None:
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    bomb = "\n".join(lines) + "\n"
    with pytest.raises(ValidationError, match="alias bomb"):
        yamlcompose.compose(bomb, "f.yaml")
    # Refusing it costs about what reading the same lines with plain words does: nothing was expanded.
    plain = re.sub(r"\*a[0-9]", "lol", bomb)

    def refuse() -> None:
        with pytest.raises(ValidationError):
            yamlcompose.compose(bomb, "f.yaml")

    assert fastest(refuse) < 20 * fastest(lambda: yamlcompose.compose(plain, "f.yaml"))


def test_recursive_alias_is_refused() -> None:
    with pytest.raises(ValidationError, match="recursive alias"):
        yamlcompose.compose("a: &x [1, *x]\n", "f.yaml")


def test_an_owns_list_with_one_bad_pattern_keeps_its_good_ones_for_non_strict_readers() -> None:
    from wavegit.model import tracker

    text = ("version: 1\nitems:\n  - id: A\n    prompt: p\n    owns: [src/a.py, ../escape]\n    test: t\n"
            "    status: in_progress\n")
    item = tracker.loads(text, strict=False).items[0]
    assert item.owns == ("src/a.py",)
    assert len(item.problems) == 1 and "'..'" in item.problems[0]
    with pytest.raises(ValidationError):
        tracker.loads(text, strict=True)


def test_a_position_counts_lines_as_the_file_does_past_yamls_own_line_breaks() -> None:
    # U+0085, U+2028 and U+2029 end a line for YAML (its marks), not for an editor or grep -n.
    _, problems = _read('tags: ["a\u2028b\u0085c"]\nenabled: 3\n')
    assert "f.yaml:2:10: 'enabled' " in [problem[:23] for problem in problems]
    _, problems = _read("\ufeffenabled: 3\n")
    assert problems[0].startswith("f.yaml:1:10: ")
