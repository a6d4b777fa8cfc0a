"""The one place that runs git (private to the git layer, :mod:`wavegit.core.git`).

Every git invocation in wavegit goes through :func:`run`. Its error carries the command, the exit
code and stderr. Repository-locating variables inherited from a calling git (for example when
running inside a hook) are removed, so git always acts on the directory it is pointed at.

Every command runs hardened: ``core.hooksPath`` is ``/dev/null`` (:func:`no_hooks_dir`; no hook, the
user's or one a worker planted, runs inside wavegit's git calls; a push of wavegit's runs no pre-push hook)
and ``core.fsmonitor`` is off (a configured monitor is a program git would start).
``git config`` itself is left as it is: it runs neither, and would report the override as the setting
(``wavegit hooks install`` reads the user's ``core.hooksPath``).
"""

import contextlib
import os
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from wavegit.core.errors import EXIT_BAD_INPUT, EXIT_WORK_FAILED, WavegitError, ruleset_refusal

# What `git rev-parse --local-env-vars` prints (git clears the same set for submodules), plus
# the quarantine directory git sets for pre-receive hooks.
_LOCAL_ENV_VARS = frozenset(
    {
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_CONFIG",
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_COUNT",
        "GIT_OBJECT_DIRECTORY",
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_IMPLICIT_WORK_TREE",
        "GIT_GRAFT_FILE",
        "GIT_INDEX_FILE",
        "GIT_NO_REPLACE_OBJECTS",
        "GIT_REPLACE_REF_BASE",
        "GIT_PREFIX",
        "GIT_INTERNAL_SUPER_PREFIX",
        "GIT_SHALLOW_FILE",
        "GIT_COMMON_DIR",
        "GIT_QUARANTINE_PATH",
    }
)


_REMOTE_COMMANDS = frozenset({"fetch", "push", "ls-remote", "clone"})
_remote_auth: list[Callable[[], Mapping[str, str]]] = []


def set_remote_auth(auth: Callable[[], Mapping[str, str]] | None) -> None:
    """``auth()`` gives the environment that authenticates a git command talking to a remote (a GitHub
    App's current token, :mod:`wavegit.github.appauth`); it is called as each such command starts, so the
    credential is fresh at push time, however long the wave ran. None: no such environment."""
    _remote_auth[:] = [auth] if auth is not None else []


def _with_remote_auth(args: Sequence[str], env: Mapping[str, str] | None) -> Mapping[str, str] | None:
    if not _remote_auth or _subcommand(args) not in _REMOTE_COMMANDS:
        return env
    return {**(env or {}), **_remote_auth[0]()}


def _subcommand(args: Sequence[str]) -> str | None:
    """The git command ``args`` run, past any ``-c NAME=VALUE`` before it."""
    at = 0
    while at + 1 < len(args) and args[at] == "-c":
        at += 2
    return args[at] if at < len(args) else None


def no_hooks_dir() -> str:
    """The hooks path of every git command wavegit runs: ``/dev/null``, below which no file can be.

    Not an empty directory: any directory of this user's, however read-only, a worker running as this user
    can fill (and root ignores its mode), and its hooks then ran in wavegit's own git calls.
    """
    return os.devnull


def _hardened(args: Sequence[str]) -> list[str]:
    """The argv that runs ``git ARGS`` with hooks and the file system monitor off."""
    if args and args[0] == "config":
        return ["git", *args]
    return ["git", "-c", f"core.hooksPath={no_hooks_dir()}", "-c", "core.fsmonitor=false", *args]


SUBMODULE_CHANGES = "--ignore-submodules=none"
"""For every diff and log of changes: a submodule's ``ignore = all`` (a committed ``.gitmodules``, the user's
config) would otherwise hide a gitlink's change from them, plumbing (``diff-tree``) included."""


class GitError(WavegitError):
    exit_code = EXIT_WORK_FAILED

    def __init__(self, args: Sequence[str], returncode: int, stderr: str) -> None:
        self.command = ["git", *args]
        self.returncode = returncode
        self.stderr = stderr
        super().__init__(f"`{' '.join(self.command)}` exited {returncode}: {_explanation(stderr)}")


RULESET_REFUSAL = "GH013"
"""How GitHub's receiving end names a push a ruleset refused ("GH013: Repository rule violations found")."""


