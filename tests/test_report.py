"""wavegit.model.report: JSON round trip and strict validation, Markdown rendering, embedding and recovery."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wavegit.core.terminal import inert_lines
from wavegit.model.report import (
    AttemptRecord,
    BudgetReport,
    ItemReport,
    Omitted,
    ReportError,
    SkippedItem,
    WaveReport,
    WaveTestReport,
    utc_timestamp,
)
from wavegit.model.report_html import to_html
from wavegit.model.report_markdown import (
    DEFAULT_MAX_CHARS,
    JSON_CLOSE,
    JSON_OPEN,
    MARKER,
    attempts_cell,
    parse_markdown,
    reason,
    to_markdown,
)

T0 = "2026-01-01T10:00:00Z"
T1 = "2026-01-01T10:05:00Z"


def attempt(n: int, *, exit_code: int | None = 0, test_exit: int | None = 0) -> AttemptRecord:
    return AttemptRecord(attempt=n, worker="claude -p", prompt_sha256="ab" * 32, base_commit="c" * 40,
                         started_at=T0, finished_at=T1, exit_code=exit_code, test_exit=test_exit, cost=0.25,
                         log_path=f".git/wavegit/logs/w-1/AUTH-12.{n}.log")


def sample_report() -> WaveReport:
    return WaveReport(
        wave_id="w-20260101-1000-a1b2", base_sha="a" * 40, head_sha="b" * 40,
        branch="wavegit/w-20260101-1000-a1b2",
        pr=17, success=False,
        items=[
            ItemReport(id="AUTH-12", status="review", verified=True, attempts=2, exit_code=0, test_exit=0,
                       duration_s=3.25, files_changed=["src/auth/limiter.py"], cost=0.5, log_tail="all good",
                       attempt_records=[attempt(1, test_exit=1), attempt(2)]),
            ItemReport(id="UI-3", status="todo", verified=False, attempts=1, exit_code=0, test_exit=None,
                       duration_s=1.0, files_changed=["src/ui/a.py", "README.md"],
                       ownership_violations=["README.md"], error="wrote outside its ownership",
                       log_tail="edited README.md\n"),
        ],
        skipped=[SkippedItem(id="AUTH-13", reason="overlaps AUTH-12 on src/auth/limiter.py")],
        halted=False, budget=BudgetReport(wave_usd_limit=5.0, day_usd_limit=20.0, wave_spent_usd=0.5),
        wave_test=WaveTestReport(command="pytest -q", exit_code=0), tracker_updated=True,
        notes=["cost file of UI-3 was invalid JSON"], started_at=T0, finished_at=T1,
    )


def test_json_round_trip_is_exact() -> None:
    report = sample_report()
    assert WaveReport.from_json(report.to_json()) == report
    assert WaveReport.from_json(report.to_json(indent=None)) == report


def test_json_with_terminal_escapes_and_undecodable_names_stays_valid_once_printed_inert() -> None:
    # A worker's file name or log line with C1 controls, DEL, a bidi override or an undecodable byte: printed
    # through the inert stdout, a raw one became `\x9b`, which no JSON reader accepts.
    hostile = "x\x9b[31m\u202eevil\udcff\x7f\x1b]52;c;QQ==\x07"
    report = dataclasses.replace(sample_report(), notes=[hostile])
    printed = inert_lines(report.to_json())
    assert printed == report.to_json() and WaveReport.from_json(printed).notes == [hostile]


def test_json_keys_follow_the_documented_order() -> None:
    data = json.loads(sample_report().to_json())
    documented = ["wave_id", "base_sha", "head_sha", "branch", "pr", "success", "items", "skipped", "halted",
                  "budget", "started_at", "finished_at"]
    assert [key for key in data if key in documented] == documented
    item_documented = ["id", "status", "verified", "attempts", "exit_code", "test_exit", "duration_s",
                       "files_changed", "ownership_violations", "cost", "error"]
    assert [key for key in data["items"][0] if key in item_documented] == item_documented
    assert set(data["budget"]) >= {"wave_usd_limit", "day_usd_limit", "wave_spent_usd", "exceeded"}


def mutated(change: str) -> str:
    """The sample report's JSON with one edit applied, written as `path=json-value` or `-path`."""
    data = json.loads(sample_report().to_json())
    remove = change.startswith("-")
    path, _, raw = change.lstrip("-").partition("=")
    *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
    target = data
    for part in parents:
        target = target[part]
    if remove:
        del target[last]
    else:
        target[last] = json.loads(raw)
    return json.dumps(data)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("items.0.verified=\"yes\"", "$.items[0].verified: must be true or false, got a string"),
        ("items.1.attempts=true", "$.items[1].attempts: must be an integer, got a boolean"),
        # A forged report ref: float(10**400) raised OverflowError past the decoder, a traceback.
        ("items.0.duration_s=1" + "0" * 400, "$.items[0].duration_s: must be a number, got an integer"),
        ("items.0.attempt_records.1.exit_code=1.5",
         "$.items[0].attempt_records[1].exit_code: must be an integer"),
        ("-wave_id", "$.wave_id: missing"),
        ("-items.0.files_changed", "$.items[0].files_changed: missing"),
        # No field may be missing because an older wavegit wrote the report: it is read as it was written.
        ("-phase", "$.phase: missing"),
        ("-items.0.title", "$.items[0].title: missing"),
        ("-items.0.attempt_records.0.counted", "$.items[0].attempt_records[0].counted: missing"),
        ("-budget.wave_tokens_limit", "$.budget.wave_tokens_limit: missing"),
        ("items.0.surprise=1", "$.items[0].surprise: unknown field"),
        ("success=null", "$.success: must be true or false, got nothing (null)"),
        ("items={}", "$.items: must be a list, got an object"),
        ("items.0.files_changed.0=3", "$.items[0].files_changed[0]: must be a string, got an integer"),
        ("budget=[]", "$.budget: must be an object, got a list"),
        ("started_at=\"2026-01-01 10:00\"", "$.started_at: expected an ISO 8601 UTC timestamp"),
        ("finished_at=\"2026-01-01T10:00:00+02:00\"", "$.finished_at: expected an ISO 8601 UTC timestamp"),
        ("items.0.attempt_records.0.started_at=\"2026-13-01T10:00:00Z\"",
         "$.items[0].attempt_records[0].started_at"),
    ],
)
def test_from_json_rejects_bad_input_naming_the_json_path(change: str, message: str) -> None:
    with pytest.raises(ReportError) as info:
        WaveReport.from_json(mutated(change))
    assert str(info.value).startswith(message)


