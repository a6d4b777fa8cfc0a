"""wavegit.attempts.runner with real subprocess workers (tests/workers/*.py): exits, limits, group kills,
logs, environment and presets; the cost a worker reports end to end."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from wavegit.attempts import processio, runner, sandbox
from wavegit.attempts.agents import Agent
from wavegit.attempts.cost import cost_reading
from wavegit.attempts.runner import ProcessResult, command_argv, run_process
from wavegit.attempts.workerenv import worker_env
from wavegit.core.errors import UsageError

WORKERS = Path(__file__).resolve().parent / "workers"


def worker(name: str, *args: str) -> list[str]:
    return [sys.executable, str(WORKERS / f"{name}.py"), *args]


def run(tmp_path: Path, argv: list[str], *, stdin_text: str | None = "", timeout_s: float = 10,
        idle_timeout_s: float = 10, cancel: threading.Event | None = None,
        env: dict[str, str] | None = None, kill_grace_s: float = 0.5) -> ProcessResult:
    return run_process(argv, cwd=tmp_path, env=env, stdin_text=stdin_text,
                       log_path=tmp_path / "logs" / "a.log", timeout_s=timeout_s,
                       idle_timeout_s=idle_timeout_s, cancel=cancel, kill_grace_s=kill_grace_s,
                       pipe_linger_s=0.3)


def alive(pid: int) -> bool:
    """A pid counts as alive unless it is gone or a zombie (a container's init may never reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_gone(pid: int, within_s: float = 3.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.02)
    return False


def test_successful_worker_gets_prompt_on_stdin_and_logs_it(tmp_path: Path) -> None:
    result = run(tmp_path, worker("echo_stdin"), stdin_text="Add a token bucket\nplease\n")
    assert result.ok and result.exit_code == 0 and result.killed is None
    assert result.log_path.read_text() == "Add a token bucket\nplease\n"
    assert result.tail(1) == "please"
    assert result.started_at <= result.finished_at and result.duration_s > 0


def test_failing_worker_reports_its_exit_code(tmp_path: Path) -> None:
    result = run(tmp_path, worker("echo_stdin", "3"), stdin_text="x\n")
    assert result.exit_code == 3 and not result.ok and result.killed is None
    assert result.describe() == "exited 3"


def test_a_shells_command_not_found_is_explained_with_the_sandboxs_way_out(tmp_path: Path) -> None:
    result = run(tmp_path, ["sh", "-c", "wavegit-no-such-program-here"])
    assert result.exit_code == 127
    assert result.describe().startswith("exited 127 (a shell's 'command not found': ")
    assert "sandbox.ro_paths" in result.describe()


def test_crash_by_signal_is_a_negative_exit_code_named_in_describe(tmp_path: Path) -> None:
    result = run(tmp_path, worker("crash", "SIGSEGV"))
    assert result.exit_code == -signal.SIGSEGV and result.killed is None
    assert result.describe() == "killed by SIGSEGV"
    assert "about to crash" in result.tail(5)


def test_wall_timeout_kills_a_busy_worker(tmp_path: Path) -> None:
    result = run(tmp_path, worker("hang"), timeout_s=0.4, idle_timeout_s=10)
    assert result.killed == "wall" and result.exit_code == -signal.SIGTERM
    assert result.describe() == "timed out after 0.4 s (timeout_s)"
    assert 0.4 <= result.duration_s < 3
    assert "working" in result.tail(3)


def test_idle_timeout_kills_a_silent_worker(tmp_path: Path) -> None:
    result = run(tmp_path, worker("silent"), timeout_s=10, idle_timeout_s=0.3)
    assert result.killed == "idle" and result.describe() == "killed: no output for 0.3 s (idle_timeout_s)"
    assert result.duration_s < 3


def test_busy_worker_is_not_idle_even_when_idle_limit_is_shorter_than_its_run(tmp_path: Path) -> None:
    # hang.py prints every 0.05 s: only the wall limit may stop it.
    result = run(tmp_path, worker("hang"), timeout_s=0.8, idle_timeout_s=0.3)
    assert result.killed == "wall"


def test_worker_ignoring_sigterm_is_killed_after_the_grace_period(tmp_path: Path) -> None:
    result = run(tmp_path, worker("hang", "ignore-term"), timeout_s=0.3, kill_grace_s=0.3)
    assert result.killed == "wall" and result.exit_code == -signal.SIGKILL
    assert 0.6 <= result.duration_s < 3


def test_timeout_kills_the_whole_group_including_the_grandchild(tmp_path: Path) -> None:
    pid_file = tmp_path / "gc.pid"
    result = run(tmp_path, worker("grandchild", str(pid_file), "hang"), timeout_s=0.5)
    assert result.killed == "wall"
    assert wait_gone(int(pid_file.read_text()))
    assert "grandchild up" in result.log_path.read_text()


def test_grandchild_holding_the_pipe_after_the_worker_exits_does_not_hold_the_run(tmp_path: Path) -> None:
    pid_file = tmp_path / "gc.pid"
    result = run(tmp_path, worker("grandchild", str(pid_file), "exit"), timeout_s=30, idle_timeout_s=30)
    assert result.exit_code == 0 and result.killed is None
    assert result.duration_s < 5
    assert wait_gone(int(pid_file.read_text()))


@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "polled"])
def test_the_end_of_a_quick_process_is_noticed_without_waiting_a_poll_interval(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pidfd: bool) -> None:
    # The output closes well before the exit, and the poll interval is far longer than the run: only an
    # event-driven (or fast-polled) exit can end the run early.
    poll_s = 60.0
    monkeypatch.setattr(runner, "_POLL_S", poll_s)
    if not pidfd:
        monkeypatch.setattr(processio, "_exit_fd", lambda pid: None)
    start = time.monotonic()
    result = run(tmp_path, ["sh", "-c", "exec >&- 2>&-; sleep 0.3"])
    assert result.ok
    # Noticed long before one poll interval: the run did not wait for the poll (200x the process's run).
    assert time.monotonic() - start < poll_s / 2


