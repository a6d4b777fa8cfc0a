"""The sweep of an unsandboxed attempt's leftovers reads only processes started since the attempt's launch."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from wavegit.attempts import sweep
from wavegit.attempts.workerenv import ATTEMPT_TOKEN_VAR

_DAEMON = "import time; time.sleep(60)"  # a session of its own (start_new_session), like a setsid daemon


def _daemon(marker: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, ATTEMPT_TOKEN_VAR: marker}
    return subprocess.Popen([sys.executable, "-c", _DAEMON], env=env, start_new_session=True)


def _gone(proc: subprocess.Popen[bytes]) -> bool:
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        return False
    return True


def test_a_sweep_since_a_mark_kills_what_started_after_it_and_reads_nothing_older() -> None:
    marker = os.urandom(16).hex()
    older = _daemon(marker)  # carries the marker, but started before the mark: outside the window
    since = sweep.mark()
    assert since is not None
    newer = _daemon(marker)
    try:
        time.sleep(0.2)  # both have exec'd python: their environments are set
        assert sweep.sweep(marker, since) == [newer.pid]
        assert _gone(newer) and older.poll() is None
        assert sweep.sweep(marker) == [older.pid]  # no mark: every process is read
        assert _gone(older)
    finally:
        for proc in (older, newer):
            proc.kill()
            proc.wait()


@pytest.mark.parametrize(("now_last", "forks", "inside", "outside"), [
    (20_000, 100, [10_001, 20_000], [10_000, 20_001, 400]),   # the counter moved on
    (500, 100, [32_000, 301, 500], [10_000, 501]),             # it wrapped once, past the reserved ids
    (20_000, 32_468, [5, 10_000, 30_000], []),                 # as many forks as ids: it may have gone round
])
def test_the_window_is_the_ids_handed_out_since_the_mark_cyclically(
        monkeypatch: pytest.MonkeyPatch, now_last: int, forks: int, inside: list[int],
        outside: list[int]) -> None:
    since = sweep.PidMark(last_pid=10_000 if now_last != 500 else 31_000, forks=0, pid_max=32_768)
    monkeypatch.setattr(sweep, "mark", lambda: sweep.PidMark(now_last, forks, 32_768))
    candidate = sweep._started_since(since)
    assert [pid for pid in inside if not candidate(pid)] == []
    assert [pid for pid in outside if candidate(pid)] == []
