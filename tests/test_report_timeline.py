"""The wave's timeline: a Mermaid gantt in the report comment, and the self-contained ``report --html``."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

from tests.helpers.reliability import wavegit_in_process as wavegit_here
from tests.helpers.repos import wavegit
from tests.helpers.wave import item, make_wave_repo, run
from wavegit.model import timeline
from wavegit.model.report import AttemptRecord, ItemReport, WaveReport
from wavegit.model.report_html import to_html
from wavegit.model.report_markdown import to_markdown

HOSTILE = "a: b # c; d %% e\nsection evil\n```\n</pre><script>alert(1)</script>"
"""Text with every character that means something to Mermaid, Markdown or HTML."""

# The gantt grammar wavegit writes: its header, sections, and tasks whose data is tag, id, start, length.
_HEADER = ["```mermaid", "gantt", "dateFormat X", "axisFormat %H:%M:%S", "todayMarker off"]
_TITLE = re.compile(r"title wave [A-Za-z0-9 ._()/+=-]*")
_SECTION = re.compile(r"section [A-Za-z0-9 ._()/+=-]+")
_TASK = re.compile(r"attempt (\d+) ([A-Za-z0-9 ._()/+=-]+) :(done|crit|active), a(\d+), (\d+), (\d+)s")


def gantt_block(markdown: str) -> list[str]:
    """The lines of the one Mermaid block in ``markdown``, stripped, fences included."""
    lines = markdown.splitlines()
    start = lines.index("```mermaid")
    end = lines.index("```", start)
    assert markdown.count("```mermaid") == 1
    return [line.strip() for line in lines[start:end + 1]]


def bars_of(block: list[str]) -> list[tuple[str, int, str, str, int, int]]:
    """(section, attempt, outcome, tag, start, seconds) per task; fails on any line outside the grammar."""
    assert block[:2] == _HEADER[:2] and _TITLE.fullmatch(block[2]) and block[3:6] == _HEADER[2:]
    assert block[-1] == "```"
    found, section, ids = [], "", []
    for line in block[6:-1]:
        if _SECTION.fullmatch(line):
            section = line.removeprefix("section ")
            continue
        match = _TASK.fullmatch(line)
        assert match, f"not a gantt task line: {line!r}"
        number, outcome, tag, task_id, start, seconds = match.groups()
        ids.append(task_id)
        found.append((section, int(number), outcome, tag, int(start), int(seconds)))
    assert len(set(ids)) == len(ids)
    return found


def test_a_real_wave_s_gantt_has_one_bar_per_attempt_tagged_by_outcome_and_inert_titles(
        tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [
        item("GOOD", ["write src/a.txt ok"], ["src/a.txt"], title=HOSTILE),
        item("RETRY", ["no-feedback write src/b.txt no", "if-feedback write src/b.txt ok"], ["src/b.txt"]),
        item("BAD", ["write src/c.txt no"], ["src/c.txt"]),
    ], attempts=2)
    report = run(remote.clone).report
    assert report.items[0].title == HOSTILE  # the report carries the title as the tracker has it
    bars = bars_of(gantt_block(to_markdown(report)))
    assert [(b[0].split(" - ")[0], b[1], b[2], b[3]) for b in bars] == [
        ("GOOD", 1, "verified", "done"),
        ("RETRY", 1, "test exit 1", "crit"), ("RETRY", 2, "verified", "done"),
        ("BAD", 1, "test exit 1", "crit"), ("BAD", 2, "test exit 1", "crit")]
    # The hostile title is in GOOD's section name with nothing Mermaid would read.
    assert bars[0][0] == "GOOD - a b c d e section evil /pre script alert(1) /script"
    # Each bar spans its attempt's recorded start and end (whole seconds, at least one).
    records = [r for i in report.items for r in i.attempt_records]
    for bar, record in zip(bars, records, strict=True):
        start = int(timeline.parse_timestamp(record.started_at).timestamp())
        end = int(timeline.parse_timestamp(record.finished_at).timestamp())
        assert (bar[4], bar[5]) == (start, max(end - start, 1))


def _record(n: int, start: str, end: str, **extra: object) -> AttemptRecord:
    return AttemptRecord(attempt=n, worker="w", prompt_sha256="0" * 64, base_commit="c" * 40,
                         started_at=start, finished_at=end, **extra)  # type: ignore[arg-type]


def _report(items: list[ItemReport]) -> WaveReport:
    return WaveReport(wave_id="w-20260101-100000-ab12", base_sha="a" * 40, items=items,
                      started_at="2026-01-01T10:00:00Z", finished_at="2026-01-01T10:01:00Z")


def test_ids_and_titles_with_mermaid_syntax_cannot_add_lines_tasks_or_sections() -> None:
    # A report read back from a file or a comment may carry any id; killed attempts are `active`.
    report = _report([
        ItemReport(id=HOSTILE, title=HOSTILE, status="todo", attempts=2, ownership_violations=["x:y"],
                   attempt_records=[_record(1, "2026-01-01T10:00:00Z", "2026-01-01T10:00:30Z", killed="wall"),
                                    _record(2, "2026-01-01T10:00:30Z", "2026-01-01T10:00:31Z")]),
        ItemReport(id="#;:", status="todo", attempts=1,
                   attempt_records=[_record(1, "2026-01-01T10:00:02Z", "2026-01-01T10:00:02Z", exit_code=3)]),
    ])
    bars = bars_of(gantt_block(to_markdown(report)))
    assert [(b[1], b[2], b[3], b[5]) for b in bars] == [
        (1, "timeout", "active", 30), (2, "violation", "crit", 1), (1, "worker exit 3", "crit", 1)]
    assert bars[2][0] == "item"  # an id with nothing inert left still names a section


def test_the_timeline_is_cut_to_the_comment_limit_with_a_count_of_bars_left_out() -> None:
    records = [_record(n, "2026-01-01T10:00:00Z", "2026-01-01T10:00:09Z", test_exit=1) for n in range(1, 41)]
    report = _report([ItemReport(id=f"ITEM-{i}", status="todo", attempts=40, attempt_records=records)
                      for i in range(50)])
    whole = to_markdown(report, max_chars=10_000_000)
    assert len(bars_of(gantt_block(whole))) == 2000 and "more attempts not shown" not in whole
    limit = 60_000
    cut = to_markdown(report, max_chars=limit)
    assert len(cut) <= limit
    shown = len(bars_of(gantt_block(cut)))
    assert 0 < shown < 2000
    assert f"_{2000 - shown} more attempts not shown in the timeline (size limit)._" in cut


def test_a_wave_with_no_attempt_has_no_timeline() -> None:
    report = _report([ItemReport(id="A", status="todo")])
    assert "```mermaid" not in to_markdown(report)
    assert "No attempt ran." in to_html(report)


class _Elements(HTMLParser):
    """Every start tag with its attributes, and the page's text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _parsed(page: str) -> _Elements:
    parser = _Elements()
    parser.feed(page)
    parser.close()
    return parser