def test_cancel_event_stops_the_worker(tmp_path: Path) -> None:
    cancel = threading.Event()
    timer = threading.Timer(0.2, cancel.set)
    timer.start()
    result = run(tmp_path, worker("hang"), cancel=cancel)
    timer.join()
    assert result.killed == "cancelled" and result.describe() == "cancelled"
    assert result.duration_s < 3


def test_lots_of_output_is_logged_completely_with_stderr_merged(tmp_path: Path) -> None:
    lines = 60_000
    result = run(tmp_path, worker("spew", str(lines)))
    assert result.ok
    log = result.log_path.read_text().splitlines()
    assert sum(1 for line in log if line.startswith("line ")) == lines
    assert sum(1 for line in log if line.startswith("err ")) == lines // 1000
    assert result.tail(2).splitlines()[-1] == "last line"


def test_output_past_the_log_cap_keeps_its_head_and_tail_and_says_what_was_dropped(tmp_path: Path) -> None:
    result = run_process(worker("spew", "60000"), cwd=tmp_path, env=None, stdin_text="",
                         log_path=tmp_path / "a.log", timeout_s=10, idle_timeout_s=10, log_bytes=64 * 1024)
    assert result.ok
    log = result.log_path.read_bytes()
    assert len(log) < 64 * 1024 + 200
    assert log.startswith(b"line 0000000 ") and log.endswith(b"line 0059999 " + b"x" * 80 + b"\nlast line\n")
    assert b"bytes of output dropped here (sandbox.log_bytes 65536)" in log


def test_a_log_on_a_full_disk_neither_stops_the_worker_nor_wavegit(tmp_path: Path) -> None:
    # /dev/full refuses every write with ENOSPC: the output is still drained, the worker ends normally.
    result = run_process(worker("spew", "60000"), cwd=tmp_path, env=None, stdin_text="",
                         log_path=Path("/dev/full"), timeout_s=10, idle_timeout_s=10)
    assert result.ok and result.killed is None


def test_worker_that_ignores_a_large_stdin_does_not_deadlock(tmp_path: Path) -> None:
    result = run(tmp_path, worker("ignore_stdin"), stdin_text="p" * 2_000_000, timeout_s=10)
    assert result.ok
    assert result.tail(1) == "did not read the prompt"


def test_large_prompt_is_delivered_whole(tmp_path: Path) -> None:
    prompt = "".join(f"{i}\n" for i in range(200_000))
    result = run(tmp_path, worker("echo_stdin"), stdin_text=prompt)
    assert result.ok and result.log_path.read_text() == prompt


def test_missing_command_is_a_launch_error_recorded_in_the_log(tmp_path: Path) -> None:
    result = run(tmp_path, ["wavegit-no-such-worker-xyz", "--go"])
    assert result.exit_code is None and result.killed is None and not result.ok
    assert result.launch_error is not None and "wavegit-no-such-worker-xyz" in result.launch_error
    assert result.launch_error in result.tail(1)


def test_a_missing_relative_program_says_the_tree_holds_only_committed_files(tmp_path: Path) -> None:
    relative = run(tmp_path, [".venv/bin/python", "-m", "pytest"])
    assert relative.launch_error is not None and "holds only committed files" in relative.launch_error
    assert "give its absolute path" in relative.launch_error
    absolute = run(tmp_path, [str(tmp_path / ".venv" / "bin" / "python")])
    assert absolute.launch_error is not None and "committed files" not in absolute.launch_error


