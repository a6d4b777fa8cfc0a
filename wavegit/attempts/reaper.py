"""``python -m wavegit.attempts.reaper TRASH``: remove what finished waves left in their state folder's trash.

A wave moves its trees and private folders to the trash in one rename each (``workspace.move_to_trash``)
and returns; removing them takes a filesystem operation per file and directory (a discard per directory on
a disk mounted with ``discard``), so it happens here, in a process of its own started detached after the
wave's report is written (:func:`reap_later`), as ``git gc --auto`` detaches. A reaper that is killed leaves
the rest to the next one, or to ``wavegit sync``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from wavegit.attempts import runner, workspace


def reap_later(trash: Path) -> None:
    """Empty ``trash`` in a detached process, when it holds anything. It starts in wavegit's state folder,
    not in the repository: ``python -m`` puts its directory first on the module path, where a repository
    file named like a module it imports (``shutil.py``) would run."""
    if trash.is_dir() and any(os.scandir(trash)):
        runner.start_detached([sys.executable, "-m", "wavegit.attempts.reaper", str(trash)], cwd=trash.parent)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m wavegit.attempts.reaper TRASH", file=sys.stderr)
        return 2
    # Cleanup gives way to whatever runs meanwhile: the next wave's launches, its read-backs and tests.
    os.nice(19)
    workspace.empty_trash(Path(argv[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