@pytest.mark.parametrize(
    ("text", "message"),
    [("{", "$: invalid JSON"), ("[]", "$: must be an object, got a list"),
     ('{"wave_id": NaN}', "$: invalid JSON"), ("[" * 100_000, "$:")],
)
def test_from_json_rejects_malformed_documents(text: str, message: str) -> None:
    with pytest.raises(ReportError, match=re.escape(message)):
        WaveReport.from_json(text)


def test_attack_a_report_naming_a_key_twice_is_refused() -> None:
    # JSON keeps the last "success", a reader of the comment may see the first.
    text = sample_report().to_json().replace("{", '{"success": true, ', 1)
    with pytest.raises(ReportError, match=r"^\$: invalid JSON: the key 'success' appears more than once"):
        WaveReport.from_json(text)


def test_from_json_accepts_whole_numbers_for_float_fields() -> None:
    report = WaveReport.from_json(mutated("items.0.duration_s=3"))
    assert report.items[0].duration_s == 3.0 and isinstance(report.items[0].duration_s, float)


def test_report_error_is_a_value_error() -> None:
    assert issubclass(ReportError, ValueError)


def test_utc_timestamp_is_iso_8601_utc_with_z() -> None:
    stamp = utc_timestamp()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", stamp)
    assert WaveReport.from_json(mutated(f"started_at=\"{stamp}\"")).started_at == stamp