def test_non_executable_command_is_a_launch_error(tmp_path: Path) -> None:
    script = tmp_path / "not-executable.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    result = run(tmp_path, [str(script)])
    assert result.launch_error is not None and "Permission denied" in result.launch_error


def test_missing_working_directory_is_a_launch_error(tmp_path: Path) -> None:
    result = run_process(worker("ignore_stdin"), cwd=tmp_path / "gone", env=None, stdin_text=None,
                         log_path=tmp_path / "a.log", timeout_s=5, idle_timeout_s=5)
    assert result.launch_error is not None and "gone" in result.launch_error


def test_tail_handles_missing_trailing_newline_and_missing_log(tmp_path: Path) -> None:
    log = tmp_path / "t.log"
    log.write_bytes(b"a\nb\nc")
    now = datetime.now(timezone.utc)
    result = ProcessResult(0, None, None, 0.0, log, now, now)
    assert result.tail(2) == "b\nc" and result.tail(10) == "a\nb\nc" and result.tail(0) == ""
    log.unlink()
    assert result.tail(3) == ""


def test_command_argv_splits_like_a_shell_without_running_one() -> None:
    assert command_argv("python -c 'print(1); exit 2' \"a b\"") == ["python", "-c", "print(1); exit 2", "a b"]
    assert command_argv("echo $HOME;rm") == ["echo", "$HOME;rm"]


@pytest.mark.parametrize("bad", ["", "   ", "claude -p 'unbalanced"])
def test_command_argv_rejects_empty_and_unbalanced_commands(bad: str) -> None:
    with pytest.raises(UsageError):
        command_argv(bad)


def test_worker_cost_file_is_read_end_to_end(tmp_path: Path) -> None:
    cost_file = tmp_path / "cost.json"
    env = worker_env(os.environ, item_id="A", wave_id="w", prompt_file=tmp_path / "p", cost_file=cost_file,
                     feedback_file=None, owns=[], pass_github_token=False, home=tmp_path, tmp=tmp_path)
    result = run(tmp_path, worker("cost", '{"usd": 0.42}'), env=env)
    assert cost_reading(cost_file, result.log_path, Agent("worker", None, command="python cost.py")).usd == \
        pytest.approx(0.42)



_LAUNCHER = """
import shutil, sys, threading
from pathlib import Path
from wavegit.attempts import limits, runner, sandbox
mode, base = sys.argv[1], Path(sys.argv[2])
layout = sandbox.Layout(base, base / "private", (), hardened=False)
bwrap = shutil.which("bwrap") if mode == "bwrap" else None
confine = None if mode == "bare" else runner.Confinement(bwrap, layout, runner.new_marker(),
                                                         limits.Limits(pids=64, memory_bytes=1 << 30))

def launch():
    limits.carry_keyring_filter()  # as a wave's item thread: nothing runs in the child before exec
    runner.run_process(["sh", "-c", "echo started > " + str(base / "started") + "; exec sleep 60"], cwd=base,
                       env=None, stdin_text="", log_path=base / "w.log", timeout_s=60, idle_timeout_s=60,
                       confine=confine)

threading.Thread(target=launch, daemon=True).start()
threading.Event().wait()
"""


def _descendants(pid: int) -> list[int]:
    """Every living process below ``pid``, by the parent each names in /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found, frontier = [], [pid]
    while frontier:
        children = [child for child, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


@pytest.mark.parametrize("mode", ["bare", "none", "bwrap"])
def test_a_worker_dies_when_wavegit_is_killed(tmp_path: Path, mode: str) -> None:
    # PR_SET_PDEATHSIG with no preexec hook: setpriv unsandboxed, bwrap's --die-with-parent in the sandbox.
    if mode == "bwrap" and (shutil.which("bwrap") is None or sandbox.probe(str(shutil.which("bwrap")))):
        pytest.skip("bwrap cannot run here")
    (tmp_path / "private").mkdir()
    launcher = subprocess.Popen([sys.executable, "-c", _LAUNCHER, mode, str(tmp_path)],
                                start_new_session=True)
    deadline = time.monotonic() + 10
    while not (tmp_path / "started").exists():
        assert time.monotonic() < deadline and launcher.poll() is None, (tmp_path / "w.log").read_text()
        time.sleep(0.02)
    workers = _descendants(launcher.pid)
    assert workers and all(alive(pid) for pid in workers)
    os.kill(launcher.pid, signal.SIGKILL)
    launcher.wait()
    assert all(wait_gone(pid) for pid in workers), workers
