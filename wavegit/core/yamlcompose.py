"""Composing YAML safely: the document's node tree (positions kept, nothing constructed), with YAML errors,
recursive aliases and alias bombs turned into located ``ValidationError``s.

Apart from :mod:`wavegit.core.schema`, which every hot path imports when warm: only a parse (a cache miss)
needs this module and PyYAML.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, cast

from wavegit.core.errors import Problem, ValidationError

if TYPE_CHECKING:
    from wavegit.core.schema import Node

ALIAS_EXPANSION_LIMIT = 10_000
"""Nodes that aliases may add beyond the document's own; more is treated as an alias bomb."""


def compose(text: str, path: str) -> Node | None:
    """The document's root node (None for an empty document); YAML errors become ValidationError."""
    import yaml


    loader_class = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loader = loader_class(text)
    try:
        root = cast("Node | None", loader.get_single_node())
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        message = " ".join(part for part in (exc.context, exc.problem) if part) or "invalid YAML"
        raise ValidationError([Problem(path, line, col, f"not valid YAML: {message}", None,
                                       _YAML_HINT)]) from None
    except yaml.YAMLError as exc:
        # Reader errors (e.g. control characters) carry a position but no mark object.
        line, col = _reader_position(text, getattr(exc, "position", 0))
        reason = getattr(exc, "reason", None) or str(exc).splitlines()[0]
        raise ValidationError([Problem(path, line, col, f"not valid YAML: {reason}", None,
                                       _YAML_HINT)]) from None
    finally:
        loader.dispose()
    if root is not None and "&" in text:
        _check_aliases(root, path)
    return root


_YAML_HINT = "fix the YAML at this position (indent with spaces, close quotes and brackets)"


def _reader_position(text: str, position: int) -> tuple[int, int]:
    before = text[:position]
    return before.count("\n") + 1, position - (before.rfind("\n") + 1) + 1


def _check_aliases(root: Node, path: str) -> None:
    """Refuse recursive aliases and alias bombs (aliases share nodes, so expansion is computed, not done)."""

    sizes: dict[int, int] = {}
    on_stack: set[int] = set()
    extra = 0

    def size(node: Node) -> int:
        nonlocal extra
        key = id(node)
        known = sizes.get(key)
        if known is not None:
            extra += known
            if extra > ALIAS_EXPANSION_LIMIT:
                raise _bomb(node, path, "aliases expand to too many nodes (alias bomb?)")
            return known
        if key in on_stack:
            raise _bomb(node, path, "recursive alias: a node contains an alias to itself")
        on_stack.add(key)
        total = 1 + sum(size(child) for child in _children(node))
        on_stack.discard(key)
        sizes[key] = total
        return total

    try:
        size(root)
    except RecursionError:
        raise ValidationError([Problem(path, 1, 1, "YAML nesting is too deep")]) from None


def _bomb(node: Node, path: str, message: str) -> Exception:

    mark = node.start_mark
    hint = f"anchors/aliases may add at most {ALIAS_EXPANSION_LIMIT} nodes; write the values out"
    return ValidationError([Problem(path, mark.line + 1, mark.column + 1, message, None, hint)])


def _children(node: Node) -> Iterator[Node]:
    if node.id == "sequence":
        yield from node.value
    elif node.id == "mapping":
        for key, value in node.value:
            yield key
            yield value
