"""Typed decoding of untrusted JSON: a value checked against a type annotation, a dataclass field by field.

The scalars (and an imported backlog's values, against the tracker's own fields) are typed and judged by
:func:`plain_value` with :mod:`wavegit.core.schema`'s kinds, choices, checks and words, so a wrong value reads
the same in a report, an import, the tracker or the config. Reports and imported backlogs are read by one
strict JSON reader (:data:`DECODER`): NaN and Infinity (which Python writes, JSON has not) and a key named
twice in one object (JSON keeps the last, a reader of the text may see the first) are refused.

Every complaint about a report is a ``DecodeError`` whose message starts with the JSON path
(``$.items[0].id``), so a reader of a PR comment or a commit message can say exactly what is wrong and where.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from wavegit.core import schema

T = TypeVar("T")

FromText = Mapping[object, Callable[[str], object]]
"""Types written as a JSON string, with their parsers (e.g. ``datetime``); a ValueError a parser raises
becomes a DecodeError naming the path."""

CHECK = "check"
"""Dataclass field metadata key: a :data:`wavegit.core.schema.Check`, as a tracker or config key has, which
judges a decoded value that is not None."""


class DecodeError(ValueError):
    """JSON that does not fit the expected type: the message starts with the JSON path."""


class DuplicateKey(ValueError):
    """An object names ``key`` twice."""

    def __init__(self, key: str) -> None:
        super().__init__(f"the key {key!r} appears more than once")
        self.key = key


def reject_constant(name: str) -> float:
    """``json.loads``' ``parse_constant``: NaN and Infinity are not JSON, though Python writes them."""
    raise ValueError(f"{name} is not allowed")


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    found: dict[str, object] = {}
    for key, value in pairs:
        if key in found:
            raise DuplicateKey(key)
        found[key] = value
    return found


DECODER = json.JSONDecoder(object_pairs_hook=_unique_keys, parse_constant=reject_constant)
"""The strict reader: its ``decode`` and ``raw_decode`` raise :class:`DuplicateKey` or a ValueError for NaN
and Infinity besides ``json``'s own errors, and RecursionError for nesting past the interpreter's limit."""


def loads(text: str) -> object:
    """``text`` read by :data:`DECODER`; a ValueError (a subclass) when it is not strict JSON."""
    try:
        return DECODER.decode(text)
    except RecursionError:
        # Nested past the interpreter's limit: what a hostile writer sends, never a record of ours.
        raise ValueError("nested too deeply") from None


_PLAIN = {hint: schema.Field("", kind) for hint, kind in schema.KIND_OF_TYPE.items()}
"""The field of each type a report holds bare: its kind, no choices, no check (nothing for ``refusal``)."""


def decode(value: object, hint: object, path: str, from_text: FromText | None = None) -> Any:
    """``value`` checked against the annotation ``hint``: str, int, float (whole numbers become floats), bool,
    ``X | None``, ``list[X]``, ``dict[str, X]``, a dataclass (``decode_object``) or a type of ``from_text``.
    Any: the caller's annotation is the type."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        (inner,) = [option for option in args if option is not type(None)]
        return decode(value, inner, path, from_text)
    if origin is list:
        if not isinstance(value, list):
            raise _expected(path, "a list", value)
        return [decode(element, args[0], f"{path}[{i}]", from_text) for i, element in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise _expected(path, "an object", value)
        # JSON object keys are always strings.
        return {key: decode(element, args[1], f"{path}.{key}", from_text) for key, element in value.items()}
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return decode_object(hint, value, path, from_text)
    if from_text and hint in from_text:
        text = decode(value, str, path)
        try:
            return from_text[hint](text)
        except ValueError as exc:
            raise DecodeError(f"{path}: {exc}") from None
    spec = _PLAIN.get(getattr(hint, "__supertype__", hint))  # WaveId: a str
    if spec is None:
        raise TypeError(f"{path}: {hint} is not a type reports hold")
    try:
        return _typed(value, spec)
    except schema.Refused as exc:
        raise DecodeError(f"{path}: {exc}") from None


def decode_object(cls: type[T], data: object, path: str, from_text: FromText | None = None) -> T:
    """The dataclass ``cls`` from a JSON object holding exactly its fields (none missing, none unknown), each
    decoded against its annotation and checked by its ``CHECK`` metadata."""
    if not isinstance(data, dict):
        raise _expected(path, "an object", data)
    hints = typing.get_type_hints(cls)
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    unknown = sorted(set(data) - {spec.name for spec in fields})
    if unknown:
        raise DecodeError(f"{path}.{unknown[0]}: unknown field")
    values: dict[str, object] = {}
    for spec in fields:
        where = f"{path}.{spec.name}"
        if spec.name not in data:
            raise DecodeError(f"{where}: missing")
        value = decode(data[spec.name], hints[spec.name], where, from_text)
        check = spec.metadata.get(CHECK)
        complaint = check(value) if check is not None and value is not None else None
        if complaint:
            raise DecodeError(f"{where}: {complaint}")
        values[spec.name] = value
    return cls(**values)


def plain_value(value: object, spec: schema.Field) -> schema.Value:
    """``value`` as JSON or a CSV cell gives it, typed and checked against ``spec`` as a YAML value is (a
    whole number is a number; no string stands for another type); ``schema.Refused`` when it does not fit."""
    typed = _typed(value, spec)
    refused = schema.refusal(typed, spec)
    if refused is not None:
        raise refused
    return typed


def _typed(value: object, spec: schema.Field) -> schema.Value:
    kind = spec.kind
    if kind in ("str", "text") and isinstance(value, str):
        return value
    if kind == "bool" and isinstance(value, bool):
        return value
    if not isinstance(value, bool):
        if kind == "int" and isinstance(value, int):
            return value
        number = schema.finite(value) if kind == "float" and isinstance(value, (int, float)) else None
        if number is not None:
            return number
    if kind == "str_list" and isinstance(value, list) and all(isinstance(e, str) for e in value):
        try:
            return tuple(map(spec.element_map, value)) if spec.element_map else tuple(value)
        except ValueError as exc:
            raise schema.Refused(str(exc), spec.hint) from None
    raise schema.Refused(f"must be {schema.EXPECTED[kind]}, got {describe(value)}", spec.hint)


def describe(value: object) -> str:
    """What a JSON value is, in the words of :func:`wavegit.core.yamlread.describe`."""
    if isinstance(value, bool):
        return "a boolean"
    return {str: "a string", int: "an integer", float: "a number", list: "a list", dict: "an object",
            type(None): "nothing (null)"}.get(type(value), type(value).__name__)


def _expected(path: str, expected: str, value: object) -> DecodeError:
    return DecodeError(f"{path}: must be {expected}, got {describe(value)}")
