"""wavegit.model.importers: aesop JSON, JSONL and CSV backlogs read as tracker items, every problem at its
line."""

from __future__ import annotations

import json

import pytest

from wavegit.core.errors import ValidationError
from wavegit.model import tracker
from wavegit.model.importers import read_backlog


def record(slug: str, **extra: object) -> dict[str, object]:
    return {"slug": slug, "prompt": f"do {slug}", "ownsFiles": [f"src/{slug}.py"], "testCmd": "true", **extra}


def problems_of(text: str, source: str = "aesop", taken: frozenset[str] = frozenset()) -> list[str]:
    with pytest.raises(ValidationError) as raised:
        read_backlog(text, "backlog.json", source, taken)
    return [str(problem) for problem in raised.value.problems]


def test_an_aesop_record_maps_onto_an_item_field_by_field() -> None:
    source = {"items": [{"slug": "fix login", "prompt": "Fix the login.", "ownsFiles": [".\\src\\login.py",
                                                                                       "./tests/login/"],
                         "testCmd": "pytest -q tests/login", "priority": "P1", "status": "todo",
                         "createdAt": "2026-02-01T10:00:00Z", "notes": ["from the old board"]}]}
    [item] = read_backlog(json.dumps(source), "backlog.json", "aesop", frozenset()).items
    assert item == tracker.Item(id="fix-login", title="fix login", prompt="Fix the login.",
                                owns=("src/login.py", "tests/login/"), test="pytest -q tests/login",
                                priority="P1", status="todo", created_at="2026-02-01T10:00:00Z",
                                notes=("from the old board",))


def test_missing_priority_is_p3_as_the_source_treats_it_and_a_bare_list_is_accepted() -> None:
    [item] = read_backlog(json.dumps([record("a")]), "b.json", "aesop", frozenset()).items
    assert item.priority == "P3"


def test_in_progress_is_imported_as_todo_with_a_note_and_done_and_failed_are_kept() -> None:
    text = json.dumps([record("a", status="in_progress"), record("b", status="done"),
                       record("c", status="failed")])
    items = read_backlog(text, "b.json", "aesop", frozenset()).items
    assert [(i.id, i.status) for i in items] == [("a", "todo"), ("b", "done"), ("c", "failed")]
    assert "in_progress in the source" in items[0].notes[-1]


def test_items_come_oldest_first_and_those_without_a_creation_time_keep_their_order_after() -> None:
    text = json.dumps([record("undated-1"), record("new", createdAt="2026-03-01T00:00:00+02:00"),
                       record("old", createdAt="2026-01-01"), record("undated-2"),
                       record("mid", createdAt="2026-02-28T23:00:00Z")])
    items = read_backlog(text, "b.json", "aesop", frozenset()).items
    assert [i.id for i in items] == ["old", "new", "mid", "undated-1", "undated-2"]


def test_derived_ids_are_valid_and_unique_against_the_tracker_and_each_other() -> None:
    text = json.dumps([record("Fix: the/login page!"), record("Fix: the/login page!"), record("taken"),
                       record("..."), record("ok", id="EXPLICIT")])
    items = read_backlog(text, "b.json", "aesop", frozenset({"taken"})).items
    ids = [i.id for i in items]
    assert ids == ["Fix-the-login-page", "Fix-the-login-page-2", "taken-2", "ITEM", "EXPLICIT"]
    assert all(tracker.ITEM_SCHEMA.field("id").check(i) is None for i in ids)  # type: ignore[union-attr,misc]


def test_a_derived_id_never_takes_an_explicit_id_given_later_in_the_file() -> None:
    text = json.dumps([record("later"), record("x", id="later")])
    assert [i.id for i in read_backlog(text, "b.json", "aesop", frozenset()).items] == ["later-2", "later"]


