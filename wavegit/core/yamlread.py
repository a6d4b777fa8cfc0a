"""Reading a composed YAML document (:mod:`wavegit.core.yamlcompose`): its nodes' shapes and positions, and
their typed values against a :class:`wavegit.core.schema.Schema`, every problem reported with its
``path:line:col``. Documents are *composed* (not constructed) so that every node keeps its position; the walk
over the nodes is ours, which is also what makes it fast.

Only a parse (a cache miss) needs this module; PyYAML is imported lazily, only for the rare scalar that
Python's own ``int``/``float`` do not read.
"""

import bisect
import functools
import sys
from collections.abc import Iterator
from typing import Any, Protocol

from wavegit.core.errors import Problem
from wavegit.core.schema import EXPECTED, Field, Schema, Value, finite, nearest, refusal


class Mark(Protocol):
    line: int
    column: int
    index: int


class Node(Protocol):
    """The shape of PyYAML's composed nodes (its stubs do not declare ``id`` and ``flow_style``)."""

    id: str
    """"scalar", "sequence" or "mapping"."""
    tag: str
    value: Any
    """str for a scalar, a list of nodes for a sequence, a list of (key, value) node pairs for a mapping."""
    start_mark: Mark
    end_mark: Mark
    flow_style: bool | None

TAG = "tag:yaml.org,2002:"
STR, INT, FLOAT, BOOL = TAG + "str", TAG + "int", TAG + "float", TAG + "bool"
NULL, TIMESTAMP = TAG + "null", TAG + "timestamp"


_YAML_ONLY_BREAKS = ("\x85", "\u2028", "\u2029")


@functools.lru_cache(maxsize=4)
def _line_starts(text: str) -> tuple[list[int], list[int]] | None:
    """Where YAML's lines and the file's lines start in ``text``; None when the two agree (no U+0085, U+2028
    or U+2029). Found once per text, not per mark: scanning a 10,000-item tracker for each of its ~40,000
    marks took a cold load 0.76 s, and with such a break in it, far longer (a str caches its hash, so
    looking the same text up again is cheap)."""
    if not any(char in text for char in _YAML_ONLY_BREAKS):
        return None
    import re  # only for such a text

    yaml_starts = [0, *(found.end() for found in re.finditer("\r\n|[\r\n\x85\u2028\u2029]", text))]
    return yaml_starts, [found.end() for found in re.finditer("\n", text)]


def position(text: str, mark: Mark) -> tuple[int, int]:
    """The 1-based line and column of ``mark`` in ``text`` as an editor, ``grep -n`` or ``git blame`` count
    them: lines end at "\n". YAML also ends one at U+0085, U+2028 and U+2029, which a quoted value may hold
    as they are, so its marks' lines ran ahead of the file's after one."""
    starts = _line_starts(text)
    if starts is None:
        return mark.line + 1, mark.column + 1
    yaml_starts, line_starts = starts
    # Where YAML's line ``mark.line`` starts, then the mark's offset: a column never counts a byte order mark.
    bom = text.startswith("\ufeff")
    offset = yaml_starts[min(mark.line, len(yaml_starts) - 1)] + mark.column + (bom and mark.line == 0)
    line = bisect.bisect_right(line_starts, offset)
    start = line_starts[line - 1] if line else 0
    return line + 1, offset - start + 1 - (bom and start == 0)


class Located:
    """Where problems go: the file's display path plus the list they are collected in; ``text``, the file's
    text, places them (``position``)."""

    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self.text = text
        self.problems: list[Problem] = []

    def at(self, node: Node, message: str, item_id: str | None = None, hint: str | None = None) -> Problem:
        problem = Problem(self.path, *position(self.text, node.start_mark), message, item_id, hint)
        self.problems.append(problem)
        return problem


def is_mapping(node: Node) -> bool:
    return node.id == "mapping"


def is_sequence(node: Node) -> bool:
    return node.id == "sequence"


def key_text(key: Node) -> str | None:
    """A mapping key as text, or None when it is not a plain string key."""
    if key.id == "scalar" and key.tag == STR:
        return str(key.value)
    return None


def value_node(node: Node, key: str) -> Node | None:
    """The value node of ``key`` in the mapping ``node`` (its first occurrence), or None."""
    return next((value for key_node, value in node.value if key_text(key_node) == key), None)


