"""Bad input everywhere wavegit reads it: config files and variables, command lines, the pre-push stdin
protocol, PR comments and GitHub API answers. Every case gets its documented exit code (2 for bad input;
1 when GitHub itself answers nonsense), one clear message, no traceback, and nothing written.
(The malformed-tracker corpus and its fuzzing are tests/test_malformed.py.)
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.ghserver import BOT, running
from tests.helpers.reliability import (
    GatePR,
    main_in_process,
    one_clear_line,
    open_gate_pr,
    repo_state,
    sample_report,
)
from tests.helpers.repos import RemoteRepo, git, wavegit
from tests.helpers.sync import entry, make_tracker_repo
from tests.helpers.timing import timed
from wavegit.cli import COMMANDS
from wavegit.core.errors import UsageError, ValidationError
from wavegit.model.config import CONFIG_PATH, CONFIG_SCHEMA, Config, load_config, parse_config_text
from wavegit.model.report import ReportError
from wavegit.model.report_markdown import MARKER, parse_markdown, to_markdown

SLOW_OK = settings(max_examples=40, deadline=None,
                   suppress_health_check=[HealthCheck.function_scoped_fixture])
SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text()
JSONISH = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                       | st.dictionaries(st.text(), inner, max_size=3), max_leaves=6)
KEYS = [spec.name for spec in CONFIG_SCHEMA.fields]


def message_lines(stderr: str) -> list[str]:
    """stderr without argparse's usage block (``usage:`` and its indented continuation lines)."""
    # Split on newlines only: a terminal shows a stray carriage return from the user's input on one line.
    return [line for line in stderr.split("\n") if line.strip() and not line.startswith(("usage:", " "))]


def assert_refused(outcome: Any, code: int = 2) -> str:
    """A refusal with ``code`` and exactly one message line, no traceback; the line."""
    assert outcome.code == code, (outcome.code, outcome.stderr)
    assert "Traceback" not in outcome.stderr
    lines = message_lines(outcome.stderr)
    assert len(lines) == 1, outcome.stderr
    return lines[0]


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RemoteRepo]:
    """A clone with a tracker on origin; the tests here only ever refuse, so it is shared."""
    yield make_tracker_repo(tmp_path_factory.mktemp("badinput"), [entry("A"), entry("B", "in_progress",
                                                                                    wave="w-20260101-000000-ab00")])


def unchanged(remote: RemoteRepo) -> Callable[[], None]:
    """A check that neither the clone nor origin changed since now."""
    before = (repo_state(remote.clone), git(remote.origin, "for-each-ref"))

    def check() -> None:
        assert (repo_state(remote.clone), git(remote.origin, "for-each-ref")) == before

    return check


# -- config files and variables ---------------------------------------------------------------------------

@given(st.text(max_size=300))
@settings(max_examples=200, deadline=None)
def test_any_config_text_parses_or_names_every_problems_location(text: str) -> None:
    try:
        values = parse_config_text(text)
    except ValidationError as exc:
        assert exc.problems
        assert all(p.path == CONFIG_PATH and p.line >= 1 and p.col >= 1 and p.message for p in exc.problems)
    else:
        assert set(values) <= set(KEYS)


