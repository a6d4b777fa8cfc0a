"""wavegit.attempts.workerenv: a worker's environment is an allowlist; tokens and workflow-steering variables
stay out."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from wavegit.attempts.runner import run_process
from wavegit.attempts.workerenv import worker_env

ENV_DUMP = Path(__file__).resolve().parent / "workers" / "env_dump.py"


def environment_seen(tmp_path: Path, env: dict[str, str]) -> dict[str, str]:
    """What a real worker process started with ``env`` finds in its environment."""
    result = run_process([sys.executable, str(ENV_DUMP)], cwd=tmp_path, env=env, stdin_text="",
                         log_path=tmp_path / "env.log", timeout_s=10, idle_timeout_s=None)
    seen: dict[str, str] = json.loads(result.log_path.read_text())
    return seen


def test_worker_env_sets_wavegit_variables_and_drops_tokens_and_git_locators(tmp_path: Path) -> None:
    base = {"PATH": os.environ["PATH"], "GITHUB_TOKEN": "secret1", "GH_TOKEN": "secret2",
            "GIT_DIR": "/elsewhere/.git", "GIT_INDEX_FILE": "/elsewhere/index", "HOME": "/home/w",
            "WAVEGIT_FEEDBACK_FILE": "/stale/feedback", "MY_API_KEY": "k", "AWS_SECRET_ACCESS_KEY": "a",
            "WAVEGIT_ACTION_TOKEN": "t", "LANG": "C.UTF-8", "LC_ALL": "C", "TERM": "dumb", "PASSED": "yes",
            "PYENV_VERSION": "3.12.1"}
    env = worker_env(base, item_id="AUTH-12", wave_id="w-1", prompt_file=tmp_path / "prompt.md",
                     cost_file=tmp_path / "cost.json", feedback_file=None,
                     owns=["src/auth/limiter.py", "tests/auth/"], pass_github_token=False,
                     home=tmp_path / "h", tmp=tmp_path / "t", passed=["PASSED", "ABSENT"], marker="m1")
    seen = environment_seen(tmp_path, env)
    assert seen["WAVEGIT_ITEM_ID"] == "AUTH-12" and seen["WAVEGIT_WAVE_ID"] == "w-1"
    assert seen["WAVEGIT_PROMPT_FILE"] == str(tmp_path / "prompt.md")
    assert seen["WAVEGIT_COST_FILE"] == str(tmp_path / "cost.json")
    assert seen["WAVEGIT_OWNS"].splitlines() == ["src/auth/limiter.py", "tests/auth/"]
    assert (seen["HOME"], seen["TMPDIR"]) == (str(tmp_path / "h"), str(tmp_path / "t"))
    assert (seen["LANG"], seen["LC_ALL"], seen["TERM"], seen["PASSED"]) == ("C.UTF-8", "C", "dumb", "yes")
    assert seen["WAVEGIT_ATTEMPT_TOKEN"] == "m1" and seen["PYENV_VERSION"] == "3.12.1"
    for gone in ("GITHUB_TOKEN", "GH_TOKEN", "GIT_DIR", "GIT_INDEX_FILE", "WAVEGIT_FEEDBACK_FILE",
                 "MY_API_KEY", "AWS_SECRET_ACCESS_KEY", "WAVEGIT_ACTION_TOKEN", "ABSENT"):
        assert gone not in seen
    # The allowlist is the whole environment (python itself may add a variable or two, e.g. LC_CTYPE).
    assert set(seen) - set(env) <= {"LC_CTYPE"}


def test_worker_env_never_passes_workflow_steering_variables_even_when_listed(tmp_path: Path) -> None:
    base = {"GITHUB_ENV": "/e", "GITHUB_PATH": "/p", "GITHUB_OUTPUT": "/o", "GITHUB_STEP_SUMMARY": "/s",
            "ACTIONS_RUNTIME_TOKEN": "r", "GITHUB_TOKEN": "t"}
    env = worker_env(base, item_id="A", wave_id="w", prompt_file=tmp_path / "p", cost_file=tmp_path / "c",
                     feedback_file=None, owns=[], pass_github_token=False, home=tmp_path, tmp=tmp_path,
                     passed=list(base))
    assert not set(base) & set(env)


def test_worker_env_passes_token_and_feedback_only_when_asked(tmp_path: Path) -> None:
    env = worker_env({"GITHUB_TOKEN": "t"}, item_id="A", wave_id="w", prompt_file=tmp_path / "p",
                     cost_file=tmp_path / "c", feedback_file=tmp_path / "f", owns=[], pass_github_token=True,
                     home=tmp_path, tmp=tmp_path)
    assert env["GITHUB_TOKEN"] == "t" and env["WAVEGIT_FEEDBACK_FILE"] == str(tmp_path / "f")