def test_an_id_given_again_after_a_record_with_problems_is_still_taken() -> None:
    # Reported only once the first record was fixed, one import after another, before.
    records = (record("a", id="A-1", ownsFiles=["../a"]), record("b", id="A-1"))
    assert problems_of("\n".join(json.dumps(r) for r in records), "jsonl") == [
        "backlog.json:1:1: item 1 (a): ownsFiles '../a': pattern '../a': has a '..' segment; write it from "
        "the repository root, no '..'",
        "backlog.json:2:1: item 2 (b): id 'A-1' is already taken (in the tracker or earlier in this file)"]


def test_a_worker_naming_no_profile_of_the_config_is_a_problem_at_its_line() -> None:
    # Imported before, it made a tracker that validate, plan and run then refused whole.
    text = "\n".join(json.dumps(r) for r in (record("a", worker="fsat"), record("b", worker="slow"),
                                                record("c", worker="fast")))
    with pytest.raises(ValidationError) as raised:
        read_backlog(text, "b.jsonl", "jsonl", frozenset(), profiles=("fast", "deep"))
    assert [str(problem) for problem in raised.value.problems] == [
        "b.jsonl:1:1: item 1 (a): worker 'fsat': no such profile in `workers` of the config (fast, deep) "
        "(hint: did you mean 'fast'?)",
        "b.jsonl:2:1: item 2 (b): worker 'slow': no such profile in `workers` of the config (fast, deep) "
        "(hint: add it to `workers` in .wavegit/config.yaml)"]
    assert problems_of(text, "jsonl")[0].endswith("(it has none) (hint: add it to `workers` in "
                                                  ".wavegit/config.yaml)")


def test_every_problem_of_every_record_is_reported_at_its_line() -> None:
    text = "\n".join([
        "[",
        '  {"slug": "a", "prompt": "", "ownsFiles": ["/etc/passwd"], "testCmd": "sh -c \'x",'
        ' "priority": "P9"},',
        '  {"slug": "b", "prompt": "ok", "ownsFiles": [], "testCmd": "true", "status": "weird",'
        ' "createdAt": "yesterday"},',
        '\t{"id": "old", "prompt": "ok", "ownsFiles": ["a"], "testCmd": "true"},',
        '  "not an object"',
        "]"])
    assert problems_of(text, taken=frozenset({"old"})) == [
        "backlog.json:2:3: item 1 (a): prompt is missing",
        "backlog.json:2:3: item 1 (a): testCmd: cannot be split into words: No closing quotation "
        "(hint: a command; exit 0 means verified)",
        "backlog.json:2:3: item 1 (a): ownsFiles '/etc/passwd': pattern '/etc/passwd': is absolute; write it "
        "relative to the repository root, e.g. src/app.py",
        "backlog.json:2:3: item 1 (a): priority: must be one of P0, P1, P2, P3, got 'P9' (hint: e.g. 'P0')",
        "backlog.json:3:3: item 2 (b): ownsFiles is empty: list the files the item may change",
        "backlog.json:3:3: item 2 (b): status: must be one of todo, in_progress, done, failed, blocked, got "
        "'weird' (hint: e.g. 'todo')",
        "backlog.json:3:3: item 2 (b): createdAt: must be an ISO 8601 time (hint: e.g. 2026-01-31T09:30:00Z)",
        "backlog.json:4:2: item 3: id 'old' is already taken (in the tracker or earlier in this file)",
        'backlog.json:5:3: an item must be an object, not "not an object"']


@pytest.mark.parametrize(("text", "says"), [
    ('{"items": [\n  {"slug": "a",}\n]}',
     "backlog.json:2:16: not JSON: Expecting property name enclosed in double quotes"),
    ('{"tasks": []}', 'backlog.json:1:1: expected a list of items or an object with "items"'),
    ("42", 'backlog.json:1:1: expected a list of items or an object with "items"'),
    ('[{"slug": "a", "prompt": 3, "ownsFiles": "src/a.py", "testCmd": "true"}]',
     "backlog.json:1:2: item 1 (a): prompt: must be a string, got an integer (hint: what the worker is asked "
     "to do)"),
])
def test_a_file_that_is_not_an_aesop_backlog_is_one_located_problem(text: str, says: str) -> None:
    assert problems_of(text)[0] == says