@given(st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=8), JSONISH, max_size=5))
@settings(max_examples=150, deadline=None)
def test_config_with_random_values_loads_or_is_refused_with_located_problems(data: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as root:
        (Path(root) / ".wavegit").mkdir()
        (Path(root) / CONFIG_PATH).write_text(yaml.safe_dump(data))
        try:
            config = load_config(Path(root), environ={})
        except ValidationError as exc:
            assert all(p.line >= 1 and p.col >= 1 for p in exc.problems)
        else:
            assert isinstance(config, Config) and config.concurrency >= 1 and config.timeout_s > 0


@given(st.sampled_from([k.upper() for k in KEYS if k not in ("budget", "hook")] + ["BUDGET_WAVE_USD",
                                                                                    "HOOK_STRICT"]),
       st.text(max_size=12))
@settings(max_examples=150, deadline=None)
def test_environment_overrides_load_or_are_refused_naming_the_variable(key: str, value: str) -> None:
    var = f"WAVEGIT_{key}"
    try:
        load_config(Path(tempfile.gettempdir()) / "no-such-wavegit-repo", environ={var: value})
    except UsageError as exc:
        assert var in str(exc) and "\n" not in str(exc).replace(value, "")


@pytest.mark.parametrize("config", [
    "concurrency: 0\n", "worker: [1, 2]\n", "budget: {wave_usd: -1}\n", "timeout_s: .nan\n",
    "base_branch: 'a..b'\n", "tracker_path: ../outside.yaml\n", "concurrency: 2\nconcurrency: 3\n",
    "- not\n- a mapping\n", "worker: &a [*a]\n", "report_authors: bot\n", "\tworker: x\n",
])
def test_a_bad_config_refuses_validate_and_run_with_its_location_and_claims_nothing(
        tmp_path: Path, config: str) -> None:
    remote = make_tracker_repo(tmp_path, [entry("A")])
    (remote.clone / CONFIG_PATH).write_text(config)
    check = unchanged(remote)
    # In this process (the CLI's exit path through a real process: test_bad_arguments_through_a_real_process).
    for command in (["validate"], ["run"]):
        result = main_in_process(["-C", str(remote.clone), *command])
        assert result.code == 2 and "Traceback" not in result.stderr, result.stderr
        lines = result.stderr.strip().splitlines()
        assert lines and all(re.match(rf"{re.escape(CONFIG_PATH)}:\d+:\d+: ", line) for line in lines), lines
    check()


# -- command lines ----------------------------------------------------------------------------------------

OPTIONS = ["--max-items", "--json", "--no-push", "--pr", "--event", "--push", "--deadline", "--owns",
           "--test", "--prompt", "--prompt-file", "--priority", "--depends-on", "--reason", "--dry-run",
           "--fetch", "--title", "-C", "--", "-", "pre-push", "install", "uninstall", "0", "-1", "nan",
           "1e999", "x"]
# No NUL (no argv can hold one) and no newline (argparse echoes an argument verbatim in its error line).
TOKENS = st.lists(st.sampled_from(OPTIONS)
                  | st.text(max_size=10).filter(lambda t: not {"\x00", "\n"} & set(t)), max_size=6)


@given(st.sampled_from(sorted(set(COMMANDS) - {"demo"})), TOKENS)
@settings(max_examples=150, deadline=None)
def test_random_arguments_outside_a_repository_get_one_clear_line_and_write_nothing(
        command: str, tokens: list[str]) -> None:
    with tempfile.TemporaryDirectory() as empty:
        outcome = main_in_process(["-C", empty, command, *tokens])
        assert outcome.code in (0, 2), (outcome.code, outcome.stderr)
        assert "Traceback" not in outcome.stderr
        if outcome.code:
            assert len(message_lines(outcome.stderr)) == 1, outcome.stderr
        assert list(Path(empty).iterdir()) == []


# Ids with a character outside the documented "letters, digits, . _ -".
BAD_IDS = st.text(min_size=1, max_size=12).filter(
    lambda s: "\x00" not in s and re.search(r"[^A-Za-z0-9._-]", s) is not None)
BAD_PATTERNS = st.sampled_from(["/etc/passwd", "../up", "src/../../x", "", "a//../b", "C:\\x", "src\\a.py"])
BAD_SECONDS = st.sampled_from(["0", "-1", "-0.5", "abc", ""])
BAD_COUNTS = BAD_SECONDS | st.just("1.5")


def bad_commands() -> st.SearchStrategy[list[str]]:
    add = ["add", "N-1", "--prompt", "p", "--owns", "src/n.txt", "--test", "true"]
    return st.one_of(
        BAD_IDS.map(lambda bad: ["add", bad, *add[2:]]),
        BAD_PATTERNS.map(lambda bad: [*add[:5], bad, "--test", "true"]),
        st.text(max_size=3).filter(lambda p: p not in ("P0", "P1", "P2", "P3")).map(
            lambda bad: [*add, "--priority", bad]),
        BAD_SECONDS.map(lambda bad: [*add, "--deadline", bad]),
        BAD_COUNTS.map(lambda bad: ["plan", "--max-items", bad]),
        BAD_COUNTS.map(lambda bad: ["run", "--max-items", bad]),
        st.sampled_from(["", "   ", "\n"]).map(lambda bad: ["halt", "--reason", bad]),
        st.sampled_from(["A", "B"]).map(lambda dup: ["add", dup, *add[2:]]),
        st.sampled_from(["NOPE", "N-1"]).map(lambda dep: [*add, "--depends-on", dep]),
        st.sampled_from([["add", "N-1"], ["gate"], ["hook"], ["plan", "extra"], ["sync", "--bogus"]]),
    )


@given(bad_commands())
@settings(SLOW_OK, max_examples=60)
def test_bad_arguments_in_a_repository_exit_2_with_one_line_and_write_nothing(
        repo: RemoteRepo, argv: list[str]) -> None:
    check = unchanged(repo)
    assert_refused(main_in_process(["-C", str(repo.clone), *argv]))
    check()


def test_a_nan_deadline_is_bad_input(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("A")])
    check = unchanged(remote)
    assert_refused(main_in_process(["-C", str(remote.clone), "add", "N-1", "--prompt", "p", "--owns", "src/n",
                                    "--test", "true", "--deadline", "nan"]))
    check()


