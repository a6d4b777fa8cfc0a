"""Typed JSON decoding: every value checked against its annotation, every complaint naming the JSON path."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

import pytest

from wavegit.core import jsondecode
from wavegit.core.jsondecode import CHECK, DecodeError, decode, decode_object


def _even(value: object) -> str | None:
    return "must be even" if isinstance(value, int) and value % 2 else None


@dataclass
class Inner:
    count: int = field(metadata={CHECK: _even})
    when: datetime | None = None


@dataclass
class Outer:
    name: str
    ratio: float
    tags: list[str]
    inner: list[Inner]
    by_name: dict[str, int]


GOOD = {"name": "x", "ratio": 1, "tags": ["a"], "inner": [{"count": 2, "when": "2026-01-01T00:00:00Z"}],
        "by_name": {"a": 1}}


def _utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_a_good_object_decodes_with_whole_numbers_as_floats_and_parsed_strings() -> None:
    outer = decode_object(Outer, GOOD, "$", {datetime: _utc})
    assert outer == Outer("x", 1.0, ["a"], [Inner(2, datetime(2026, 1, 1, tzinfo=timezone.utc))], {"a": 1})
    assert isinstance(outer.ratio, float)


@pytest.mark.parametrize(("data", "message"), [
    ({**GOOD, "ratio": True}, "$.ratio: must be a number, got a boolean"),
    ({**GOOD, "ratio": 10 ** 400}, "$.ratio: must be a number, got an integer"),
    ({**GOOD, "tags": "a"}, "$.tags: must be a list, got a string"),
    ({**GOOD, "tags": [1]}, "$.tags[0]: must be a string, got an integer"),
    ({**GOOD, "by_name": {"a": "1"}}, "$.by_name.a: must be an integer, got a string"),
    ({**GOOD, "by_name": []}, "$.by_name: must be an object, got a list"),
    ({**GOOD, "inner": [{"count": 3, "when": None}]}, "$.inner[0].count: must be even"),
    ({**GOOD, "inner": [{"count": 2, "when": "soon"}]}, "$.inner[0].when: Invalid isoformat string"),
    ({**GOOD, "inner": [{"count": True, "when": None}]}, "$.inner[0].count: must be an integer"),
    ({**GOOD, "extra": 1}, "$.extra: unknown field"),
    ({k: v for k, v in GOOD.items() if k != "name"}, "$.name: missing"),
    ([], "$: must be an object, got a list"),
])
def test_a_bad_value_is_refused_naming_its_path(data: object, message: str) -> None:
    with pytest.raises(DecodeError) as info:
        decode_object(Outer, data, "$", {datetime: _utc})
    assert str(info.value).startswith(message)


@dataclass
class Defaulted:
    name: str
    plain: int = 0


def test_a_field_with_a_default_is_still_required_in_the_json() -> None:
    # A report is read with the fields it was written with: a default serves the writer, not the reader.
    assert decode_object(Defaulted, {"name": "x", "plain": 1}, "$") == Defaulted("x", 1)
    with pytest.raises(DecodeError, match=r"^\$\.plain: missing"):
        decode_object(Defaulted, {"name": "x"}, "$")


def test_none_is_accepted_only_where_the_annotation_allows_it() -> None:
    assert decode(None, int | None, "$") is None
    with pytest.raises(DecodeError, match=r"^\$: must be an integer, got nothing \(null\)"):
        decode(None, int, "$")


@pytest.mark.parametrize("text", ["NaN", "[Infinity]", '{"a": -Infinity}'])
def test_loads_refuses_the_constants_json_does_not_have(text: str) -> None:
    with pytest.raises(ValueError, match="is not allowed"):
        jsondecode.loads(text)


def test_attack_json_nested_past_the_recursion_limit_is_a_value_error_not_a_crash() -> None:
    with pytest.raises(ValueError, match="nested too deeply"):
        jsondecode.loads("[" * 100000 + "]" * 100000)