def test_markdown_starts_with_marker_and_summarises_the_wave() -> None:
    report = sample_report()
    body = to_markdown(report)
    lines = body.splitlines()
    assert lines[0] == MARKER
    assert "❌ failed" in body and "1 of 2 items verified" in body
    assert "1 failed" in body and "1 skipped" in body
    assert "b" * 12 in body and "PR #17" in body
    success = to_markdown(dataclasses.replace(report, success=True))
    assert "✅ success" in success and "❌" not in success


@pytest.mark.parametrize(("changes", "expected"), [
    ({"verified": True, "status": "review"}, "—"),
    ({"verified": True, "status": "todo", "error": "verified, but the wave branch could not be pushed"},
     "not delivered"),
    ({"attempts": 0, "attempt_records": [], "error": "not started: halted"}, "not started"),
    ({"ownership_violations": ["README.md"]}, "violation"),
    ({"test_exit": None, "files_changed": [], "error": "the worker changed nothing"}, "no change"),
    ({"attempt_records": [dataclasses.replace(attempt(1, exit_code=None), killed="wall")]}, "timeout"),
    ({"attempt_records": [dataclasses.replace(attempt(1, exit_code=None), killed="idle")]},
     "idle timeout"),
    ({"test_exit": 3}, "test exit 3"),
    ({"exit_code": 2, "test_exit": None}, "worker exit 2"),
    # A test that could not launch ('pytset'): no attempt counted, and the table says so, not "failed".
    ({"test_exit": None, "files_changed": ["a.py"], "error": "test cannot launch 'pytset'",
      "attempt_records": [dataclasses.replace(attempt(1), counted=False)]}, "not counted"),
])
def test_the_table_reason_says_in_a_few_words_why_an_item_did_not_land(changes: dict[str, object],
                                                                        expected: str) -> None:
    base = ItemReport(id="X", status="todo", verified=False, attempts=1, exit_code=0, test_exit=0,
                      attempt_records=[attempt(1)])
    item = dataclasses.replace(base, **changes)  # type: ignore[arg-type]
    assert reason(item) == expected
    rep = dataclasses.replace(sample_report(), items=[item])
    assert f"| <code>X</code> | {item.status} | {'yes' if item.verified else 'no'} | {expected} |" in (
        to_markdown(rep))


def test_the_attempts_cell_numbers_them_across_waves_as_the_tracker_counts_them() -> None:
    first_wave = ItemReport(id="X", status="todo", attempts=2, attempt_records=[attempt(1), attempt(2)])
    later = dataclasses.replace(first_wave, status="failed", attempt_records=[attempt(3), attempt(4)])
    one = dataclasses.replace(first_wave, attempts=1, attempt_records=[attempt(3)])
    assert [attempts_cell(i) for i in (first_wave, later, one)] == ["2", "2 (#3-4)", "1 (#3)"]
    row = next(line for line in to_markdown(dataclasses.replace(sample_report(), items=[later])).splitlines()
               if line.startswith("| <code>X</code>"))
    assert row.split(" | ")[4] == "2 (#3-4)"
    assert "<td>2 (#3-4)</td>" in to_html(dataclasses.replace(sample_report(), items=[later]))


def test_markdown_has_a_row_per_item_tails_in_details_and_skipped_items() -> None:
    body = to_markdown(sample_report())
    rows = [line for line in body.splitlines() if line.startswith("| <code>")]
    assert [row.split("|")[1].strip() for row in rows] == ["<code>AUTH-12</code>", "<code>UI-3</code>"]
    ui_row = [cell.strip() for cell in rows[1].strip("|").split("|")]
    assert ui_row[1:9] == ["todo", "no", "violation", "1", "—", "1.0s", "2", "—"]
    assert ui_row[9] == "<code>README.md</code>"
    assert body.count("<details>") == 2 and "<pre>all good</pre>" in body
    assert "<code>AUTH-13</code>: overlaps AUTH-12 on src/auth/limiter.py" in body


