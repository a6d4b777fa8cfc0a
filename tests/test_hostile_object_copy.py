"""Hostile workers against the test checkout's object copy (objectstore.narrow copies the loose objects the
read-back of the worker's tree listed, parsed from ``git fast-import``'s ``ls`` answers), in real
sandboxed waves. A user whose git prints paths as they are (``core.quotePath=false``, common where names
are not ASCII) gets a folder's name back unquoted from ``ls``: one holding a line break that git does not
take for one (U+0085, U+2028) must not forge an answer."""

from __future__ import annotations

import hashlib
import shlex
import sys
from pathlib import Path

import pytest

from tests.helpers.repos import git
from tests.helpers.wave import item, make_wave_repo
from tests.test_hostile_env import BWRAP_PROBLEM, run_json

pytestmark = pytest.mark.skipif(BWRAP_PROBLEM is not None, reason=f"bwrap cannot run: {BWRAP_PROBLEM}")

_WORKER = """\
import os, sys
sys.stdin.read()
os.makedirs("src", exist_ok=True)
with open("src/a.txt", "w") as f:
    f.write("ok\\n")
folder = os.path.join("src", {folder!r})
os.makedirs(folder, exist_ok=True)
with open(os.path.join(folder, "f"), "w") as f:
    f.write("x\\n")
"""


def forging_wave(tmp_path: Path, folder: str, test: str, loose: str = "",
                 config: tuple[str, str] | None = None) -> tuple[dict[str, object], str]:
    """A bwrap wave of one item whose worker writes src/a.txt and a file in the folder src/``folder``, in a
    clone printing paths unquoted (with ``config`` set) and holding ``loose`` as a loose object no commit
    reaches; its report."""
    script = tmp_path / "forger.py"
    script.write_text(_WORKER.format(folder=folder))
    worker = shlex.join([sys.executable, str(script)])
    entry = item("A", ["forge"], ["src/"], test)
    remote = make_wave_repo(tmp_path, [entry], worker=worker, sandbox="bwrap", attempts=1, concurrency=1)
    git(remote.clone, "config", "core.quotePath", "false")
    if config:
        git(remote.clone, "config", *config)
    if loose:
        (tmp_path / "loose").write_text(loose)
        git(remote.clone, "hash-object", "-w", str(tmp_path / "loose"))
    return run_json(remote)


SECRET = "PRIVATE KEY staged-then-unstaged\n"
SECRET_SHA = hashlib.sha1(b"blob %d\0%s" % (len(SECRET), SECRET.encode())).hexdigest()


@pytest.mark.parametrize("brk", ["\u0085", "\u2028", " "])
def test_a_folder_name_forging_an_ls_answer_copies_no_object_outside_base_and_commit(tmp_path: Path,
                                                                                   brk: str) -> None:
    # The forged `040000 tree SHA` line named a loose object of the scheduler no commit reaches (a key
    # staged and unstaged again), which was copied into the test checkout: its test read it.
    test = f"sh -c 'test ok = \"$(cat src/a.txt)\" && ! git cat-file -e {SECRET_SHA}'"
    rep, output = forging_wave(tmp_path, f"d{brk}040000 tree {SECRET_SHA} x", test, SECRET)
    assert [i["verified"] for i in rep["items"]] == [True], output  # type: ignore[index]


def test_a_forged_ls_answer_naming_a_file_beside_the_objects_copies_no_file_of_the_scheduler(
        tmp_path: Path) -> None:
    # `040000 tree ..config` was copied as the object `..`/`config`: the scheduler's .git/config (a remote's
    # credentials) over the test checkout's own, where its test read it.
    test = "sh -c 'test ok = \"$(cat src/a.txt)\" && ! grep -q SCHEDULER_CONFIG_SECRET .git/config'"
    rep, output = forging_wave(tmp_path, "d\u2028040000 tree ..config x", test,
                               config=("wavegit-test.secret", "SCHEDULER_CONFIG_SECRET"))
    assert [i["verified"] for i in rep["items"]] == [True], output  # type: ignore[index]


@pytest.mark.parametrize("token", ["", "zz", ".."])
def test_a_forged_ls_answer_breaks_neither_the_read_nor_the_wave(tmp_path: Path, token: str) -> None:
    # `040000 tree ` alone (no id) raised IndexError in the read (the wave died with a traceback); `..` (a
    # folder) IsADirectoryError in the copy.
    test = "sh -c 'test ok = \"$(cat src/a.txt)\"'"
    rep, output = forging_wave(tmp_path, f"d\u2028040000 tree {token} x" if token else "d\u2028040000 tree ",
                               test)
    assert [i["verified"] for i in rep["items"]] == [True], output  # type: ignore[index]
