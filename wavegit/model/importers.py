"""Backlogs from other tools, read as tracker items (``wavegit import FILE --from SOURCE``).

Three sources (``aesop``: a JSON object with ``items`` or a bare list; ``jsonl``; ``csv``), one record shape;
how each key becomes an item's is README's "Bringing work in". Every problem of every record is collected,
each with the source's line and column, before anything is returned; items come oldest first.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Set
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from functools import partial

from wavegit.core import jsondecode, schema
from wavegit.core.errors import Problem, ValidationError
from wavegit.core.schema import Value
from wavegit.model import dependencies, tracker
from wavegit.ownership.patterns import PatternError, normalize
from wavegit.ownership.protected import DEFAULT_PROTECTED, reached, refusal

SOURCES = ("aesop", "jsonl", "csv")
DEFAULT_PRIORITY = "P3"
"""What the source scheduler takes an item without a priority for."""
LIST_SEPARATOR = ";"
"""Between the paths of ``ownsFiles`` and the lines of ``notes`` in a CSV cell."""

_STATUSES = {"todo": "todo", "in_progress": "todo", "done": "done", "failed": "failed", "blocked": "blocked"}
_STATUS = schema.Field("status", "str", choices=tuple(_STATUSES))
"""What a source's status may be (``in_progress`` is imported as ``todo``)."""
_CSV_ALIASES = {"owns": "ownsFiles", "test": "testCmd", "created_at": "createdAt", "title": "slug",
                "depends_on": "dependsOn"}
_LISTS = ("ownsFiles", "notes", "dependsOn")
"""The keys whose CSV cell holds a list."""
_KNOWN = ("id", "slug", "prompt", "ownsFiles", "testCmd", "priority", "status", "createdAt", "notes",
          "dependsOn", "depends_on", "estimate_s", "worker", "issue")
_NOT_ID = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class Record:
    """One source record and where it starts (1-based line and column)."""

    fields: Mapping[str, object]
    line: int
    column: int
    names: Mapping[str, str] = field(default_factory=dict)
    """Source key -> the name the file gave it, where they differ (a CSV column ``owns`` is ``ownsFiles``)."""
    cells: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    """Source key -> where its value starts (line, column), where the source says (a CSV row's cells)."""


@dataclass(frozen=True)
class Imported:
    items: list[tracker.Item]
    ignored_keys: list[str]
    """Keys some record had that wavegit has no place for (reported, not an error)."""


def read_backlog(text: str, path: str, source: str, taken_ids: Set[str],
                 protected: tuple[str, ...] = DEFAULT_PROTECTED, profiles: tuple[str, ...] = ()) -> Imported:
    """The items of ``text`` (a ``source`` backlog read from ``path``), none with an id in ``taken_ids``,
    owning a ``protected`` path or naming a ``worker`` not in ``profiles`` (the config's profile names);
    ValidationError with every problem, each at the source's line."""
    reader = {"aesop": _aesop_records, "jsonl": _jsonl_records, "csv": _csv_records}[source]
    records, problems = reader(text, path)
    items: list[tuple[tracker.Item, int]] = []
    taken = set(taken_ids)
    explicit = {str(r.fields["id"]) for r in records if isinstance(r.fields.get("id"), str)}
    ignored: dict[str, None] = {}
    conversions: list[tuple[_Conversion, tracker.Item | None]] = []
    named: dict[str, str] = {}
    """A record's slug -> the id it was given: a dependency may name either."""
    unconverted: set[str] = set()
    """The ids and slugs of records with problems of their own: a dependency naming one is not another."""
    for n, record in enumerate(records):
        ignored.update(dict.fromkeys(key for key in record.fields if key not in _KNOWN))
        converted = _Conversion(record, n, path, problems, protected, profiles)
        # A view, not a copy of the taken ids per record: copies made an import of 10,000 quadratic.
        item = converted.item(partial(_is_taken, taken, explicit, str(record.fields.get("id"))))
        if item is not None:
            taken.add(item.id)
            if item.title:
                named.setdefault(item.title, item.id)
        else:
            unconverted.update(str(record.fields[key]) for key in ("id", "slug") if record.fields.get(key))
            # Its id stays taken: a later record giving it again is a problem now, not after this one's fix.
            if isinstance(record.fields.get("id"), str) and record.fields["id"]:
                taken.add(str(record.fields["id"]))
        conversions.append((converted, item))
    for converted, item in conversions:  # a record with other problems has its dependencies checked too
        resolved = converted.dependencies(item.id if item else None, named, taken, unconverted)
        if item is not None and resolved is not None:
            items.append((replace(item, depends_on=resolved), converted.position))
    _check_cycles(items, {item.id: converted for converted, item in conversions if item is not None})
    if problems:
        raise ValidationError(sorted(problems, key=lambda problem: (problem.line, problem.col)))
    items.sort(key=lambda pair: _age_key(pair[0], pair[1]))
    return Imported([item for item, _ in items], list(ignored))