def test_a_jsonl_or_csv_file_read_as_aesop_hints_at_the_right_source() -> None:
    lines = json.dumps(record("a")) + "\n" + json.dumps(record("b")) + "\n"
    [jsonl] = problems_of(lines)
    assert jsonl.startswith("backlog.json:2:1: not JSON: Extra data") and "`--from jsonl`" in jsonl
    with pytest.raises(ValidationError) as caught:
        read_backlog("slug,prompt,owns,test\na,b,c,d\n", "b.csv", "aesop", frozenset())
    assert [str(p) for p in caught.value.problems] == [
        "b.csv:1:1: not JSON: Expecting value (hint: a CSV file is `--from csv`)"]


def test_items_found_after_other_keys_of_the_object_are_located_right() -> None:
    text = '{"version": 3, "meta": {"items": [1]},\n "items": [\n   {"slug": "a", "prompt": ""}]}'
    assert problems_of(text)[0] == "backlog.json:3:4: item 1 (a): prompt is missing"


def test_jsonl_reads_one_record_per_line_and_skips_blank_lines() -> None:
    text = json.dumps(record("a")) + "\n\n" + json.dumps(record("b")) + "\n"
    assert [i.id for i in read_backlog(text, "b.jsonl", "jsonl", frozenset()).items] == ["a", "b"]
    bad = json.dumps(record("a")) + "\n[1]\n{oops\n" + json.dumps(record("a", prompt="")) + "\n"
    assert problems_of(bad, "jsonl") == [
        "backlog.json:2:1: an item must be an object, not [1]",
        "backlog.json:3:2: not JSON: Expecting property name enclosed in double quotes",
        "backlog.json:4:1: item 2 (a): prompt is missing"]


def test_csv_maps_its_columns_splits_lists_on_semicolons_and_pads_short_rows() -> None:
    text = ("slug,prompt,owns,test,priority,created_at,notes\n"
            'login,"Fix it, please",src/a.py; src/b/,pytest -q,P1,2026-01-02,first;second\n'
            "docs,Write docs,docs/,true\n")
    first, second = read_backlog(text, "b.csv", "csv", frozenset()).items
    assert (first.id, first.prompt, first.owns, first.test) == (
        "login", "Fix it, please", ("src/a.py", "src/b/"), "pytest -q")
    assert (first.priority, first.created_at, first.notes) == ("P1", "2026-01-02", ("first", "second"))
    assert (second.id, second.owns, second.priority, second.notes) == ("docs", ("docs/",), "P3", ())


def test_csv_problems_name_their_rows_and_the_column_of_the_cell_at_fault() -> None:
    # Every problem used to say column 1, whichever cell it was about.
    text = "slug,prompt,owns,test\na,do,src/a.py,true,extra\nb,do,,true\n"
    assert problems_of(text, "csv") == [
        "backlog.json:2:20: 5 cells; the header has 4",  # the first cell too many
        "backlog.json:3:6: item 1 (b): owns is empty: list the files the item may change"]
    by_source_key = "slug,prompt,ownsFiles,testCmd\nb,do,,true\n"
    assert problems_of(by_source_key, "csv") == [
        "backlog.json:2:6: item 1 (b): ownsFiles is empty: list the files the item may change"]


def test_csv_cell_columns_count_quoted_cells_as_written_and_a_cell_left_off_is_the_rows() -> None:
    text = 'id,prompt,owns,test,priority\nA-1,"say ""hi"", twice",/abs.py,"sh -c \'x",P7\nA-2,do,a.py\n'
    assert problems_of(text, "csv") == [
        "backlog.json:2:25: item 1: owns '/abs.py': pattern '/abs.py': is absolute; write it relative to "
        "the repository root, e.g. src/app.py",
        "backlog.json:2:33: item 1: test: cannot be split into words: No closing quotation "
        "(hint: a command; exit 0 means verified)",
        "backlog.json:2:44: item 1: priority: must be one of P0, P1, P2, P3, got 'P7' (hint: e.g. 'P0')",
        "backlog.json:3:1: item 2: test is missing"]