def describe(node: Node) -> str:
    """What a node is, for 'expected X, got Y' messages."""
    if node.id == "mapping":
        return "a mapping"
    if node.id == "sequence":
        return "a list"
    name = node.tag[len(TAG):] if node.tag.startswith(TAG) else node.tag
    return {"str": "a string", "int": "an integer", "float": "a number", "bool": "a boolean",
            "null": "nothing (null)", "timestamp": "a timestamp"}.get(name, f"a value tagged {name}")


def iter_pairs(node: Node, where: Located,
               item_id: str | None = None) -> Iterator[tuple[str, Node, Node]]:
    """The (key, key node, value node) pairs of a mapping; non-string and duplicate keys are problems."""
    seen: set[str] = set()
    for key_node, value_node in node.value:
        key = key_text(key_node)
        if key is None:
            where.at(key_node, f"keys must be strings, got {describe(key_node)}", item_id,
                     "put the key in quotes")
            continue
        if key in seen:
            where.at(key_node, f"duplicate key '{key}'", item_id, "each key may appear once per mapping")
            continue
        seen.add(key)
        yield key, key_node, value_node


def unknown_key_hint(key: str, known: tuple[str, ...]) -> str:
    if key == "<<":
        return "merge keys (<<) are not supported; write the keys out"
    guess = nearest(key, known)
    return f"did you mean '{guess}'?" if guess else "known keys: " + ", ".join(known)


def read_mapping(node: Node, schema: Schema, where: Located,
                 item_id: str | None = None) -> dict[str, Value]:
    """The typed values of the known keys in ``node``; every problem is added to ``where``."""
    index = schema.index
    values: dict[str, Value] = {}
    for key, key_node, value_node in iter_pairs(node, where, item_id):
        spec = index.get(key)
        if spec is None:
            where.at(key_node, f"unknown key '{key}' in {schema.what}", item_id,
                     unknown_key_hint(key, schema.names))
            continue
        value = read_value(value_node, spec, where, item_id)
        if not isinstance(value, _Invalid):
            values[key] = value
    for spec in schema.fields:
        if spec.required and values.get(spec.name) is None and not _has_key(node, spec.name):
            where.at(node, f"missing required key '{spec.name}'", item_id, spec.hint)
    return values


def _has_key(node: Node, name: str) -> bool:
    return any(key_text(k) == name for k, _ in node.value)


class _Invalid:
    """Marks a value that produced a problem (None is a legitimate value)."""


_INVALID = _Invalid()


def read_value(node: Node, spec: Field, where: Located, item_id: str | None) -> Value | _Invalid:
    """One field's value, typed and checked; ``_INVALID`` after recording a problem."""
    if node.id == "scalar" and node.tag == NULL:
        if spec.required:
            where.at(node, f"'{spec.name}' must not be empty", item_id, spec.hint)
            return _INVALID
        return None
    if node.tag == STR and (spec.kind == "str" or spec.kind == "text") and node.id == "scalar":
        value: Value = str(node.value)  # most values of a tracker: _typed's answer, inline
    else:
        typed = _typed(node, spec, where, item_id)
        if isinstance(typed, _Invalid):
            return typed
        value = typed
    if not spec.choices and spec.check is None:
        return value
    refused = refusal(value, spec)
    if refused is not None:
        where.at(node, f"'{spec.name}' {refused}", item_id, refused.hint)
        return _INVALID
    return value


def _typed(node: Node, spec: Field, where: Located, item_id: str | None) -> Value | _Invalid:
    kind = spec.kind
    if kind == "str_list":
        return _str_list(node, spec, where, item_id)
    if kind == "map":
        if node.id == "scalar" and spec.nested is not None and spec.shorthand is not None:
            value = read_value(node, spec.nested.index[spec.shorthand], where, item_id)
            return value if isinstance(value, _Invalid) else {spec.shorthand: value}
        if node.id != "mapping" or spec.nested is None:
            return _wrong(node, spec, "a mapping", where, item_id)
        return read_mapping(node, spec.nested, where, item_id)
    if kind == "records":
        return _records(node, spec, where, item_id)
    if node.id != "scalar":
        return _wrong(node, spec, EXPECTED[kind], where, item_id)
    tag = node.tag
    if kind == "str" or kind == "text":
        if tag == STR or (kind == "text" and tag == TIMESTAMP):
            return str(node.value)
        return _wrong(node, spec, "a string", where, item_id, _KIND_HINTS["str"])
    scalar = scalar_value(node)
    if tag == INT and isinstance(scalar, str):
        digits = sys.get_int_max_str_digits()
        return _wrong(node, spec, f"a number of at most {digits} digits", where, item_id)
    if kind == "int" and isinstance(scalar, int) and not isinstance(scalar, bool):
        return scalar
    if kind == "float" and isinstance(scalar, (int, float)) and not isinstance(scalar, bool):
        number = finite(scalar)
        if number is None:
            return _wrong(node, spec, "a finite number", where, item_id)
        return number
    if kind == "bool" and isinstance(scalar, bool):
        return scalar
    return _wrong(node, spec, EXPECTED[kind], where, item_id)