def _is_taken(taken: Set[str], explicit: Set[str], own: str, name: str) -> bool:
    """Whether a record may not have the id ``name``: the tracker or an earlier record has it, or another
    record gives it explicitly (``own`` is the record's own explicit id)."""
    return name in taken or (name != own and name in explicit)


def _check_cycles(items: list[tuple[tracker.Item, int]],
                  conversions: Mapping[str, _Conversion]) -> None:
    """A problem at each record of a dependency cycle among the imported items (the tracker's own items
    depend on none of them), where the file says it, not at the line of a tracker it never got into."""
    graph = {item.id: [dep for dep in item.depends_on if dep in conversions] for item, _ in items}
    for cycle in dependencies.cycles(graph):
        text = " -> ".join((*cycle, cycle[0]))
        for member in cycle:
            converted = conversions[member]
            key = "dependsOn" if "dependsOn" in converted.fields else "depends_on"
            converted.problem(f"{key}: dependency cycle: {text}", "remove one of these dependencies")


def _age_key(item: tracker.Item, position: int) -> tuple[int, datetime, int]:
    if item.created_at is None:
        return (1, datetime.min.replace(tzinfo=timezone.utc), position)
    return (0, _parse_time(item.created_at), position)


def _parse_time(text: str) -> datetime:
    moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace(" ", "T"))
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


