"""The tracker: item model, schema validation with ``file:line:col`` errors, minimal-diff YAML edits.

Parsing composes the YAML (C loader when present) and walks the nodes against ``ITEM_SCHEMA``; a parse cache
keyed by the tracker's blob SHA stores plain tuples with ``marshal`` so that a warm load does not import yaml.
"""

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from functools import cached_property
from pathlib import Path
from typing import Annotated

from wavegit import __version__
from wavegit.core import parsecache, schema, yamlread
from wavegit.core.errors import Problem, UsageError, ValidationError
from wavegit.core.git import WaveId
from wavegit.core.yamlread import Node
from wavegit.model import dependencies
from wavegit.model.columns import (
    PRIORITIES as PRIORITIES,  # the levels an item may have; also tracker.PRIORITIES
)
from wavegit.model.lifecycle import STATUSES, Status
from wavegit.ownership.patterns import PatternError, normalize, ownable
from wavegit.ownership.protected import DEFAULT_PROTECTED, REFUSAL_HINT, reached, refusal

VERSION = 1

_ID_RE = re.compile(r"[A-Za-z0-9._-]+\Z")
_SHA_RE = re.compile(r"[0-9a-f]{7,64}\Z")
# ISO 8601 as `import` and `add` write it and hand-written files hold it: a date, optionally a time and zone.
_ISO_TIME_RE = re.compile(r"\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?\Z")


def id_problem(value: schema.Value) -> str | None:
    """What is wrong with ``value`` as an item id, or None."""
    if not (isinstance(value, str) and _ID_RE.match(value)):
        # repr: an id holding a newline or a control character must not break the one-line message.
        return f"{value!r} may contain only letters, digits, '.', '_' and '-'"
    # The id is a component of its item branch (wavegit/<wave>/<id>): what git refuses in a ref name
    # would fail the whole wave at its first `update-ref`, so it is refused here (git check-ref-format).
    if value.startswith("."):
        return f"{value!r} must not start with '.' (git refuses it in a branch name)"
    if ".." in value:
        return f"{value!r} must not contain '..' (git refuses it in a branch name)"
    if value.endswith("."):
        return f"{value!r} must not end with '.' (git refuses it in a branch name)"
    if value.lower().endswith(".lock"):
        return f"{value!r} must not end with '.lock' (git refuses it in a branch name)"
    return None


def _not_empty_list(value: schema.Value) -> str | None:
    return "must list at least one path" if value == () else None


def _sha(value: schema.Value) -> str | None:
    return None if isinstance(value, str) and _SHA_RE.match(value) else "must be a hexadecimal commit SHA"


def _iso_time(value: schema.Value) -> str | None:
    return None if isinstance(value, str) and _ISO_TIME_RE.match(value) else "must be an ISO 8601 time"


_MEANT_STATUS = {"doing": "in_progress", "wip": "in_progress", "started": "in_progress",
                 "running": "in_progress", "open": "todo", "new": "todo", "ready": "todo", "closed": "done",
                 "merged": "done",
                 "finished": "done", "complete": "done", "completed": "done", "waiting": "blocked",
                 "on_hold": "blocked", "error": "failed"}
"""Status words from other trackers, for the "did you mean" of an unknown status."""


