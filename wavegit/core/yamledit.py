"""Minimal-diff edits of the tracker's YAML text: change, add or remove one item's keys; append an item.

Positions come from the composed nodes' marks, so only the lines of the edited keys change; comments, key
order, quoting and blank lines elsewhere are left exactly as they were. Items must be in block style (the
format wavegit writes); anything else is refused with a clear error rather than rewritten.
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate, count
from operator import add

from wavegit.core import yamlcompose, yamlread
from wavegit.core.errors import UsageError, ValidationError
from wavegit.core.undecodable import escape
from wavegit.core.yamlread import Mark, Node

_BREAK = re.compile("\r\n|[\r\n\x85\u2028\u2029]")
_LINE_BREAKS = "\n\r\x85\u2028\u2029"
_WIDTH = 1 << 30


@dataclass(frozen=True)
class _Edit:
    start: int
    end: int
    text: str


class _Text:
    """The document text with its line starts (YAML's line breaks, as the marks count them)."""

    def __init__(self, text: str) -> None:
        self.text = text
        if "\r" in text or any(c in text for c in _LINE_BREAKS[2:]):
            self.starts = [0, *(m.end() for m in _BREAK.finditer(text))]
        else:  # only "\n": line starts from the lengths of the lines, summed in C (10,000 items: 200,000)
            lengths = accumulate(map(len, text.split("\n")[:-1]))
            self.starts = [0, *map(add, lengths, count(1))]
        first = _BREAK.search(text)
        self.newline = first.group() if first else "\n"

    def line_start(self, line: int) -> int:
        return self.starts[line] if line < len(self.starts) else len(self.text)

    def last_line(self, first: int, end: Mark) -> int:
        """The last line of a node from line ``first`` to ``end`` (``_content_end``)."""
        return end.line - 1 if end.column == 0 and end.line > first else end.line

    def line_text(self, line: int) -> str:
        return self.text[self.line_start(line):self.line_start(line + 1)].rstrip(_LINE_BREAKS)

    def after_line(self, line: int) -> tuple[int, str]:
        """Where text goes after ``line``, and the break to put first when the file lacks a final newline."""
        position = self.line_start(line + 1)
        if position == len(self.text) and self.text and not self.text.endswith(tuple(_LINE_BREAKS)):
            return position, self.newline
        return position, ""


def render(value: object) -> str:
    """One value as a single-line YAML scalar or flow sequence that loads back to exactly ``value``.

    Text holding undecodable bytes (a worker's file name in an error) is written with them escaped:
    ``\\xNN`` as text, never a surrogate the reader could not decode (``wavegit.core.undecodable``).
    """
    if value is None or isinstance(value, (str, int, float)):
        return _render_scalar(value)
    return _render(value)


@functools.lru_cache(maxsize=256, typed=True)
def _render_scalar(value: str | int | float | None) -> str:
    """:func:`render` of a scalar, once per value: a claim writes the same status, wave and time into every
    item it takes (PyYAML's emitter, 0.17 ms a value: 5.3 -> 1.5 ms for a 16-item claim)."""
    return _render(value)


def _render(value: object) -> str:
    import yaml

    value = _writable(value)
    style = '"' if isinstance(value, str) and any(c in value for c in _LINE_BREAKS) else None
    dumped = yaml.safe_dump(value, default_flow_style=True, default_style=style, width=_WIDTH,
                            allow_unicode=True)
    dumped = dumped.removesuffix("...\n").rstrip("\n")
    if "\n" in dumped:
        dumped = yaml.safe_dump(value, default_flow_style=True, default_style='"', width=_WIDTH,
                                allow_unicode=True).rstrip("\n")
    return dumped


def _writable(value: object) -> object:
    if isinstance(value, str):
        return escape(value)
    if isinstance(value, (list, tuple)):
        return [_writable(element) for element in value]
    return value


def _render_block(value: str, indent: int, newline: str) -> str | None:
    """A multi-line string as a literal block scalar indented below ``indent``, or None when not possible."""
    import yaml

    value = escape(value)
    dumped = yaml.safe_dump(value, default_style="|", width=_WIDTH, allow_unicode=True).removesuffix("...\n")
    if not dumped.startswith("|") or "+" in dumped.split("\n", 1)[0]:
        return None
    header, *lines = dumped.rstrip("\n").split("\n")
    pad = " " * indent
    return header + "".join(newline + (pad + line if line else "") for line in lines)


_ANCHOR = re.compile(r"&(?<![^\s,\[\]{}\ufeff]&)[0-9A-Za-z_-]")
"""What may be an anchor (``&name`` after a space, a flow indicator or the BOM): a command's ``&&`` is not.
The ``&`` first, its lookbehind after: re scans for the literal (2 ms over 10,000 items, not 70)."""


def _compose(text: str) -> Node | None:
    """The tracker's nodes, each alias at its own place when it may have anchors (``yamlcompose.Alias``)."""
    return yamlcompose.compose(text, "tracker", aliases_in_place=_ANCHOR.search(text) is not None)


def _item_nodes(root: Node | None) -> tuple[Node | None, Node | None]:
    if root is None or root.id != "mapping":
        raise UsageError("the tracker is not a mapping; run `wavegit validate`")
    for key, value in root.value:
        if yamlread.key_text(key) == "items":
            return key, value
    return None, None


def _items_by_id(root: Node | None) -> dict[str, Node]:
    """Each item's node by its id (the first of a repeated one), in one pass over the document: a claim or
    a sync edits hundreds of items of a tracker of thousands."""
    _, items = _item_nodes(root)
    return _by_id(items.value) if items is not None and items.id == "sequence" else {}


def _by_id(nodes: Iterable[Node]) -> dict[str, Node]:
    found: dict[str, Node] = {}
    for node in nodes:
        if node.id != "mapping":
            continue
        for key, value in node.value:
            if value.id == "scalar" and yamlread.key_text(key) == "id":
                found.setdefault(value.value, node)
                break
    return found


def _find_item(by_id: Mapping[str, Node], item_id: str) -> Node:
    node = by_id.get(item_id)
    if node is None:
        raise UsageError(f"no item with id '{item_id}' in the tracker")
    if node.flow_style:
        raise UsageError(f"item {item_id} is written in flow style ({{...}}); wavegit edits "
                         "only block-style items: put each key on its own line")
    return node


def _content_end(doc: _Text, node: Node, parent_col: int = -1) -> Mark:
    """Where a node's own text ends: block collections end at their last child, not at the next token; an
    alias where its ``*name`` ends (composed by ``_compose``), not where its anchor's node does; a block
    scalar after its value's last line. ``parent_col``: the column of the collection holding ``node``."""
    if node.id != "scalar" and not node.flow_style and node.value:
        last = node.value[-1]
        return _content_end(doc, last[1] if node.id == "mapping" else last, node.start_mark.column)
    if node.id == "scalar" and getattr(node, "style", None) in ("|", ">"):
        return _block_scalar_end(doc, node, parent_col)
    return node.end_mark


_BLOCK_HEADER = re.compile(r"(?:[&!]\S*\s+)*[|>]([1-9]?)([+-]?)([1-9]?)")


@dataclass
class _LineStart:
    """A line's start, as a ``Mark``."""

    index: int
    line: int
    column: int = 0


def _block_scalar_end(doc: _Text, node: Node, parent_col: int) -> Mark:
    """The start of the line after a block scalar's value. Its end mark is the next token's, past the
    empty lines after it: they are its value's when it keeps them (``|+``), and a line of spaces longer than
    its indentation is a line of its value whatever its chomping."""
    header = _BLOCK_HEADER.match(doc.text, node.start_mark.index)
    end = node.end_mark
    last = end.line - 1 if end.column == 0 else end.line
    if header is not None and header.group(2) != "+":
        header_line = bisect_right(doc.starts, header.end()) - 1
        explicit = header.group(1) or header.group(3)
        indent = (max(parent_col, 0) + int(explicit) if explicit
                  else _detected_indent(doc, range(header_line + 1, last + 1), parent_col))
        while last > header_line and _empty_within(doc.line_text(last), indent):
            last -= 1
    return _LineStart(doc.line_start(last + 1), last + 1)


def _empty_within(line: str, indent: int) -> bool:
    """Whether a line below a block scalar is an empty line, not a line of its value."""
    return len(line) <= indent and not line.strip(" ")


def _detected_indent(doc: _Text, lines: range, parent_col: int) -> int:
    """A block scalar's indentation as YAML detects it: its first written line's, or more when the empty
    lines before it hold more spaces, and at least one more than its parent's."""
    widths = [parent_col + 1, 1]
    for line in lines:
        text = doc.line_text(line)
        widths.append(len(text) - len(text.lstrip(" ")))
        if text.strip(" "):
            break
    return max(widths)


Span = tuple[int, int | None]
"""An item's lines: the 1-based line it starts on, and the line the next item starts on (None: the last)."""


def set_items_fields(text: str, changes: Mapping[str, Mapping[str, object | None]],
                     spans: Mapping[str, Span] | None = None) -> str:
    """Change (or add, or with None remove) fields of several items in one pass.

    With ``spans`` (from a parse of this very text), each item's own lines are composed, not the whole
    tracker: a sync or a claim that edits hundreds of items of 10,000 composes a few lines each. An item
    whose lines do not compose as that one block-style item (a dash on a line of its own, an alias to an
    anchor elsewhere, the root keys after the last item) is edited from the whole document, composed once."""
    if not changes:
        return text
    doc = _Text(text)
    whole: dict[str, Node] | None = None
    edits: list[_Edit] = []
    for item_id, fields in changes.items():
        span = spans.get(item_id) if spans is not None else None
        found = _edits_in_span(doc, item_id, fields, span) if span is not None else None
        if found is None:
            whole = whole if whole is not None else _items_by_id(_compose(text))
            found = _item_edits(doc, _find_item(whole, item_id), fields)
        edits += found
    return _apply(text, edits)


def _edits_in_span(doc: _Text, item_id: str, fields: Mapping[str, object | None], span: Span
                   ) -> list[_Edit] | None:
    """The edits of ``item_id`` composed from its own lines, at their place in ``doc``; None when those
    lines are not that one item."""
    first, following = span
    start = doc.line_start(first - 1)
    piece = doc.text[start:doc.line_start(following - 1) if following is not None else len(doc.text)]
    if _ANCHOR.search(piece):
        return None  # an anchor another item's alias may repeat: judged on the whole text (_check_unshared)
    try:
        root = _compose(piece)
    except ValidationError:
        return None
    if root is None or root.id != "sequence" or len(root.value) != 1:
        return None
    node: Node = root.value[0]
    if _by_id(root.value).get(item_id) is not node:
        return None
    return [_Edit(e.start + start, e.end + start, e.text)
            for e in _item_edits(_Text(piece), _find_item({item_id: node}, item_id), fields)]



def _item_edits(doc: _Text, item: Node, fields: Mapping[str, object | None]) -> list[_Edit]:
    pairs = {yamlread.key_text(k): (k, v) for k, v in item.value}
    edits: list[_Edit] = []
    added: list[str] = []
    key_col = item.start_mark.column
    for name, value in fields.items():
        if name not in pairs:
            if value is not None:
                added.append(f"{' ' * key_col}{name}: {render(value)}{doc.newline}")
            continue
        key, node = pairs[name]
        edits.append(_edit_pair(doc, item, key, node, value))
    if added:
        last_line = doc.last_line(item.start_mark.line, _content_end(doc, item))
        position, lead = doc.after_line(last_line)
        edits.append(_Edit(position, position, lead + "".join(added)))
    return edits


def _edit_pair(doc: _Text, item: Node, key: Node, node: Node, value: object | None) -> _Edit:
    _check_unshared(doc, key, node)
    first = key.start_mark.line
    last = doc.last_line(first, _content_end(doc, node, item.start_mark.column))
    if value is None:
        if first == item.start_mark.line:
            raise UsageError(f"cannot remove '{key.value}': it is the item's first key (on the '- ' line)")
        return _Edit(doc.line_start(first), doc.line_start(last + 1), "")
    rendered = render(value)
    start, end = node.start_mark.index, _content_end(doc, node, item.start_mark.column).index
    if last == first and node.start_mark.line == first:
        if start == end:  # an empty value (`pr:`) has no text of its own to replace
            rendered = " " + rendered
        return _Edit(start, end, rendered)
    # A multi-line value: keep the key as written, put the new value on the key's line.
    line_end = doc.line_start(last + 1)
    tail = doc.text[doc.line_start(last):line_end]
    newline = tail[len(tail.rstrip(_LINE_BREAKS)):] or doc.newline
    return _Edit(doc.line_start(first), line_end,
                 doc.text[doc.line_start(first):key.end_mark.index] + ": " + rendered + newline)


_ANCHORED = re.compile(r"(?:!\S*\s+)?&([0-9A-Za-z_-]+)")


def _check_unshared(doc: _Text, key: Node, node: Node) -> None:
    """Refuse to change a value anchored (``&name``) where an alias (``*name``) repeats it: the edit would
    change the other place too, or take its anchor away from it."""
    anchor = _ANCHORED.match(doc.text, node.start_mark.index)
    if anchor is None:
        return
    name = re.escape(anchor.group(1))
    if re.search(rf"\*(?<![^\s,\[\]{{}}]\*){name}(?![0-9A-Za-z_-])", doc.text):
        line = yamlread.position(doc.text, key.start_mark)[0]
        raise UsageError(f"cannot change '{key.value}' (line {line}): its value is the "
                         f"anchor &{anchor.group(1)}, which an alias *{anchor.group(1)} repeats elsewhere; "
                         "write the value out at both places")


def _apply(text: str, edits: list[_Edit]) -> str:
    """``text`` with ``edits`` (which do not overlap) made, in one pass: one copy of the text however many."""
    pieces: list[str] = []
    done = 0
    for edit in sorted(edits, key=lambda e: (e.start, e.end)):
        pieces += (text[done:edit.start], edit.text)
        done = edit.end
    pieces.append(text[done:])
    return "".join(pieces)


def append_items(text: str, items: Sequence[Mapping[str, object]], last_item_line: int | None = None) -> str:
    """``text`` with ``items`` (each its fields in the order given) appended to ``items`` in block style.

    The text is parsed once however many are appended: an import of thousands appends them all at once.
    With ``last_item_line`` (the 1-based line the last item starts on, from a parse of this very text), only
    the lines from there on are composed when they are that one block-style item: `add` on a tracker of
    10,000 items then composes a few lines, not the whole file (``set_items_fields``'s spans, for the end)."""
    if not items:
        return text
    doc = _Text(text)
    appended = _append_after_last(doc, items, last_item_line) if last_item_line is not None else None
    if appended is not None:
        return appended
    root = _compose(text)
    key, listed = _item_nodes(root)
    dash_col, key_col = 2, 4

    def blocks() -> str:
        return "".join(_item_block(fields, dash_col, key_col, doc.newline) for fields in items)

    if listed is None or key is None:
        lead = doc.newline if text and not text.endswith(tuple(_LINE_BREAKS)) else ""
        return text + lead + "items:" + doc.newline + blocks()
    if listed.id == "sequence" and not listed.flow_style:
        dash_col = listed.start_mark.column
        first = listed.value[0]
        key_col = first.start_mark.column if first.id == "mapping" else dash_col + 2
        position, lead = doc.after_line(doc.last_line(listed.start_mark.line, _content_end(doc, listed)))
        return _apply(text, [_Edit(position, position, lead + blocks())])
    if listed.id == "sequence" and listed.value:
        raise UsageError("'items' is written in flow style ([...]); wavegit appends only to a block list")
    if listed.id == "sequence" or listed.tag == yamlread.NULL:
        start = listed.start_mark.index
        while start > 0 and doc.text[start - 1] == " " and listed.id == "sequence":
            start -= 1
        position, lead = doc.after_line(listed.end_mark.line)
        return _apply(text, [_Edit(start, listed.end_mark.index, ""),
                             _Edit(position, position, lead + blocks())])
    raise UsageError("'items' is not a list; run `wavegit validate`")


def _append_after_last(doc: _Text, items: Sequence[Mapping[str, object]], line: int) -> str | None:
    """``append_items`` from the lines of the last item on (it starts on ``line``); None when they are not
    one block-style item alone (a dash on a line of its own, root keys after it): the whole is composed."""
    start = doc.line_start(line - 1)
    piece = _Text(doc.text[start:])
    try:
        root = _compose(piece.text)
    except ValidationError:
        return None
    if root is None or root.id != "sequence" or root.flow_style or len(root.value) != 1:
        return None
    last = root.value[0]
    key_col = last.start_mark.column if last.id == "mapping" else root.start_mark.column + 2
    position, lead = piece.after_line(piece.last_line(0, _content_end(piece, root)))
    blocks = "".join(_item_block(fields, root.start_mark.column, key_col, doc.newline) for fields in items)
    return _apply(doc.text, [_Edit(start + position, start + position, lead + blocks)])


def _item_block(fields: Mapping[str, object], dash_col: int, key_col: int, newline: str) -> str:
    lines: list[str] = []
    for name, value in fields.items():
        rendered = None
        if isinstance(value, str) and "\n" in value:
            rendered = _render_block(value, key_col, newline)
        lines.append(f"{name}: {rendered or render(value)}")
    first = " " * dash_col + "-" + " " * (key_col - dash_col - 1)
    return first + (newline + " " * key_col).join(lines) + newline


def remove_item(text: str, item_id: str) -> str:
    """``text`` without the item ``item_id``: the lines from its ``-`` to its last value; comments around it
    and every other item stay as they are. The last item gone, ``items:`` is left empty (null)."""
    doc = _Text(text)
    item = _find_item(_items_by_id(_compose(text)), item_id)
    first = item.start_mark.line
    before_key = doc.text[doc.line_start(first):item.start_mark.index]
    above = doc.text[doc.line_start(first - 1):doc.line_start(first)] if first > 0 else ""
    if not before_key.strip() and above.strip() == "-":
        first -= 1  # the dash on a line of its own
    last = doc.last_line(item.start_mark.line, _content_end(doc, item))
    return _apply(text, [_Edit(doc.line_start(first), doc.line_start(last + 1), "")])