class _Conversion:
    """One record turned into an item, its problems added to the shared list."""

    def __init__(self, record: Record, position: int, path: str, problems: list[Problem],
                 protected: tuple[str, ...], profiles: tuple[str, ...]) -> None:
        self.record = record
        self.profiles = profiles
        self.position = position
        self.depends: tuple[str, ...] = ()
        """The ids or slugs its dependency key names (resolved once every record has its id)."""
        self.protected = protected
        self.fields = record.fields
        self.path = path
        self.problems = problems
        slug = self.fields.get("slug")
        self.name = f"item {position + 1}" + (f" ({slug})" if isinstance(slug, str) and slug else "")
        self.failed = False

    def problem(self, message: str, hint: str | None = None) -> None:
        """``message`` (which starts with the source key at fault) said with the key as the file names it."""
        self.failed = True
        where = self.record
        # The cell of the key the message starts with (the longest: "id" is no cell of "idea ...").
        cell = max((key for key in where.cells if re.match(rf"{re.escape(key)}\b", message)), key=len,
                   default=None)
        line, column = where.cells[cell] if cell is not None else (where.line, where.column)
        key = next((key for key in where.names if message.startswith(key)), None)
        if key is not None:
            message = where.names[key] + message[len(key):]
        self.problems.append(Problem(self.path, line, column, f"{self.name}: {message}", hint=hint))

    def item(self, taken: Callable[[str], bool]) -> tracker.Item | None:
        title = self.text("slug", "title")
        prompt = self.text("prompt", "prompt", required=True)
        test = self.text("testCmd", "test", required=True)
        owns = self.owns()
        priority = self.text("priority", "priority") or DEFAULT_PRIORITY
        status, notes = self.status(), self.strings("notes")
        if self.fields.get("status") == "in_progress":
            notes = (*notes, "imported as todo: it was in_progress in the source, where nothing runs it now")
        created_at = self.text("createdAt", "created_at") or None
        if created_at is not None:
            self.real_time(created_at)
        worker = self.text("worker", "worker") or None
        if worker is not None:
            self.profile(worker)
        issue = self.value("issue", "issue")
        estimate_s = self.value("estimate_s", "estimate_s")
        self.depends = self.dependency_names()
        item_id = self.item_id(title, taken)
        if self.failed or item_id is None:
            return None
        return tracker.Item(id=item_id, title=title, prompt=prompt, owns=owns, test=test, priority=priority,
                            status=status, created_at=created_at, notes=notes, worker=worker,
                            issue=issue if isinstance(issue, int) else None,
                            estimate_s=estimate_s if isinstance(estimate_s, float) else None)

    def dependency_names(self) -> tuple[str, ...]:
        if "dependsOn" in self.fields and "depends_on" in self.fields:
            self.problem("dependsOn and depends_on are both given: keep one")
            return ()
        return self.strings("dependsOn" if "dependsOn" in self.fields else "depends_on")

    def dependencies(self, item_id: str | None, named: Mapping[str, str], known: Set[str],
                     unconverted: Set[str]) -> tuple[str, ...] | None:
        """The ids the item (``item_id``, None when it has none) depends on (a slug of this file stands for
        the id it was given), each one in the tracker or the file; None when one is not (a problem is
        added, unless it names a record of ``unconverted``, whose own problems are reported)."""
        key = "dependsOn" if "dependsOn" in self.fields else "depends_on"
        resolved = []
        for name in self.depends:
            dep = name if name in known else named.get(name, name)
            if dep == item_id:
                self.problem(f"{key} {name!r}: an item cannot depend on itself")
            elif dep not in known and dep not in unconverted:
                self.problem(f"{key} {name!r}: no such id in the tracker or this file, nor slug in this file")
            resolved.append(dep)
        return None if self.failed else tuple(dict.fromkeys(resolved))

    def value(self, key: str, spec: str | schema.Field, *, required: bool = False) -> Value:
        """The source's ``key`` decoded as the tracker's field ``spec`` (its name) is: its type, choices and
        check; None when it is absent or empty."""
        raw = self.fields.get(key)
        if raw is None or raw == "":
            if required:
                self.problem(f"{key} is missing")
            return None
        try:
            return jsondecode.plain_value(raw, spec if isinstance(spec, schema.Field)
                                          else tracker.ITEM_SCHEMA.index[spec])
        except schema.Refused as exc:
            self.problem(f"{key}: {exc}", exc.hint)
            return None

    def text(self, key: str, name: str, *, required: bool = False) -> str:
        value = self.value(key, name, required=required)
        return value if isinstance(value, str) else ""

    def strings(self, key: str) -> tuple[str, ...]:
        value = self.value(key, "notes")  # a list of strings, as they are
        return value if isinstance(value, tuple) else ()

    def real_time(self, text: str) -> None:
        """The shape check passes a month 13 or a February 30th; the age order needs a real time."""
        try:
            _parse_time(text)
        except ValueError as exc:
            self.problem(f"createdAt {text!r} is not a real time: {exc}")

    def owns(self) -> tuple[str, ...]:
        if "ownsFiles" not in self.fields:
            self.problem("ownsFiles is missing: list the files the item may change")
            return ()
        paths = self.strings("ownsFiles")
        if self.fields["ownsFiles"] == []:
            self.problem("ownsFiles is empty: list the files the item may change")
        patterns = []
        for raw in paths:
            try:
                pattern = normalize(raw.replace("\\", "/"))  # another tool's Windows path; normalize drops ./
            except PatternError as exc:
                self.problem(f"ownsFiles {raw!r}: {exc}")
                continue
            guard = reached(pattern, self.protected)
            if guard is not None:
                # Else the tracker refuses it after the append, at a line of a file never written.
                self.problem(f"ownsFiles {raw!r}: {refusal(pattern, guard)}")
            patterns.append(pattern)
        return tuple(patterns)

    def profile(self, name: str) -> None:
        """Else the tracker is written and then refused whole by ``validate``, ``plan`` and ``run``."""
        if name not in self.profiles:
            guess = schema.nearest(name, self.profiles)
            known = ", ".join(self.profiles) or "it has none"
            hint = f"did you mean '{guess}'?" if guess else "add it to `workers` in .wavegit/config.yaml"
            self.problem(f"worker {name!r}: no such profile in `workers` of the config ({known})", hint)

    def status(self) -> str:
        return _STATUSES.get(str(self.value("status", _STATUS)), "todo")

    def item_id(self, title: str, taken: Callable[[str], bool]) -> str | None:
        if self.fields.get("id") not in (None, ""):
            given = self.text("id", "id")
            if taken(given):
                self.problem(f"id {given!r} is already taken (in the tracker or earlier in this file)")
            return given or None
        base = _NOT_ID.sub("-", title).strip("-.")[:60].rstrip("-.") or "ITEM"
        candidate, n = base, 1
        while taken(candidate):
            n += 1
            candidate = f"{base}-{n}"
        return candidate


