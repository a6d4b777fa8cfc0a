"""A hostile worker that has the sandbox show its item's test a folder of the user's checkout: its test
``run`` starts with ``#!CHECKOUT/scripts/tool.sh``, a program the repository holds (an earlier item landed
it), which the kernel runs as the interpreter; it prints the untracked ``.env`` beside it, if shown.

Usage: shebang_checkout.py CHECKOUT (the user's checkout: an item's author knows it, in an Action too)."""

from __future__ import annotations

import sys
from pathlib import Path

run = Path("run")
run.write_text(f"#!{Path(sys.argv[1]) / 'scripts' / 'tool.sh'}\n")
run.chmod(0o755)
