"""A hostile worker (unsandboxed: it pushes with the user's credentials) that declares its own, running wave
dead: it rewrites the wave's heartbeat on the remote ``argv[1]`` to name a process of this machine that has
ended (again, should the scheduler beat over it), writes its commit to ``argv[2]/forged``, waits (up to a
minute) for ``argv[2]/go``, then writes the files it owns."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

url, meet = sys.argv[1], Path(sys.argv[2])
wave = os.environ["WAVEGIT_WAVE_ID"]
ref = f"refs/wavegit/heartbeat/{wave}"


def git(*args: str, data: str | None = None) -> str:
    done = subprocess.run(["git", *args], input=data, capture_output=True, text=True, check=True)
    return done.stdout.strip()




def forge() -> str:
    git("fetch", "-q", url, f"+{ref}:refs/forged")
    message = git("log", "-1", "--format=%B", "refs/forged")
    record = json.loads(message[message.index("{"):])
    ended = subprocess.Popen(["true"])  # the newest pid: the last the kernel hands out again
    ended.wait()
    record["pid"] = ended.pid
    forged = message[:message.index("{")] + json.dumps(record) + "\n"
    tree = git("mktree", data="")
    commit = git("-c", "user.name=x", "-c", "user.email=x@x", "commit-tree", tree, "-m", forged)
    git("push", "-q", "-f", url, f"{commit}:{ref}")
    return commit


# The scheduler may beat once more just after the launch (late, on a loaded machine): the forgery counts
# once it has stood on the remote for a second.
for _ in range(30):
    commit = forge()
    time.sleep(1)
    if git("ls-remote", url, ref).split("\t")[0] == commit:
        (meet / "forged").write_text(commit)
        break
else:
    sys.exit("the forged heartbeat never stood on the remote")
for _ in range(600):
    if (meet / "go").exists():
        break
    time.sleep(0.1)
for owned in os.environ["WAVEGIT_OWNS"].splitlines():
    Path(owned).parent.mkdir(parents=True, exist_ok=True)
    Path(owned).write_text("ok\n")
