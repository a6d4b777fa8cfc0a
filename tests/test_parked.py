"""wavegit.attempts.runner.park: a sandbox started ahead, parked at its gate, runs its command only when
told to go (real bwrap); never on end of file, a drop, or a ``kill -9`` of its launcher."""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.repos import REPO_ROOT
from tests.helpers.wave import item, make_wave_repo, run
from wavegit.attempts import gate, limits, runner, sandbox
from wavegit.attempts.runner import Confinement, new_marker, park, run_process

BWRAP = shutil.which(sandbox.BWRAP)
PROBLEM = sandbox.probe(BWRAP) if BWRAP else "bwrap is not installed"
pytestmark = pytest.mark.skipif(PROBLEM is not None, reason=f"bwrap cannot run: {PROBLEM}")
PIDS_CGROUP = Path("/sys/fs/cgroup/pids")
needs_cgroup = pytest.mark.skipif(os.geteuid() != 0 or not os.access(PIDS_CGROUP, os.W_OK),
                                  reason=f"needs root and a writable v1 pids cgroup ({PIDS_CGROUP})")
# What the parked command does if it ever runs: its prompt (stdin) into a file of its tree.
WRITES = ["/bin/sh", "-c", "cat > ran.txt"]
ENV = {"PATH": "/usr/bin:/bin"}


def _layout(tmp_path: Path) -> sandbox.Layout:
    checkout = tmp_path / "checkout"
    tree, private = checkout / "trees" / "A-1", checkout / "sandbox" / "A-1"
    for path in (tree, private):
        path.mkdir(parents=True)
    return sandbox.Layout(tree=tree, private=private, hidden=(checkout,))


def _confinement(tmp_path: Path, ceilings: limits.Limits = limits.NO_LIMITS) -> Confinement:
    assert BWRAP is not None
    return Confinement(BWRAP, _layout(tmp_path), new_marker(), ceilings)


def _session(leader: int) -> list[tuple[int, str, str]]:
    """(pid, state, command line) of each process in ``leader``'s session (a parked sandbox keeps it)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[3]) == leader:  # the session id
            found.append((int(entry), fields[0], cmdline))
    return found


def _at_gate(leader: int) -> None:
    """Until the session's gate, a shell reading its go line, sleeps in that read (deadline: 30 s)."""
    deadline = time.monotonic() + 30
    while not any(state == "S" and "read -r go" in cmdline for _, state, cmdline in _session(leader)):
        assert time.monotonic() < deadline, _session(leader)
        time.sleep(0.01)


def _gone(leader: int) -> None:
    deadline = time.monotonic() + 30
    while any(state != "Z" for _, state, _ in _session(leader)):
        assert time.monotonic() < deadline, _session(leader)
        time.sleep(0.01)


def _run(tree: Path, confine: Confinement, log: Path, parked: runner.Parked | None) -> runner.ProcessResult:
    return run_process(WRITES, cwd=tree, env=ENV, stdin_text="the prompt\n", log_path=log, timeout_s=30,
                       idle_timeout_s=30, confine=confine, parked=parked)


def _parked_at_gate(tmp_path: Path) -> tuple[Confinement, Path, runner.Parked, subprocess.Popen[bytes]]:
    """The WRITES command parked in its sandbox, its gate up."""
    confine = _confinement(tmp_path)
    tree = confine.layout.tree
    parked = park(WRITES, cwd=tree, env=ENV, confine=confine)
    proc = parked.started.proc
    assert proc is not None
    _at_gate(proc.pid)
    return confine, tree, parked, proc


def test_a_parked_sandbox_runs_its_command_only_on_go_with_its_prompt_and_its_time_from_the_go(
        tmp_path: Path) -> None:
    confine, tree, parked, proc = _parked_at_gate(tmp_path)
    assert not (tree / "ran.txt").exists()
    before_go = runner._utc_now()
    result = _run(tree, confine, tmp_path / "log", parked)
    assert result.ok, result.log_path.read_text()
    # The prompt reached the command whole: the gate read its own line and nothing after it.
    assert (tree / "ran.txt").read_text() == "the prompt\n"
    assert result.started_at >= before_go and proc.returncode == 0
    assert result.log_path.read_text() == ""  # the gate's own line is never in the log


