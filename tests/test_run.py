"""``wavegit run`` as a subprocess: JSON report, text summary, --no-push, bad input, exit codes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.repos import REPO_ROOT, RemoteRepo, git, make_remote_repo, wavegit
from tests.helpers.wave import branches, item, make_wave_repo, origin_item, untouched, worktrees
from wavegit.attempts.preset_claude import CLAUDE
from wavegit.model.report import WaveReport


def test_json_output_is_exactly_the_report_and_exit_0_on_success(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["say hi", "write src/a.txt ok"], ["src/a.txt"])])
    result = wavegit(remote.clone, "run", "--json")
    assert result.returncode == 0, result.stderr
    report = WaveReport.from_json(result.stdout)
    assert report.success and [i.id for i in report.items] == ["A"]
    assert report.items[0].log_tail == "hi"
    assert git(remote.origin, "rev-parse", f"wavegit/{report.wave_id}") == report.head_sha


def test_text_output_summarises_each_item_and_exit_1_on_failure(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [
        item("GOOD", ["write src/a.txt ok"], ["src/a.txt"]),
        item("BAD", ["write src/b.txt no"], ["src/b.txt"]),
    ], attempts=1)
    result = wavegit(remote.clone, "run")
    assert result.returncode == 1
    assert "1 of 2 verified" in result.stdout
    assert "GOOD: review" in result.stdout
    assert "BAD: todo (test exited 1: check failed: src/b.txt" in result.stdout
    assert "GOOD verified" in result.stderr  # progress lines when not a terminal
    # The last line says where the Markdown report is, relative to where wavegit ran.
    shown = result.stdout.splitlines()[-1].removeprefix("report: ")
    assert shown.startswith(".git/wavegit/reports/")
    assert "| <code>BAD</code> |" in (remote.clone / shown).read_text()


def test_an_edited_uncommitted_config_is_named_on_stderr_as_not_obeyed(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"]),
                                       item("B", ["write src/b.txt ok"], ["src/b.txt"])])
    config = remote.clone / ".wavegit" / "config.yaml"
    config.write_text(config.read_text().replace("concurrency: 4", "concurrency: 1"))
    result = wavegit(remote.clone, "run", "--json", "--max-items", "1")
    assert result.returncode == 0, result.stderr
    assert WaveReport.from_json(result.stdout).config_source.endswith("differing working copy was ignored)")
    assert ("wavegit: warning: the checkout's .wavegit/config.yaml differs from "
            "origin/main:.wavegit/config.yaml, the one this wave obeys: commit and push it") in result.stderr
    git(remote.clone, "checkout", "-q", "--", ".wavegit/config.yaml")
    assert "warning" not in wavegit(remote.clone, "run", "--json").stderr
    config.unlink()  # a checkout without the file (another branch) is no edit to warn about
    assert "warning" not in wavegit(remote.clone, "run", "--json").stderr


def test_nothing_selected_says_why_each_item_was_skipped(tmp_path: Path) -> None:
    held = item("A", ["write src/a.txt ok"], ["src/a.txt"], status="in_progress",
                wave="w-20260101-000001-ab01", claimed_at="2026-01-01T00:00:00Z")
    remote = make_wave_repo(tmp_path, [held, item("B", ["write src/a.txt ok"], ["src/a.txt"])])
    result = wavegit(remote.clone, "run")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].endswith(": nothing selected (1 item skipped)")
    assert lines[1] == "  B: in flight: A"


def test_no_push_leaves_the_remote_without_a_wave_branch(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])])
    result = wavegit(remote.clone, "run", "--json", "--no-push")
    assert result.returncode == 0, result.stderr
    report = WaveReport.from_json(result.stdout)
    assert branches(remote.origin) == [] and branches(remote.clone) == [f"wavegit/{report.wave_id}"]


def test_max_items_limits_the_wave(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [
        item(name, [f"write src/{name}.txt ok"], [f"src/{name}.txt"]) for name in ("a", "b", "c")])
    report = WaveReport.from_json(wavegit(remote.clone, "run", "--json", "--max-items", "2").stdout)
    assert [i.id for i in report.items] == ["a", "b"]
    assert {s.id: s.reason for s in report.skipped} == {"c": "max items"}


def test_max_items_below_one_is_bad_input_and_writes_nothing(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])])
    head = git(remote.origin, "rev-parse", "main")
    result = wavegit(remote.clone, "run", "--max-items", "0")
    assert result.returncode == 2 and "--max-items must be at least 1" in result.stderr
    assert git(remote.origin, "rev-parse", "main") == head


def test_a_sandbox_asked_for_that_cannot_run_is_bad_input_and_nothing_is_claimed(tmp_path: Path) -> None:
    # Its probe runs while the claim reads the tracker: its answer still comes before the claim's commit.
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])], sandbox="bwrap")
    broken = tmp_path / "broken-bin"
    broken.mkdir()
    (broken / "bwrap").write_text("#!/bin/sh\necho 'bwrap: no namespaces here' >&2\nexit 1\n")
    (broken / "bwrap").chmod(0o755)
    before = untouched(remote.origin, remote.clone)
    result = wavegit(remote.clone, "run", env={"PATH": f"{broken}{os.pathsep}{os.environ['PATH']}"})
    assert result.returncode == 2, result.stderr
    assert "sandbox: bwrap was asked for but cannot run" in result.stderr
    assert "bwrap: no namespaces here" in result.stderr and "Traceback" not in result.stderr
    assert untouched(remote.origin, remote.clone) == before
    assert worktrees(remote.clone) == [str(remote.clone)]


def test_a_wave_that_runs_its_workers_unsandboxed_says_so_on_stderr_before_its_first_attempt(
        tmp_path: Path) -> None:
    # `sandbox: auto` without a working bwrap runs workers "with a warning" (README): it was only a note of
    # the report, read once every worker had run outside any sandbox (usr12, a first wave on attrs).
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])], sandbox="auto")
    broken = tmp_path / "broken-bin"
    broken.mkdir()
    (broken / "bwrap").write_text("#!/bin/sh\necho 'bwrap: no namespaces here' >&2\nexit 1\n")
    (broken / "bwrap").chmod(0o755)
    result = wavegit(remote.clone, "run", env={"PATH": f"{broken}{os.pathsep}{os.environ['PATH']}"})
    assert result.returncode == 0, result.stderr
    warning = "warning: sandbox: bwrap cannot run here ("
    assert warning in result.stderr and "no namespaces here); workers run unsandboxed" in result.stderr
    assert result.stderr.index(warning) < result.stderr.index("A attempt 1 started"), result.stderr


def test_missing_tracker_is_bad_input(tmp_path: Path) -> None:
    remote = make_remote_repo(tmp_path)
    result = wavegit(remote.clone, "run")
    assert result.returncode == 2 and "run `wavegit init`" in result.stderr
    assert "Traceback" not in result.stderr


def test_invalid_tracker_is_bad_input_with_its_location(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])])
    (remote.clone / ".wavegit" / "tracker.yaml").write_text("version: 1\nitems: {not: a list}\n")
    git(remote.clone, "commit", "-qam", "break it")
    git(remote.clone, "push", "-q", "origin", "main")
    head = git(remote.origin, "rev-parse", "main")
    result = wavegit(remote.clone, "run")
    assert result.returncode == 2 and ".wavegit/tracker.yaml:2:" in result.stderr
    assert git(remote.origin, "rev-parse", "main") == head


def test_an_interrupted_wave_still_delivers_what_its_workers_verified(tmp_path: Path) -> None:
    # Ctrl-C or SIGTERM cancels the workers still running; an item already verified is combined, pushed and
    # recorded for review, not thrown back to todo with its attempt counted (its work and tokens lost).
    out = tmp_path / "out"
    out.mkdir()
    started, tested = out / "started.jsonl", out / "a-tested"
    remote = make_wave_repo(tmp_path, [
        item("A", ["write src/a.txt ok"], ["src/a.txt"], test=f"touch {tested}"),
        item("B", [f"env {started}", "sleep 30"], ["src/b.txt"])],
        concurrency=2, idle_timeout_s=60, sandbox={"rw_paths": [str(out)]})
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "wavegit", "run", "--json"], cwd=remote.clone, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not (started.exists() and tested.exists()):
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    time.sleep(1.0)  # A's test has ended: its attempt is read as verified a moment later
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    report = WaveReport.from_json(stdout)
    assert report.error == "the wave was interrupted"
    delivered, cancelled = origin_item(remote, "A"), origin_item(remote, "B")
    assert (delivered.status, delivered.attempts) == ("review", 1), stdout
    assert git(remote.origin, "show", f"wavegit/{report.wave_id}:src/a.txt") == "ok"
    assert (cancelled.status, cancelled.attempts, cancelled.wave) == ("todo", 0, None)
    # `status --all` says so too: B cancelled, no attempt of it numbered as if it had failed.
    shown = {line.split()[0]: line.split()[1:] for line in
             wavegit(remote.clone, "status", "--all").stdout.splitlines() if line.startswith("  ")}
    assert shown["A"][:3] == ["verified", "attempt", "1"] and shown["B"][0] == "cancelled", shown
    assert "attempt" not in shown["B"], shown


def _run_with_a_working_worker(tmp_path: Path, *args: str) -> tuple[RemoteRepo, subprocess.Popen[str]]:
    """``wavegit run *args`` as a process, once its one item's worker (sleeping 30 s) has started."""
    out = tmp_path / "out"
    out.mkdir()
    started = out / "started.jsonl"
    remote = make_wave_repo(tmp_path, [item("A", [f"env {started}", "sleep 30"], ["src/a.txt"])],
                            idle_timeout_s=60, sandbox={"rw_paths": [str(out)]})
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "wavegit", "run", *args], cwd=remote.clone, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while not started.exists():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    return remote, proc