def test_the_page_of_a_report_with_hostile_ids_titles_and_notes_has_only_its_own_tags() -> None:
    report = _report([ItemReport(id=HOSTILE, title=HOSTILE, status="todo", attempts=1, error=HOSTILE,
                                 log_tail=HOSTILE, attempt_records=[_record(1, "2026-01-01T10:00:00Z",
                                                                            "2026-01-01T10:00:05Z")])])
    report.notes.append(HOSTILE)
    report.error = report.halt_reason = HOSTILE
    parsed = _parsed(to_html(report))
    assert {tag for tag, _ in parsed.tags} <= {"html", "head", "meta", "title", "style", "body", "h1", "h2",
                                              "p", "code", "span", "strong", "svg", "text", "rect", "table",
                                              "tr", "th", "td", "ul", "li", "details", "summary", "pre"}
    assert "".join(parsed.text).count("alert(1)") >= 6


def test_report_html_writes_a_self_contained_page_with_an_svg_bar_per_attempt(tmp_path: Path) -> None:
    hostile_path = "src/<img_src=http:x_onerror=alert(1)>.txt"
    title = HOSTILE + ' <a href="http://evil">x</a>'
    remote = make_wave_repo(tmp_path, [
        item("GOOD", ["write src/a.txt ok"], ["src/a.txt"], title=title),
        # A hostile worker: output that tries to close tags, a file outside its ownership named like a tag.
        item("EVIL", ["say </pre></details><script>alert(2)</script>", f"write {hostile_path} x",
                      "write src/e.txt ok"], ["src/e.txt"]),
    ], attempts=1)
    assert wavegit(remote.clone, "run").returncode == 1
    shown = wavegit_here(remote.clone, "report", "--html")
    assert shown.returncode == 0, shown.stderr
    page_path = Path(shown.stdout.strip().removeprefix("report: "))
    assert page_path.parent == remote.clone / ".git" / "wavegit" / "reports" and page_path.suffix == ".html"
    page = page_path.read_text()
    parsed = _parsed(page)
    tags = [tag for tag, _ in parsed.tags]
    # Self-contained and inert: no script, no external resource, no link, no event handler.
    assert not {"script", "link", "img", "iframe", "a", "object", "embed"} & set(tags)
    assert "http" not in " ".join(f"{name}={value}" for _, attrs in parsed.tags for name, value in attrs)
    assert not [name for _, attrs in parsed.tags for name, _ in attrs if name in ("src", "href")
                or name.startswith("on")]
    assert tags.count("rect") == 2 and tags.count("svg") == 1
    text = "".join(parsed.text)
    # The hostile strings are there, as text.
    assert title.replace("\n", "") in text.replace("\n", "")
    assert "</pre></details><script>alert(2)</script>" in text and hostile_path in text
    colours = [dict(attrs)["fill"] for tag, attrs in parsed.tags if tag == "rect"]
    assert colours == ["#2da44e", "#cf222e"]  # verified, failed

    out = tmp_path / "page.html"
    assert wavegit_here(remote.clone, "report", "--html", "-o", str(out)).returncode == 0
    assert out.read_text() == page


