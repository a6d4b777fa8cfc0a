"""wavegit.cli: parsing and dispatch, help for every command, exit codes, lazy imports."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.repos import REPO_ROOT, wavegit
from tests.helpers.wave import item, make_wave_repo
from wavegit import __version__, cli


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        cli.main(["--version"])
    assert caught.value.code == 0
    assert capsys.readouterr().out.strip() == f"wavegit {__version__}"


def test_top_level_help_lists_every_command_and_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    text = capsys.readouterr().out
    for name, (_, summary) in cli.COMMANDS.items():
        assert f"{name}  " in text and summary in text
    assert "4 lost a compare-and-swap race" in text


@pytest.mark.parametrize("command", sorted(cli.COMMANDS))
def test_every_command_has_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        cli.main([command, "--help"])
    assert caught.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: wavegit {command}")


def test_an_unknown_command_is_exit_2_with_usage(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        cli.main(["frobnicate"])
    assert caught.value.code == 2
    assert "invalid choice: 'frobnicate'" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [[], ["-C", "."]])
def test_no_command_is_exit_2_listing_the_commands_without_argparse_internals(
        argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    # `wavegit` alone said "the following arguments are required: COMMAND, args": `args` is no argument.
    with pytest.raises(SystemExit) as caught:
        cli.main(argv)
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert err.endswith("wavegit: error: a command is required (listed above)\n")
    assert "  plan " in err and "args" not in err


def test_an_unknown_option_of_a_command_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        cli.main(["plan", "--no-such-option"])
    assert caught.value.code == 2
    assert "wavegit plan: error: unrecognized arguments: --no-such-option" in capsys.readouterr().err


def test_a_wavegit_error_is_one_line_on_stderr_with_its_exit_code(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["-C", str(tmp_path), "plan"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("wavegit plan: ") and "not inside a git work tree" in err


def test_validation_errors_print_one_located_line_per_problem(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "tracker.yaml"
    bad.write_text("version: 1\nitems:\n  - id: A\n    prompt: p\n    owns: []\n    test: t\n"
                   "  - id: A\n    prompt: p\n    owns: [/abs]\n    test: t\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert cli.main(["-C", str(tmp_path), "validate", "--file", str(bad)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) >= 3
    assert all(re.match(r"^.*tracker\.yaml:\d+:\d+: ", line) for line in lines), lines


def test_python_dash_m_wavegit_works(tmp_path: Path) -> None:
    result = wavegit(tmp_path, "--version")
    assert result.returncode == 0 and result.stdout.strip() == f"wavegit {__version__}"


def test_errors_into_a_closed_pipe_end_with_141_too_not_1(tmp_path: Path) -> None:
    # `wavegit validate 2>&1 | head -1`: the error lines, printed outside the command, died with a
    # traceback nobody saw, exit 1.
    bad = tmp_path / "tracker.yaml"
    bad.write_text("version: 1\nitems:\n  - id: A\n    prompt: p\n    owns: []\n    test: t\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    read_end, write_end = os.pipe()
    os.close(read_end)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    try:
        done = subprocess.run([sys.executable, "-m", "wavegit", "validate", "--file", str(bad)], cwd=tmp_path,
                              env=env, stdout=write_end, stderr=write_end, timeout=60, check=False)
    finally:
        os.close(write_end)
    assert done.returncode == cli.EXIT_BROKEN_PIPE


@pytest.mark.parametrize("items", [3, 400], ids=["flushed-at-exit", "mid-output"])
def test_output_into_a_closed_pipe_ends_quietly_with_141_like_git(tmp_path: Path, items: int) -> None:
    remote = make_wave_repo(tmp_path, [item(f"ITEM-{n}", ["write src/a.txt ok"], [f"src/{n}.txt"])
                                       for n in range(items)])
    read_end, write_end = os.pipe()
    os.close(read_end)  # `wavegit ls | head -0`: the reader is gone before the first line
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    try:
        done = subprocess.run([sys.executable, "-m", "wavegit", "ls"], cwd=remote.clone, env=env,
                              stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60, check=False)
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (cli.EXIT_BROKEN_PIPE, "")


_EXIT_PROBE = """\
import atexit, os, pathlib, threading, time
marks = pathlib.Path(os.environ["EXIT_MARKS"])
atexit.register(lambda: (marks / "atexit").write_text("ran"))


class _Freed:
    def __del__(self) -> None:
        (marks / "teardown").write_text("ran")


FREED = _Freed()


def _outlive_main() -> None:
    # Runs until the main thread has ended (the interpreter's exit stops it before joining this thread),
    # however long the command took: os._exit would kill it first.
    deadline = time.monotonic() + 60
    while threading.main_thread().is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    (marks / "thread").write_text("done")


if os.environ.get("EXIT_THREAD"):
    threading.Thread(target=_outlive_main).start()
"""


@pytest.mark.parametrize("thread", [False, True], ids=["alone", "a-thread-still-running"])
def test_a_command_ends_once_its_atexit_handlers_ran_and_skips_the_teardown_only_when_alone(
        tmp_path: Path, thread: bool) -> None:
    # The teardown only frees memory then (`wavegit run`'s was 15-30 ms of a wave's end); a thread still
    # running is waited for, as the interpreter's own exit does.
    probe, marks = tmp_path / "probe", tmp_path / "marks"
    probe.mkdir()
    marks.mkdir()
    (probe / "sitecustomize.py").write_text(_EXIT_PROBE)
    tracker = tmp_path / "tracker.yaml"
    tracker.write_text("version: 1\nitems: []\n")
    subprocess.run(["git", "init", "-q", str(tmp_path / "repo")], check=True)
    result = wavegit(tmp_path / "repo", "validate", "--file", str(tracker),
                     env={"PYTHONPATH": f"{REPO_ROOT}{os.pathsep}{probe}", "EXIT_MARKS": str(marks),
                          **({"EXIT_THREAD": "1"} if thread else {})})
    assert result.returncode == 0, result.stderr
    assert (marks / "atexit").read_text() == "ran"
    if thread:
        assert (marks / "thread").read_text() == "done"
        assert (marks / "teardown").read_text() == "ran"
    else:
        assert not (marks / "teardown").exists()


def test_a_sigint_while_run_imports_its_modules_interrupts_it_and_run_json_still_prints_its_report(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # `wavegit run &` in a script starts with SIGINT ignored; importing the run command's modules takes 0.1 to
    # 0.7 s on a loaded machine, and a `kill -INT` sent then was lost: the wave claimed and ran every item,
    # exit 0 (usr12). Now it is kept and raised once run handles it: exit 130, the report on stdout.
    import importlib
    import json
    import signal

    real_import = importlib.import_module

    def importing(name: str) -> object:
        signal.raise_signal(signal.SIGINT)  # as `kill -INT` during the import
        return real_import(name)

    monkeypatch.setattr(sys, "argv", ["wavegit", "run", "--json"])
    monkeypatch.setattr(importlib, "import_module", importing)
    before_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
    before_term = signal.getsignal(signal.SIGTERM)
    try:
        assert cli._run(None)[0] == 130
    finally:
        signal.signal(signal.SIGINT, before_int)
        signal.signal(signal.SIGTERM, before_term)
    out = capsys.readouterr()
    assert json.loads(out.out)["exit_code"] == 130 and "wavegit run: interrupted" in out.err, out