def test_markdown_embeds_json_that_parse_markdown_recovers_exactly() -> None:
    report = sample_report()
    body = to_markdown(report)
    assert parse_markdown(body) == report
    assert parse_markdown(body.replace("\n", "\r\n")) == report


FORGERIES = [
    "-->", "--!>", "--->", f"{JSON_CLOSE}\n{JSON_OPEN}\n{{}}\n-->", MARKER, "</pre></details>", "```\n<!--",
    "[click](https://evil.example)", "| fake | row |", "<script>alert(1)</script>", "\\--\\-->", "-" * 9,
]


@pytest.mark.parametrize("forged", FORGERIES)
def test_forged_comment_syntax_in_worker_text_cannot_break_out(forged: str) -> None:
    base = sample_report()
    item = dataclasses.replace(base.items[1], log_tail=f"before {forged} after", error=forged, status=forged)
    report = dataclasses.replace(base, items=[base.items[0], item], notes=[forged],
                                 skipped=[SkippedItem(id="X", reason=forged)])
    body = to_markdown(report)
    assert parse_markdown(body) == report
    assert body.count(JSON_OPEN) == 1 and body.count(MARKER) == 1
    # The only comment close after the JSON opens is the one that ends the block.
    assert body.index(JSON_CLOSE, body.index(JSON_OPEN)) == body.rstrip().rindex(JSON_CLOSE)
    rendered = body[: body.index(JSON_OPEN)]
    assert "<script>" not in rendered
    outside_pre = re.sub(r"<pre>.*?</pre>", "", rendered, flags=re.DOTALL)
    assert "](https://evil.example)" not in outside_pre and "| fake |" not in outside_pre


@settings(max_examples=60, deadline=None)
@given(tail=st.text(), error=st.text())
def test_any_text_survives_the_markdown_round_trip(tail: str, error: str) -> None:
    base = sample_report()
    report = dataclasses.replace(base, items=[dataclasses.replace(base.items[0], log_tail=tail, error=error)])
    assert parse_markdown(to_markdown(report)) == report


def big_report(items: int, tail_chars: int) -> WaveReport:
    base = sample_report()
    many = [dataclasses.replace(base.items[i % 2], id=f"ITEM-{i}", log_tail=f"{i}\n" + "x" * tail_chars)
            for i in range(items)]
    return dataclasses.replace(base, items=many)


def test_over_the_limit_log_tails_go_first_and_the_json_stays_whole() -> None:
    report = big_report(items=6, tail_chars=3000)
    full = to_markdown(report, max_chars=10**6)
    limit = len(report.to_json(indent=None)) + 3000
    body = to_markdown(report, max_chars=limit)
    assert len(full) > limit >= len(body)
    assert body.count("<details>") < 6 and "log tails left out (size limit)" in body
    assert body.count("| <code>ITEM-") == 6
    assert parse_markdown(body) == report


def test_a_wave_over_a_big_backlog_keeps_its_log_tails_and_timeline_and_cuts_the_skipped_list() -> None:
    # A trial's wave over a 2,100-item backlog: its PR comment listed 1,375 skipped items ("depends on ...")
    # and left out the failed item's log tail and part of the timeline for want of room.
    base = sample_report()
    skipped = [SkippedItem(id=f"GEN-{n}", reason=f"depends on GEN-{n - 1}") for n in range(3000)]
    report = dataclasses.replace(base, skipped=skipped)
    body = to_markdown(report)
    assert len(body) <= DEFAULT_MAX_CHARS
    assert body.count("<details>") == 2 and "edited README.md" in body
    assert "log tails left out" not in body and "not shown in the timeline" not in body
    shown = body.count("- <code>GEN-")
    assert 0 < shown < 3000 and f"_{3000 - shown} more skipped items not shown (size limit)._" in body