def test_a_csv_quote_left_open_is_named_at_the_row_it_opens_in_not_read_as_one_long_cell() -> None:
    text = 'slug,prompt,owns,test\na,do,src/a.py,true\n\nb,"do it\nmore,src/b.py,true\n'
    assert problems_of(text, "csv") == [
        "backlog.json:4:1: a quote opened in this row is not closed before the end of the file"]


def test_csv_problems_of_a_row_with_a_cell_over_several_lines_name_the_line_of_their_cell() -> None:
    text = 'slug,prompt,owns,test\na,"line one\nline two",,true\nb,do,,true\n'
    assert problems_of(text, "csv") == [
        "backlog.json:3:11: item 1 (a): owns is empty: list the files the item may change",
        "backlog.json:4:6: item 2 (b): owns is empty: list the files the item may change"]


def test_csv_numbers_that_only_look_like_numbers_are_refused_as_written_not_a_traceback() -> None:
    # int("²") raised ValueError through read_backlog; float("nan") was "must be a number, got a number".
    text = "slug,prompt,owns,test,issue,estimate_s\na,do,src/a.py,true,²,nan\n"
    assert problems_of(text, "csv") == [
        "backlog.json:2:20: item 1 (a): issue: must be an integer, got a string "
        "(hint: the issue number, e.g. 17)",
        "backlog.json:2:22: item 1 (a): estimate_s: must be a number, got a string (hint: seconds, e.g. 900)"]


def test_keys_wavegit_has_no_place_for_are_listed_not_refused() -> None:
    imported = read_backlog(json.dumps([record("a", assignee="bob", estimate=3)]), "b.json", "aesop",
                            frozenset())
    assert imported.ignored_keys == ["assignee", "estimate"]


# --- hostile backlogs: each is one located problem, never a traceback ---------------------------------------

ITEM = '{"prompt": "p", "testCmd": "true", "ownsFiles": ["src/a.py"]}'


@pytest.mark.parametrize(("text", "source", "says"), [
    ("[" * 100000 + "]" * 100000, "aesop", "backlog.json:1:1: not JSON: nested too deeply"),
    ('[{"a": ' * 3000 + "1" + "}]" * 3000, "aesop", "backlog.json:1:1: not JSON: nested too deeply"),
    ("[" * 100000 + "]" * 100000 + "\n", "jsonl", "backlog.json:1:1: not JSON: nested too deeply"),
    ('{"items": 5, "items": [' + ITEM + "]}", "aesop", "backlog.json:1:1: the key 'items' appears more"),
    ('{"items": [' + ITEM + '], "items": []}', "aesop", "backlog.json:1:1: the key 'items' appears more"),
    ('[\n ' + ITEM[:-1] + ', "ownsFiles": [".github/workflows/"]}]', "aesop",
     "backlog.json:2:2: the key 'ownsFiles' appears more than once in the item"),
    (ITEM[:-1] + ', "ownsFiles": [".github/"]}\n', "jsonl",
     "backlog.json:1:1: the key 'ownsFiles' appears more than once in the item"),
    ("slug,prompt,testCmd,ownsFiles,ownsFiles\na,p,true,src/a.py,.github/\n", "csv",
     "backlog.json:1:1: the column 'ownsFiles' appears more than once"),
    ('[{"id": ' + "9" * 5000 + "}]", "aesop", "backlog.json:1:1: not JSON: Exceeds the limit"),
    ('{"id": ' + "9" * 5000 + "}\n", "jsonl", "backlog.json:1:1: not JSON: Exceeds the limit"),
    # NaN and Infinity are no JSON, though Python writes them: read as the reports are, they are refused.
    ('[\n ' + ITEM[:-1] + ', "estimate": NaN}]', "aesop", "backlog.json:2:2: not JSON: NaN is not allowed"),
    (ITEM[:-1] + ', "issue": -Infinity}\n', "jsonl", "backlog.json:1:1: not JSON: -Infinity is not allowed"),
])
def test_attack_deep_nesting_huge_numbers_and_duplicate_keys_are_located_problems(text: str, source: str,
                                                                     says: str) -> None:
    # Duplicates: JSON keeps the last, a reviewer of the file may read the first.
    [problem] = problems_of(text, source)
    assert problem.startswith(says)