@pytest.mark.parametrize("argv", [
    ["add", "bad id", "--prompt", "p", "--owns", "src/x", "--test", "true"],
    ["add", "N-2", "--prompt", "p", "--owns", "../x", "--test", "true"],
    ["run", "--max-items", "0"],
    ["frobnicate"],
])
def test_bad_arguments_through_a_real_process_exit_2_with_one_line(repo: RemoteRepo, argv: list[str]) -> None:
    check = unchanged(repo)
    result = wavegit(repo.clone, *argv)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert len(message_lines(result.stderr)) == 1, result.stderr
    check()


# -- the pre-push stdin protocol --------------------------------------------------------------------------

HEX = st.text(alphabet="0123456789abcdef", min_size=40, max_size=40)
OID = HEX | st.sampled_from(["0" * 40, "0" * 64, "XYZ", "", "g" * 40]) | st.text(max_size=42)
REF = st.sampled_from(["refs/heads/main", "refs/heads/wavegit/w-20260101-000000-ab00", "(delete)", "HEAD",
                       "refs/heads/a b", ""]) | st.text(max_size=20)
LINE = st.tuples(REF, OID, REF, OID).map(" ".join) | st.text(max_size=60)


@given(st.lists(LINE, max_size=4))
@settings(SLOW_OK, max_examples=80)
def test_random_pre_push_stdin_is_refused_on_its_line_or_judged_never_crashes(
        repo: RemoteRepo, lines: list[str]) -> None:
    check = unchanged(repo)
    stdin = "\n".join(lines).encode("utf-8", "surrogateescape")
    outcome = main_in_process(["-C", str(repo.clone), "hook", "pre-push", "origin", str(repo.origin)], stdin)
    assert outcome.code in (0, 1, 2), outcome
    assert "Traceback" not in outcome.stderr
    if outcome.code == 2:
        assert re.match(r"wavegit hook: stdin line \d+: ", assert_refused(outcome)), outcome.stderr
    check()


@pytest.mark.parametrize("stdin", [
    "refs/heads/main abc refs/heads/main def\n",
    "just garbage\n",
    f"refs/heads/main {'a' * 40} refs/heads/main {'b' * 64}\n",
    f"(delete) {'a' * 40} refs/heads/main {'0' * 40}\n",
])
def test_malformed_pre_push_stdin_through_a_real_process_exits_2_naming_the_line(
        repo: RemoteRepo, stdin: str) -> None:
    result = wavegit(repo.clone, "hook", "pre-push", "origin", str(repo.origin), input=stdin)
    assert result.returncode == 2
    assert "stdin line 1" in one_clear_line(result.stderr)


# -- PR comments ------------------------------------------------------------------------------------------

@pytest.fixture
def pr(remote_repo: RemoteRepo, monkeypatch: pytest.MonkeyPatch) -> Iterator[GatePR]:
    with running(remote_repo.origin) as gh:
        for name, value in {"GITHUB_TOKEN": "ghs_botTOKEN000000000000000000000000",
                            "GITHUB_REPOSITORY": gh.fake.repo, "GITHUB_API_URL": gh.url}.items():
            monkeypatch.setenv(name, value)
        yield open_gate_pr(remote_repo, gh)


def gate(pr: GatePR) -> Any:
    return main_in_process(["-C", str(pr.remote.clone), "gate", "--pr", str(pr.number)])


@given(st.integers(min_value=0, max_value=10_000), st.integers(min_value=0, max_value=200),
       st.text(max_size=40))
@settings(max_examples=300, deadline=None)
def test_a_mangled_report_comment_parses_or_is_a_report_error(at: int, cut: int, insert: str) -> None:
    body = to_markdown(sample_report("a" * 40))
    at %= len(body) + 1
    mangled = body[:at] + insert + body[at + cut:]
    try:
        parse_markdown(mangled)
    except ReportError as exc:
        assert str(exc).startswith("$")


