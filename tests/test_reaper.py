"""wavegit.attempts.reaper: the detached process that empties a finished wave's trash."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from wavegit.attempts import reaper

SHADOWS = ("shutil.py", "subprocess.py", "wavegit/__init__.py", "wavegit/attempts/__init__.py",
           "wavegit/attempts/reaper.py")
"""Files a repository could hold that ``python -m wavegit.attempts.reaper`` would import if started in it."""


def test_the_reaper_empties_the_trash_and_never_imports_from_the_directory_wavegit_ran_in(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repository, marker = tmp_path / "repository", tmp_path / "ran"
    for shadow in SHADOWS:
        (repository / shadow).parent.mkdir(parents=True, exist_ok=True)
        (repository / shadow).write_text(f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n")
    trash = tmp_path / "state" / "trash"
    (trash / "A-1" / "deep").mkdir(parents=True)
    (trash / "A-1" / "deep" / "f.txt").write_text("x\n")
    monkeypatch.chdir(repository)
    reaper.reap_later(trash)
    deadline = time.monotonic() + 60  # the detached process's own pace, not a speed check
    while any(trash.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(trash.iterdir()) == []
    assert not marker.exists()


def test_the_reaper_empties_the_trash_at_the_lowest_cpu_priority(tmp_path: Path) -> None:
    # It runs beside the next command (a wave's launches, read-backs and tests), which goes first.
    trash = tmp_path / "trash"
    (trash / "tree" / "sub").mkdir(parents=True)
    (trash / "tree" / "sub" / "f").write_text("x\n")
    probe = ("import os, sys; from wavegit.attempts import reaper; reaper.main([sys.argv[1]]); "
             "print(os.nice(0))")
    shown = subprocess.run([sys.executable, "-c", probe, str(trash)], capture_output=True, text=True,
                           check=True, cwd=Path(__file__).parent.parent)
    assert int(shown.stdout) == 19 and not any(trash.iterdir())
