"""The races' worker: appends ``<item> <wave>`` to ``$RACE_LOG`` (one O_APPEND write, so lines from
concurrent workers never interleave) and writes ``ok`` to every file its item owns."""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.stdin.read()
line = f"{os.environ['WAVEGIT_ITEM_ID']} {os.environ['WAVEGIT_WAVE_ID']}\n".encode()
fd = os.open(os.environ["RACE_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
try:
    os.write(fd, line)
finally:
    os.close(fd)
for owned in os.environ["WAVEGIT_OWNS"].splitlines():
    Path(owned).parent.mkdir(parents=True, exist_ok=True)
    Path(owned).write_text("ok\n")
