"""A hostile worker that leaves processes behind: a child in its own process group and a ``setsid``
daemon, both looping forever with ``TAG`` (the first line of the prompt) in their command lines, so a test
can look for them in ``/proc``. With ``hold`` as the second line it then waits (to be killed along with
its scheduler); otherwise it does its item (``ok`` in every owned file) and exits 0.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

LOOP = "import sys, time\nwhile True: time.sleep(0.05)"

lines = sys.stdin.read().splitlines()
tag, hold = lines[0], len(lines) > 1 and lines[1] == "hold"
subprocess.Popen([sys.executable, "-c", LOOP, f"{tag}-child"])
subprocess.Popen([sys.executable, "-c", LOOP, f"{tag}-daemon"], start_new_session=True,
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(f"left {tag}-child and {tag}-daemon", flush=True)
if hold:
    while True:
        time.sleep(0.05)
for owned in os.environ["WAVEGIT_OWNS"].splitlines():
    Path(owned).parent.mkdir(parents=True, exist_ok=True)
    Path(owned).write_text("ok\n")
