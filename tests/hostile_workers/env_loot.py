"""A hostile worker looting the repository around its tree: each line of the rest of its prompt is a probe.

``read PATH`` reads a file (``found PATH: TEXT`` or ``refused PATH``); ``list DIR`` lists a directory;
``git ARGS...`` runs git in the tree (``git ARGS: OUTPUT``, failures included); ``objects [DIR]`` prints every
object of the tree's repository with its content (``git cat-file --batch-all-objects``), or of the object
directory DIR read directly. Everything found goes into each file its item owns (after
``ok``) and its output, so a verified attempt carries its loot onto the wave branch.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path


def read(path: str) -> str:
    try:
        return f"found {path}: {Path(path).read_text(errors='replace')}"
    except OSError as exc:
        return f"refused {path}: {exc.strerror}"


def listing(path: str) -> str:
    try:
        return f"listed {path}: {sorted(os.listdir(path))}"
    except OSError as exc:
        return f"refused {path}: {exc.strerror}"


def git(args: list[str], stdin: str = "") -> str:
    done = subprocess.run(["git", *args], input=stdin, capture_output=True, text=True, check=False)
    return f"git {' '.join(args)}: {done.stdout}{done.stderr}"


def every_object(store: str) -> str:
    """Every object of the tree's repository (its alternates included), or of the object directory
    ``store`` read directly, with its content."""
    env = {**os.environ, "GIT_OBJECT_DIRECTORY": store} if store else None
    done = subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch"], capture_output=True,
                          env=env, check=False)
    return f"objects {store or '.'}: {(done.stdout + done.stderr).decode(errors='replace')}"


found: list[str] = []
for line in sys.stdin.read().splitlines():
    verb, _, rest = line.partition(" ")
    if verb == "read":
        found.append(read(rest))
    elif verb == "list":
        found.append(listing(rest))
    elif verb == "git":
        found.append(git(shlex.split(rest)))
    elif verb == "objects":
        found.append(every_object(rest))
print("\n".join(found), flush=True)
for owned in os.environ["WAVEGIT_OWNS"].splitlines():
    Path(owned).parent.mkdir(parents=True, exist_ok=True)
    Path(owned).write_text("ok\n" + "".join(entry + "\n" for entry in found))