def test_what_a_sandbox_prints_before_its_gate_is_up_is_kept_for_the_log_and_its_up_line_is_not() -> None:
    for written, kept in [(b"bwrap: a warning\nwavegit-up\n", b"bwrap: a warning\n"),
                          (b"bwrap: Can't mount\n", b"bwrap: Can't mount\n")]:
        read_end, write_end = os.pipe()
        os.write(write_end, written)
        os.close(write_end)  # the second never says it is up: bwrap ended
        try:
            assert gate.await_up(read_end) == kept
        finally:
            os.close(read_end)


def test_a_parked_sandbox_runs_nothing_when_its_gate_reads_end_of_file(tmp_path: Path) -> None:
    confine = _confinement(tmp_path)
    parked = park(WRITES, cwd=confine.layout.tree, env=ENV, confine=confine)
    proc = parked.started.proc
    assert proc is not None and proc.stdin is not None
    _at_gate(proc.pid)
    proc.stdin.close()
    assert proc.wait() == 125
    parked.drop()
    assert not (confine.layout.tree / "ran.txt").exists()


@needs_cgroup
def test_a_dropped_parked_sandbox_is_killed_unrun_and_its_cgroup_removed(tmp_path: Path) -> None:
    confine = _confinement(tmp_path, limits.Limits(pids=64))
    parked = park(WRITES, cwd=confine.layout.tree, env=ENV, confine=confine)
    proc = parked.started.proc
    assert proc is not None
    _at_gate(proc.pid)
    own = Path("/proc/self/cgroup").read_text().split(":pids:")[1].split("\n")[0].lstrip("/")
    group = PIDS_CGROUP / own / f"wavegit-{confine.marker}"
    assert group.is_dir() and str(proc.pid) in (group / "cgroup.procs").read_text().split()
    parked.drop()
    assert proc.returncode == -signal.SIGKILL and not group.exists()
    _gone(proc.pid)
    assert not (confine.layout.tree / "ran.txt").exists()
    parked.drop()  # again: nothing left to do


