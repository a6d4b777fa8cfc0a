"""The first sandboxed wave on a machine whose Python comes from pyenv: the worker (``python3``, a pyenv shim
under the hidden HOME) and its item's test start with the default config, and HOME's other files stay hidden.
A real ``wavegit run`` with the hostile ``loot`` worker (``tests/hostile_workers/env_loot.py``), once on a
pyenv laid out in a private HOME, once on this machine's own pyenv where it has one."""

from __future__ import annotations

import os
import pwd
import shlex
import sys
from pathlib import Path

import pytest

from tests.helpers.wave import check, item, make_wave_repo
from tests.test_hostile_repository import loot, looting_repo

HOSTILE = Path(__file__).resolve().parent / "hostile_workers" / "env_act.py"
WORKER = shlex.join(["python3", str(HOSTILE)])
"""``python3`` as PATH finds it: the pyenv shim."""


def fake_pyenv(home: Path) -> Path:
    """A pyenv in ``home`` as pyenv lays one out: a bash shim that execs ``libexec/pyenv``, which execs the
    version the ``version`` file names (this interpreter, linked); its shims directory."""
    root = home / ".pyenv"
    (root / "shims").mkdir(parents=True)
    (root / "libexec").mkdir()
    (root / "version").write_text("3.99.0\n")
    version_bin = root / "versions" / "3.99.0" / "bin"
    version_bin.mkdir(parents=True)
    (version_bin / "python3").symlink_to(Path(sys.executable).resolve())
    shim = root / "shims" / "python3"
    shim.write_text(f'#!/usr/bin/env bash\nexport PYENV_ROOT="{root}"\n'
                    f'exec "{root}/libexec/pyenv" exec "${{0##*/}}" "$@"\n')
    pyenv = root / "libexec" / "pyenv"
    pyenv.write_text('#!/usr/bin/env bash\nshift\nprogram="$1"; shift\n'
                     'exec "$PYENV_ROOT/versions/$(cat "$PYENV_ROOT/version")/bin/$program" "$@"\n')
    for script in (shim, pyenv):
        script.chmod(0o755)
    return root / "shims"


def first_wave(tmp_path: Path, home: Path, shims: Path) -> str:
    """What the worker landed, run with HOME ``home`` and pyenv's ``shims`` first on PATH."""
    probes = [f"list {home}", f"read {home / '.ssh' / 'id_ed25519'}", f"read {home / '.npmrc'}"]
    remote = looting_repo(tmp_path, probes, WORKER)
    return loot(remote, remote.clone, {"HOME": str(home), "PATH": f"{shims}:/usr/bin:/bin"})


def listing(home: Path, *shown: str) -> str:
    """What the worker lists of the hidden ``home``: ``shown`` and, when wavegit's cache folder lies in it,
    that folder's first part (it holds only the folders down to the attempt's own tree, made to mount it)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or home / ".cache")
    inside = [cache.relative_to(home).parts[0]] if cache.is_relative_to(home) else []
    return f"listed {home}: {sorted([*shown, *inside])}"


def test_the_first_wave_with_a_pyenv_python_under_the_hidden_home_works_and_hides_the_rest(
        tmp_path: Path) -> None:
    home = tmp_path / "home"
    shims = fake_pyenv(home)
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY of the user\n")
    (home / ".npmrc").write_text("//registry.npmjs.org/:_authToken=npm-token-of-the-user\n")
    landed = first_wave(tmp_path, home, shims)
    assert listing(home, ".pyenv") in landed, landed
    assert "PRIVATE KEY" not in landed and "npm-token" not in landed, landed


def test_a_virtualenv_in_ro_paths_linked_into_pyenv_under_the_hidden_home_runs_through_sh_c(
        tmp_path: Path) -> None:
    # `sh -c` hides the program from wavegit, which followed only the command's own launch chain: the
    # virtualenv showed, the Python its `python3` links to under HOME did not, and the launch failed (127).
    home = tmp_path / "home"
    fake_pyenv(home)
    venv_bin = home / ".venvs" / "proj" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "python3").symlink_to(home / ".pyenv" / "versions" / "3.99.0" / "bin" / "python3")
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY of the user\n")
    worker = shlex.join(["sh", "-c", shlex.join([str(venv_bin / "python3"), str(HOSTILE)])])
    probes = [f"list {home}", f"list {home / '.pyenv'}", f"read {home / '.ssh' / 'id_ed25519'}"]
    entry = item("A", ["loot", *probes], ["src/a.txt"], check("src/a.txt"))
    remote = make_wave_repo(tmp_path, [entry], worker=worker, attempts=1, concurrency=1,
                            sandbox={"mode": "bwrap", "ro_paths": ["~/.venvs"]})
    landed = loot(remote, remote.clone, {"HOME": str(home)})
    assert listing(home, ".pyenv", ".venvs") in landed, landed
    assert f"listed {home / '.pyenv'}: ['versions']" in landed, landed
    assert "PRIVATE KEY" not in landed, landed


def test_an_activated_virtualenv_outside_home_linked_into_pyenv_runs_its_python_through_sh_c(
        tmp_path: Path) -> None:
    # Its `python3` links into pyenv under the hidden HOME: `sh -c 'python3 ...'` found the link broken and
    # went on to the system's Python (no venv, no packages, no word); now the venv's install shows.
    home = tmp_path / "home"
    fake_pyenv(home)
    venv = tmp_path / "proj-venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(f"home = {home / '.pyenv' / 'versions' / '3.99.0' / 'bin'}\n")
    (venv / "bin" / "python3").symlink_to(home / ".pyenv" / "versions" / "3.99.0" / "bin" / "python3")
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY of the user\n")
    worker = shlex.join(["sh", "-c", f"python3 {shlex.quote(str(HOSTILE))}"])
    probes = [f"list {home}", f"list {home / '.pyenv'}", f"read {home / '.ssh' / 'id_ed25519'}"]
    entry = item("A", ["loot", *probes], ["src/a.txt"], check("src/a.txt"))
    remote = make_wave_repo(tmp_path, [entry], worker=worker, attempts=1, concurrency=1, sandbox="bwrap")
    landed = loot(remote, remote.clone, {"HOME": str(home), "PATH": f"{venv / 'bin'}:/usr/bin:/bin"})
    assert f"listed {home / '.pyenv'}: ['versions']" in landed, landed
    assert "PRIVATE KEY" not in landed, landed


USER_HOME = Path(pwd.getpwuid(os.getuid()).pw_dir)


def _pyenv_shims() -> Path | None:
    """This machine's pyenv shims (``$PYENV_ROOT`` or ``~/.pyenv``), when a ``python3`` shim is there."""
    shims = Path(os.environ.get("PYENV_ROOT", USER_HOME / ".pyenv")) / "shims"
    return shims if (shims / "python3").is_file() else None


@pytest.mark.skipif(_pyenv_shims() is None, reason="this machine has no pyenv python3 shim")
def test_the_first_wave_on_this_machines_pyenv_works_with_the_default_config(tmp_path: Path) -> None:
    shims = _pyenv_shims()
    assert shims is not None
    home = USER_HOME
    landed = first_wave(tmp_path, home, shims)
    listed = next(line for line in landed.splitlines() if line.startswith(f"listed {home}: "))
    assert listed == listing(home, shims.parent.name), landed
    assert landed.count("refused ") == 2, landed
