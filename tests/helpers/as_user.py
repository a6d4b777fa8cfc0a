"""Running wavegit as an ordinary user: the user the tests run as, or, when they run as root, the system
user ``wavegit-user`` (made here when missing), with a folder of its own for repositories and its HOME."""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import NamedTuple

from tests.helpers.repos import REPO_ROOT

USER = "wavegit-user"


class User(NamedTuple):
    name: str
    uid: int
    gid: int
    base: Path
    """A folder it owns (repositories, its HOME)."""

    def own(self, path: Path) -> None:
        """Give ``path`` and everything under it to the user."""
        if os.geteuid() == 0:
            subprocess.run(["chown", "-R", f"{self.uid}:{self.gid}", str(path)], check=True)

    def run(self, argv: list[str], cwd: Path, env: dict[str, str], timeout: float = 300,
            ) -> subprocess.CompletedProcess[str]:
        """``argv`` as the user, with ``env`` over a minimal environment (its own HOME)."""
        home = self.base / "home"
        identity = {k: v for k, v in os.environ.items() if k.startswith(("GIT_AUTHOR_", "GIT_COMMITTER_"))}
        full = {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8", "PYTHONPATH": _PYTHONPATH,
                "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"), "GIT_CONFIG_NOSYSTEM": "1", **identity, **env}
        root = os.geteuid() == 0
        return subprocess.run(argv, cwd=cwd, env=full, capture_output=True, text=True, timeout=timeout,
                              check=False, user=self.uid if root else None, group=self.gid if root else None,
                              extra_groups=[] if root else None)

    def wavegit(self, cwd: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        return self.run([_PYTHON, "-m", "wavegit", *args], cwd, env)


def _usable_by_all(path: Path) -> bool:
    """Whether anyone may run ``path`` (every folder above it searchable, the file executable by others)."""
    resolved = path.resolve()
    return all(p.stat().st_mode & stat.S_IXOTH for p in (resolved, *resolved.parents))


# This interpreter when others may run it, else the system's (e.g. pyenv under root's private HOME), with
# this one's packages: the same minor version reads them.
_PYTHON = (sys.executable if _usable_by_all(Path(sys.executable))
           else shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin") or sys.executable)
_PYTHONPATH = os.pathsep.join([str(REPO_ROOT), sysconfig.get_paths()["purelib"]])


def ordinary_user() -> User:
    """The ordinary user, with a fresh folder of its own (its HOME holds the tests' git config)."""
    base = Path(tempfile.mkdtemp(prefix="wavegit-user-"))
    (base / "home").mkdir()
    config = Path(os.environ.get("GIT_CONFIG_GLOBAL", os.devnull))
    (base / "home" / ".gitconfig").write_text(config.read_text() if config.is_file() else "")
    if os.geteuid() != 0:
        return User(pwd.getpwuid(os.geteuid()).pw_name, os.geteuid(), os.getegid(), base)
    made = subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER],
                          capture_output=True, text=True, check=False)
    if made.returncode not in (0, 9):  # 9: it exists already (another test, another run)
        raise RuntimeError(f"useradd {USER}: {made.stderr.strip()}")
    entry = pwd.getpwnam(USER)
    user = User(USER, entry.pw_uid, entry.pw_gid, base)
    user.own(base)
    return user
