"""Keeping the GitHub token out of every environment a worker could read.

``/proc/PID/environ`` shows the environment a process was *started* with, so removing ``GITHUB_TOKEN`` from
``os.environ`` is not enough for the process that got it. A command that runs workers therefore starts
itself again (same pid, same arguments) without the variable, handing the token over through a pipe
(``WAVEGIT_TOKEN_FD``) that no child inherits. The GitHub Action does better still: it never puts the token
in wavegit's environment but in a 0600 file (``WAVEGIT_TOKEN_FILE``) outside every attempt's tree, which
git's credential helper reads too and the sandbox hides. Either way the token then lives only in this
process's memory, where the GitHub client gets it (:func:`held_token`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping

TOKEN_VAR = "GITHUB_TOKEN"
TOKEN_FD_VAR = "WAVEGIT_TOKEN_FD"
TOKEN_FILE_VAR = "WAVEGIT_TOKEN_FILE"
_held: list[str] = []


def protect(environ: MutableMapping[str, str], *, restart: bool) -> None:
    """At start-up: hold the token in memory. ``restart`` (a command that runs workers): first re-exec
    without ``GITHUB_TOKEN``; other commands leave their environment as it is (their git may need it)."""
    if restart and environ.get(TOKEN_VAR):
        _restart_without_token(environ)
    _held[:] = [_taken(environ)]


def held_token() -> str:
    """The token :func:`protect` took, "" when none."""
    return _held[0] if _held else ""


def _taken(environ: MutableMapping[str, str]) -> str:
    token = environ.get(TOKEN_VAR, "")
    fd = environ.pop(TOKEN_FD_VAR, "")
    if fd.isdigit():
        with os.fdopen(int(fd), "r", encoding="utf-8") as pipe:
            token = pipe.read().strip() or token
    path = environ.get(TOKEN_FILE_VAR, "")
    if path:
        try:
            with open(path, encoding="utf-8") as fh:
                token = fh.read().strip() or token
        except OSError:
            pass
    return token


def _restart_without_token(environ: MutableMapping[str, str]) -> None:
    token = environ[TOKEN_VAR]
    read_end, write_end = os.pipe()
    # A token is far smaller than a pipe's buffer: the write cannot block before the new image reads it.
    os.write(write_end, token.encode("utf-8"))
    os.close(write_end)
    os.set_inheritable(read_end, True)
    env = {k: v for k, v in environ.items() if k != TOKEN_VAR}
    env[TOKEN_FD_VAR] = str(read_end)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, sys.orig_argv, env)
