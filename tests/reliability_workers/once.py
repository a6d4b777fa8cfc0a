"""``once.py MARKER COMMAND...``: run COMMAND only the first time (MARKER records that it ran), so a
fault a worker injects does not strike again in the next wave."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

marker = Path(sys.argv[1])
if not marker.exists():
    marker.write_text("")
    subprocess.run(sys.argv[2:], check=True)
