"""The crash tests' worker: records its process group, sleeps, then fails or writes ``src/<item>.txt``.

Driven by the environment the test gives ``wavegit run`` (workers inherit it): ``CRASH_PID_DIR`` (write
the process group id to ``<dir>/<item>``, so the test can find and kill workers a killed scheduler left
behind), ``CRASH_SLEEP_S`` and ``CRASH_FAIL_ITEMS`` (comma-separated ids that exit 1).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

item = os.environ["WAVEGIT_ITEM_ID"]
sys.stdin.read()
pid_dir = os.environ.get("CRASH_PID_DIR")
if pid_dir:
    Path(pid_dir, item).write_text(str(os.getpgid(0)))
time.sleep(float(os.environ.get("CRASH_SLEEP_S", "0")))
if item in os.environ.get("CRASH_FAIL_ITEMS", "").split(","):
    sys.exit(1)
Path("src").mkdir(exist_ok=True)
Path("src", f"{item}.txt").write_text("ok\n")
