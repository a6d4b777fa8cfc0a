"""The README's tables of keys, as the schema declarations say they must read."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping

from tests.helpers.repos import REPO_ROOT
from wavegit.core.schema import Schema

README = REPO_ROOT / "README.md"
HEADER = ("| key | default | meaning |", "|---|---|---|")


def key_table(schema: Schema, defaults: Mapping[str, object]) -> str:
    """The Markdown table of ``schema``'s keys: nested ones as ``section.key``; a key without a default is
    required."""
    return "\n".join((*HEADER, *_rows(schema, defaults, ""))) + "\n"


def _rows(schema: Schema, defaults: Mapping[str, object], prefix: str) -> Iterator[str]:
    for spec in schema.fields:
        default = defaults.get(spec.name)
        if spec.kind == "records" and spec.nested is not None:
            # A mapping of names to records: its keys as `workers.NAME.preset`, with the record's defaults.
            yield f"| `{prefix}{spec.name}` | `{{}}` | {spec.doc} |"
            yield from _rows(spec.nested, spec.nested.defaults, f"{prefix}{spec.name}.NAME.")
            continue
        if spec.nested is not None:
            yield from _rows(spec.nested, default._asdict(), f"{prefix}{spec.name}.")  # type: ignore[union-attr]
            continue
        shown = "required" if spec.name not in defaults else _render(default)
        yield f"| `{prefix}{spec.name}` | {shown} | {spec.doc} |"


def _render(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (int, float)):
        return str(value)
    if value is None:
        return "none"
    if isinstance(value, tuple):
        return f"`{json.dumps(list(value))}`" if value else "`[]`"
    return f"`{value}`" if value else '`""`'


def readme_tables() -> list[str]:
    """Every key table of the README, as text."""
    tables: list[str] = []
    lines = README.read_text(encoding="utf-8").splitlines()
    for start, line in enumerate(lines):
        if line == HEADER[0]:
            end = start
            while end < len(lines) and lines[end].startswith("|"):
                end += 1
            tables.append("\n".join(lines[start:end]) + "\n")
    return tables
