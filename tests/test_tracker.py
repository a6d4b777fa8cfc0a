"""The tracker model: loading, non-strict problems, the blob-SHA parse cache, minimal-diff edits."""

from __future__ import annotations

import dataclasses
import difflib
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.readme import key_table, readme_tables
from tests.helpers.repos import REPO_ROOT, git, wavegit
from tests.helpers.wave import branches, item, make_wave_repo
from wavegit.core import parsecache, yamledit
from wavegit.core.errors import UsageError, ValidationError
from wavegit.model import select, tracker

EXAMPLE = (REPO_ROOT / "examples" / "tracker.yaml").read_text()


def test_example_tracker_loads_with_all_fields_typed() -> None:
    loaded = tracker.loads(EXAMPLE)
    assert len(loaded.items) == 8
    ops = loaded.get("OPS-5")
    assert ops is not None and ops.attempts == 1 and ops.priority == "P0" and ops.last_error
    ui = loaded.get("UI-4")
    assert ui is not None and ui.pr == 41 and ui.owns == ("web/styles/**/*.css", "web/theme.ts")
    assert loaded.get("API-7").claimed_at == "2026-01-01T09:00:00Z"  # type: ignore[union-attr]
    assert loaded.get("NOPE") is None
    assert [i.index for i in loaded.items] == list(range(8))


def test_owns_paths_are_normalised() -> None:
    text = "version: 1\nitems:\n  - id: A\n    prompt: p\n    owns: [./src//a.py]\n    test: t\n"
    assert tracker.loads(text).items[0].owns == ("src/a.py",)


def test_non_strict_load_attaches_item_problems_instead_of_raising() -> None:
    text = EXAMPLE.replace("status: todo\n\n  - id: API-7", "status: doing\n\n  - id: API-7")
    with pytest.raises(ValidationError):
        tracker.loads(text)
    item = tracker.loads(text, strict=False).get("AUTH-12")
    assert item is not None and item.problems and "doing" in item.problems[0]


def test_non_strict_load_still_raises_document_level_problems() -> None:
    with pytest.raises(ValidationError, match="version"):
        tracker.loads(EXAMPLE.replace("version: 1", "version: 7"), strict=False)


def test_dependency_cycle_is_named_with_its_members() -> None:
    text = ("version: 1\nitems:\n  - {id: A, prompt: p, owns: [a], test: t, depends_on: [B]}\n"
            "  - {id: B, prompt: p, owns: [b], test: t, depends_on: [A]}\n")
    with pytest.raises(ValidationError, match=r"dependency cycle: A -> B -> A"):
        tracker.loads(text)


def test_a_test_command_the_wave_could_not_split_is_a_located_problem() -> None:
    text = "version: 1\nitems:\n  - id: A\n    prompt: p\n    owns: [a]\n    test: pytest 'tests\n"
    with pytest.raises(ValidationError) as caught:
        tracker.loads(text)
    assert [str(p) for p in caught.value.problems] == [
        ".wavegit/tracker.yaml:6:11: item A: 'test' cannot be split into words: No closing quotation "
        "(hint: a command; exit 0 means verified)"]
    assert tracker.loads(text.replace("'tests", "'tests dir'")).items[0].test == "pytest 'tests dir'"


def test_initial_text_is_an_empty_valid_tracker() -> None:
    assert tracker.loads(tracker.initial_text()) == tracker.Tracker(1, ())


# --- the parse cache ---------------------------------------------------------------------------------