# -- the three sources ---------------------------------------------------------------------------------------

Read = tuple[list[Record], list[Problem]]
"""A source's records, and the problems of the entries that are no record at all."""


_TOO_DEEP = "nested too deeply to be a backlog"


def _aesop_records(text: str, path: str) -> Read:
    try:
        data = json.loads(text)
        # The items are read from the first "items" key, json.loads keeps the last: there must be one.
        outer = json.loads(text, object_pairs_hook=list) if isinstance(data, dict) else []
    except json.JSONDecodeError as exc:
        raise ValidationError([Problem(path, exc.lineno, exc.colno, f"not JSON: {exc.msg}",
                                       hint=_other_source(text, path, exc))]) from None
    except RecursionError:
        raise ValidationError([Problem(path, 1, 1, f"not JSON: {_TOO_DEEP}")]) from None
    except ValueError as exc:  # an integer of more digits than Python converts
        raise ValidationError([Problem(path, 1, 1, f"not JSON: {exc}")]) from None
    keys = [key for key, _ in outer]
    repeated = [key for n, key in enumerate(keys) if key in keys[:n]]
    if repeated:
        raise ValidationError([Problem(path, 1, 1, f"the key {repeated[0]!r} appears more than once")])
    if not isinstance(data.get("items") if isinstance(data, dict) else data, list):
        raise ValidationError([Problem(path, 1, 1, 'expected a list of items or an object with "items"')])
    return _records(text, path, list(_element_starts(text, isinstance(data, dict))))


def _other_source(text: str, path: str, exc: json.JSONDecodeError) -> str | None:
    """The ``--from`` a file that is not one JSON document looks written for, as a hint; None if none."""
    if exc.msg == "Extra data" and exc.lineno > 1 and text.lstrip().startswith("{"):
        return "one record per line is `--from jsonl`"
    if path.lower().endswith(".csv"):
        return "a CSV file is `--from csv`"
    return None


def _records(text: str, path: str, starts: list[int]) -> Read:
    return _split(_entry(partial(_value_at, text, start), path, *_position(text, start)) for start in starts)


def _value_at(text: str, start: int) -> object:
    return jsondecode.DECODER.raw_decode(text, start)[0]


def _entry(read: Callable[[], object], path: str, line: int, column: int) -> Record | Problem:
    """The record ``read`` decodes (strictly: it may raise what ``jsondecode.DECODER`` does), or why it is
    none, at ``line`` and ``column``."""
    try:
        value = read()
    except json.JSONDecodeError as exc:
        return Problem(path, line, exc.colno, f"not JSON: {exc.msg}")
    except jsondecode.DuplicateKey as exc:
        return Problem(path, line, column, f"{exc} in the item")
    except RecursionError:
        return Problem(path, line, column, f"not JSON: {_TOO_DEEP}")
    except ValueError as exc:  # NaN, Infinity, or an integer of more digits than Python converts
        return Problem(path, line, column, f"not JSON: {exc}")
    if isinstance(value, dict):
        return Record(value, line, column)
    return Problem(path, line, column, f"an item must be an object, not {json.dumps(value)}")


def _split(entries: Iterable[Record | Problem]) -> Read:
    found = list(entries)
    return [e for e in found if isinstance(e, Record)], [e for e in found if isinstance(e, Problem)]


def _element_starts(text: str, in_object: bool) -> Iterator[int]:
    """Where each element of the items array starts: the top-level array, or the value of ``items``
    (``text`` is valid JSON of that shape: :func:`_aesop_records` checked it)."""
    decoder = json.JSONDecoder()
    pos = _skip(text, 0)
    if in_object:
        pos = _skip(text, pos + 1)
        while True:
            key, pos = decoder.raw_decode(text, pos)
            pos = _skip(text, _skip(text, pos) + 1)
            if key == "items":
                break
            _, pos = decoder.raw_decode(text, pos)
            pos = _skip(text, _skip(text, pos) + 1)
    pos = _skip(text, pos + 1)
    while text[pos] != "]":
        yield pos
        _, pos = decoder.raw_decode(text, pos)
        pos = _skip(text, pos)
        if text[pos] == ",":
            pos = _skip(text, pos + 1)