def test_an_interrupted_wave_says_its_summary_and_report_path_as_a_finished_one_does(tmp_path: Path) -> None:
    # Ctrl-C printed only "wavegit run: interrupted", though the wave had recorded its items and written its
    # report (and `run --json` and `run --continuous` print it).
    remote, proc = _run_with_a_working_worker(tmp_path)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "wavegit run: interrupted" in stderr, stderr
    summary, *_, shown = stdout.splitlines()
    assert summary.startswith("wave w-") and "  A: todo (cancelled: the wave stopped)" in stdout, stdout
    assert shown.startswith("report: ") and (remote.clone / shown.removeprefix("report: ")).is_file()


def test_an_interrupt_leaves_the_items_last_errors_as_they_were(tmp_path: Path) -> None:
    # Ctrl-C wrote "cancelled: the wave stopped" (A, running) and "not started: the wave stopped
    # (cancelled)" (B, waiting for the slot) over each item's last_error, its last wave's failure: the next
    # worker was told that "Before this wave" instead of why the item last failed. The interrupt is the
    # user's, not the items': the report says it, the tracker keeps their own.
    out = tmp_path / "out"
    out.mkdir()
    started = out / "started.jsonl"
    remote = make_wave_repo(tmp_path, [
        item("A", [f"env {started}", "sleep 30"], ["src/a.txt"], attempts=1, last_error="test exited 1"),
        item("B", ["write src/b.txt ok"], ["src/b.txt"], last_error="worker exited 2")],
        concurrency=1, idle_timeout_s=60, sandbox={"rw_paths": [str(out)]})
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "wavegit", "run"], cwd=remote.clone, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while not started.exists():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "  A: todo (cancelled: the wave stopped)" in stdout, stderr
    assert "  B: todo (not started: the wave stopped (cancelled))" in stdout, stdout
    a, b = origin_item(remote, "A"), origin_item(remote, "B")
    assert (a.status, a.attempts, a.last_error) == ("todo", 1, "test exited 1")
    assert (b.status, b.attempts, b.last_error) == ("todo", 0, "worker exited 2")