# Every key of an item is declared once, here: name, type, default, validation and doc line. ITEM_SCHEMA and
# the README's table of item keys come from it; the fields without a key are not read from the file.
@dataclass(frozen=True, kw_only=True)
class Item:
    id: Annotated[str, schema.key(
        "unique; letters, digits, `.`, `_`, `-`, usable in a branch name (no leading `.`, no `..`, no "
        "trailing `.` or `.lock`)", id_problem, hint="e.g. AUTH-12", required=True)]
    title: Annotated[str, schema.key("a short name, optional")] = ""
    prompt: Annotated[str, schema.key(
        "what the worker is asked to do", schema.not_blank, hint="what the worker is asked to do",
        required=True)]
    owns: Annotated[tuple[str, ...], schema.key(
        "what the item may change: paths, directories (trailing `/`), globs (`*`, `**`, `?`, `[..]`)",
        _not_empty_list, hint="list the files, directories (dir/) or globs the item may change",
        required=True, element_map=ownable)]
    """Normalised ownership patterns (see wavegit.ownership)."""
    test: Annotated[str, schema.key(
        "a command run in the item's worktree; exit 0 = verified", schema.command(required=True),
        hint="a command; exit 0 means verified", required=True)]
    priority: Annotated[str, schema.key("`P0` (first) to `P3`", choices=PRIORITIES)] = "P2"
    depends_on: Annotated[tuple[str, ...], schema.key(
        "ids of items that must be `done` before it is ready",
        hint="ids of items that must be done first")] = ()
    estimate_s: Annotated[float | None, schema.key(
        "how long its worker is expected to run, in seconds; `run --continuous` starts the longest first",
        schema.at_least(0), hint="seconds, e.g. 900")] = None
    worker: Annotated[str | None, schema.key(
        "the worker profile that runs it (a name in config `workers`); none = config `worker`",
        schema.not_blank, hint="a profile name from `workers` in .wavegit/config.yaml")] = None
    created_at: Annotated[str | None, schema.key(
        "when it was added (ISO 8601); `import` keeps the source's and appends the oldest first",
        _iso_time, hint="e.g. 2026-01-31T09:30:00Z", text=True)] = None
    notes: Annotated[tuple[str, ...], schema.key(
        "free-form notes for people; wavegit keeps them (`import` carries the source's)")] = ()
    issue: Annotated[int | None, schema.key(
        "the GitHub issue it came from (`wavegit intake`); its wave's PR closes it", schema.at_least(1),
        hint="the issue number, e.g. 17")] = None
    status: Annotated[str, schema.key(
        "`todo`, `in_progress`, `review`, `done`, `failed` or `blocked`",
        choices=STATUSES, meant=_MEANT_STATUS)] = Status.TODO.value
    """A :class:`wavegit.model.lifecycle.Status` value, as the tracker holds it."""
    wave: Annotated[WaveId | None, schema.key("written by wavegit: the wave that claimed it")] = None
    attempts: Annotated[int, schema.key(
        "written by wavegit: attempts so far, across waves", schema.at_least(0),
        hint="attempts so far, 0 or more")] = 0
    pr: Annotated[int | None, schema.key(
        "written by wavegit: its pull request's number", schema.at_least(1),
        hint="the pull request number, e.g. 41")] = None
    claimed_at: Annotated[str | None, schema.key(
        "written by wavegit: when it was claimed (UTC)", text=True)] = None
    updated_at: Annotated[str | None, schema.key(
        "written by wavegit: when wavegit last changed it (UTC)", text=True)] = None
    last_error: Annotated[str | None, schema.key("written by wavegit: why its last attempt failed")] = None
    cost: Annotated[float, schema.key(
        "written by wavegit: USD spent on it so far", schema.at_least(0),
        hint="USD spent so far, e.g. 0.42")] = 0.0
    merge_sha: Annotated[str | None, schema.key(
        "written by wavegit: the merge commit, once done", _sha,
        hint="the merge commit's SHA, e.g. 4f2a9c1e7b3d")] = None
    index: int = field(default=0, compare=False)
    """Position in the file (0-based): intake appends, so a lower index is older."""
    line: int = field(default=0, compare=False)
    """1-based line where the item starts, for messages."""
    problems: tuple[str, ...] = field(default=(), compare=False)
    """Item-level validation problems (only when loaded with strict=False)."""


ITEM_SCHEMA = schema.record_schema("item", Item)

_ITEM_FIELDS = tuple(f.name for f in fields(Item))
# A required field whose value failed validation (strict=False) still needs a value: an empty one.
_ITEM_DEFAULTS = {f.name: {"id": "", "prompt": "", "owns": (), "test": ""}.get(f.name, f.default)
                  for f in fields(Item)}


@dataclass(frozen=True)
class Tracker:
    version: int
    items: tuple[Item, ...]

    @cached_property
    def _by_id(self) -> dict[str, Item]:
        # The first item wins; duplicates only survive in non-strict loads and carry a problem.
        by_id: dict[str, Item] = {}
        for item in self.items:
            by_id.setdefault(item.id, item)
        return by_id

    def get(self, item_id: str) -> Item | None:
        return self._by_id.get(item_id)


_ROOT_KEYS = ("version", "items")


Protected = tuple[str, ...] | None
"""The protected paths no item may own (``wavegit.ownership.protected.protected_set`` of the config);
None: the defaults."""


def loads(text: str, path: str = ".wavegit/tracker.yaml", *, strict: bool = True,
          protected: Protected = None) -> Tracker:
    """Parse and validate; raise ValidationError listing every problem.

    With ``strict=False`` item-level problems are attached to the items (``Item.problems``) instead;
    document-level problems (not YAML, not a mapping, bad version, items not a list) always raise.
    """
    return _tracker(_parse_rows(text, path, strict, protected))