def test_attack_a_creation_time_of_the_right_shape_but_no_real_day_is_a_problem_not_a_crash() -> None:
    text = json.dumps([record("a", createdAt="2026-13-01T00:00:00Z"), record("b", createdAt="2026-01-01")])
    [problem] = problems_of(text)
    assert "item 1 (a): createdAt '2026-13-01T00:00:00Z' is not a real time" in problem


def test_a_spreadsheets_byte_order_mark_is_not_part_of_the_first_column_name() -> None:
    text = "\ufeffslug,prompt,testCmd,ownsFiles\nfix-a,p,true,src/a.py\n"
    imported = read_backlog(text, "b.csv", "csv", frozenset())
    assert [item.title for item in imported.items] == ["fix-a"] and imported.ignored_keys == []


def test_attack_a_record_owning_a_protected_path_is_a_problem_at_its_line() -> None:
    text = json.dumps([record("ok"), record("steer", ownsFiles=[".github\\workflows\\ci.yml"])], indent=1)
    [problem] = problems_of(text)
    assert problem.startswith("backlog.json:10:2: item 2 (steer): ownsFiles "
                              "'.github\\\\workflows\\\\ci.yml': pattern '.github/workflows/ci.yml' "
                              "can match the protected path")


# --- every tracker key, from every format (issue 22) --------------------------------------------------------

EVERY_KEY = {
    "aesop": json.dumps({"items": [
        record("base", id="BASE-1", worker="fast", issue=7, estimate_s=900),
        record("next", dependsOn=["BASE-1", "base"], status="blocked"),
        record("last", depends_on=["next"])]}),
    "jsonl": "\n".join(json.dumps(r) for r in (
        record("base", id="BASE-1", worker="fast", issue=7, estimate_s=900),
        record("next", dependsOn=["BASE-1", "base"], status="blocked"),
        record("last", depends_on=["next"]))),
    "csv": ("id,slug,prompt,owns,test,worker,issue,estimate_s,depends_on,status\n"
            "BASE-1,base,do base,src/base.py,true,fast,7,900,,\n"
            ",next,do next,src/next.py,true,,,,BASE-1;base,blocked\n"
            ",last,do last,src/last.py,true,,,,next,\n"),
}


@pytest.mark.parametrize("source", list(EVERY_KEY))
def test_every_tracker_key_is_imported_from_every_format_dependencies_included(source: str) -> None:
    imported = read_backlog(EVERY_KEY[source], "backlog", source, frozenset(), profiles=("fast",))
    assert imported.ignored_keys == []
    by_id = {item.id: item for item in imported.items}
    # estimate_s came with issue 23 and was "ignored (wavegit has no place for it)" on import.
    assert (by_id["BASE-1"].worker, by_id["BASE-1"].issue, by_id["BASE-1"].estimate_s) == ("fast", 7, 900)
    assert by_id["next"].estimate_s is None
    # A dependency names an id of the file or the slug of one: the slug stands for the id it was given.
    assert by_id["next"].depends_on == ("BASE-1",) and by_id["next"].status == "blocked"
    assert by_id["last"].depends_on == ("next",)


