"""Hostile workers against collect's replay (issue 21): the wave branch gets exactly each item commit's
changes, as ``git diff-tree`` says them, whatever names, kinds and modes the workers' trees held."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.repos import git
from tests.helpers.wave import make_wave_repo, run_cli

pytestmark = pytest.mark.slow

# The worker runs its prompt's code (between markers: wavegit's own words come around it) in its tree.
EXEC = shlex.join([sys.executable, "-c",
                   "import sys; exec(sys.stdin.read().split('#<<\\n')[1].split('#>>')[0])"])
PASS = shlex.join([sys.executable, "-c", "pass"])


def _item(item_id: str, code: str, owns: list[str], test: str = PASS) -> dict[str, Any]:
    return {"id": item_id, "prompt": f"#<<\n{code}#>>\n", "owns": owns, "test": test, "status": "todo"}


def _raw(repo: Path, commit: str) -> list[str]:
    """``git diff-tree -r`` of ``commit`` against its parent: one entry per changed path (NUL-split)."""
    said = git(repo, "diff-tree", "-r", "-z", "--no-renames", "--ignore-submodules=none", f"{commit}^",
               commit)
    fields = said.rstrip("\0").split("\0") if said else []
    return [f"{meta} {path}" for meta, path in zip(fields[0::2], fields[1::2], strict=True)]


def _item_commits(clone: Path, base: str) -> dict[str, set[str]]:
    """The item commits the read-backs wrote (every commit on ``base`` here), by their item's trailer."""
    found: dict[str, set[str]] = {}
    listed = git(clone, "cat-file", "--batch-all-objects", "--batch-check=%(objecttype) %(objectname)")
    for sha in (line.split()[1] for line in listed.splitlines() if line.startswith("commit ")):
        said = git(clone, "log", "-1", "--format=%P%n%B", sha).splitlines()
        trailer = [row.split(":", 1)[1].strip() for row in said[1:] if row.startswith("Wavegit-Item:")]
        if said[0] == base and trailer:
            found.setdefault(trailer[0], set()).add(sha)
    return found


@pytest.mark.parametrize("sandbox", ["bwrap", "none"])
def test_the_wave_branch_replays_each_item_commits_own_diff_whatever_its_names_kinds_and_modes(
        tmp_path: Path, sandbox: str) -> None:
    remote = make_wave_repo(tmp_path, [
        _item("A", "import os\n"
                   "os.remove('a/file.txt'); os.makedirs('a/file.txt')\n"
                   "open('a/file.txt/in', 'w').write('in')\n"
                   "for name in ['a/new\\nline', 'a/cr\\r', 'a/u\\u2028x', 'a/\"q\"\\\\', 'a/tab\\tx']:\n"
                   "    open(name, 'w').write(name)\n"
                   "open('a/\u00e9', 'w').write('latin')\n", ["a/"]),
        _item("B", "import os, shutil\n"
                   "shutil.rmtree('b/dir'); open('b/dir', 'w').write('now a file')\n"
                   "os.chmod('b/plain.sh', 0o755)\n"
                   "os.remove('b/link'); open('b/link', 'w').write('target')\n", ["b/"]),
        _item("C", "import shutil\nshutil.rmtree('c')\n", ["c/"]),
        _item("D", "import os\nos.remove('d/f'); os.symlink('../README.md', 'd/f')\n", ["d/"]),
        # Its retry differs: the first attempt's commit (a file more, the test failing) is not replayed.
        _item("E", "import os\nfirst = not os.environ.get('WAVEGIT_FEEDBACK_FILE')\n"
                   "open('e/f', 'w').write('bad' if first else 'good')\n"
                   "first and open('e/g', 'w').write('g')\n", ["e/"],
              test=shlex.join([sys.executable, "-c", "assert open('e/f').read() == 'good'"])),
    ], worker=EXEC, attempts=2, sandbox=sandbox, concurrency=5)
    clone = remote.clone
    for rel, text in {"a/file.txt": "x", "b/dir/f1": "1", "b/dir/f2": "2", "b/plain.sh": "echo",
                      "c/sub/x": "x", "c/y": "y", "d/f": "f", "e/f": "f"}.items():
        (clone / rel).parent.mkdir(parents=True, exist_ok=True)
        (clone / rel).write_text(text)
    (clone / "b" / "link").symlink_to("target")
    git(clone, "add", "a", "b", "c", "d", "e")
    git(clone, "update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},c/sub/mod")
    git(clone, "commit", "-q", "-m", "odd kinds")
    git(clone, "push", "-q", "origin", "HEAD:main")
    code, rep = run_cli(clone)
    assert code == 0 and rep.success, [(entry.id, entry.error) for entry in rep.items]
    assert all(entry.verified for entry in rep.items) and rep.items[-1].attempts == 2
    assert rep.head_sha is not None
    assert rep.base_sha is not None
    items = _item_commits(clone, rep.base_sha)
    assert sorted(items) == ["A", "B", "C", "D", "E"], items
    chain = git(clone, "rev-list", "--reverse", f"{rep.head_sha}", f"^{rep.base_sha}").split()
    assert len(chain) == 5
    for replayed in chain:
        item_id = next(row.split(":", 1)[1].strip() for row in git(clone, "log", "-1", "--format=%B",
                                                                  replayed).splitlines()
                       if row.startswith("Wavegit-Item:"))
        # The replay is one of its item's commits (E's two attempts each wrote one): the verified one.
        assert _raw(clone, replayed) in [_raw(clone, commit) for commit in items[item_id]], item_id
    assert git(clone, "ls-tree", "-r", "--name-only", rep.head_sha, "e/") == "e/f"
