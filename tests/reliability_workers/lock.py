"""A worker that leaves git's ``index.lock`` behind in its own worktree (as a crashed git would), after
writing ``ok`` to every file its item owns."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

sys.stdin.read()
for owned in os.environ["WAVEGIT_OWNS"].splitlines():
    Path(owned).parent.mkdir(parents=True, exist_ok=True)
    Path(owned).write_text("ok\n")
index = subprocess.run(["git", "rev-parse", "--path-format=absolute", "--git-path", "index"],
                       capture_output=True, text=True, check=True).stdout.strip()
Path(index + ".lock").write_text("")