def _records(node: Node, spec: Field, where: Located, item_id: str | None) -> Value | _Invalid:
    """A mapping of names to mappings of ``spec.nested``; ``spec.check`` judges each one, located at it."""
    if node.id != "mapping" or spec.nested is None:
        return _wrong(node, spec, "a mapping of names to mappings", where, item_id)
    out: dict[str, Value] = {}
    for name, _, value_node in iter_pairs(node, where, item_id):
        if value_node.id != "mapping":
            where.at(value_node, f"'{spec.name}.{name}' must be a mapping, got {describe(value_node)}",
                     item_id, spec.hint or _KIND_HINTS["map"])
            continue
        before = len(where.problems)
        record = read_mapping(value_node, spec.nested, where, item_id)
        complaint = spec.check(record) if spec.check is not None and len(where.problems) == before else None
        if complaint:
            where.at(value_node, f"'{spec.name}.{name}' {complaint}", item_id, spec.hint)
        elif len(where.problems) == before:
            out[name] = record
    return out


_KIND_HINTS: dict[str, str] = {"str": "put it in quotes", "text": "put it in quotes",
                               "int": "write a whole number, e.g. 3", "float": "write a number, e.g. 0.5",
                               "bool": "write true or false", "str_list": "write a list: [a, b]",
                               "map": "write 'key: value' lines indented below it",
                               "records": "write 'NAME:' lines, each with 'key: value' lines below it"}


def _wrong(node: Node, spec: Field, expected: str, where: Located, item_id: str | None,
           hint: str | None = None) -> _Invalid:
    where.at(node, f"'{spec.name}' must be {expected}, got {describe(node)}", item_id,
             hint or spec.hint or _KIND_HINTS[spec.kind])
    return _INVALID


def _str_list(node: Node, spec: Field, where: Located, item_id: str | None) -> Value | _Invalid:
    if node.id != "sequence":
        hint = f"write it as a list: {spec.name}: [{node.value}]" if node.id == "scalar" else spec.hint
        return _wrong(node, spec, "a list of strings", where, item_id, hint)
    out: list[str] = []
    ok = True
    for element in node.value:
        if element.id != "scalar" or element.tag != STR:
            _wrong(element, spec, "a list of strings", where, item_id, "put the element in quotes")
            ok = False
            continue
        text = str(element.value)
        if spec.element_map is not None:
            try:
                text = spec.element_map(text)
            except ValueError as exc:
                where.at(element, f"'{spec.name}': {exc}", item_id)
                ok = False
                continue
        out.append(text)
    # A list with some bad elements keeps its good ones (the problems are recorded all the same): a
    # non-strict reader such as the pre-push hook must still protect the valid paths an item in flight owns.
    return tuple(out) if ok or out else _INVALID


def scalar_value(node: Node) -> str | int | float | bool | None:
    """A scalar node's value as ``yaml.safe_load`` would construct it (timestamps stay text)."""
    tag, raw = node.tag, node.value
    if tag in (STR, TIMESTAMP):
        return str(raw)
    if tag == INT:
        try:
            return int(raw)
        except ValueError:
            pass
        try:
            return int(_constructor().construct_yaml_int(node))
        except ValueError:
            # More digits than Python converts (sys.get_int_max_str_digits): checked as the text it is.
            return str(raw)
    if tag == FLOAT:
        try:
            return float(raw)
        except ValueError:
            return float(_constructor().construct_yaml_float(node))
    if tag == BOOL:
        return str(raw).lower() in ("yes", "true", "on")
    if tag == NULL:
        return None
    return str(raw)


def _constructor() -> Any:
    import yaml

    return yaml.SafeLoader("")
