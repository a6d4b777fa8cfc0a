"""The gate of a sandboxed worker or test: the first command of its sandbox, a constant ``sh`` script, says
it is up (bwrap has built the sandbox: namespaces, mounts, seccomp) and then execs the command only on the
exact go line read from its stdin, which wavegit writes before the prompt.

The shell reads a pipe byte by byte, so the prompt after the go line stays for the command; end of file (its
launcher gone, a ``kill -9`` of wavegit included), a partial line or any other line ends it without running
anything. bwrap's own ``--block-fd`` is no such gate: it runs the command on end of file too. Started ahead
(:func:`wavegit.attempts.runner.park`), a sandbox waits there, built, until its worker slot is free.
"""

from __future__ import annotations

import os
import selectors
import time

GO = "wavegit-go"
"""The line the gate must read before its command runs."""
UP = "wavegit-up"
"""The line the gate prints once the sandbox is built (never in the log)."""
SCRIPT = ("/bin/sh", "-c", f'echo {UP}; IFS= read -r go && [ "$go" = {GO} ] && exec "$@"; exit 125', "sh")
"""What the sandbox starts: ``SCRIPT + argv``."""
UP_WAIT_S = 30.0
"""How long a launch waits at most for its gate to say it is up (the go line is written anyway then)."""


def go_line(stdin_text: str | None) -> str:
    """What the gated process's stdin is fed: the go line, then its prompt."""
    return f"{GO}\n{stdin_text or ''}"


def await_up(fd: int, wait_s: float = UP_WAIT_S) -> bytes:
    """Read the gated process's output (``fd``) until its gate says it is up, it ended, or ``wait_s`` passed;
    what it printed besides (bwrap's warnings, or why it could not build the sandbox), for its log."""
    seen = b""
    deadline = time.monotonic() + wait_s
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while (left := deadline - time.monotonic()) > 0 and selector.select(left):
            data = os.read(fd, 65536)
            if not data:
                break
            seen += data
            lines = seen.split(b"\n")
            if UP.encode() in lines[:-1]:
                lines.remove(UP.encode())
                return b"\n".join(lines)
    return seen