def test_report_output_to_an_unwritable_place_is_one_line_exit_2(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])])
    assert wavegit(remote.clone, "run").returncode == 0
    missing = tmp_path / "no" / "such" / "dir" / "page.html"
    for flag in ("--html", "--json"):
        result = wavegit_here(remote.clone, "report", flag, "-o", str(missing))
        assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
        assert result.stderr.startswith(f"wavegit report: -o {missing}: cannot write it")
        assert "Traceback" not in result.stderr and not missing.parent.exists()
    json_out = tmp_path / "r.json"
    assert wavegit_here(remote.clone, "report", "--json", "-o", str(json_out)).returncode == 0
    assert WaveReport.from_json(json_out.read_text()).items[0].id == "A"


def test_an_earlier_attempt_that_violated_ownership_is_a_violation_on_the_timeline_not_a_failure() -> None:
    report = _report([ItemReport(id="A", status="review", attempts=2, verified=True, attempt_records=[
        _record(1, "2026-01-01T10:00:00Z", "2026-01-01T10:00:10Z", exit_code=0, test_exit=0, violated=True),
        _record(2, "2026-01-01T10:00:10Z", "2026-01-01T10:00:20Z", exit_code=0, test_exit=0)])])
    assert [bar.outcome for bar in timeline.bars(report)] == ["violation", "verified"]



def test_an_attempt_whose_test_could_not_launch_is_not_counted_on_the_timeline_not_failed() -> None:
    report = _report([ItemReport(id="A", status="todo", attempts=1, attempt_records=[
        _record(1, "2026-01-01T10:00:00Z", "2026-01-01T10:00:10Z", exit_code=0, test_exit=None,
                counted=False)])])
    assert [bar.outcome for bar in timeline.bars(report)] == ["not counted"]

def test_the_page_says_failed_as_the_comment_does_and_keeps_ids_on_one_line() -> None:
    report = _report([ItemReport(id="AUTH-12", status="todo", attempts=1, attempt_records=[
        _record(1, "2026-01-01T10:00:00Z", "2026-01-01T10:00:10Z", exit_code=1)])])
    page = to_html(report)
    assert '<span class="bad">failed</span>' in page and "not a success" not in page
    assert "❌ failed" in to_markdown(report)
    assert '<code class="id">AUTH-12</code>' in page and "code.id { white-space: nowrap; }" in page
