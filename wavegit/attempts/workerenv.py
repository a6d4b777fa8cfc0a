"""The environment a worker or an item's test gets: an allowlist of wavegit's own (PATH, LANG, LC_*, TERM,
PYENV_VERSION and config ``worker_env``), never the variables that steer a GitHub Actions job, the token only
when the config says so; then its private HOME and TMPDIR and the ``WAVEGIT_*`` variables of the
README ("Configuration").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from wavegit.core import credentials
from wavegit.core.git import WaveId
from wavegit.model.config import FORBIDDEN_WORKER_ENV, TOKEN_VARS

ATTEMPT_TOKEN_VAR = "WAVEGIT_ATTEMPT_TOKEN"
"""Marks every process of an attempt run unsandboxed, so that what it leaves behind is found and killed."""
_PASSED_ENV = ("PATH", "LANG", "TERM", "PYENV_VERSION")
"""``PYENV_VERSION`` (``pyenv shell``) picks the Python a pyenv shim on PATH runs: without it a worker's
``python3`` would be another version than wavegit's own caller's."""
_PASSED_PREFIX = "LC_"


def worker_env(
    base: Mapping[str, str],
    *,
    item_id: str,
    wave_id: WaveId,
    prompt_file: Path,
    cost_file: Path,
    feedback_file: Path | None,
    owns: Sequence[str],
    pass_github_token: bool,
    home: Path,
    tmp: Path,
    passed: Sequence[str] = (),
    marker: str = "",
) -> dict[str, str]:
    """The worker's environment, built from an allowlist: nothing else of ``base`` reaches it.

    From ``base``: PATH, LANG, LC_*, TERM, PYENV_VERSION, the names in ``passed`` (config ``worker_env``; the
    variables that steer a GitHub Actions job are refused there and never passed) and ``GITHUB_TOKEN`` only
    with ``pass_github_token``. Then the private HOME and TMPDIR and the README's WAVEGIT_* variables
    (``WAVEGIT_FEEDBACK_FILE`` only on a retry, ``WAVEGIT_ATTEMPT_TOKEN`` the attempt's marker).
    """
    names = [*_PASSED_ENV, *(n for n in base if n.startswith(_PASSED_PREFIX)),
             *(n for n in passed if n not in TOKEN_VARS)]
    env = {name: base[name] for name in names if name in base and not _forbidden(name)}
    token = base.get("GITHUB_TOKEN") or credentials.held_token()
    if pass_github_token and token:
        # The token left wavegit's environment at start-up (wavegit.core.credentials); it is in memory.
        env["GITHUB_TOKEN"] = token
    env.update(
        HOME=str(home), TMPDIR=str(tmp),
        WAVEGIT_ITEM_ID=item_id,
        WAVEGIT_WAVE_ID=wave_id,
        WAVEGIT_PROMPT_FILE=str(prompt_file),
        WAVEGIT_COST_FILE=str(cost_file),
        WAVEGIT_OWNS="\n".join(owns),
    )
    if marker:
        env[ATTEMPT_TOKEN_VAR] = marker
    if feedback_file is not None:
        env["WAVEGIT_FEEDBACK_FILE"] = str(feedback_file)
    return env


def _forbidden(name: str) -> bool:
    return name in FORBIDDEN_WORKER_ENV or name.startswith("ACTIONS_")
