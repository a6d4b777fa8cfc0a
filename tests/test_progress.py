"""wavegit.commands._progress: plain event lines off a terminal, an in-place table on one, thread safety."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.helpers.repos import REPO_ROOT
from tests.helpers.wave import branches, item, make_wave_repo, origin_item
from wavegit.cli import EXIT_BROKEN_PIPE
from wavegit.commands._progress import Progress, format_elapsed
from wavegit.core.repo import discover
from wavegit.core.terminal import inert
from wavegit.model.report import WaveReport


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def screen(output: str) -> list[str]:
    """What a terminal shows after ``output``: text, newlines, and the three CSI codes the view uses."""
    lines: list[str] = [""]
    row = 0
    for token in re.findall(r"\x1b\[\d*[A-Za-z]|\n|[^\x1b\n]+", output):
        if token == "\n":
            row += 1
            if row == len(lines):
                lines.append("")
        elif token.endswith("F"):
            row -= int(token[2:-1])
            assert row >= 0, "cursor moved above the first line"
        elif token == "\x1b[2K":
            lines[row] = ""
        elif token == "\x1b[J":
            del lines[row + 1:]
            lines[row] = ""
        else:
            assert not token.startswith("\x1b"), f"unexpected escape {token!r}"
            lines[row] += token
    return [line for line in lines if line]


def test_plain_mode_prints_one_line_per_event() -> None:
    out, clock = io.StringIO(), FakeClock()
    progress = Progress(out, live=False, clock=clock)
    progress.event("AUTH-12", "started", attempt=1)
    clock.now += 1.5
    progress.event("AUTH-12", "testing", "pytest -q tests/auth")
    clock.now += 1.7
    progress.event("AUTH-12", "verified")
    progress.event("UI-3", "started", attempt=2)
    clock.now += 65
    progress.event("UI-3", "killed", "no output for 600s")
    progress.note("wave w-1: 1 verified, 1 failed")
    progress.close()
    assert out.getvalue().splitlines() == [
        "AUTH-12 attempt 1 started",
        "AUTH-12 attempt 1 testing: pytest -q tests/auth",
        "AUTH-12 verified in 3.2s (attempt 1)",
        "UI-3 attempt 2 started",
        "UI-3 killed in 1m05s (attempt 2): no output for 600s",
        "wave w-1: 1 verified, 1 failed",
    ]
    assert "\x1b" not in out.getvalue()


def test_an_item_queued_again_by_a_later_wave_shows_no_attempt_number_of_the_last_one() -> None:
    # `run --continuous` shares one view across waves: a real run printed "VIOL-1 attempt 2 queued", then
    # "VIOL-1 attempt 3 started".
    out = io.StringIO()
    progress = Progress(out, live=False, clock=FakeClock())
    progress.event("A", "queued")
    progress.event("A", "started", attempt=2)
    progress.event("A", "failed", "test exit 1", attempt=2)
    progress.event("A", "queued")
    progress.event("A", "started", attempt=3)
    assert out.getvalue().splitlines()[3:] == ["A queued", "A attempt 3 started"]


def test_clock_starts_at_the_first_active_state_and_restarts_for_a_retry() -> None:
    out, clock = io.StringIO(), FakeClock()
    progress = Progress(out, live=False, clock=clock)
    progress.event("A-1", "queued")
    clock.now += 5
    progress.event("A-1", "running", "attempt 1")
    clock.now += 2
    progress.event("A-1", "testing", "attempt 1")
    clock.now += 1
    progress.event("A-1", "failed", "attempt 1: test exit 1")
    clock.now += 9
    progress.event("A-1", "running", "attempt 2")
    clock.now += 0.5
    progress.event("A-1", "verified", "attempt 2")
    assert out.getvalue().splitlines()[3:] == ["A-1 failed in 3.0s: attempt 1: test exit 1",
                                                "A-1 running: attempt 2", "A-1 verified in 0.5s: attempt 2"]


def test_non_tty_stream_defaults_to_plain_and_tty_to_live() -> None:
    assert Progress(io.StringIO()).live is False
    assert Progress(Tty()).live is True


def test_live_mode_redraws_one_table_in_place() -> None:
    out, clock = Tty(), FakeClock()
    with Progress(out, clock=clock, refresh_s=60) as progress:
        progress.event("AUTH-12", "started", attempt=1)
        progress.event("UI-3", "queued")
        clock.now += 2
        progress.event("AUTH-12", "testing")
        clock.now += 1
        progress.event("AUTH-12", "verified")
        clock.now += 10
        progress.event("UI-3", "started", attempt=1)
    shown = screen(out.getvalue())
    assert len(shown) == 3, shown
    assert shown[0].split() == ["item", "state", "attempt", "elapsed", "detail"]
    assert shown[1].split() == ["AUTH-12", "verified", "1", "3.0s"]
    assert shown[2].split() == ["UI-3", "started", "1", "0.0s"]


def test_live_notes_appear_above_the_table() -> None:
    out = Tty()
    with Progress(out, clock=FakeClock(), refresh_s=60) as progress:
        progress.event("A-1", "started", attempt=1)
        progress.note("claimed 1 item")
        progress.event("A-1", "failed", "test exit 1")
    shown = screen(out.getvalue())
    assert shown[0] == "claimed 1 item"
    assert shown[2].split()[:2] == ["A-1", "failed"] and shown[2].endswith("test exit 1")


def test_live_table_ticks_elapsed_time_without_events() -> None:
    out, clock = Tty(), FakeClock()
    with Progress(out, clock=clock, refresh_s=0.02) as progress:
        progress.event("A-1", "started", attempt=1)
        clock.now += 7
        time.sleep(0.2)
        assert screen(out.getvalue())[1].split() == ["A-1", "started", "1", "7.0s"]


def test_concurrent_events_never_interleave_lines() -> None:
    out = io.StringIO()
    progress = Progress(out, live=False)

    def worker(n: int) -> None:
        for i in range(200):
            progress.event(f"ITEM-{n}", "running", f"step {i}", attempt=1)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lines = out.getvalue().splitlines()
    assert len(lines) == 1600
    assert all(re.fullmatch(r"ITEM-\d attempt 1 running: step \d+", line) for line in lines)


def test_format_elapsed_switches_to_minutes_at_sixty_seconds() -> None:
    assert [format_elapsed(s) for s in (0.04, 59.94, 60, 3599)] == ["0.0s", "59.9s", "1m00s", "59m59s"]


class ClosedPipe(io.StringIO):
    """A stream whose reader has gone: every write fails as a pipe's does."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_stream_that_fails_silences_the_view_and_never_raises() -> None:
    for live in (False, True):
        progress = Progress(ClosedPipe(), live=live, refresh_s=0.01)
        with progress:
            progress.note("claimed 1 item")
            progress.event("A-1", "started", attempt=1)
            progress.event("A-1", "verified", attempt=1)
        assert progress.output_error is not None and "BrokenPipeError" in progress.output_error


