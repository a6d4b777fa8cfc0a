"""Composing YAML safely: the document's node tree (positions kept, nothing constructed), with YAML errors,
recursive aliases and alias bombs turned into located ``ValidationError``s.

Only a parse (a cache miss) needs this module and PyYAML.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

from wavegit.core.errors import Problem, ValidationError
from wavegit.core.yamlread import position

if TYPE_CHECKING:
    from wavegit.core.yamlread import Mark, Node

ALIAS_EXPANSION_LIMIT = 10_000
"""Nodes that aliases may add beyond the document's own; more is treated as an alias bomb."""


def compose(text: str, path: str, *, aliases_in_place: bool = False) -> Node | None:
    """The document's root node (None for an empty document); YAML errors become ValidationError.

    ``aliases_in_place``: each ``*alias`` is a node of its own (:class:`Alias`), at the alias's place in the
    text, instead of the anchored node itself, whose marks are the anchor's: an edit made from the marks
    (``wavegit.core.yamledit``) must land where the alias is written, not at its anchor (another item)."""
    import yaml

    loader = _alias_keeping_loader()(text) if aliases_in_place else \
        getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        root = cast("Node | None", loader.get_single_node())
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = position(text, mark) if mark else (1, 1)
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
        _check_aliases(root, path, text)
    return root


class Alias:
    """An alias as written: the anchored node's kind, tag and value, at the alias's own marks. A collection
    is seen as one token (``flow_style``): its children are the anchor's, written elsewhere."""

    style = None

    def __init__(self, target: Any, start_mark: Mark, end_mark: Mark) -> None:
        self.id, self.tag, self.value = target.id, target.tag, target.value
        self.flow_style = True
        self.start_mark, self.end_mark = start_mark, end_mark


def _alias_keeping_loader() -> type[Any]:
    """The safe loader, composing in Python (over the C parser's events when there is one), each alias an
    :class:`Alias`: the C composer would give the anchored node."""
    import yaml
    from yaml.composer import Composer

    class KeepAliases(Composer):
        def compose_node(self: Any, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent) and self.peek_event().anchor in self.anchors:
                event = self.get_event()
                return Alias(self.anchors[event.anchor], event.start_mark, event.end_mark)
            return super().compose_node(parent, index)  # an unknown alias: the composer's error

    base: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    def init(self: Any, text: str) -> None:
        base.__init__(self, text)
        Composer.__init__(self)

    # Composer before the C loader: its Python get_single_node, which calls compose_node, comes first.
    return type("AliasKeepingLoader", (KeepAliases, base), {"__init__": init})


_YAML_HINT = "fix the YAML at this position (indent with spaces, close quotes and brackets)"


def _reader_position(text: str, position: int) -> tuple[int, int]:
    before = text[:position]
    return before.count("\n") + 1, position - (before.rfind("\n") + 1) + 1


def _check_aliases(root: Node, path: str, text: str) -> None:
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
                raise _bomb(node, path, text, "aliases expand to too many nodes (alias bomb?)")
            return known
        if key in on_stack:
            raise _bomb(node, path, text, "recursive alias: a node contains an alias to itself")
        on_stack.add(key)
        total = 1 + sum(size(child) for child in _children(node))
        on_stack.discard(key)
        sizes[key] = total
        return total

    try:
        size(root)
    except RecursionError:
        raise ValidationError([Problem(path, 1, 1, "YAML nesting is too deep")]) from None


def _bomb(node: Node, path: str, text: str, message: str) -> Exception:
    hint = f"anchors/aliases may add at most {ALIAS_EXPANSION_LIMIT} nodes; write the values out"
    return ValidationError([Problem(path, *position(text, node.start_mark), message, None, hint)])


def _children(node: Node) -> Iterator[Node]:
    if node.id == "sequence":
        yield from node.value
    elif node.id == "mapping":
        for key, value in node.value:
            yield key
            yield value