def test_load_cached_equals_loads_cold_and_warm(tmp_path: Path) -> None:
    sha = parsecache.blob_sha(EXAMPLE)
    cold = tracker.load_cached(EXAMPLE, sha, tmp_path)
    warm = tracker.load_cached(EXAMPLE, sha, tmp_path)
    assert cold == warm == tracker.loads(EXAMPLE)
    assert [i.line for i in warm.items] == [i.line for i in cold.items]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_blob_sha_matches_git_hash_object(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text(EXAMPLE)
    expected = subprocess.run(["git", "hash-object", str(tmp_path / "t.yaml")], capture_output=True,
                              text=True, check=True).stdout.strip()
    assert parsecache.blob_sha(EXAMPLE) == expected


def test_corrupt_cache_entry_is_ignored_and_rewritten(tmp_path: Path) -> None:
    sha = parsecache.blob_sha(EXAMPLE)
    tracker.load_cached(EXAMPLE, sha, tmp_path)
    for entry in tmp_path.iterdir():
        entry.write_bytes(b"\x00garbage")
    assert tracker.load_cached(EXAMPLE, sha, tmp_path) == tracker.loads(EXAMPLE)
    assert tracker.load_cached(EXAMPLE, sha, tmp_path) == tracker.loads(EXAMPLE)


def test_cached_validation_failure_raises_the_same_problems(tmp_path: Path) -> None:
    bad = EXAMPLE.replace("priority: P3", "priority: P9")
    sha = parsecache.blob_sha(bad)
    with pytest.raises(ValidationError) as first:
        tracker.load_cached(bad, sha, tmp_path)
    with pytest.raises(ValidationError) as second:
        tracker.load_cached(bad, sha, tmp_path)
    assert first.value.problems == second.value.problems


def test_warm_cache_hit_and_imports_do_not_import_yaml(tmp_path: Path) -> None:
    sha = parsecache.blob_sha(EXAMPLE)
    tracker.load_cached(EXAMPLE, sha, tmp_path)
    code = ("import sys; from pathlib import Path\n"
            "import wavegit.model.tracker as t, wavegit.model.config, wavegit.core.yamlread\n"
            f"text = Path({str(REPO_ROOT / 'examples' / 'tracker.yaml')!r}).read_text()\n"
            f"assert len(t.load_cached(text, {sha!r}, Path({str(tmp_path)!r})).items) == 8\n"
            "print('yaml' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT,
                         check=True)
    assert out.stdout.strip() == "False"


# --- minimal-diff edits ------------------------------------------------------------------------------

def _changed_lines(before: str, after: str) -> list[str]:
    return [line for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]


def test_set_status_changes_one_line_and_keeps_comments() -> None:
    after = tracker.set_fields(EXAMPLE, "AUTH-12", {"status": "in_progress"})
    assert _changed_lines(EXAMPLE, after) == ["-    status: todo", "+    status: in_progress"]


def test_set_fields_adds_after_last_key_and_removes_with_none() -> None:
    after = tracker.set_fields(EXAMPLE, "OPS-5", {"status": "in_progress", "wave": "w-2",
                                                  "claimed_at": "2026-01-02T00:00:00Z", "last_error": None})
    item = tracker.loads(after).get("OPS-5")
    assert item is not None and (item.status, item.wave, item.last_error) == ("in_progress", "w-2", None)
    assert item.claimed_at == "2026-01-02T00:00:00Z"
    assert len(_changed_lines(EXAMPLE, after)) == 5


def test_set_items_fields_edits_several_items_like_one_edit_each() -> None:
    changes = {"AUTH-12": {"status": "in_progress", "wave": "w-2"}, "OPS-5": {"status": "done"}}
    one_by_one = EXAMPLE
    for item_id, fields in changes.items():
        one_by_one = tracker.set_fields(one_by_one, item_id, fields)
    assert tracker.set_items_fields(EXAMPLE, changes) == one_by_one != EXAMPLE
    assert tracker.set_items_fields(EXAMPLE, {}) == EXAMPLE
    with pytest.raises(UsageError, match="unknown item field"):
        tracker.set_items_fields(EXAMPLE, {"AUTH-12": {"status": "done"}, "OPS-5": {"stauts": "x"}})


def test_set_multiline_value_stays_valid_and_exact() -> None:
    error = "line one\n  indented: two\n\ttab 'quote' \"dq\" # not a comment"
    after = tracker.set_fields(EXAMPLE, "AUTH-12", {"last_error": error, "prompt": "short"})
    item = tracker.loads(after).get("AUTH-12")
    assert item is not None and item.last_error == error and item.prompt == "short"


def test_set_fields_refuses_flow_style_item_and_unknown_id_and_field() -> None:
    flow = "version: 1\nitems:\n  - {id: A, prompt: p, owns: [a], test: t}\n"
    with pytest.raises(UsageError, match="flow style"):
        tracker.set_fields(flow, "A", {"status": "done"})
    with pytest.raises(UsageError, match="no item"):
        tracker.set_fields(EXAMPLE, "NOPE", {"status": "done"})
    with pytest.raises(UsageError, match="unknown item field"):
        tracker.set_fields(EXAMPLE, "AUTH-12", {"stauts": "done"})


NEW = tracker.Item(id="NEW-1", prompt="line one\n  indented two\n", owns=("src/new.py",), test="pytest -q",
                   priority="P1", title="a: title")


@pytest.mark.parametrize("base", [tracker.initial_text(), "version: 1\nitems:", "version: 1\n", EXAMPLE,
                                  EXAMPLE.rstrip("\n")],
                         ids=["empty-flow-list", "null-items-no-newline", "no-items-key", "example",
                              "example-no-newline"])
def test_append_item_keeps_everything_before_and_loads_back(base: str) -> None:
    after = tracker.append_items(base, [NEW])
    loaded = tracker.loads(after)
    assert loaded.items[-1] == NEW
    assert loaded.items[:-1] == tracker.loads(base).items
    kept = base.replace("items: []", "items:")
    assert after.startswith(kept)


AFTER_LAST = [
    EXAMPLE,
    EXAMPLE.rstrip("\n") + "\n\n# the end\n\n",
    "version: 1\nitems:\n- id: A\n  prompt: |\n    one\n\n    two\n  owns: [a.py]\n  test: t\n",
    "version: 1\nitems:\n  -\n    id: A\n    prompt: p\n    owns: [a.py]\n    test: t\n",
    "items:\n  - id: A\n    prompt: p\n    owns: [a.py]\n    test: t\nversion: 1\n",
    "version: 1\nitems:\n  - {id: A, prompt: p, owns: [a.py], test: t}\n",
    "version: 1\nitems:\n  - id: A\n    prompt: p\n    owns: [a.py]\n    test: t",
]


@pytest.mark.parametrize("base", AFTER_LAST, ids=["example", "trailing-comment", "block-scalar-last",
                                                  "dash-alone", "root-key-after", "flow-item", "no-newline"])
def test_append_after_the_last_items_lines_writes_what_the_whole_parse_writes(base: str) -> None:
    assert tracker.append_items(base, [NEW], tracker.loads(base)) == tracker.append_items(base, [NEW])


def test_append_with_the_parse_composes_only_the_last_items_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    composed: list[int] = []
    compose = yamledit.yamlcompose.compose

    def counted(text: str, path: str, **options: bool) -> object:
        composed.append(text.count("\n"))
        return compose(text, path, **options)

    loaded = tracker.loads(EXAMPLE)
    monkeypatch.setattr(yamledit.yamlcompose, "compose", counted)
    tracker.append_items(EXAMPLE, [NEW], loaded)
    last = max(item.line for item in loaded.items)
    assert composed == [EXAMPLE.count("\n") - last + 1]


IDS = st.sampled_from([i.id for i in tracker.loads(EXAMPLE).items])
TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\ufeff"), max_size=30)
FIELD_VALUES = st.one_of(
    st.tuples(st.just("status"), st.sampled_from(tracker.STATUSES)),
    st.tuples(st.just("wave"), st.one_of(st.none(), TEXT)),
    st.tuples(st.just("attempts"), st.integers(0, 10**6)),
    st.tuples(st.just("pr"), st.one_of(st.none(), st.integers(1, 10**6))),
    st.tuples(st.just("last_error"), st.one_of(st.none(), TEXT)),
    st.tuples(st.just("cost"), st.floats(0, 1e9, allow_nan=False)),
    st.tuples(st.just("title"), TEXT),
    st.tuples(st.just("claimed_at"), st.one_of(st.none(), st.just("2026-01-01T00:00:00Z"), TEXT)),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(IDS, st.lists(FIELD_VALUES, min_size=1, max_size=5))
def test_set_fields_round_trip_changes_only_edited_lines(item_id: str,
                                                         changes: list[tuple[str, object]]) -> None:
    fields = dict(changes)
    before = tracker.loads(EXAMPLE)
    after_text = tracker.set_fields(EXAMPLE, item_id, fields)
    after = tracker.loads(after_text)
    defaults = tracker.Item.__dataclass_fields__
    for old, new in zip(before.items, after.items, strict=True):
        if old.id != item_id:
            assert new == old
            continue
        for name, value in fields.items():
            assert getattr(new, name) == (defaults[name].default if value is None else value)
    start = before.get(item_id).line  # type: ignore[union-attr]
    following = [i.line for i in before.items if i.line > start]
    end = following[0] if following else 10**9
    old_lines, new_lines = EXAMPLE.splitlines(), after_text.splitlines()
    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        assert all(start <= n + 1 < end for n in range(i1, i2)), (i1, i2)
        for line in new_lines[j1:j2]:
            assert line.strip().split(":", 1)[0] in fields, line


def test_the_schema_is_the_item_record_every_key_declared_once() -> None:
    not_read = ("index", "line", "problems")
    read = [spec.name for spec in dataclasses.fields(tracker.Item) if spec.name not in not_read]
    assert list(tracker.ITEM_SCHEMA.names) == read
    required = [spec.name for spec in tracker.ITEM_SCHEMA.fields if spec.required]
    assert required == ["id", "prompt", "owns", "test"]
    kinds = {spec.name: spec.kind for spec in tracker.ITEM_SCHEMA.fields}
    assert (kinds["owns"], kinds["pr"], kinds["claimed_at"], kinds["cost"]) == (
        "str_list", "int", "text", "float")


def test_the_readme_item_table_is_the_declaration() -> None:
    defaults = {spec.name: spec.default for spec in dataclasses.fields(tracker.Item)
                if spec.default is not dataclasses.MISSING}
    expected = key_table(tracker.ITEM_SCHEMA, defaults)
    assert expected in readme_tables(), f"README.md's table of item keys should read:\n{expected}"


def _messages(text: str) -> list[str]:
    with pytest.raises(ValidationError) as caught:
        tracker.loads(text)
    return [str(problem) for problem in caught.value.problems]


def _row(item_id: str, *extra: str) -> str:
    return "".join([f"  - id: {item_id}\n    prompt: p\n    owns: [{item_id.lower()}/]\n    test: t\n",
                    *(f"    {line}\n" for line in extra)])


def test_a_duplicate_id_copied_with_a_dependency_on_its_original_is_one_problem_and_no_self_cycle() -> None:
    text = "version: 1\nitems:\n" + _row("ITER-1") + _row("ITER-1", "depends_on: [ITER-1]")
    assert _messages(text) == [".wavegit/tracker.yaml:7:9: item ITER-1: duplicate id 'ITER-1' (first at "
                               "line 3) (hint: ids must be unique; rename one of them)"]
    # An item that really depends on itself is still a cycle.
    assert any("dependency cycle: Y -> Y" in m for m in _messages("version: 1\nitems:\n" +
                                                                  _row("Y", "depends_on: [Y]")))


def test_did_you_mean_never_suggests_the_item_itself_nor_done_for_doing() -> None:
    text = "version: 1\nitems:\n" + _row("ITER-1") + _row("ITER-3", "depends_on: [ITER-4]") + \
        _row("X", "status: doing")
    found = _messages(text)
    assert "item ITER-3: depends on unknown id 'ITER-4' (hint: did you mean 'ITER-1'?)" in found[0]
    assert "got 'doing' (hint: did you mean 'in_progress'?)" in found[1]
    alone = _messages("version: 1\nitems:\n" + _row("ITER-3", "depends_on: [ITER-4]"))
    assert "did you mean" not in alone[0] and "(hint: add that item or remove it)" in alone[0]


def test_remove_item_takes_only_its_lines_even_with_the_dash_on_its_own_line_or_as_the_last_item() -> None:
    text = ("version: 1\nitems:\n  # keep me\n  -\n    id: A\n    prompt: p\n    owns: [a/]\n    test: t\n"
            + _row("B"))
    assert yamledit.remove_item(text, "A") == "version: 1\nitems:\n  # keep me\n" + _row("B")
    alone = yamledit.remove_item("version: 1\nitems:\n" + _row("B"), "B")
    assert alone == "version: 1\nitems:\n" and tracker.loads(alone).items == ()
    with pytest.raises(UsageError, match="no item with id 'C'"):
        yamledit.remove_item(text, "C")

# --- ids are ref components ----------------------------------------------------------------------------

# Each is refused by `git check-ref-format` as a component of wavegit/<wave>/<id> (a `.LOCK` only where the
# file system folds case), or holds a character outside the documented set.
REF_BREAKING_IDS = ["x.lock", "X.LOCK", ".hidden", "a..b", "trail.", "a/b", "@{", "a@{b", "a b", "a~1", "a^",
                    "a:b", "a?", "a*", "a[b", "a\\\\b", "a\\x01b", "a\\x7fb", "a\\tb"]


@pytest.mark.parametrize("bad", REF_BREAKING_IDS)
def test_an_id_git_refuses_in_a_branch_name_is_a_located_problem(bad: str) -> None:
    text = f'version: 1\nitems:\n  - id: "{bad}"\n    prompt: p\n    owns: [a]\n    test: t\n'
    with pytest.raises(ValidationError) as caught:
        tracker.loads(text)
    [problem] = caught.value.problems
    assert (problem.line, problem.col) == (3, 9) and "'id'" in problem.message
    assert "\n" not in str(problem)


@given(st.text(alphabet="ab.-_L0ckoK", min_size=1, max_size=8))
@settings(max_examples=60, deadline=None)
def test_every_id_the_tracker_accepts_is_a_valid_branch_name_component(candidate: str) -> None:
    text = f'version: 1\nitems:\n  - id: "{candidate}"\n    prompt: p\n    owns: [a]\n    test: t\n'
    try:
        tracker.loads(text)
    except ValidationError:
        return
    for name in (candidate, candidate.lower()):
        ref = subprocess.run(["git", "check-ref-format", f"refs/heads/wavegit/w-1/{name}"], check=False)
        assert ref.returncode == 0, name


def test_a_bad_id_makes_only_its_own_item_invalid_so_the_others_still_plan() -> None:
    # A wave never fails whole because of one id: the non-strict load (plan, run) skips the item as invalid.
    text = ('version: 1\nitems:\n  - id: "x.lock"\n    prompt: p\n    owns: [a]\n    test: t\n'
            '  - id: "a\\x01b"\n    prompt: p\n    owns: [b]\n    test: t\n'
            '  - id: OK\n    prompt: p\n    owns: [c]\n    test: t\n')
    loaded = tracker.loads(text, strict=False)
    assert [(item.id, bool(item.problems)) for item in loaded.items] == [
        ("x.lock", True), ("a\\x01b", True), ("OK", False)]
    plan = select.select(loaded, 8)
    assert plan.selected == ("OK",)
    assert [(skip.id, skip.reason.startswith("invalid: ")) for skip in plan.skipped] == [
        ("x.lock", True), ("a\\x01b", True)]


def test_a_committed_ref_breaking_id_stops_run_before_any_claim_with_its_location(tmp_path: Path) -> None:
    # `x.lock` used to pass validation and be claimed; its item branch then failed `git init` mid-wave. Now a
    # tracker holding it is invalid: `validate` and `run` name the line, nothing is claimed or branched.
    remote = make_wave_repo(tmp_path, [item("OK", ["write src/ok.txt ok"], ["src/ok.txt"]),
                                       item("x.lock", ["write src/x.txt ok"], ["src/x.txt"])])
    before = git(remote.origin, "rev-parse", "main")
    for command in ("validate", "run"):
        result = wavegit(remote.clone, command)
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        assert ".wavegit/tracker.yaml:" in result.stderr and "must not end with '.lock'" in result.stderr
    assert git(remote.origin, "rev-parse", "main") == before
    assert branches(remote.origin) == [] and branches(remote.clone) == []


def test_a_field_holding_undecodable_bytes_is_written_escaped_and_stays_valid_yaml() -> None:
    # A git error quoting a worker's file name reached last_error with a surrogate: the record commit was
    # not valid UTF-8, so not valid YAML.
    error = "cannot check out " + b"src/bad\xff\xfename.txt".decode("utf-8", "surrogateescape")
    text = tracker.set_fields(EXAMPLE, "AUTH-12", {"last_error": error})
    text.encode("utf-8")
    recorded = tracker.loads(text).get("AUTH-12")
    assert recorded is not None and recorded.last_error == "cannot check out src/bad\\xff\\xfename.txt"


def test_attack_an_integer_of_more_digits_than_python_converts_is_a_located_problem() -> None:
    text = "version: 1\nitems:\n  - id: A\n    prompt: p\n    owns: [a]\n    test: 'true'\n" \
           f"    attempts: {'9' * 5000}\n"
    with pytest.raises(ValidationError) as raised:
        tracker.loads(text)
    [problem] = raised.value.problems
    assert (problem.line, problem.col) == (7, 15) and "at most 4300 digits" in problem.message


def test_an_empty_list_value_is_the_lists_default_not_a_crash() -> None:
    # `depends_on:` with nothing after it (or `depends_on: # [A-1]`) is YAML null: no dependencies.
    text = ("version: 1\nitems:\n  - id: A-1\n    prompt: p\n    owns: [a.txt]\n    test: 'true'\n"
            "    depends_on: # [B-2]\n")
    item = tracker.loads(text).get("A-1")
    assert item is not None and item.depends_on == () and item.problems == ()


SPAN_TRACKER = """\
items:
  # a comment above the first item
  - id: A
    prompt: a
    owns: [src/a.py]
    test: "true"
    status: in_progress
    wave: w1
  -
    id: B
    prompt: &shared |
      two
      lines
    owns: [src/b.py]
    test: "true"
  - id: C
    prompt: *shared
    owns: [src/c.py]
    test: "true"
    status: in_progress
  - id: D
    prompt: d
    owns: [src/d.py]
    test: "true"
version: 1
"""


def test_editing_items_from_their_own_lines_writes_what_editing_the_whole_document_does() -> None:
    # A's lines compose alone; B's dash is on a line of its own, C's alias names B's anchor, and D is
    # followed by the root's version: those three are edited from the whole document, composed once.
    loaded = tracker.loads(SPAN_TRACKER)
    changes = {item_id: {"status": "todo", "wave": None, "last_error": f"released {item_id}: a\\b 'x'"}
               for item_id in ("A", "B", "C", "D")}
    assert tracker.set_items_fields(SPAN_TRACKER, changes, loaded) == tracker.set_items_fields(SPAN_TRACKER,
                                                                                                changes)
    edited = tracker.loads(tracker.set_items_fields(SPAN_TRACKER, changes, loaded))
    assert [(i.id, i.status, i.wave, i.last_error) for i in edited.items] == [
        (item_id, "todo", None, f"released {item_id}: a\\b 'x'") for item_id in ("A", "B", "C", "D")]


def test_equal_values_of_other_types_are_written_each_as_itself() -> None:
    # False == 0 == 0.0 (and True == 1 == 1.0): rendering each once must not write one for another.
    from wavegit.core import yamledit

    assert [yamledit.render(v) for v in (False, 0, 0.0, True, 1, 1.0, "0")] == [
        "false", "0", "0.0", "true", "1", "1.0", "'0'"]


def test_a_rendered_value_keeps_its_type_whatever_equal_value_of_another_type_came_first() -> None:
    # Rendering is cached per value (a claim writes the same status, wave and time into every item): 1, 1.0
    # and True are equal in Python, never in the tracker.
    assert [yamledit.render(v) for v in (1, True, 1.0, "1", None, "null")] == [
        "1", "true", "1.0", "'1'", "null", "'null'"]
    assert [yamledit.render(v) for v in (True, 1.0, 1)] == ["true", "1.0", "1"]
