"""A small declarative schema for wavegit's YAML files (the tracker and the config).

Fields are described as data (``Field``), declared once on the records that hold their values (``key``,
``record_schema``), with the checks a value must pass; ``refusal`` says why a field refuses a typed value.
Reading a composed document against a schema, with every problem located, is :mod:`wavegit.core.yamlread`:
a warm run reads its values from the parse cache and needs only this module (for the records' keys).
"""

import math
from collections.abc import Callable, Mapping
from types import UnionType
from typing import (
    Annotated,
    ForwardRef,
    Literal,
    NamedTuple,
    Union,
    get_args,
    get_origin,
    get_type_hints,
)

Kind = Literal["str", "text", "int", "float", "bool", "str_list", "map", "records"]
"""``text`` is a string that YAML may also resolve as a timestamp (kept verbatim); ``records`` is a mapping of
names to mappings of one ``nested`` schema (config ``workers: {NAME: {...}}``)."""

Value = Union[str, int, float, bool, tuple[str, ...], dict[str, "Value"], None]  # noqa: UP007 (recursive)
Check = Callable[[Value], "str | None"]
"""Returns a message when the (already typed) value is not acceptable."""


# Records are NamedTuples and a slotted class, annotations not postponed: see wavegit.core.git.GitResult.
class Schema:
    """The fields of one mapping (declared before ``Field``, whose ``nested`` names it: a string annotation
    there would make typing compile it at import)."""

    __slots__ = ("defaults", "fields", "index", "names", "what")

    def __init__(self, what: str, fields: "tuple[Field, ...]",
                 defaults: Mapping[str, object] | None = None) -> None:
        self.what = what
        """Names the mapping in messages ("item", "config")."""
        self.fields = fields
        self.names = tuple(f.name for f in fields)
        self.index = {f.name: f for f in fields}
        self.defaults: Mapping[str, object] = defaults or {}
        """The record's field defaults (a field without one is required)."""

    def field(self, name: str) -> "Field | None":
        return self.index.get(name)


class Field(NamedTuple):
    name: str
    kind: Kind
    required: bool = False
    choices: tuple[str, ...] = ()
    check: Check | None = None
    hint: str | None = None
    nested: Schema | None = None
    element_map: Callable[[str], str] | None = None
    """For ``str_list``: converts each element (e.g. normalises a path); a ValueError is a problem there."""
    doc: str = ""
    """One line saying what the key is for (commented into generated files, in the README's tables)."""
    shorthand: str | None = None
    """For ``map``: the nested field a plain scalar sets (``sandbox: none`` = ``sandbox: {mode: none}``)."""
    meant: Mapping[str, str] | None = None
    """For ``choices``: words people write for a choice (``doing`` -> ``in_progress``), which spelling
    distance would get wrong (``done``)."""


def key(doc: str, check: Check | None = None, *, choices: tuple[str, ...] = (), hint: str | None = None,
        required: bool = False, element_map: Callable[[str], str] | None = None, text: bool = False,
        shorthand: str | None = None, meant: Mapping[str, str] | None = None) -> Field:
    """A record field's YAML key, declared on the field itself: ``name: Annotated[type, key(...)] = default``.

    The record gives the key's name, kind (from its type) and default, which ``record_schema`` fills in, so
    each key is declared once. ``text``: a string that YAML may also resolve as a timestamp, kept verbatim.
    """
    return Field("", "text" if text else "str", required=required, choices=choices, check=check, hint=hint,
                 element_map=element_map, doc=doc, shorthand=shorthand, meant=meant)


def record_schema(what: str, record: type) -> Schema:
    """The schema of the fields of ``record`` annotated with a ``key``, in declaration order; a field whose
    type is a NamedTuple is a nested mapping, one whose type is a tuple of NamedTuples a mapping of names to
    such mappings (``records``: the record's first field, not annotated with a key, holds the name)."""
    fields: list[Field] = []
    for name, annotation in _annotations(record).items():
        if get_origin(annotation) is not Annotated:
            continue  # not read from YAML (e.g. an item's position in the file)
        base, declared = get_args(annotation)[:2]
        if declared.kind == "text":
            fields.append(declared._replace(name=name))
        elif _is_record(base):
            fields.append(declared._replace(name=name, kind="map",
                                            nested=record_schema(name, base)))
        elif get_origin(base) is tuple and _is_record(get_args(base)[0]):
            fields.append(declared._replace(name=name, kind="records",
                                            nested=record_schema(name, get_args(base)[0])))
        else:
            fields.append(declared._replace(name=name, kind=KIND_OF_TYPE[_without_none(base)]))
    return Schema(what, tuple(fields), getattr(record, "_field_defaults", None))


