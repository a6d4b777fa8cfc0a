"""Hostile workers against the test checkouts made ahead (``Workspaces.prepare_checkout``): sandboxed, an
item set up while another's worker runs gets its test's checkout written at the base meanwhile, then moved
to its worker's commit. Neither that worker nor the one running beside it may put anything there that the
test would then run with: the checkout is the commit's tree, nothing else. Real bwrap waves."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from tests.helpers.wave import item, make_wave_repo
from tests.test_hostile_env import BWRAP_PROBLEM, run_json

pytestmark = pytest.mark.skipif(BWRAP_PROBLEM is not None, reason=f"bwrap cannot run: {BWRAP_PROBLEM}")

_PLANTER = """\
import os, sys, time
sys.stdin.read()
item = os.environ["WAVEGIT_ITEM_ID"]
os.makedirs("src", exist_ok=True)
with open(f"src/{item}.txt", "w") as f:
    f.write("ok\\n")
here = os.getcwd()
for sibling in ("A-1.test", "B-1.test"):
    for target in (os.path.join(os.path.dirname(here), sibling), here + ".test"):
        for name in ("conftest.py", "planted.txt", ".git/hooks/planted"):
            try:
                os.makedirs(os.path.dirname(os.path.join(target, name)), exist_ok=True)
                with open(os.path.join(target, name), "w") as f:
                    f.write("planted\\n")
            except OSError:
                pass
time.sleep(0.5)  # while B's checkout is made at the base
"""


def verified_one_at_a_time(tmp_path: Path, worker: str, owns: str, test: str) -> list[tuple[object, object]]:
    """(id, verified) of items A and B of a bwrap wave with one slot, each run by the Python script
    ``worker``, owning ``owns`` (``{}``: the item's id), tested by ``test``: B is set up, its test parked and
    its checkout made at the base, while A's worker runs."""
    script = tmp_path / "worker.py"
    script.write_text(worker)
    entries = [item(name, ["work"], [owns.format(name)], test) for name in ("A", "B")]
    remote = make_wave_repo(tmp_path, entries, worker=shlex.join([sys.executable, str(script)]),
                            sandbox="bwrap", attempts=1, concurrency=1)
    rep, output = run_json(remote)
    items = rep["items"]
    assert isinstance(items, list), output
    return [(entry["id"], entry["verified"]) for entry in items]


def test_no_worker_plants_a_file_in_a_test_checkout_made_ahead(tmp_path: Path) -> None:
    # What git shows as the checkout's content, and no planted file whatever git is told to ignore.
    test = ("sh -c 'test ok = \"$(cat src/$WAVEGIT_ITEM_ID.txt)\" && test -z \"$(git status --porcelain "
            "--ignored)\" && ! test -e planted.txt && ! test -e conftest.py && ! test -e .git/hooks/planted'")
    assert verified_one_at_a_time(tmp_path, _PLANTER, "src/{}.txt", test) == [("A", True), ("B", True)]


_MANY = """\
import os, sys
sys.stdin.read()
item = os.environ["WAVEGIT_ITEM_ID"]
os.makedirs(f"src/{item}", exist_ok=True)
for n in range(150):
    with open(f"src/{item}/f{n}.txt", "w") as f:
        f.write(f"{item} {n}\\n")
"""


def test_a_commit_adding_more_objects_than_git_keeps_loose_is_tested_when_its_checkout_was_made_ahead(
        tmp_path: Path) -> None:
    # Over fast-import's unpackLimit (100) the read writes a pack, so the moved checkout's objects are found
    # with `git pack-objects`: it read the store alone, where the commit is not ("bad object"), and the
    # item was failed for wavegit's slip.
    test = ("sh -c 'test 150 = $(ls src/$WAVEGIT_ITEM_ID | wc -l) && git fsck --no-dangling "
            "--connectivity-only HEAD && test -z \"$(git status --porcelain --ignored)\"'")
    assert verified_one_at_a_time(tmp_path, _MANY, "src/{}/", test) == [("A", True), ("B", True)]