def test_sigterm_cancels_workers_releases_the_claim_and_removes_worktrees(tmp_path: Path) -> None:
    remote, proc = _run_with_a_working_worker(tmp_path, "--json")
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "interrupted" in stderr
    # --json: the report, even of an interrupted wave, stopped where it was.
    report = WaveReport.from_json(stdout)
    assert (report.phase, report.error, report.exit_code) == ("run", "the wave was interrupted", 130)
    released = origin_item(remote, "A")
    assert (released.status, released.attempts, released.wave) == ("todo", 0, None)
    assert worktrees(remote.clone) == [str(remote.clone)]
    # Its end is logged and its lock removed: status shows it neither as running nor as killed.
    assert wavegit(remote.clone, "status").stdout.startswith("no wave is running")
    [ended] = json.loads(wavegit(remote.clone, "status", "--all", "--json").stdout)
    assert (ended["finished"]["exit_code"], ended["scheduler"]) == (130, "finished")
    assert list((remote.clone / ".git" / "wavegit" / "locks").iterdir()) == []


def _worker_key(clone: Path) -> str:
    """Where the config sets ``worker``: its value's path:line:col, which the refusal names."""
    lines = (clone / ".wavegit" / "config.yaml").read_text().splitlines()
    line = next(n for n, text in enumerate(lines, 1) if text.startswith("worker:"))
    return f".wavegit/config.yaml:{line}:{len(lines[line - 1]) - len(lines[line - 1][7:].lstrip()) + 1}"


