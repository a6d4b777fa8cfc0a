"""Shared helpers for the reliability suites (races, faults, bad input, security).

Everything here inspects real repositories with git; nothing fakes git.
"""

from __future__ import annotations

import io
import os
import shlex
import sys
from collections import defaultdict
from collections.abc import Sequence
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from tests.helpers.ghserver import BOT_TOKEN, Running
from tests.helpers.repos import TESTS, CliResult, RemoteRepo, git
from wavegit import cli
from wavegit.core.errors import ValidationError
from wavegit.github.api import Settings
from wavegit.github.client import PyGithubClient
from wavegit.github.retry import RetryPolicy
from wavegit.model import tracker
from wavegit.model.config import TRACKER_PATH
from wavegit.model.report import ItemReport, WaveReport
from wavegit.model.report_markdown import to_markdown

WORKERS = TESTS / "reliability_workers"
LONG = os.environ.get("WAVEGIT_LONG_TESTS") == "1"
"""The long versions of the suites run only when ``WAVEGIT_LONG_TESTS=1``."""


def worker_command(name: str, *args: str) -> str:
    """The command line of ``reliability_workers/<name>.py``."""
    return shlex.join([sys.executable, str(WORKERS / f"{name}.py"), *args])


def tracker_history_problems(repo: Path, branch: str = "main", path: str = TRACKER_PATH) -> list[str]:
    """``commit: problem`` for every commit of ``branch`` whose tracker does not load (empty = all valid)."""
    commits = git(repo, "log", "--format=%H", branch, "--", path).splitlines()
    problems = []
    for commit in commits:
        try:
            tracker.loads(git(repo, "show", f"{commit}:{path}"))
        except ValidationError as exc:
            problems.append(f"{commit[:12]}: {exc.problems[0]}")
    assert commits, f"no commit of {branch} touches {path}"
    return problems