Row = dict[str, object]
"""One item's fields by name, as the parse cache stores them."""


def _parse_rows(text: str, path: str, strict: bool, protected: Protected) -> tuple[int, tuple[Row, ...]]:
    where = yamlread.Located(path, text)
    with parsecache.gc_paused():
        # The nodes are freed when _walk returns, still inside the pause, so the collector never scans them.
        rows, item_problems = _walk(text, where, protected)
    if where.problems and (strict or len(where.problems) > item_problems):
        raise ValidationError(sorted(where.problems, key=lambda p: (p.line, p.col)))
    return VERSION, rows


def _walk(text: str, where: yamlread.Located, protected: Protected) -> tuple[tuple[Row, ...], int]:
    from wavegit.core.yamlcompose import compose  # a parse only: a warm run never composes

    return _items(_document(compose(text, where.path), where), where, protected)


def _document(root: Node | None, where: yamlread.Located) -> Node | None:
    """The ``items`` node; document-level problems raise at once."""
    if root is None or root.id != "mapping":
        got = "an empty file" if root is None else yamlread.describe(root)
        line, col = (1, 1) if root is None else yamlread.position(where.text, root.start_mark)
        raise ValidationError([Problem(where.path, line, col, f"the tracker must be a mapping, got {got}",
                                       None, "start with 'version: 1' and 'items:'")])
    version_node: Node | None = None
    items_node: Node | None = None
    for key, key_node, value_node in yamlread.iter_pairs(root, where):
        if key == "version":
            version_node = value_node
        elif key == "items":
            items_node = value_node
        else:
            where.at(key_node, f"unknown top-level key '{key}'", None,
                     yamlread.unknown_key_hint(key, _ROOT_KEYS))
    if version_node is None:
        where.at(root, "missing 'version'", None, f"add 'version: {VERSION}' at the top")
    elif version_node.id != "scalar" or version_node.tag != yamlread.INT:
        got = yamlread.describe(version_node)
        where.at(version_node, f"'version' must be the number {VERSION}, got {got}", None,
                 f"write 'version: {VERSION}' without quotes")
    elif yamlread.scalar_value(version_node) != VERSION:
        where.at(version_node, f"unknown tracker version {version_node.value}", None,
                 f"this wavegit reads version {VERSION}")
    if items_node is not None and items_node.id != "sequence" and items_node.tag != yamlread.NULL:
        where.at(items_node, f"'items' must be a list, got {yamlread.describe(items_node)}", None,
                 "write each item as '- id: ...'")
    if where.problems:
        raise ValidationError(where.problems)
    return items_node if items_node is not None and items_node.id == "sequence" else None


def _items(items_node: Node | None, where: yamlread.Located,
           protected: Protected) -> tuple[tuple[Row, ...], int]:
    """The item rows and how many problems are item-level (attached to an identifiable item)."""
    if items_node is None:
        return (), 0
    guards = DEFAULT_PROTECTED if protected is None else protected
    rows: list[list[object]] = []
    item_nodes: list[Node] = []
    first_line: dict[str, int] = {}
    attached = 0
    for index, node in enumerate(items_node.value):
        before = len(where.problems)
        if node.id != "mapping":
            where.at(node, f"each item must be a mapping, got {yamlread.describe(node)}", f"#{index + 1}",
                     "start the item with '- id: ...'")
            continue
        item_id = _item_id(node)
        # Items without a usable id are named by position in messages.
        values = yamlread.read_mapping(node, ITEM_SCHEMA, where, item_id or f"#{index + 1}")
        if item_id is None:
            continue
        _check_protected(node, values.get("owns"), guards, where, item_id)
        line = yamlread.position(where.text, node.start_mark)[0]
        if item_id in first_line:
            where.at(yamlread.value_node(node, "id") or node, f"duplicate id '{item_id}' (first at line "
                     f"{first_line[item_id]})", item_id, "ids must be unique; rename one of them")
        else:
            first_line[item_id] = line
        row = _row(values)
        row[0] = item_id
        row[-3:] = [index, line, tuple(_brief(p) for p in where.problems[before:])]
        attached += len(where.problems) - before
        rows.append(row)
        item_nodes.append(node)
    graph = [(str(row[0]), row[_DEPS]) for row in rows]
    for position, problem in dependencies.problems(graph, item_nodes, where):  # type: ignore[arg-type]
        _attach(rows[position], problem)
        attached += 1
    return tuple(dict(zip(_ITEM_FIELDS, row, strict=True)) for row in rows), attached