def test_a_parked_sandbox_dies_unrun_with_its_launcher_killed(tmp_path: Path) -> None:
    confine = _confinement(tmp_path)
    tree = confine.layout.tree
    launcher = textwrap.dedent(f"""\
        import sys, time
        from pathlib import Path
        from wavegit.attempts import gate, limits, runner, sandbox
        layout = sandbox.Layout(tree=Path({str(tree)!r}), private=Path({str(confine.layout.private)!r}),
                                hidden=(Path({str(tmp_path / "checkout")!r}),))
        confine = runner.Confinement({BWRAP!r}, layout, runner.new_marker())
        parked = runner.park({WRITES!r}, cwd=layout.tree, env={ENV!r}, confine=confine)
        print(parked.started.proc.pid, flush=True)
        time.sleep(600)
        """)
    proc = subprocess.Popen([sys.executable, "-c", launcher], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    assert proc.stdout is not None
    leader = int(proc.stdout.readline())
    _at_gate(leader)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    _gone(leader)
    assert not (tree / "ran.txt").exists()


def test_a_parked_sandbox_whose_tree_was_made_again_is_dropped_and_the_command_started_afresh(
        tmp_path: Path) -> None:
    confine, tree, parked, proc = _parked_at_gate(tmp_path)
    # Its bind would show the removed directory, not the new one at the same path.
    tree.rmdir()
    tree.mkdir()
    result = _run(tree, confine, tmp_path / "log", parked)
    assert result.ok, result.log_path.read_text()
    assert (tree / "ran.txt").read_text() == "the prompt\n" and proc.returncode == -signal.SIGKILL


def test_a_parked_command_that_cannot_launch_fails_as_it_would_unparked(tmp_path: Path) -> None:
    confine = _confinement(tmp_path)
    missing = ["no-such-worker-anywhere"]
    parked = park(missing, cwd=confine.layout.tree, env=ENV, confine=confine)
    assert parked.started.proc is None
    result = run_process(missing, cwd=confine.layout.tree, env=ENV, stdin_text="", log_path=tmp_path / "log",
                         timeout_s=5, idle_timeout_s=5, confine=confine, parked=parked)
    assert "cannot launch 'no-such-worker-anywhere'" in (result.launch_error or "")


# --- in a wave: an attempt waiting for its slot parks its worker and test ----------------------------------


def _recording_parks(monkeypatch: pytest.MonkeyPatch, *meets: Path) -> list[runner.Parked]:
    """Every park of an attempt waiting for its slot, recorded (not a launch's own sandbox, built while its
    tree is made: ``building``); once the Nth attempt parked its worker and test, an entry in the Nth of
    ``meets`` (a worker waits there for it)."""
    parks: list[runner.Parked] = []
    real = runner.park

    def recording(*args: Any, **kwargs: Any) -> runner.Parked:
        if kwargs.get("building"):
            return real(*args, **kwargs)
        parks.append(real(*args, **kwargs))
        if len(parks) % 2 == 0 and len(parks) // 2 <= len(meets):
            (meets[len(parks) // 2 - 1] / "parked").touch()
        return parks[-1]

    monkeypatch.setattr(runner, "park", recording)
    return parks


def _cgroups_named(name: str) -> list[str]:
    """Every cgroup of that name, under every controller (os.walk: parallel tests add and remove others
    meanwhile, which pathlib's glob raised on)."""
    return [root for root, dirs, _ in os.walk("/sys/fs/cgroup") if name in dirs]


def test_an_attempt_parked_for_its_slot_that_the_budget_stops_is_killed_unrun_cgroups_and_all(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    meet, ran = tmp_path / "meet", tmp_path / "ran"
    meet.mkdir()
    ran.mkdir()
    remote = make_wave_repo(tmp_path, [
        # A spends the wave's budget, and ends only once B (waiting for A's slot) parked its worker and test.
        item("A", ["cost 1", f"meet {meet} 2", "write src/a.txt ok"], ["src/a.txt"]),
        item("B", [f"write {ran}/B yes", "write src/b.txt ok"], ["src/b.txt"]),
    ], concurrency=1, attempts=1, budget={"wave_usd": 0.5},
        sandbox={"mode": "bwrap", "rw_paths": [str(meet), str(ran)], "pids": 256})
    parks = _recording_parks(monkeypatch, meet)
    items = {i.id: i for i in run(remote.clone).report.items}
    assert items["A"].verified and not items["B"].verified
    assert "budget reached" in (items["B"].error or "")
    assert len(parks) == 2 and list(ran.iterdir()) == []
    for parked in parks:
        assert parked.started.proc is not None and parked.started.proc.returncode == -signal.SIGKILL
        assert parked.started.confine is not None
        assert _cgroups_named(f"wavegit-{parked.started.confine.marker}") == []


def test_a_parked_attempt_runs_in_its_turn_and_its_test_judges_the_workers_commit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    meets = (tmp_path / "b-parked", tmp_path / "c-parked")
    for meet in meets:
        meet.mkdir()
    remote = make_wave_repo(tmp_path, [
        item("A", [f"meet {meets[0]} 2", "write src/a.txt ok"], ["src/a.txt"]),
        item("B", ["say prompt seen", f"meet {meets[1]} 2", "write src/b.txt ok"], ["src/b.txt"]),
        item("C", ["write src/c.txt no"], ["src/c.txt"]),
    ], concurrency=1, attempts=1, sandbox={"mode": "bwrap", "rw_paths": [str(meet) for meet in meets]})
    parks = _recording_parks(monkeypatch, *meets)
    items = {i.id: i for i in run(remote.clone).report.items}
    # B ran parked (its prompt read through the gate), its test on its commit; C's test failed its commit.
    assert items["B"].verified and items["B"].log_tail == "prompt seen"
    assert not items["C"].verified and items["C"].test_exit == 1
    assert len(parks) == 4 and [p.started.proc.returncode for p in parks if p.started.proc] == [0, 0, 0, 1]


def test_a_first_attempts_sandbox_is_built_while_its_tree_is_made_and_its_worker_finds_the_whole_tree(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # No slot to wait for: its sandbox starts on the empty directory its tree is then made in (bwrap binds
    # that very directory), and its worker runs only once both are done.
    seen = tmp_path / "seen"
    seen.mkdir()
    script = seen / "look.sh"
    script.write_text(f'find . -path ./.git -prune -o -type f -print | sort > {seen}/tree\n'
                      'echo ok > src/a.txt\n')
    remote = make_wave_repo(tmp_path, [item("A", [f"run sh {script}"], ["src/a.txt"])], concurrency=1,
                            sandbox={"mode": "bwrap", "rw_paths": [str(seen)]})
    at_park: list[list[str]] = []
    real = runner.park

    def recording(*args: Any, **kwargs: Any) -> runner.Parked:
        if kwargs.get("building"):
            at_park.append(sorted(entry.name for entry in Path(kwargs["cwd"]).iterdir()))
        return real(*args, **kwargs)

    monkeypatch.setattr(runner, "park", recording)
    items = {i.id: i for i in run(remote.clone).report.items}
    assert items["A"].verified, items["A"]
    assert at_park == [[]]
    assert (seen / "tree").read_text().splitlines() == [
        "./.wavegit/config.yaml", "./.wavegit/tracker.yaml", "./README.md", "./src/a/seed.txt",
        "./src/keep.txt"]


def test_an_unsandboxed_wave_parks_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"]),
                                       item("B", ["write src/b.txt ok"], ["src/b.txt"])],
                            concurrency=1, sandbox="none")

    def refused(*args: Any, **kwargs: Any) -> runner.Parked:
        raise AssertionError("parked unsandboxed")

    monkeypatch.setattr(runner, "park", refused)
    assert all(i.verified for i in run(remote.clone).report.items)


def test_a_sandboxed_launch_says_it_started_only_once_its_sandbox_is_built(tmp_path: Path) -> None:
    # A stand-in for bwrap that takes its time to "build" the sandbox, marks it built, then runs the rest.
    slow = tmp_path / "bwrap"
    slow.write_text('#!/bin/sh\nwhile [ "$1" != -- ]; do shift; done; shift\n'
                    'sleep 0.2; : > "$BUILT"\nexec "$@"\n')
    slow.chmod(0o755)
    built = tmp_path / "built"
    confine = dataclasses.replace(_confinement(tmp_path), bwrap=str(slow))
    seen: list[bool] = []
    result = run_process(WRITES, cwd=confine.layout.tree, env={**ENV, "BUILT": str(built)}, stdin_text="x",
                         log_path=tmp_path / "log", timeout_s=30, idle_timeout_s=30, confine=confine,
                         on_start=lambda: seen.append(built.exists()))
    assert result.ok, result.log_path.read_text()
    assert seen == [True]


def test_a_worker_of_the_batch_before_cannot_plant_in_the_empty_test_checkout_parked_for_the_next(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A (hostile, batch 1) runs once B waits parked with its empty test checkout (B-1.test beside A's tree):
    # it tries to plant a file and a symlink there and records what its attempts gave.
    meet, seen = tmp_path / "meet", tmp_path / "seen"
    meet.mkdir()
    seen.mkdir()
    script = seen / "plant.sh"
    script.write_text(f'c="$(dirname "$PWD")/B-1.test"; log={seen}/A\n'
                      '(echo x > "$c/planted") 2>/dev/null && echo wrote >> $log || echo denied >> $log\n'
                      '(ln -s / "$c/link") 2>/dev/null && echo linked >> $log || echo denied >> $log\n'
                      'ls -a "$c" >> $log 2>&1; true\n')
    remote = make_wave_repo(tmp_path, [
        item("A", [f"meet {meet} 2", f"run sh {script}", "write src/a.txt ok"], ["src/a.txt"]),
        item("B", ["write src/b.txt ok"], ["src/b.txt"],
             test="sh -c 'test ! -e planted && test ! -e link && test -f src/b.txt'"),
    ], concurrency=1, attempts=1, sandbox={"mode": "bwrap", "rw_paths": [str(meet), str(seen)]})
    parks = _recording_parks(monkeypatch, meet)
    items = {i.id: i for i in run(remote.clone).report.items}
    assert items["A"].verified and items["B"].verified, items
    assert (seen / "A").read_text().splitlines()[:2] == ["denied", "denied"]
    assert len(parks) == 2 and [p.started.proc.returncode for p in parks if p.started.proc] == [0, 0]


def test_an_item_test_of_the_batch_before_cannot_plant_in_the_tree_or_test_checkout_parked_for_the_next(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A's item test (hostile: a test runs the worker's code) runs once D waits parked (B and C hold the two
    # slots until the test is done): it tries to plant in D's tree and D's empty test checkout, both beside
    # its own checkout.
    meets, seen, held = (tmp_path / "c-parked", tmp_path / "d-parked"), tmp_path / "seen", tmp_path / "held"
    for folder in (*meets, seen, held):
        folder.mkdir()
    script = seen / "plant.sh"
    script.write_text(f'while [ ! -e {meets[1]}/parked ]; do sleep 0.05; done; log={seen}/A\n'
                      'for c in "$(dirname "$PWD")/D-1.test" "$(dirname "$PWD")/D-1"; do\n'
                      '  (echo x > "$c/planted") 2>/dev/null && echo wrote >> $log || echo denied >> $log\n'
                      '  (ln -s / "$c/link") 2>/dev/null && echo linked >> $log || echo denied >> $log\n'
                      f'done; touch {held}/A; test -f src/a.txt\n')
    clean = "sh -c 'test ! -e planted && test ! -e link && test -f src/{0}.txt'"
    remote = make_wave_repo(tmp_path, [
        # A's worker holds its slot until C parked: the next batch's trees are made once the batch before
        # launched, and a slot given back before C's tree is made goes to C unparked.
        item("A", [f"meet {meets[0]} 2", "write src/a.txt ok"], ["src/a.txt"], test=f"sh {script}"),
        *(item(name, [f"meet {held} 3", f"write src/{name.lower()}.txt ok"], [f"src/{name.lower()}.txt"],
               test=clean.format(name.lower())) for name in ("B", "C")),
        item("D", ["write src/d.txt ok"], ["src/d.txt"], test=clean.format("d")),
    ], concurrency=2, attempts=1, timeout_s=60, idle_timeout_s=60,
        sandbox={"mode": "bwrap", "rw_paths": [str(seen), str(held), *map(str, meets)]})
    parks = _recording_parks(monkeypatch, *meets)
    items = {i.id: i for i in run(remote.clone).report.items}
    assert all(i.verified for i in items.values()), [(i.id, i.error, i.log_tail) for i in items.values()]
    assert (seen / "A").read_text().splitlines() == ["denied"] * 4
    assert len(parks) == 4 and [p.started.proc.returncode for p in parks if p.started.proc] == [0] * 4


def test_a_retry_runs_in_a_sandbox_of_its_own_never_the_one_parked_for_its_first_attempt(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A waits parked behind B; its first attempt (hostile) leaves a file in its HOME, and its test one in its
    # checkout, and fails. The retry is set up afresh: nothing parked for the first attempt runs it, and
    # neither its worker nor its test finds what the first one left.
    meet, seen = tmp_path / "meet", tmp_path / "seen"
    for folder in (meet, seen):
        folder.mkdir()
    leave = seen / "leave.sh"
    leave.write_text('echo x > "$HOME/left"; echo no > src/a.txt\n')
    look = seen / "look.sh"
    look.write_text(f'ls -A "$HOME" > {seen}/retry; echo ok > src/a.txt\n')
    test = f"sh -c 'ls -A . >> {seen}/tests; echo x > left; grep -q ok src/a.txt'"
    remote = make_wave_repo(tmp_path, [
        item("B", [f"meet {meet} 2", "write src/b.txt ok"], ["src/b.txt"]),
        item("A", [f"no-feedback run sh {leave}", f"if-feedback run sh {look}"], ["src/a.txt"], test=test),
    ], concurrency=1, attempts=2, sandbox={"mode": "bwrap", "rw_paths": [str(meet), str(seen)]})
    parks = _recording_parks(monkeypatch, meet)
    items = {i.id: i for i in run(remote.clone).report.items}
    assert items["A"].verified and items["A"].attempts == 2, items["A"]
    # Parked: A's first worker and test, each run (the test failed); the retry's started afresh.
    assert len(parks) == 2 and [p.started.proc.returncode for p in parks if p.started.proc] == [0, 1]
    assert (seen / "retry").read_text() == ""
    assert "left" not in (seen / "tests").read_text()
