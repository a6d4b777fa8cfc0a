"""A hostile worker that forges its own verification: it writes ``bad`` into its owned file, then leaves a
daemon with a cleaned environment (``env -i``, its own session: no attempt marker for the sweep to find, no
process group to kill) that writes ``ok`` into the same file of the clean checkout its item's test runs in
(the tree's name + ``.test``), so the test passes on what was not committed. ``TAG`` (the prompt's first
line) is in the daemon's command line, so a test can find it; it gives up after 60 s.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

DAEMON = """\
import pathlib, sys, time
target, end = pathlib.Path(sys.argv[1]), time.time() + 60
while time.time() < end:
    try:
        if target.read_text() != "ok\\n":
            target.write_text("ok\\n")
    except OSError:
        pass
    time.sleep(0.005)
"""

tag = sys.stdin.read().splitlines()[0]
owned = os.environ["WAVEGIT_OWNS"].splitlines()[0]
Path(owned).parent.mkdir(parents=True, exist_ok=True)
Path(owned).write_text("bad\n")
checkout = Path.cwd().with_name(Path.cwd().name + ".test")
subprocess.Popen(["env", "-i", sys.executable, "-c", DAEMON, str(checkout / owned), tag],
                 start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                 stderr=subprocess.DEVNULL)