def _row(values: dict[str, schema.Value]) -> list[object]:
    """The item's fields in ``_ITEM_FIELDS`` order: its values, and the defaults of the absent ones; an empty
    list (``depends_on:``) is its default, an empty value of another kind stays None."""
    row = list(_ITEM_DEFAULTS.values())
    for name, value in values.items():
        if value is not None or not isinstance(_ITEM_DEFAULTS[name], tuple):
            row[_POSITIONS[name]] = value
    return row


_POSITIONS = {name: position for position, name in enumerate(_ITEM_FIELDS)}
_DEPS = _ITEM_FIELDS.index("depends_on")
_PROBLEMS = _ITEM_FIELDS.index("problems")


def _check_protected(node: Node, owns: schema.Value, protected: tuple[str, ...], where: yamlread.Located,
                     item_id: str) -> None:
    """A problem at each ``owns`` element that can reach a protected path (wavegit.ownership.protected)."""
    for pattern in owns if isinstance(owns, tuple) else ():
        guard = reached(pattern, protected)
        if guard is None:
            continue
        seq = yamlread.value_node(node, "owns")
        elements: list[Node] = seq.value if seq is not None and seq.id == "sequence" else []
        at: Node = seq or node
        for element in elements:
            try:
                if normalize(str(element.value)) == pattern:
                    at = element
                    break
            except PatternError:
                continue
        where.at(at, f"'owns': {refusal(pattern, guard)}", item_id, REFUSAL_HINT)


def _attach(row: list[object], problem: Problem) -> None:
    row[_PROBLEMS] = (*row[_PROBLEMS], _brief(problem))  # type: ignore[misc]


def _brief(problem: Problem) -> str:
    return f"{problem.message} (line {problem.line})"


def _item_id(node: Node) -> str | None:
    value = yamlread.value_node(node, "id")
    if value is None or value.id != "scalar" or value.tag != yamlread.STR or not value.value:
        return None
    text = str(value.value)
    # An unprintable id cannot label a one-line message: it is labelled escaped (its own problem shows it
    # quoted), so the item is skipped as invalid and the other items still plan and run.
    return text if text.isprintable() else text.encode("unicode_escape").decode("ascii")


def _tracker(parsed: tuple[int, tuple[Row, ...]]) -> Tracker:
    version, rows = parsed
    return Tracker(version, tuple(Item(**row) for row in rows))  # type: ignore[arg-type]


# Bump when parsing or validation changes: entries are keyed by content, not by the code that parsed them.
CACHE_FORMAT = f"wavegit-tracker-cache-12-{__version__}"


def load_cached(text: str, blob_sha: str, cache_dir: Path | None, path: str = ".wavegit/tracker.yaml",
                *, strict: bool = True, protected: Protected = None) -> Tracker:
    """``loads`` with a parse cache keyed by blob SHA under ``cache_dir``.

    Content-addressed, so an entry can never be stale; a corrupt entry is ignored and rewritten.
    Validation failures are cached too, so a broken tracker is not re-parsed on every call.
    """
    return load_blob(blob_sha, lambda: text, cache_dir, path, strict=strict, protected=protected)


def load_blob(blob_sha: str, read_text: Callable[[], str], cache_dir: Path | None,
              path: str = ".wavegit/tracker.yaml", *, strict: bool = True,
              protected: Protected = None) -> Tracker:
    """``load_cached`` for a caller that has only the blob SHA: ``read_text()`` runs only on a cache miss."""
    if cache_dir is None:
        return loads(read_text(), path, strict=strict, protected=protected)
    return _tracker(_cached_parse(blob_sha, read_text, cache_dir, path, strict, protected))


def load_rows(blob_sha: str, read_text: Callable[[], str], cache_dir: Path | None,
              path: str = ".wavegit/tracker.yaml", *, strict: bool = True,
              protected: Protected = None) -> tuple[Row, ...]:
    """``load_blob``'s items as the parse cache holds them, one ``Row`` each (the ``Item`` fields by name),
    for a reader of a few fields of every item: no ``Item`` is built."""
    if cache_dir is None:
        return _parse_rows(read_text(), path, strict, protected)[1]
    return _cached_parse(blob_sha, read_text, cache_dir, path, strict, protected)[1]


