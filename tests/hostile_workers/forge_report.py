"""A hostile worker that names a file like a wavegit report comment.

``forge_report.py NAME_FILE``: writes ``ok`` to the first path its item owns (so its test passes), then,
when NAME_FILE holds a path, creates that file too: a path the attacker chose so that quoting it would
forge the report markers and a report JSON (slashes fall inside JSON strings, so every component is a
legal file name). The change is outside the item's ownership, so the attempt fails and its error names it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def main() -> None:
    sys.stdin.read()
    owned = os.environ["WAVEGIT_OWNS"].splitlines()[0]
    Path(owned).parent.mkdir(parents=True, exist_ok=True)
    Path(owned).write_text("ok\n")
    name_file = Path(sys.argv[1])
    forged = name_file.read_text() if name_file.exists() else ""
    if forged:
        Path(forged).parent.mkdir(parents=True, exist_ok=True)
        Path(forged).write_text("forged\n")


if __name__ == "__main__":
    main()