def _is_record(annotation: object) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, tuple) and hasattr(annotation, "_fields")


def _annotations(record: type) -> Mapping[str, object]:
    found: dict[str, object] = record.__annotations__
    if any(isinstance(annotation, (str, ForwardRef)) for annotation in found.values()):
        # Postponed: evaluate them (records on the hot paths do not postpone theirs, so they skip this).
        return get_type_hints(record, include_extras=True)
    return found


def _without_none(annotation: object) -> object:
    """``X`` for ``X | None``, a NewType's type for it (``WaveId``: str); any other annotation as it is."""
    if get_origin(annotation) in (Union, UnionType):
        (annotation,) = [arg for arg in get_args(annotation) if arg is not type(None)]
    return getattr(annotation, "__supertype__", annotation)


KIND_OF_TYPE: dict[object, Kind] = {str: "str", int: "int", float: "float", bool: "bool",
                                     tuple[str, ...]: "str_list"}


def at_least(low: float) -> Check:
    def check(value: Value) -> str | None:
        return f"must be at least {low}" if isinstance(value, (int, float)) and value < low else None

    return check


def positive(value: Value) -> str | None:
    return "must be greater than 0" if isinstance(value, (int, float)) and value <= 0 else None


MAX_SECONDS = 1e9
"""The longest time a key may give (some 31 years): far longer, Python's waits (``poll``, a thread's
``wait``) and datetimes overflow, so a bigger value crashed whatever waited on it."""


def seconds(lowest: Check = positive) -> Check:
    """A duration in seconds: ``lowest``'s bound (greater than 0 unless given), and at most
    :data:`MAX_SECONDS`."""
    def check(value: Value) -> str | None:
        if isinstance(value, (int, float)) and value > MAX_SECONDS:
            return f"must be at most {MAX_SECONDS:.0f} seconds"
        return lowest(value)

    return check


def not_blank(value: Value) -> str | None:
    return "must not be empty" if isinstance(value, str) and not value.strip() else None


def command(*, required: bool) -> Check:
    """A command line, split into words as wavegit will split it (``shlex``): a stray quote fails here."""
    def check(value: Value) -> str | None:
        if not isinstance(value, str):
            return None
        if "\0" in value:
            return "contains a NUL byte, which no program can be given"
        # Only a quote or a backslash can fail a split; a tracker of 10,000 plain test commands is spared
        # shlex (0.3 s).
        if "'" in value or '"' in value or "\\" in value:
            import shlex

            try:
                shlex.split(value)
            except ValueError as exc:
                return f"cannot be split into words: {exc}"
        return not_blank(value) if required else None

    return check


def nearest(word: str, candidates: tuple[str, ...]) -> str | None:
    """The candidate ``word`` was probably meant to be (case-insensitive match first), or None."""
    import difflib

    folded = [c for c in candidates if c.lower() == word.lower()]
    if folded:
        return folded[0]
    found = difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    return found[0] if found else None


class Refused(ValueError):
    """A value its field does not accept: the message follows the key's name (``must be a string, got an
    integer``); ``hint`` says how to fix it."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


def refusal(value: Value, spec: Field) -> Refused | None:
    """Why ``spec`` refuses an already typed ``value`` (not one of its choices, or its check's complaint)."""
    if spec.choices and value not in spec.choices:
        guess = (spec.meant or {}).get(str(value).strip().lower()) or nearest(str(value), spec.choices)
        hint = f"did you mean '{guess}'?" if guess else f"e.g. '{spec.choices[0]}'"
        return Refused(f"must be one of {', '.join(spec.choices)}, got '{value}'", hint)
    complaint = spec.check(value) if spec.check is not None and spec.kind != "records" else None
    return Refused(complaint, spec.hint) if complaint else None


def finite(number: int | float) -> float | None:
    """``number`` as a float; None when it has none that is finite (NaN, an infinity, an integer of hundreds
    of digits, which ``float`` and ``math.isfinite`` refuse with OverflowError)."""
    try:
        value = float(number)
    except OverflowError:
        return None
    return value if math.isfinite(value) else None


EXPECTED: dict[str, str] = {"str": "a string", "text": "a string", "int": "an integer", "float": "a number",
                             "bool": "true or false", "str_list": "a list of strings", "map": "a mapping",
                             "records": "a mapping of names to mappings"}