def _skip(text: str, pos: int) -> int:
    while text[pos] in " \t\r\n":
        pos += 1
    return pos


def _position(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _jsonl_records(text: str, path: str) -> Read:
    # Lines end at "\n" only: ``splitlines`` also ends one at U+2028, U+2029 or U+0085, which a JSON string
    # may hold as they are, and cut such a record in two, every later line numbered one too far.
    return _split(_entry(partial(jsondecode.DECODER.decode, line), path, number, 1)
                  for number, line in enumerate(text.split("\n"), 1) if line.strip())


def _csv_records(text: str, path: str) -> Read:
    # strict: a quote left open runs to the end of the file, which is an error, not one long last cell.
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader)
    except StopIteration:
        raise ValidationError([Problem(path, 1, 1, "empty file: expected a header row")]) from None
    except csv.Error as exc:
        raise ValidationError([Problem(path, 1, 1, f"not CSV: {exc}")]) from None
    # A spreadsheet's UTF-8 export starts with a byte order mark, which is no part of the first name.
    names = [name.strip() for name in header]
    names[:1] = [name.removeprefix("\ufeff") for name in names[:1]]
    columns = [_CSV_ALIASES.get(name, name) for name in names]
    renamed = {column: name for column, name in zip(columns, names, strict=True) if column != name}
    repeated = [name for n, name in enumerate(columns) if name and name in columns[:n]]
    if repeated:
        raise ValidationError([Problem(path, 1, 1, f"the column {repeated[0]!r} appears more than once")])
    records: list[Record] = []
    problems: list[Problem] = []
    lines = io.StringIO(text, newline="").readlines()  # as the reader counts them
    start = reader.line_num + 1
    try:
        for row in reader:
            # A row's own first line: a quoted cell may span several.
            line, start = start, reader.line_num + 1
            if not any(cell.strip() for cell in row):
                continue
            starts = _cell_starts(lines, line)
            if len(row) > len(columns):
                extra_line, extra_column = starts[len(columns)]  # the first cell too many
                problems.append(Problem(path, extra_line, extra_column,
                                        f"{len(row)} cells; the header has {len(columns)}"))
                continue
            # Cells left off the end of a row are empty, as spreadsheets write them.
            row += [""] * (len(columns) - len(row))
            fields: dict[str, object] = {}
            for name, cell in zip(columns, row, strict=True):
                if name in _LISTS:
                    fields[name] = [part.strip() for part in cell.split(LIST_SEPARATOR) if part.strip()]
                elif cell != "":
                    fields[name] = _cell_number(name, cell)
            records.append(Record(fields, line, 1, renamed, dict(zip(columns, starts, strict=False))))
    except csv.Error as exc:
        unclosed = str(exc) == "unexpected end of data"
        problems.append(Problem(path, start if unclosed else reader.line_num, 1,
                                "a quote opened in this row is not closed before the end of the file"
                                if unclosed else f"not CSV: {exc}"))
    return records, problems


def _cell_starts(lines: list[str], first: int) -> list[tuple[int, int]]:
    """Where each cell of the row that starts on line ``first`` (1-based) starts, as (line, column), read as
    the csv module's default dialect reads it: ``,`` between cells, ``"`` quoting a cell it opens, ``""``
    a quote inside one; a quoted cell may hold line breaks."""
    starts = [(first, 1)]
    quoted = False
    for number in range(first, len(lines) + 1):
        text = lines[number - 1]
        column = 0
        while column < len(text):
            char = text[column]
            if quoted:
                if char == '"' and text[column + 1:column + 2] == '"':
                    column += 1  # a quote inside the cell
                elif char == '"':
                    quoted = False
            elif char == '"' and starts[-1] == (number, column + 1):
                quoted = True
            elif char == ",":
                starts.append((number, column + 2))
            elif char in "\r\n":
                return starts
            column += 1
        if not quoted:
            break
    return starts


def _cell_number(name: str, cell: str) -> object:
    """A CSV cell as the JSON sources' type: an issue number and an estimate are numbers when they read as
    one; anything else stays text, refused as written."""
    if name == "issue" and cell.strip().isascii() and cell.strip().isdigit():  # "²" is a digit, no number
        return int(cell)
    if name == "estimate_s":
        with contextlib.suppress(ValueError):
            number = float(cell)
            if math.isfinite(number):  # "nan" and "inf" stay text, refused as written
                return number
    return cell