def test_a_wave_stopped_by_the_days_ceiling_says_so_not_a_wave_ceiling_of_zero() -> None:
    # A trial with only budget.day_usd set: the comment read "Over budget: wave spent $0.07 of $0.00".
    report = dataclasses.replace(
        sample_report(), budget=BudgetReport(wave_usd_limit=0.0, day_usd_limit=1.49, wave_spent_usd=0.07,
                                             day_spent_usd=1.51, exceeded=True),
        ceiling_reason="daily budget: spent $1.51 of $1.49 today (UTC)")
    body = to_markdown(report)
    assert "Over budget: daily budget: spent $1.51 of $1.49 today &#40;UTC&#41;; no new attempts" in body
    assert "of $0.00" not in body


def test_far_over_the_limit_table_rows_are_truncated_with_a_note() -> None:
    report = big_report(items=300, tail_chars=0)
    limit = len(report.to_json(indent=None)) + 3000
    body = to_markdown(report, max_chars=limit)
    assert len(body) <= limit
    shown = body.count("| <code>ITEM-")
    assert 0 < shown < 300 and f"{300 - shown} more items not shown" in body
    assert parse_markdown(body) == report


def test_json_too_big_for_the_limit_loses_only_tails_and_attempt_records_and_says_so() -> None:
    report = big_report(items=20, tail_chars=5000)
    body = to_markdown(report, max_chars=30_000)
    assert len(body) <= 30_000
    assert "leaves out log tails and attempt records" in body
    recovered = parse_markdown(body)
    assert [item.id for item in recovered.items] == [item.id for item in report.items]
    assert all(item.log_tail == "" and item.attempt_records == [] for item in recovered.items)
    assert dataclasses.replace(recovered, items=[]) == dataclasses.replace(report, items=[])


def test_a_report_too_big_even_without_its_items_is_an_error() -> None:
    with pytest.raises(ReportError, match="does not fit"):
        to_markdown(big_report(items=50, tail_chars=0), max_chars=900)


def test_a_report_of_many_items_in_a_small_limit_leaves_items_out_and_counts_them() -> None:
    report = big_report(items=50, tail_chars=0)
    body = to_markdown(report, max_chars=3000)
    assert len(body) <= 3000
    copy = parse_markdown(body)
    assert 0 < len(copy.items) < 50 and copy.omitted.items == 50 - len(copy.items)
    assert [item.id for item in copy.items] == [item.id for item in report.items[:len(copy.items)]]
    assert f"left out: {copy.omitted.items} items" in body


def test_a_wave_of_2500_changed_files_fits_github_s_limit_with_the_count_and_the_whole_report_named() -> None:
    base = sample_report()
    files = [f"src/generated/module_{i:05}/file.py" for i in range(2500)]
    report = dataclasses.replace(base, items=[dataclasses.replace(base.items[0], files_changed=files)])
    assert len(report.to_json(indent=None)) > 65_536
    body = to_markdown(report)
    assert len(body) <= DEFAULT_MAX_CHARS < 65_536
    copy = parse_markdown(body)
    kept = len(copy.items[0].files_changed)
    assert 0 < kept < 2500 and copy.omitted.files_changed == {base.items[0].id: 2500 - kept}
    assert copy.items[0].files_changed == files[:kept]
    assert f"left out: {2500 - kept} changed paths" in body
    assert copy.omitted.full_report == f"<git dir>/wavegit/reports/{report.wave_id}.json"
    assert "| 2500 |" in body  # the table still counts every file
    assert dataclasses.replace(copy, items=report.items, omitted=Omitted()) == report


def test_a_backlog_of_2400_skipped_items_fits_with_the_count() -> None:
    skipped = [SkippedItem(id=f"BACKLOG-{i:04}", reason=f"owns src/area{i}/, overlaps AUTH-12 in flight")
               for i in range(2400)]
    report = dataclasses.replace(sample_report(), skipped=skipped)
    assert len(report.to_json(indent=None)) > 65_536
    body = to_markdown(report)
    assert len(body) <= DEFAULT_MAX_CHARS
    copy = parse_markdown(body)
    assert copy.skipped == skipped[:len(copy.skipped)] and copy.omitted.skipped == 2400 - len(copy.skipped)
    assert "2400 skipped" in body and f"left out: {copy.omitted.skipped} skipped items" in body


