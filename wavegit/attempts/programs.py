"""The program a worker or test starts, looked at before it starts: started through a wrapper (``setpriv``,
``prlimit``, bwrap), a program that cannot run would only be the wrapper's exit code."""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Mapping
from pathlib import Path


def found(program: str, cwd: str | Path, env: Mapping[str, str] | None) -> Path:
    """Where ``program`` is (absolute), or the OSError exec would raise: started through a wrapper
    (``setpriv``, ``bwrap``), it would fail only as the wrapper's exit code."""
    path = (env if env is not None else os.environ).get("PATH", os.defpath)
    target = Path(cwd) / program if "/" in program else program
    where = shutil.which(target, path=path)
    if where is None:
        code = errno.EACCES if "/" in program and Path(target).is_file() else errno.ENOENT
        raise OSError(code, os.strerror(code), program)
    return Path(where).absolute()


def executable(program: str, cwd: str | Path, env: Mapping[str, str] | None) -> None:
    """The OSError exec of ``program`` would raise, raised here: started through a wrapper, a program that
    cannot run would only be the wrapper's exit 127 (its ``#!`` interpreter missing included)."""
    found_at = found(program, cwd, env)
    try:
        with found_at.open("rb") as script:
            head = script.read(256)
    except OSError:
        return  # a program that cannot be read but may be run
    interpreter = head[2:].split(b"\n", 1)[0].split()[:1] if head.startswith(b"#!") else []
    if interpreter and not os.access(interpreter[0], os.X_OK):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