def test_a_dependency_cycle_in_the_file_is_a_problem_at_each_of_its_records() -> None:
    # A trial's dry run said it would add a two-item cycle; the import itself was then refused at lines of a
    # tracker it never got into (`.wavegit/tracker.yaml:18326:18`).
    text = "".join(json.dumps(r) + "\n" for r in [
        record("a", id="A-1", dependsOn=["b"]), record("b", id="B-1", dependsOn=["A-1"]),
        record("c", dependsOn=["A-1"])])
    assert problems_of(text, "jsonl") == [
        "backlog.json:1:1: item 1 (a): dependsOn: dependency cycle: A-1 -> B-1 -> A-1 (hint: remove one of "
        "these dependencies)",
        "backlog.json:2:1: item 2 (b): dependsOn: dependency cycle: A-1 -> B-1 -> A-1 (hint: remove one of "
        "these dependencies)"]


def test_a_dependency_on_a_record_with_problems_of_its_own_is_not_called_unknown() -> None:
    # A trial's CSV: the second record's bad path made the first's dependency on it "no such id".
    text = "id,prompt,owns,test,depends_on\nQ-1,p,a.py,true,Q-2\nQ-2,p,/abs,true,\n"
    assert problems_of(text, "csv") == [
        "backlog.json:3:7: item 2: owns '/abs': pattern '/abs': is absolute; write it relative to the "
        "repository root, e.g. src/app.py"]


def test_dependencies_are_checked_like_the_trackers_and_every_problem_of_a_record_is_reported() -> None:
    text = json.dumps([
        {"slug": "bad", "priority": "P9", "ownsFiles": [], "testCmd": "", "dependsOn": ["nope"],
         "issue": 0, "worker": " "},
        record("self", dependsOn=["self"]),
        record("both", dependsOn=["self"], depends_on=["self"]),
        record("known", dependsOn=["OLD-1"])])
    assert problems_of(text, taken=frozenset({"OLD-1"})) == [
        "backlog.json:1:2: item 1 (bad): prompt is missing",
        "backlog.json:1:2: item 1 (bad): testCmd is missing",
        "backlog.json:1:2: item 1 (bad): ownsFiles is empty: list the files the item may change",
        "backlog.json:1:2: item 1 (bad): priority: must be one of P0, P1, P2, P3, got 'P9' (hint: e.g. 'P0')",
        "backlog.json:1:2: item 1 (bad): worker: must not be empty (hint: a profile name from `workers` in "
        ".wavegit/config.yaml)",
        "backlog.json:1:2: item 1 (bad): issue: must be at least 1 (hint: the issue number, e.g. 17)",
        "backlog.json:1:2: item 1 (bad): dependsOn 'nope': no such id in the tracker or this file, nor slug "
        "in this file",
        "backlog.json:1:119: item 2 (self): dependsOn 'self': an item cannot depend on itself",
        "backlog.json:1:230: item 3 (both): dependsOn and depends_on are both given: keep one"]


def test_an_estimate_is_a_number_of_seconds_checked_like_the_trackers() -> None:
    header = "slug,prompt,testCmd,ownsFiles,estimate_s\n"
    assert problems_of(f"{header}a,p,true,src/a.py,soon\nb,p,true,src/b.py,-5\n", "csv") == [
        "backlog.json:2:19: item 1 (a): estimate_s: must be a number, got a string (hint: seconds, e.g. 900)",
        "backlog.json:3:19: item 2 (b): estimate_s: must be at least 0 (hint: seconds, e.g. 900)"]
    [taken] = read_backlog(f"{header}c,p,true,src/c.py,90.5\n", "b.csv", "csv", frozenset()).items
    assert taken.estimate_s == 90.5




def test_a_jsonl_string_holding_a_unicode_line_separator_is_one_record_lines_end_at_newlines_only() -> None:
    records = (record("a", prompt="one\u2028two\u0085three\u2029four"), record("b", priority="high"))
    text = "\r\n".join(json.dumps(r, ensure_ascii=False) for r in records)
    assert problems_of(text, "jsonl") == [
        "backlog.json:2:1: item 2 (b): priority: must be one of P0, P1, P2, P3, got 'high' (hint: e.g. 'P0')"]
    [item] = read_backlog(json.dumps(records[0], ensure_ascii=False), "b.jsonl", "jsonl", frozenset()).items
    assert item.prompt == "one\u2028two\u0085three\u2029four"