def wave_branches(repo: Path) -> list[str]:
    """The wave branches (``wavegit/<wave-id>``, not per-item branches) of ``repo``."""
    refs = git(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/wavegit/")
    return [r for r in refs.splitlines() if r and not r.startswith("wavegit/items/")]


def trailer_values(repo: Path, rev_range: str, key: str) -> list[str]:
    out = git(repo, "log", f"--format=%(trailers:key={key},valueonly)", rev_range)
    return [line for line in out.splitlines() if line]


def items_by_wave_branch(repo: Path, base: str = "main") -> dict[str, list[str]]:
    """Wave id -> the ``Wavegit-Item`` trailers of its branch's own commits (those not on ``base``)."""
    return {branch.removeprefix("wavegit/"): trailer_values(repo, f"{base}..{branch}", "Wavegit-Item")
            for branch in wave_branches(repo)}


def dispatch_log(path: Path) -> dict[str, list[str]]:
    """Item -> the waves that dispatched it, from a worker log of ``<item> <wave>`` lines."""
    waves: dict[str, list[str]] = defaultdict(list)
    if path.exists():
        for line in path.read_text().splitlines():
            item_id, wave = line.split()
            waves[item_id].append(wave)
    return dict(waves)


def fsck(repo: Path) -> str:
    """``git fsck --strict`` output (git fails the call when the repository is corrupt)."""
    return git(repo, "fsck", "--strict", "--no-progress")


def repo_state(repo: Path) -> tuple[str, str, str]:
    """Refs, worktrees and status of a repository: equal before and after = nothing was written."""
    return (git(repo, "for-each-ref", "--format=%(refname) %(objectname)"),
            git(repo, "worktree", "list", "--porcelain"),
            git(repo, "status", "--porcelain", "--ignored"))


def one_clear_line(stderr: str) -> str:
    """The single message line of a refused command (asserts there is exactly one and no traceback)."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert "Traceback" not in stderr, stderr
    assert len(lines) == 1, stderr
    return lines[0]


@dataclass(frozen=True)
class Outcome:
    code: int
    stdout: str
    stderr: str


def main_in_process(argv: Sequence[str], stdin: bytes = b"") -> Outcome:
    """``wavegit ARGV`` through ``cli.main`` in this process (fast), stdin/stdout/stderr captured.

    Any exception escaping ``main`` other than SystemExit propagates: that would be a traceback.
    """
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = cli.main(list(argv))
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 2
    finally:
        sys.stdin = saved
    return Outcome(code, out.getvalue(), err.getvalue())


def wavegit_in_process(cwd: Path, *args: str, env: dict[str, str] | None = None) -> CliResult:
    """``wavegit ARGS`` as :func:`tests.helpers.repos.wavegit` runs it in ``cwd`` with ``env`` added, but
    through ``cli.main`` in this process: for a test about what a GitHub command (gate, intake, a review
    that runs no worker) decides, not about its process, since such a process spends some 0.3 s of CPU
    importing PyGithub, which a test process imports once. Not where the command runs a worker: a command
    that may starts itself again without the token (``wavegit.core.credentials``), which only a real
    process does."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in (env or {}).items():
            patch.setenv(name, value)
        outcome = main_in_process(["-C", str(cwd), *args])
    return CliResult(outcome.code, outcome.stdout, outcome.stderr)


GATE_WAVE = "w-20260101-000000-0001"
"""The wave of the gate fixtures (a real wave id: the gate accepts nothing else)."""
GATE_TRACKER = f"""version: 1
items:
  - id: A-1
    prompt: do a
    owns: [src/a/]
    test: 'true'
    status: review
    wave: {GATE_WAVE}
    pr: 1
"""


def verified_item(item_id: str, path: str) -> ItemReport:
    """An item of a wave report that passed its test at the first attempt, having changed ``path``."""
    return ItemReport(id=item_id, status="review", verified=True, attempts=1, test_exit=0,
                      files_changed=[path])


def wave_report(head: str, items: list[ItemReport], /, **changes: object) -> WaveReport:
    """A successful report of wave ``GATE_WAVE`` (PR #1) at ``head`` about ``items``; ``changes`` replace
    any field."""
    report = WaveReport(wave_id=GATE_WAVE, base_sha="0" * 40, head_sha=head, branch=f"wavegit/{GATE_WAVE}",
                        pr=1, success=True, items=items, tracker_updated=True,
                        started_at="2026-01-01T00:00:00Z")
    return replace(report, **changes)  # type: ignore[arg-type]


def sample_report(head: str, **changes: object) -> WaveReport:
    """A successful report of a wave whose one item A-1 changed ``src/a/x.py``, at ``head``."""
    return wave_report(head, [verified_item("A-1", "src/a/x.py")], **changes)


def start_wave_branch(clone: Path, tracker_text: str) -> None:
    """Push ``tracker_text`` as the tracker on ``main``, then check out the wave branch of
    ``GATE_WAVE``."""
    (clone / ".wavegit").mkdir(exist_ok=True)
    (clone / TRACKER_PATH).write_text(tracker_text)
    git(clone, "add", "-A")
    git(clone, "commit", "-q", "-m", "tracker")
    git(clone, "push", "-q", "origin", "main")
    git(clone, "checkout", "-q", "-b", f"wavegit/{GATE_WAVE}")


def push_work(clone: Path, files: dict[str, str]) -> str:
    """Write ``files`` (path -> text), commit them and push to ``wavegit/GATE_WAVE``; the new head."""
    for rel, text in files.items():
        (clone / rel).parent.mkdir(parents=True, exist_ok=True)
        (clone / rel).write_text(text)
    git(clone, "add", "-A")
    git(clone, "commit", "-q", "-m", "work")
    git(clone, "push", "-q", "origin", f"HEAD:refs/heads/wavegit/{GATE_WAVE}")
    return git(clone, "rev-parse", "HEAD")


@dataclass
class GatePR:
    """A PR of the wave branch of ``GATE_WAVE`` (changing ``src/a/x.py``, owned by A-1) on the fake GitHub."""

    gh: Running
    remote: RemoteRepo
    number: int
    head: str

    def report(self, **changes: object) -> WaveReport:
        return sample_report(self.head, **changes)

    def post(self, author: str, body: str | None = None) -> None:
        self.gh.fake.add_comment(self.number, author, to_markdown(self.report()) if body is None else body)


def open_gate_pr(remote: RemoteRepo, gh: Running) -> GatePR:
    start_wave_branch(remote.clone, GATE_TRACKER)
    head = push_work(remote.clone, {"src/a/x.py": "x\n"})
    client = PyGithubClient(Settings(BOT_TOKEN, gh.fake.repo, gh.url), RetryPolicy(deadline_s=5))
    number = client.find_or_create_pr(f"wavegit/{GATE_WAVE}", "main", "a wave", "").number
    return GatePR(gh, remote, number, head)
