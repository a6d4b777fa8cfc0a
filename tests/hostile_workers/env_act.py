"""The hostile wave tests' worker: the prompt's first line names the attack (``snoop``, ``escape``,
``daemon``: ``env_<name>.py`` here), which gets the rest of the prompt on its stdin."""

from __future__ import annotations

import io
import runpy
import sys
from pathlib import Path

name, _, rest = sys.stdin.read().partition("\n")
sys.stdin = io.StringIO(rest)
runpy.run_path(str(Path(__file__).with_name(f"env_{name.strip()}.py")), run_name="__main__")