class RuleViolation(GitError):
    """A push the remote's rules refused (GitHub's ``GH013``): exit 2, naming the rules."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, args: Sequence[str], returncode: int, stderr: str) -> None:
        super().__init__(args, returncode, stderr)
        said = [line.strip().removeprefix("remote:").strip() for line in stderr.splitlines()]
        rules = [line.removeprefix("- ").strip() for line in said if line.startswith("- ")]
        # "error: GH013: Repository rule violations found for refs/heads/main."
        refs = [line.rpartition(" for ")[2].rstrip(".") for line in said if RULESET_REFUSAL in line]
        what = f"the push to {refs[0]}" if refs and refs[0] else f"`{' '.join(self.command)}`"
        self.args = (ruleset_refusal(what, rules),)


def failure(args: Sequence[str], returncode: int, stderr: str) -> GitError:
    """The error of a failed ``git ARGS``: :class:`RuleViolation` when a ruleset refused it."""
    if RULESET_REFUSAL in stderr:
        return RuleViolation(args, returncode, stderr)
    return GitError(args, returncode, stderr)


def _explanation(stderr: str) -> str:
    """The lines of git's stderr that say why it failed, on one line.

    git states the cause in ``fatal:``/``error:`` lines and relays a remote's reasons as ``remote:`` and
    `` ! [rejected]`` lines; its last line alone is often just "failed to push some refs".
    """
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    telling = [line for line in lines if line.startswith(("fatal:", "error:", "remote:", "!"))]
    return " | ".join(telling or lines[-1:])[:2000] or "no output"


# A NamedTuple, not a dataclass, and annotations not postponed: the pre-push hook imports this module, and
# importing dataclasses (~4 ms) or creating a dataclass (~0.4 ms) would count on every push.
class GitResult(NamedTuple):
    returncode: int
    stdout: str
    stderr: str


def without_repo_vars(base: Mapping[str, str]) -> dict[str, str]:
    """``base`` without the GIT_* variables that point git at a particular repository."""
    return {k: v for k, v in base.items() if k not in _LOCAL_ENV_VARS}


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str] | None:
    """The process environment without repository-locating GIT_* variables, never prompting, plus ``extra``;
    None when that is the process environment as it is: git then inherits it, and no copy of it is made and
    encoded for each of a wave's hundred git calls (0.1 ms each)."""
    environ = os.environ
    if not extra and "GIT_TERMINAL_PROMPT" in environ and not any(var in environ for var in _LOCAL_ENV_VARS):
        return None
    env = without_repo_vars(environ)
    env.setdefault("GIT_TERMINAL_PROMPT", "0")
    if extra:
        env.update(extra)
    return env


def run(
    args: Sequence[str],
    *,
    cwd: str | Path,
    input: str | None = None,
    env: Mapping[str, str] | None = None,
    check: bool = True,
    timeout: float | None = None,
) -> GitResult:
    """Run ``git ARGS`` in ``cwd``; raise :class:`GitError` on a non-zero exit when ``check``.

    ``env`` adds to (never replaces) the cleaned environment. ``timeout``: seconds after which git and every
    process it started (its own process group: a transport such as ssh too) are killed, and GitError
    (exit code :data:`TIMED_OUT`) is raised whatever ``check`` says.
    """
    env = _with_remote_auth(args, env)
    if timeout is not None:
        return _run_bounded(args, cwd, input, env, check, timeout)
    try:
        proc = subprocess.run(
            _hardened(args),
            cwd=cwd,
            input=_encoded(input),
            capture_output=True,
            env=clean_env(env),
            check=False,
        )
    except OSError as exc:
        raise GitError(args, 127, f"cannot run git: {exc}") from exc
    return _result(args, proc.returncode, proc.stdout, proc.stderr, check)


def _encoded(text: str | None) -> bytes | None:
    return None if text is None else text.encode("utf-8", "surrogateescape")


def decoded(raw: bytes) -> str:
    """git's output as text, exactly: UTF-8 with undecodable bytes kept as surrogates, and no newline
    translation (text mode would read a CR in a file name as LF)."""
    return raw.decode("utf-8", "surrogateescape")


def _result(args: Sequence[str], returncode: int, stdout: bytes, stderr: bytes, check: bool) -> GitResult:
    if check and returncode != 0:
        raise failure(args, returncode, decoded(stderr))
    return GitResult(returncode, decoded(stdout), decoded(stderr))


TIMED_OUT = 124
"""The exit code of a git command :func:`run` killed at its timeout (as ``timeout(1)`` reports it)."""


def _run_bounded(args: Sequence[str], cwd: str | Path, input: str | None, env: Mapping[str, str] | None,
                 check: bool, timeout: float) -> GitResult:
    """:func:`run` with a time limit: git in a session of its own, the whole group killed at the limit."""
    try:
        proc = subprocess.Popen(_hardened(args), cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=clean_env(env), start_new_session=True)
    except OSError as exc:
        raise GitError(args, 127, f"cannot run git: {exc}") from exc
    try:
        stdout, stderr = proc.communicate(_encoded(input), timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise GitError(args, TIMED_OUT, f"fatal: timed out after {timeout:g} s") from None
    return _result(args, proc.returncode, stdout, stderr, check)


def lines(output: str) -> list[str]:
    """git's ``output`` a line each, split at its line ends only: ``str.splitlines`` also splits at CR, form
    feed, U+0085, U+2028 and more, which a path, a ref name, a subject or a trailer may hold (one record
    became two, or its fields too few to unpack); none for no output."""
    return output.split("\n") if output else []


def out(args: Sequence[str], *, cwd: str | Path, input: str | None = None,
        env: Mapping[str, str] | None = None) -> str:
    """stdout of a successful ``git ARGS`` with the trailing newline removed."""
    return run(args, cwd=cwd, input=input, env=env).stdout.rstrip("\n")
