"""wavegit.core.credentials: the token leaves the environment for memory, from the variable, a pipe or a
file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.repos import REPO_ROOT
from wavegit.core import credentials
from wavegit.github import api


@pytest.fixture(autouse=True)
def forget_the_token() -> object:
    yield
    credentials.protect({}, restart=False)


def test_a_command_that_runs_no_worker_keeps_its_environment_and_holds_the_token() -> None:
    environ = {"GITHUB_TOKEN": "t-1", "GITHUB_REPOSITORY": "o/r"}
    credentials.protect(environ, restart=False)
    assert environ["GITHUB_TOKEN"] == "t-1" and credentials.held_token() == "t-1"


def test_the_github_settings_get_the_held_token_when_the_environment_has_none(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("t-held")
    credentials.protect({credentials.TOKEN_FILE_VAR: str(token_file)}, restart=False)
    settings = api.settings_from_env({"GITHUB_REPOSITORY": "o/r"})
    assert settings is not None and settings.token == "t-held"


def test_the_token_file_is_read_and_stays_where_it_is(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("t-file\n")
    environ = {credentials.TOKEN_FILE_VAR: str(token_file)}
    credentials.protect(environ, restart=False)
    assert credentials.held_token() == "t-file" and token_file.exists()


def test_restart_runs_the_same_command_again_without_the_variable_and_hands_the_token_over() -> None:
    probe = ("import os, sys; from wavegit.core import credentials\n"
             "credentials.protect(os.environ, restart=True)\n"
             "initial = open(f'/proc/{os.getpid()}/environ', 'rb').read()\n"
             "print(credentials.held_token(), b'GITHUB_TOKEN' in initial, sys.argv[1:])\n")
    env = {**os.environ, "GITHUB_TOKEN": "t-pipe", "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run([sys.executable, "-c", probe, "a", "b"], env=env, capture_output=True, text=True,
                          check=True)
    assert done.stdout.split("\n")[0] == "t-pipe False ['a', 'b']"


def test_restart_hands_a_github_apps_private_key_over_and_leaves_it_in_no_environment() -> None:
    probe = ("import os; from wavegit.core import credentials\n"
             "credentials.protect(os.environ, restart=True)\n"
             "initial = open(f'/proc/{os.getpid()}/environ', 'rb').read()\n"
             "print(credentials.held_secret(credentials.APP_KEY_VAR) == 'KEY\\nPEM',\n"
             "      b'PRIVATE_KEY=' in initial, credentials.APP_KEY_VAR in os.environ)\n")
    env = {**os.environ, credentials.APP_KEY_VAR: "KEY\nPEM", "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.split("\n")[0] == "True False False"
