"""``wavegit demo``: a whole wave in a throwaway repository, with a bare remote and a built-in worker.

No network and nothing outside the demo directory is touched. The steps are the ones a user takes, each
through the real CLI in a subprocess: ``wavegit init`` (the tracker on its own branch), six ``wavegit add``
(see :mod:`wavegit.demo.project`), ``wavegit plan``, ``wavegit run``, then a reviewer's merge of the
wave branch, ``wavegit sync`` and the next ``wavegit plan``. The outcome of every item is checked against what
the backlog was built to show; any difference makes the demo fail.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import wavegit
from wavegit.core import git
from wavegit.core.errors import EXIT_WORK_FAILED, UsageError, WavegitError
from wavegit.core.git import WaveId
from wavegit.demo.project import FILES, ITEMS, DemoItem
from wavegit.model.config import CONFIG_PATH, TRACKER_PATH, load_config
from wavegit.model.lifecycle import Status
from wavegit.model.report import WaveReport
from wavegit.model.report_markdown import JSON_OPEN, to_markdown

STEP_TIMEOUT_S = 60.0
# Variables of the caller that would change what the demo does (its config, GitHub) or where git acts.
_DROPPED_PREFIXES = ("WAVEGIT_",)
_DROPPED = ("GITHUB_TOKEN", "GITHUB_REPOSITORY", "GITHUB_API_URL", "GH_TOKEN", "GH_ENTERPRISE_TOKEN",
            "GITHUB_ENTERPRISE_TOKEN")
_IDENTITY = {"user.name": "wavegit demo", "user.email": "demo@wavegit.invalid", "commit.gpgsign": "false"}

Say = Callable[[str], None]


class DemoError(WavegitError):
    """A step of the demo did not work (exit 1)."""

    exit_code = EXIT_WORK_FAILED


@dataclass(frozen=True)
class Expected:
    """What the demo's backlog is built to produce."""

    verified: tuple[str, ...] = ("PRICE-1", "MONEY-2")
    test_fails: tuple[str, ...] = ("TAX-5",)
    violates: dict[str, list[str]] = field(default_factory=lambda: {"STOCK-6": ["README.md"]})
    skipped: dict[str, str] = field(default_factory=lambda: {"MONEY-3": "overlaps MONEY-2",
                                                             "CART-4": "depends on PRICE-1"})
    ready_after_merge: str = "CART-4"


@dataclass
class DemoResult:
    directory: Path
    plan: dict[str, object] = field(default_factory=dict)
    report: WaveReport | None = None
    tracker_diff: str = ""
    sync: list[dict[str, object]] = field(default_factory=list)
    next_plan: dict[str, object] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.report is not None and not self.problems

    def to_json(self) -> dict[str, object]:
        return {"ok": self.ok, "directory": str(self.directory), "plan": self.plan,
                "report": json.loads(self.report.to_json()) if self.report else None,
                "tracker_diff": self.tracker_diff, "sync": self.sync, "next_plan": self.next_plan,
                "problems": self.problems}


