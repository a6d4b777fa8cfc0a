"""Keeping the GitHub token (and a GitHub App's private key, :data:`SECRET_VARS`) out of every environment a
worker could read.

``/proc/PID/environ`` shows the environment a process was *started* with, so removing ``GITHUB_TOKEN`` from
``os.environ`` is not enough for the process that got it. A command that runs workers therefore starts
itself again (same pid, same arguments) without the variable, handing the token over through a pipe
(``WAVEGIT_TOKEN_FD``) that no child inherits. The GitHub Action does better still: it never puts the token
in wavegit's environment but in a 0600 file (``WAVEGIT_TOKEN_FILE``) outside every attempt's tree, which
git's credential helper reads too and the sandbox hides. Either way the token then lives only in this
process's memory, where the GitHub client gets it (:func:`held_token`).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import MutableMapping

TOKEN_VAR = "GITHUB_TOKEN"
TOKEN_FD_VAR = "WAVEGIT_TOKEN_FD"
TOKEN_FILE_VAR = "WAVEGIT_TOKEN_FILE"
APP_KEY_VAR = "WAVEGIT_APP_PRIVATE_KEY"
"""A GitHub App's private key (:mod:`wavegit.github.appauth`): a secret held like the token."""
APP_KEY_FILE_VAR = "WAVEGIT_APP_PRIVATE_KEY_FILE"
"""A 0600 file holding that key; the workers' sandbox hides its folder, as the token file's."""
SECRET_VARS = (TOKEN_VAR, APP_KEY_VAR)
_held: list[str] = []
_held_secrets: dict[str, str] = {}


def protect(environ: MutableMapping[str, str], *, restart: bool) -> None:
    """At start-up: hold the token in memory. ``restart`` (a command that runs workers): first re-exec
    without ``GITHUB_TOKEN``; other commands leave their environment as it is (their git may need it)."""
    if restart and any(environ.get(name) for name in SECRET_VARS):
        _restart_without_secrets(environ)
    _held[:] = [_taken(environ)]


def held_token() -> str:
    """The token :func:`protect` took, "" when none."""
    return _held[0] if _held else ""


def held_secret(name: str) -> str:
    """The secret variable ``name`` (one of :data:`SECRET_VARS`) that :func:`protect` took, "" when none."""
    return _held_secrets.get(name, "")


def _taken(environ: MutableMapping[str, str]) -> str:
    _held_secrets.clear()
    token = environ.get(TOKEN_VAR, "")
    fd = environ.pop(TOKEN_FD_VAR, "")
    if fd.isdigit():
        with os.fdopen(int(fd), "r", encoding="utf-8") as pipe:
            handed = json.loads(pipe.read() or "{}")
        _held_secrets.update({k: v for k, v in handed.items() if k in SECRET_VARS and isinstance(v, str)})
        token = _held_secrets.get(TOKEN_VAR, "") or token
    _held_secrets.update({name: environ[name] for name in SECRET_VARS if environ.get(name)})
    path = environ.get(TOKEN_FILE_VAR, "")
    if path:
        try:
            with open(path, encoding="utf-8") as fh:
                token = fh.read().strip() or token
        except OSError:
            pass
    return token


def _restart_without_secrets(environ: MutableMapping[str, str]) -> None:
    secrets = json.dumps({name: environ[name] for name in SECRET_VARS if environ.get(name)})
    read_end, write_end = os.pipe()
    # The secrets (a token, a private key of a few kB) are far smaller than a pipe's buffer (64 kB on
    # Linux): the write cannot block before the new image reads it.
    os.write(write_end, secrets.encode("utf-8"))
    os.close(write_end)
    os.set_inheritable(read_end, True)
    env = {k: v for k, v in environ.items() if k not in SECRET_VARS}
    env[TOKEN_FD_VAR] = str(read_end)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, sys.orig_argv, env)