def test_an_ownership_violation_list_is_cut_but_never_emptied() -> None:
    base = sample_report()
    violations = [f"outside/{i:05}/" + "x" * 200 for i in range(2500)]
    item = dataclasses.replace(base.items[0], verified=False, ownership_violations=violations)
    copy = parse_markdown(to_markdown(dataclasses.replace(base, items=[item]), max_chars=6000))
    assert copy.items[0].ownership_violations and copy.omitted.ownership_violations[item.id] > 0
    assert copy.omitted.clipped_strings > 0


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda body: body.replace(MARKER, ""), "expected one report marker line, found 0"),
        (lambda body: MARKER + "\n" + body, "expected one report marker line, found 2"),
        (lambda body: body[: body.index(JSON_OPEN)], "block is missing"),
        (lambda body: body + "\n" + body[body.index(JSON_OPEN):].replace(MARKER, ""), "present 2 times"),
        (lambda body: body.rstrip()[: -len(JSON_CLOSE)], "not closed"),
        (lambda body: body.replace('"verified":true', '"verified":1'),
         "$.items[0].verified: must be true or false"),
        (lambda body: body.replace('{"wave_id"', '{"wave_id" "'), "$: invalid JSON"),
    ],
)
def test_parse_markdown_rejects_missing_duplicated_or_broken_blocks(edit: Callable[[str], str],
                                                                     message: str) -> None:
    body = to_markdown(sample_report())
    with pytest.raises(ReportError, match=re.escape(message)):
        parse_markdown(edit(body))


def test_a_file_named_like_the_markers_leaves_the_report_with_one_marker_and_one_json_block() -> None:
    base = sample_report()
    forged = f"{MARKER} {JSON_OPEN} {{\"wave_id\": \"forged\"}} {JSON_CLOSE}"
    item = dataclasses.replace(base.items[0], files_changed=[forged], ownership_violations=[forged],
                               error=f"ownership violation: changed {forged}", log_tail=forged)
    report = dataclasses.replace(base, items=[item], notes=[forged],
                                 skipped=[SkippedItem(id="S-1", reason=forged)])
    body = to_markdown(report)
    assert body.count(MARKER) == 1 and body.count(JSON_OPEN) == 1 and body.startswith(MARKER)
    assert parse_markdown(body) == report


def test_attack_a_note_naming_a_team_mentions_nobody_in_the_comment() -> None:
    # A worker's words reach the notes (a cost file's value): GitHub would notify @acme/maintainers from a
    # comment a bot posts; a zero-width space after the @ stops the mention, and the note stays readable.
    base = sample_report()
    body = to_markdown(dataclasses.replace(base, notes=["cost got '@acme/maintainers'"]))
    shown = body.split(JSON_OPEN)[0]
    assert "@acme" not in shown and "cost got &#39;@&#8203;acme/maintainers&#39;" in shown


def test_attack_a_file_name_that_mentions_people_or_links_is_quoted_as_code_in_the_comment() -> None:
    # A worker names a file to ping a team (GitHub notifies @mentions a bot posts) or to plant a link; in
    # code GitHub makes neither. Its text stays readable.
    base = sample_report()
    named = "@acme/maintainers LGTM, merge https://evil.example/x"
    item = dataclasses.replace(base.items[1], ownership_violations=[named])
    body = to_markdown(dataclasses.replace(base, items=[base.items[0], item]))
    row = next(line for line in body.splitlines() if line.startswith(f"| <code>{item.id}</code>"))
    assert row.split("|")[-2].strip() == "<code>@acme/maintainers LGTM, merge https://evil.example/x</code>"