@pytest.mark.parametrize(("edit", "reason"), [
    (lambda body: body + "\n" + MARKER + "\n", "expected one report marker line, found 2"),
    (lambda body: body.replace('"success":true', '"success":tru'), "the report comment cannot be read"),
    (lambda body: body.replace('"head_sha"', '"head_sha":1,"x"'), "the report comment cannot be read"),
    (lambda body: body[:body.rindex("-->")], "not closed"),
    (lambda body: body.replace('"items":[', '"items":[7,'), "$.items[0]"),
    (lambda body: MARKER + "\n<!-- wavegit:report-json " + "[" * 100_000 + " -->", "cannot be read"),
    (lambda body: MARKER + "\n<!-- wavegit:report-json " + "x" * 3_000_000, "not closed"),
])
def test_forged_broken_or_huge_report_comments_fail_the_gate_with_one_line(
        pr: GatePR, edit: Callable[[str], str], reason: str) -> None:
    valid = to_markdown(pr.report())
    broken = edit(valid)
    # The baseline: a good report padded to the same size (the same bytes to fetch), then the bad one.
    pr.post(BOT, valid + "\n" + "x" * max(len(broken) - len(valid), 0))
    passed, baseline_s = timed(lambda: gate(pr))
    assert passed.code == 0, passed
    pr.post(BOT, broken)
    outcome, broken_s = timed(lambda: gate(pr))
    assert outcome.code == 1 and "Traceback" not in outcome.stderr, outcome
    assert outcome.stdout.startswith(f"fail: PR #{pr.number}: ") and reason in outcome.stdout
    assert len(outcome.stdout.strip().splitlines()) == 1
    status = pr.gh.fake.latest_status(pr.head, "wavegit/gate")
    assert status is not None and status.state == "failure"
    assert broken_s < 5 * baseline_s


def test_megabytes_of_text_around_a_trusted_report_change_nothing_and_take_no_time(pr: GatePR) -> None:
    pr.post(BOT, to_markdown(pr.report()))
    _, plain_s = timed(lambda: gate(pr))
    pr.post(BOT, "x" * 2_000_000 + "\n" + to_markdown(pr.report()) + "y" * 2_000_000)
    outcome, padded_s = timed(lambda: gate(pr))
    assert outcome.code == 0, outcome
    # Linear work: fetching and scanning 4 MB once, nothing quadratic in the comment's size.
    assert padded_s < 10 * plain_s


def test_gate_fixture_passes_with_a_well_formed_report(pr: GatePR) -> None:
    """The baseline the broken cases above differ from."""
    pr.post(BOT)
    outcome = gate(pr)
    assert outcome.code == 0, outcome


# -- GitHub API answers -----------------------------------------------------------------------------------

def drop(key: str) -> Callable[[Any], Any]:
    return lambda data: ([{k: v for k, v in d.items() if k != key} for d in data] if isinstance(data, list)
                         else {k: v for k, v in data.items() if k != key})


def retype(key: str, value: Any) -> Callable[[Any], Any]:
    return lambda data: ([{**d, key: value} for d in data] if isinstance(data, list)
                         else {**data, key: value})


@pytest.mark.parametrize(("route", "mangle"), [
    ("pull", drop("head")), ("pull", retype("number", "seven")), ("pull", retype("head", {"sha": 7})),
    # PyGithub completes a comment lacking a field from its own URL, so both answers lose the author.
    ("comments+comment", drop("user")), ("comments", retype("body", ["x"])),
    ("comments", retype("id", "one")),
    ("comments", retype("updated_at", 12)), ("comments", lambda data: {"not": "a list"}),
    ("files", drop("filename")), ("files", retype("filename", None)), ("files", lambda data: "nope"),
    ("get contents", retype("content", "!!not base64!!")), ("get contents", retype("sha", None)),
    ("get contents", retype("sha", 5)),
])
def test_malformed_github_answers_fail_the_gate_with_one_line_and_never_pass(
        pr: GatePR, route: str, mangle: Callable[[Any], Any]) -> None:
    pr.post(BOT)
    pr.gh.fake.mangle = dict.fromkeys(route.split("+"), mangle)
    outcome = gate(pr)
    assert outcome.code in (1, 2) and "Traceback" not in outcome.stderr, outcome
    status = pr.gh.fake.latest_status(pr.head, "wavegit/gate")
    assert status is None or status.state == "failure"
    if status is None:
        assert assert_refused(outcome, outcome.code).startswith("wavegit gate: ")
    else:
        assert outcome.stdout.startswith("fail: ") and len(outcome.stdout.strip().splitlines()) == 1


@given(st.sampled_from(["pull", "comments", "files", "get contents"]), st.text(max_size=10), JSONISH)
@settings(SLOW_OK, max_examples=40)
def test_random_field_values_in_github_answers_never_crash_the_gate(
        pr: GatePR, route: str, key: str, value: Any) -> None:
    if not pr.gh.fake.issue_comments(pr.number):
        pr.post(BOT)
    pr.gh.fake.mangle = {route: retype(key, value)}
    outcome = gate(pr)
    assert outcome.code in (0, 1, 2) and "Traceback" not in outcome.stderr, outcome
    if outcome.code == 2 or not outcome.stdout:
        assert_refused(outcome, outcome.code)