def _cached_parse(blob_sha: str, read_text: Callable[[], str], cache_dir: Path, path: str, strict: bool,
                  protected: Protected) -> tuple[int, tuple[Row, ...]]:
    """``_parse_rows`` through the parse cache (its failures cached too, raised again)."""
    key = parsecache.path_key(path, protected)
    entry = cache_dir / f"tracker-{blob_sha}-{'s' if strict else 'l'}-{key}.marshal"
    cached = parsecache.read(entry, CACHE_FORMAT)
    if isinstance(cached, tuple):
        return _rows_or_raise(cached, path)
    try:
        parsed: tuple[object, ...] = ("ok", *_parse_rows(read_text(), path, strict, protected))
    except ValidationError as exc:
        parsed = ("error", tuple((p.line, p.col, p.message, p.item_id, p.hint) for p in exc.problems))
    parsecache.write(entry, CACHE_FORMAT, parsed)
    return _rows_or_raise(parsed, path)


def _rows_or_raise(parsed: tuple[object, ...], path: str) -> tuple[int, tuple[Row, ...]]:
    if parsed[0] == "ok":
        return parsed[1:]  # type: ignore[return-value]
    problems = parsed[1]
    raise ValidationError([Problem(path, *p) for p in problems])  # type: ignore[attr-defined]


def set_fields(text: str, item_id: str, fields: Mapping[str, object | None]) -> str:
    """Change (or add, or with None remove) fields of one item, editing only those lines."""
    return set_items_fields(text, {item_id: fields})


def set_items_fields(text: str, changes: Mapping[str, Mapping[str, object | None]],
                     loaded: Tracker | None = None) -> str:
    """:func:`set_fields` for several items at once (``changes``: id -> fields), the text parsed once; with
    ``loaded``, the parse of this very text, only the changed items' lines are (``yamledit``'s spans)."""
    from wavegit.core import yamledit

    unknown = sorted({name for fields in changes.values() for name in fields
                      if ITEM_SCHEMA.field(name) is None})
    if unknown:
        raise UsageError(f"cannot set unknown item field(s): {', '.join(unknown)}")
    return yamledit.set_items_fields(text, changes, _spans(loaded) if loaded is not None else None)


def _spans(loaded: Tracker) -> dict[str, tuple[int, int | None]]:
    """Each item's first line and the next item's (None after the last), the first item of an id only."""
    ordered = sorted(loaded.items, key=lambda item: item.line)
    spans: dict[str, tuple[int, int | None]] = {}
    for item, following in zip(ordered, [*ordered[1:], None], strict=True):
        spans.setdefault(item.id, (item.line, following.line if following is not None else None))
    return spans


def append_items(text: str, items: Iterable[Item], loaded: Tracker | None = None) -> str:
    """The text with ``items`` appended to ``items``, parsed once; everything before them is unchanged. With
    ``loaded``, the parse of this very text, only its last item's lines are (``yamledit.append_items``)."""
    from wavegit.core import yamledit

    last_line = max((item.line for item in loaded.items), default=None) if loaded is not None else None
    return yamledit.append_items(text, [item_fields(item) for item in items], last_line)


def item_fields(item: Item) -> dict[str, object]:
    """The keys an item is written with, in canonical order; defaults are left out."""
    out: dict[str, object] = {}
    for name in ITEM_SCHEMA.names:
        value = getattr(item, name)
        if name in _ALWAYS_WRITTEN or value != _ITEM_DEFAULTS[name]:
            out[name] = list(value) if isinstance(value, tuple) else value
    return out


_ALWAYS_WRITTEN = ("id", "prompt", "owns", "test", "priority", "status")


def initial_text() -> str:
    """The tracker ``wavegit init`` writes."""
    return _INITIAL_TEXT


_INITIAL_TEXT = """\
# wavegit tracker: one entry per unit of work. Add items with `wavegit add` or by hand:
#
#   - id: AUTH-12                 # unique; letters, digits, . _ -
#     title: Rate-limit logins    # optional
#     prompt: |                   # what the worker is asked to do
#       Add a token bucket to src/auth/limiter.py ...
#     owns: [src/auth/limiter.py, tests/auth/]   # files, directories (dir/), globs (*, **, ?)
#     test: pytest -q tests/auth                 # run in the item's worktree; exit 0 = verified
#     priority: P1                # P0..P3, default P2
#     depends_on: [AUTH-3]        # optional; ready only when all are done
#     status: todo                # todo | in_progress | review | done | failed | blocked
#
# wavegit itself writes: wave, attempts, pr, claimed_at, updated_at, last_error, cost, merge_sha.
# Check the file with `wavegit validate`.
version: 1
items: []
"""