def _refused_before_anything(remote: RemoteRepo) -> list[str]:
    """``wavegit run``'s stderr lines, once it exited 2 with nothing on stdout and nothing written (no commit,
    no branch, here or on the origin)."""
    before = untouched(remote.origin, remote.clone)
    result = wavegit(remote.clone, "run")
    assert result.returncode == 2 and result.stdout == "", result.stderr
    assert untouched(remote.origin, remote.clone) == before
    return result.stderr.splitlines()


def test_a_missing_worker_is_exit_2_with_one_line_before_any_commit_or_branch(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])],
                            worker="claude-that-is-not-installed -p")
    assert _refused_before_anything(remote) == [
        f"wavegit run: {_worker_key(remote.clone)}: worker 'claude-that-is-not-installed -p': "
        "'claude-that-is-not-installed' is not on "
        "PATH; install it, or set `worker` in .wavegit/config.yaml (or WAVEGIT_WORKER); nothing was claimed"]



def test_an_attempt_trees_folder_that_cannot_be_made_is_exit_2_before_any_commit_or_branch(
        tmp_path: Path) -> None:
    # It used to claim, then return every item to todo with "[Errno 20] Not a directory: ..." (exit 1).
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])])
    cache = tmp_path / "cache-is-a-file"
    cache.write_text("")
    before = untouched(remote.origin, remote.clone)
    result = wavegit(remote.clone, "run", env={"XDG_CACHE_HOME": str(cache)})
    assert (result.returncode, result.stdout) == (2, ""), result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"wavegit run: the attempt trees' folder {cache}/wavegit/")
    assert line.endswith("(Not a directory): set XDG_CACHE_HOME to a writable folder; nothing was claimed")
    assert untouched(remote.origin, remote.clone) == before

def test_a_base_branch_the_remote_lacks_is_exit_2_at_its_key_before_any_commit_or_branch(
        tmp_path: Path) -> None:
    # A typo in a committed base_branch used to claim, then stop fetching it (exit 1, claim and record
    # commits); the config the wave obeys was the defaults, since none is committed on a missing branch.
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])], base_branch="mian")
    lines = (remote.clone / ".wavegit" / "config.yaml").read_text().splitlines()
    line = next(n for n, text in enumerate(lines, 1) if text.startswith("base_branch:"))
    assert _refused_before_anything(remote) == [
        f"wavegit run: .wavegit/config.yaml:{line}:14: base_branch 'mian': no such branch on origin (did you "
        "mean 'main'?); waves branch from it and obey the config committed there: set base_branch in the "
        "config (then commit and push it) to the branch your work lands on"]


def test_the_claude_preset_missing_from_path_is_exit_2_and_writes_nothing(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])], worker="claude")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    git_path = shutil.which("git")
    assert git_path is not None
    (bin_dir / "git").symlink_to(git_path)
    before = untouched(remote.origin, remote.clone)
    result = wavegit(remote.clone, "run", env={"PATH": str(bin_dir)})
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"wavegit run: {_worker_key(remote.clone)}: worker 'claude': 'claude' is not on PATH; install it "
        "(`npm install -g "
        f"@anthropic-ai/claude-code@{CLAUDE.npm[1]}`), or set `worker` in .wavegit/config.yaml (or "
        "WAVEGIT_WORKER); nothing was claimed"]  # the default config's first wave on a new machine says how
    assert untouched(remote.origin, remote.clone) == before


def test_an_id_that_cannot_name_a_branch_is_exit_2_before_the_claim(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A.lock", ["write src/a.txt ok"], ["src/a.txt"])])
    before = untouched(remote.origin, remote.clone)
    result = wavegit(remote.clone, "run")
    assert result.returncode == 2
    # The tracker's own validation refuses it first, at its line.
    assert result.stderr.startswith(".wavegit/tracker.yaml:3:7: item A.lock: 'id' 'A.lock' must not end "
                                    "with '.lock' (git refuses it in a branch name)")
    assert len(result.stderr.splitlines()) == 1
    assert untouched(remote.origin, remote.clone) == before


def test_an_invalid_item_is_exit_2_located_at_its_line_on_the_tracker_branch(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"]),
                                       item("B", ["write src/b.txt ok"], ["src/b.txt"], test="sh -c 'open")])
    before = untouched(remote.origin, remote.clone)
    lines = git(remote.origin, "show", "main:.wavegit/tracker.yaml").splitlines()
    test_line = next(n for n, line in enumerate(lines, 1) if "sh -c" in line)
    result = wavegit(remote.clone, "run")
    assert result.returncode == 2
    [problem] = result.stderr.splitlines()
    # The claim would have added lines above B's test: the line is the one in the file on the branch.
    assert problem.startswith(f".wavegit/tracker.yaml:{test_line}:") and "item B" in problem
    assert untouched(remote.origin, remote.clone) == before