@pytest.mark.parametrize("unbuffered", ["1", ""])
def test_run_piped_into_head_2_records_the_whole_wave(tmp_path: Path, unbuffered: str) -> None:
    # `wavegit run 2>&1 | head -2`: a real pipe whose reader leaves after two lines; the progress lines after
    # them used to raise BrokenPipeError in the engine, leaving both items in_progress, no branch, no record.
    # Unbuffered, the summary's print fails; buffered, the final flush does.
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"]),
                                       item("B", ["write src/b.txt ok"], ["src/b.txt"])])
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "PYTHONUNBUFFERED": unbuffered}
    proc = subprocess.Popen([sys.executable, "-m", "wavegit", "run"], cwd=remote.clone, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    head = [proc.stdout.readline() for _ in range(2)]
    proc.stdout.close()
    assert proc.wait(timeout=120) == EXIT_BROKEN_PIPE, head
    assert [origin_item(remote, i).status for i in ("A", "B")] == ["review", "review"]
    assert branches(remote.origin) == [f"wavegit/{origin_item(remote, 'A').wave}"]
    reports = sorted(discover(remote.clone).reports_dir.glob("*.json"))
    assert len(reports) == 1 and WaveReport.from_json(reports[0].read_text()).success


def test_attack_control_characters_in_a_detail_or_note_reach_the_terminal_as_escapes() -> None:
    out = io.StringIO()
    with Progress(out, live=False) as progress:
        progress.event("A", "failed", "changed src/\x1b]52;c;cHduZWQ=\x07\x1b[2J\rx.txt\u202e")
        progress.note("claimed \x1b[31mA")
    assert "\x1b" not in out.getvalue() and "\r" not in out.getvalue()
    assert "src/\\x1b]52;c;cHduZWQ=\\x07\\x1b[2J\\x0dx.txt\\u202e" in out.getvalue()
    assert inert("plain é text") == "plain é text"