def demo_env(base: dict[str, str]) -> dict[str, str]:
    """The environment of the demo's wavegit processes: no caller overrides or tokens, wavegit importable.

    The workers run in worktrees and start ``python -m wavegit.demo.worker``, so the directory holding
    this wavegit package goes first on PYTHONPATH (also when it runs from a source checkout).
    """
    env = {k: v for k, v in git.without_repo_vars(base).items()
           if k not in _DROPPED and not k.startswith(_DROPPED_PREFIXES)}
    package_root = str(Path(wavegit.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    env["GIT_TERMINAL_PROMPT"] = "0"
    return env


def toolchain_paths() -> list[str]:
    """What the demo's worker and tests run on: this Python (pyenv and uv keep it under the HOME the sandbox
    hides), its virtualenv and wavegit's own source."""
    paths = (Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(),
             Path(wavegit.__file__).resolve().parent.parent)
    return sorted({str(path) for path in paths})


class Demo:
    def __init__(self, directory: Path, say: Say) -> None:
        self.directory = directory
        self.origin = directory / "origin.git"
        self.project = directory / "project"
        self.say = say
        self.env = demo_env(dict(os.environ))
        self.python = sys.executable
        self.tracker_branch = "main"  # until init names the branch of its own

    def wavegit(self, *args: str, expect: tuple[int, ...] = (0,), show_stderr: bool = False) -> str:
        """Run ``wavegit ARGS`` in the project; its stdout. An unexpected exit code stops the demo."""
        try:
            proc = subprocess.run([self.python, "-m", "wavegit", *args], cwd=self.project, env=self.env,
                                  capture_output=True, text=True, timeout=STEP_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            raise DemoError(f"`wavegit {' '.join(args)}` took longer than {STEP_TIMEOUT_S:.0f}s") from None
        if show_stderr and proc.stderr:
            self.say(proc.stderr.rstrip("\n"))
        if proc.returncode not in expect:
            detail = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "no output"
            raise DemoError(f"`wavegit {' '.join(args)}` exited {proc.returncode}: {detail}")
        return proc.stdout

    def git(self, *args: str) -> str:
        return git.out(list(args), cwd=self.project)

    def unittest(self, module: str) -> str:
        return shlex.join([self.python, "-m", "unittest", "-q", module])

    # -- steps --------------------------------------------------------------------------------------------

    def create(self) -> None:
        git.run(["init", "-q", "--bare", "-b", "main", str(self.origin)], cwd=self.directory)
        git.run(["clone", "-q", str(self.origin), str(self.project)], cwd=self.directory)
        no_hooks = self.directory / "no-hooks"
        no_hooks.mkdir()
        # The demo's own identity and no hooks from the user's global config.
        for key, value in {**_IDENTITY, "core.hooksPath": str(no_hooks)}.items():
            self.git("config", key, value)
        self.git("symbolic-ref", "HEAD", "refs/heads/main")
        for rel, text in FILES.items():
            (self.project / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.project / rel).write_text(text, encoding="utf-8")
        self.git("add", "-A")
        self.git("commit", "-q", "-m", "shop: an example project")
        self.git("push", "-q", "-u", "origin", "main")

    def init_backlog(self) -> None:
        """``wavegit init`` as a user runs it (the tracker on a branch of its own), the demo's config
        committed to main, then one ``wavegit add`` per item, each a commit on the tracker branch."""
        self.say(self.wavegit("init").rstrip("\n"))
        self.tracker_branch = load_config(self.project, environ=self.env).tracker_branch
        (self.project / CONFIG_PATH).write_text(self.config_text(), encoding="utf-8")
        self.git("add", CONFIG_PATH)
        self.git("commit", "-q", "-m", "demo config")
        self.git("push", "-q", "origin", "main")
        for item in ITEMS:
            self.say(self.wavegit(*self.add_args(item)).rstrip("\n"))

    def add_args(self, item: DemoItem) -> list[str]:
        prompt = f"{item.title}.\nOnly change: {', '.join(item.owns)}.\n"
        depends = ["--depends-on", *item.depends_on] if item.depends_on else []
        return ["add", item.id, "--title", item.title, "--prompt", prompt, "--owns", *item.owns,
                "--test", self.unittest(item.test_module), "--priority", item.priority, *depends]

    def config_text(self) -> str:
        worker = shlex.join([self.python, "-m", "wavegit.demo.worker"])
        wave_test = shlex.join([self.python, "-m", "unittest", "discover", "-q", "-s", "tests", "-t", "."])
        return (f"# wavegit demo configuration\nworker: {json.dumps(worker)}\nconcurrency: 3\n"
                f"tracker_branch: {json.dumps(self.tracker_branch)}\n"
                f"timeout_s: 30\nidle_timeout_s: 15\nattempts: 2\nwave_test: {json.dumps(wave_test)}\n"
                # The kept repository shows the merged wave branch, which sync would otherwise delete.
                "keep_branches: true\n"
                f"sandbox:\n  ro_paths: {json.dumps(toolchain_paths())}\n")

    def run_wave(self) -> WaveReport:
        summary = self.wavegit("run", expect=(0, 1), show_stderr=True)
        self.say(summary.rstrip("\n"))
        reports = sorted((self.project / ".git" / "wavegit" / "reports").glob("*.json"))
        if len(reports) != 1:
            raise DemoError(f"expected one wave report, found {len(reports)}")
        return WaveReport.from_json(reports[0].read_text(encoding="utf-8"))

    def tracker_diff(self, wave_id: WaveId) -> str:
        """The tracker's diff from before the claim to the record: what the wave did to the backlog."""
        self.git("fetch", "-q", "origin")
        log = self.git("log", "--format=%H %s", f"origin/{self.tracker_branch}")
        commits = {subject.split(" ")[1]: sha for sha, _, subject in
                   (line.partition(" ") for line in log.splitlines()) if wave_id in subject}
        if "claim" not in commits or "record" not in commits:
            raise DemoError(f"the claim and record commits of {wave_id} are not on "
                            f"origin/{self.tracker_branch}")
        return self.git("diff", f"{commits['claim']}^", commits["record"], "--", TRACKER_PATH)

    def merge_and_sync(self, branch: str) -> list[dict[str, object]]:
        """Merge the wave branch as a reviewer would, then let ``wavegit sync`` notice."""
        self.git("pull", "-q", "--ff-only")
        self.git("merge", "-q", "--no-ff", "-m", f"Merge {branch}", f"origin/{branch}")
        self.git("push", "-q", "origin", "main")
        changes: list[dict[str, object]] = json.loads(self.wavegit("sync", "--json"))
        return changes

    def plan(self) -> dict[str, object]:
        found: dict[str, object] = json.loads(self.wavegit("plan", "--json"))
        return found


def check(result: DemoResult, expected: Expected) -> list[str]:
    """How the run differs from what the backlog was built to show (empty: as designed)."""
    rep = result.report
    if rep is None:
        return ["no wave report"]
    problems: list[str] = []
    items = {item.id: item for item in rep.items}
    for item_id in expected.verified:
        item = items.get(item_id)
        if item is None or not item.verified or item.status != Status.REVIEW:
            problems.append(f"{item_id} should be verified and in review")
    for item_id in expected.test_fails:
        item = items.get(item_id)
        if item is None or item.verified or not item.test_exit or item.ownership_violations:
            problems.append(f"{item_id} should fail its test")
    for item_id, paths in expected.violates.items():
        item = items.get(item_id)
        if item is None or item.verified or item.ownership_violations != paths:
            problems.append(f"{item_id} should violate its ownership with {', '.join(paths)}")
    skipped = {s.id: s.reason for s in rep.skipped}
    for item_id, reason in expected.skipped.items():
        if not skipped.get(item_id, "").startswith(reason):
            problems.append(f"{item_id} should be skipped: {reason} (got {skipped.get(item_id)!r})")
    if rep.wave_test is None or rep.wave_test.exit_code != 0:
        problems.append("the wave test should pass on the combined branch")
    if not rep.tracker_updated:
        problems.append("the tracker update should have landed")
    done = {str(c["id"]) for c in result.sync if c.get("to") == Status.DONE}
    if done != set(expected.verified):
        problems.append(f"sync should mark {', '.join(expected.verified)} done after the merge")
    selected = result.next_plan.get("selected")
    if not isinstance(selected, list) or expected.ready_after_merge not in selected:
        problems.append(f"{expected.ready_after_merge} should be ready once its dependency is merged")
    return problems


def run_demo(directory: Path, say: Say) -> DemoResult:
    """Build the throwaway repository in ``directory`` (empty) and run the demo, narrating with ``say``."""
    demo = Demo(directory, say)
    result = DemoResult(directory)
    say(f"== 1. an example project with a bare remote in {directory}")
    demo.create()
    say("== 2. wavegit init, and a backlog of six items")
    demo.init_backlog()
    say("== 3. wavegit plan")
    say(demo.wavegit("plan").rstrip("\n"))
    result.plan = demo.plan()
    say("== 4. wavegit run (built-in worker, concurrency 3)")
    rep = result.report = demo.run_wave()
    say("== 5. the wave report (the pull request comment, without its embedded JSON)")
    say(to_markdown(rep).split(JSON_OPEN)[0].rstrip("\n"))
    say("== 6. the tracker diff (claim .. record)")
    result.tracker_diff = demo.tracker_diff(rep.wave_id)
    say(result.tracker_diff)
    if rep.branch:
        say(f"== 7. a reviewer merges {rep.branch}; wavegit sync")
        result.sync = demo.merge_and_sync(rep.branch)
        for change in result.sync:
            say(f"{change.get('id')}: {change.get('from')} -> {change.get('to')} ({change.get('reason')})")
        say("== 8. wavegit plan, now that PRICE-1 is done")
        say(demo.wavegit("plan").rstrip("\n"))
        result.next_plan = demo.plan()
    result.problems = check(result, Expected())
    return result


def prepare_directory(keep: Path | None) -> Path:
    """``keep`` (created; must be empty) or a fresh temporary directory."""
    if keep is None:
        return Path(tempfile.mkdtemp(prefix="wavegit-demo-"))
    if keep.exists() and (not keep.is_dir() or any(keep.iterdir())):
        raise UsageError(f"--keep {keep}: not an empty directory; give a new or empty one")
    keep.mkdir(parents=True, exist_ok=True)
    return keep.resolve()