def test_a_halt_landing_mid_wave_after_a_record_exits_1_by_its_results_never_3(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))
    other = tmp_path / "other"
    halt = f"run {sys.executable} -m wavegit -C {other} halt --reason freeze"
    remote = make_wave_repo(tmp_path, [
        # The sleep outlasts engine.wave.HALT_FRESH_S, so B's launch reads the HALT A's worker committed.
        item("A", [halt, "sleep 0.6", "write src/a.txt ok"], ["src/a.txt"]),
        item("B", ["write src/b.txt ok"], ["src/b.txt"]),
    ], concurrency=1, sandbox="none", worker_env=["PYTHONPATH", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM",
                                                  "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME",
                                                  "GIT_COMMITTER_EMAIL"])
    remote.new_clone("other")
    result = wavegit(remote.clone, "run", "--json")
    report = WaveReport.from_json(result.stdout)
    # It claimed, verified and recorded A: exit 1 (B never started), not 3, which means nothing claimed.
    assert (result.returncode, report.halted, report.tracker_updated) == (1, True, True), result.stderr
    assert (report.phase, report.exit_code) == ("done", 1) and "freeze" in (report.halt_reason or "")
    assert [(i.id, i.verified) for i in report.items] == [("A", True), ("B", False)]
    assert (origin_item(remote, "A").status, origin_item(remote, "B").status) == ("review", "todo")
    git(remote.clone, "fetch", "-q")
    assert wavegit(remote.clone, "plan").returncode == wavegit(remote.clone, "run").returncode == 3


# --- a ruleset refusal of a push is bad configuration, not a lost race (issue 20, point 9) ----------------

GH013_HOOK = """#!/bin/sh
# What GitHub's receiving end prints for a push its rulesets refuse.
while read old new ref; do
  if [ "$ref" = "refs/heads/main" ]; then
    echo "error: GH013: Repository rule violations found for refs/heads/main." >&2
    echo "Review all repository rules at https://github.com/acme/widgets/rules?ref=refs%2Fheads%2Fmain" >&2
    echo "" >&2
    echo "- Changes must be made through a pull request." >&2
    echo "" >&2
    echo "- Required status check \\"ci\\" is expected." >&2
    echo "" >&2
    exit 1
  fi
done
exit 0
"""


def test_a_push_a_ruleset_refuses_with_gh013_exits_2_naming_the_rules_and_claims_nothing(
        tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("IT-0", ["write src/f0.txt ok"], ["src/f0.txt"])])
    hook = remote.origin / "hooks" / "pre-receive"
    hook.write_text(GH013_HOOK)
    hook.chmod(0o755)
    before = git(remote.origin, "rev-parse", "main")
    result = wavegit(remote.clone, "run")
    assert result.returncode == 2, result.stdout + result.stderr
    said = result.stderr.strip()
    assert len(said.splitlines()) == 1 and "Traceback" not in said, said
    assert "refused by the repository's rules: Changes must be made through a pull request.; " \
           'Required status check "ci" is expected.' in said and "race" not in said
    assert git(remote.origin, "rev-parse", "main") == before and origin_item(remote, "IT-0").status == "todo"


@pytest.mark.parametrize("extra", [[], ["--continuous", "--watch"]])
def test_run_takes_sigint_and_sigterm_back_before_it_reads_its_config(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: list[str]) -> None:
    # `wavegit run &` in a script starts with SIGINT ignored. run took it back only once it had read (and
    # fetched) the config it obeys, some 0.3 s: a `kill -INT` sent before was lost, and the wave went on to
    # claim and run every item, exit 0 (usr12, a wave interrupted 0.3 s after its start).
    from wavegit import cli
    from wavegit.commands._context import Context
    from wavegit.core.errors import UsageError

    seen: list[object] = []

    def governed(cls: type[Context], args: object) -> Context:
        seen.extend([signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)])
        raise UsageError("stopped by the test")

    monkeypatch.setattr(Context, "governed", classmethod(governed))
    before_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
    before_term = signal.getsignal(signal.SIGTERM)
    try:
        assert cli.main(["run", *extra]) == 2
    finally:
        signal.signal(signal.SIGINT, before_int)
        signal.signal(signal.SIGTERM, before_term)
    assert seen[0] is signal.default_int_handler and seen[1] not in (signal.SIG_DFL, signal.SIG_IGN), seen
