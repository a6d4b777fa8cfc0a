"""A hostile worker that makes its item's test unable to start, so that its attempt is counted as nobody's
and the item runs again (a paid agent, every wave) without ever reaching ``max_attempts``.

Usage: break_own_test_program.py WAY PROGRAM: changes ``src/a.txt`` and breaks PROGRAM (a file of its tree the
item owns): ``delete`` removes it, ``chmod`` makes it not executable, ``shebang`` names a missing
interpreter, ``loop`` makes it a symlink to itself; ``attributes`` leaves it alone but has a
``.gitattributes`` beside it check it out with CRLF endings (``#!/bin/sh\r``: no such interpreter)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

way, program = sys.argv[1], Path(sys.argv[2])
Path("src").mkdir(exist_ok=True)
Path("src/a.txt").write_text("changed\n")
if way == "delete":
    program.unlink()
elif way == "chmod":
    program.chmod(0o644)
elif way == "shebang":
    program.write_text("#!/nonexistent/interpreter\n")
elif way == "loop":
    program.unlink()
    os.symlink(program.name, program)
elif way == "attributes":
    (program.parent / ".gitattributes").write_text(f"{program.name} text eol=crlf\n")
else:
    sys.exit(f"unknown way {way!r}")
