"""The sandbox a worker (and its item's test) runs in: bubblewrap on Linux, or nothing.

Under ``bwrap`` the whole filesystem is read-only, the attempt's tree and a private HOME and TMPDIR are
writable, and the user's checkout, the repository's git directory (wavegit's state, other attempts' trees),
wavegit's own HOME, the runner's temporary directory and the token file's directory are replaced by empty
read-only directories. The
process sees only its own PID namespace (``/proc`` of outside processes, wavegit's included, is gone) and
the namespace dies with its first process, so a ``setsid`` daemon cannot outlive the attempt; it holds no
capabilities, even when wavegit runs as root (root's would unmount what hides the checkout);
``--die-with-parent`` ties that first process to bwrap, which wavegit ties to itself (``PR_SET_PDEATHSIG``).

No ``--new-session``: the worker already starts in a session of its own, with pipes for stdin and output,
so it has no controlling terminal to inject keystrokes into, and staying in bwrap's process group lets
wavegit's SIGTERM-then-SIGKILL of the group reach it with the usual grace period.

Mode ``auto`` uses bwrap when a probe run of it works (probed once per process), else runs unsandboxed with
one warning in the report; in GitHub Actions ``auto`` without a working bwrap is an error (exit 2), as is an
explicit ``bwrap`` that cannot run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from wavegit.core.credentials import APP_KEY_FILE_VAR, TOKEN_FILE_VAR
from wavegit.core.errors import UsageError
from wavegit.core.repo import Repo
from wavegit.model.config import SandboxConfig

BWRAP = "bwrap"
AGENT_SOCKETS = (Path("/run/user"), Path("/run/docker.sock"), Path("/var/run/docker.sock"))
"""Sockets, or directories of them, where agents acting as the user listen (session bus, gpg, docker)."""
AGENT_SOCKET_VARS = ("SSH_AUTH_SOCK", "XDG_RUNTIME_DIR")
"""Variables of wavegit's environment naming such a socket or directory."""
_PROBE_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Decision:
    """How this wave's workers run: ``bwrap`` (its path) or unsandboxed, and the warning to report."""

    bwrap: str | None
    warning: str | None = None

    @property
    def mode(self) -> str:
        return "bwrap" if self.bwrap is not None else "none"


@dataclass(frozen=True)
class Layout:
    """What one sandboxed process may see and write."""

    tree: Path
    """The attempt's tree: writable, the working directory."""
    private: Path
    """The attempt's own directory outside the tree (HOME, TMPDIR, the cost file): writable."""
    hidden: tuple[Path, ...]
    """Replaced by empty directories (the checkout, the git directory, the runner's temp); a hidden file
    (a socket) by an empty one, so nothing can connect to it."""
    readonly: tuple[Path, ...] = ()
    """Shown read-only even inside a hidden directory (the prompt file, the objects git reads)."""
    writable: tuple[Path, ...] = ()
    """Extra writable paths (``sandbox.rw_paths``)."""
    network: bool = True

    def shows(self, path: Path) -> bool:
        """Whether ``path`` (absolute) is visible inside the sandbox."""
        if not any(path.is_relative_to(hidden) for hidden in self.hidden):
            return True
        shown = (self.tree, self.private, *self.readonly, *self.writable)
        return any(path.is_relative_to(visible) for visible in shown)


def hidden_launch(layout: Layout, program: Path) -> str | None:
    """Why ``program`` (absolute) cannot start in ``layout``, naming the ``sandbox.ro_paths`` fix, or None.

    Checks what exec really opens: the program, its symlinks' target (a virtualenv's ``python`` points into
    pyenv or uv under the hidden HOME) and a script's ``#!`` interpreter, each resolved the same way.
    """
    for path in _launch_chain(program):
        if not layout.shows(path):
            via = "" if path == program else f" (via {program})"
            return f"{path}{via} is hidden by the sandbox (add {_toolchain_dir(path)} to sandbox.ro_paths)"
    return None


def _launch_chain(program: Path) -> list[Path]:
    chain = [program, program.resolve()]
    interpreter = _shebang(chain[-1])
    if interpreter is not None:
        chain += [interpreter, interpreter.resolve()]
    return chain


def _shebang(script: Path) -> Path | None:
    """The absolute interpreter of a ``#!`` script, or None."""
    try:
        with script.open("rb") as fh:
            first = fh.readline(256)
    except OSError:
        return None
    words = first[2:].split() if first.startswith(b"#!") else []
    return Path(os.fsdecode(words[0])) if words and words[0].startswith(b"/") else None


def _toolchain_dir(path: Path) -> Path:
    """The install a hidden program belongs to: ``.../bin/python3`` -> ``...``."""
    return path.parent.parent if path.parent.name == "bin" else path.parent


def probe(bwrap: str) -> str | None:
    """None when ``bwrap`` can build a sandbox here, else why not (one line); a few milliseconds."""
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid",
            "--die-with-parent", "--tmpfs", "/tmp", "true"]
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, timeout=_PROBE_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{bwrap}: {exc}"
    if done.returncode != 0:
        reason = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
        return f"{bwrap} exited {done.returncode}" + (f": {reason[-1]}" if reason else "")
    return None


def decide(settings: SandboxConfig, environ: Mapping[str, str]) -> Decision:
    """The sandbox for this wave, or UsageError (exit 2) when the one asked for cannot be had."""
    if settings.mode == "none":
        return Decision(None)
    found = shutil.which(BWRAP, path=environ.get("PATH"))
    problem = probe(found) if found is not None else f"{BWRAP} not found on PATH"
    if problem is None:
        return Decision(found)
    if settings.mode == "bwrap":
        raise UsageError(f"sandbox: bwrap was asked for but cannot run ({problem})")
    if environ.get("GITHUB_ACTIONS") == "true":
        raise UsageError(f"sandbox: bwrap cannot run on this runner ({problem}); install bubblewrap or set "
                         "`sandbox: none` to run workers unsandboxed")
    return Decision(None, f"sandbox: bwrap cannot run here ({problem}); workers ran unsandboxed")


def bwrap_argv(bwrap: str, layout: Layout, argv: Sequence[str]) -> list[str]:
    """``argv`` wrapped in bwrap with ``layout``; later mounts win, so hidden come before what shows."""
    # No capabilities: run by root, bwrap would leave them all, and CAP_SYS_ADMIN unmounts what hides the
    # checkout and remounts / writable.
    out = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid",
           "--die-with-parent", "--cap-drop", "ALL"]
    if not layout.network:
        out.append("--unshare-net")
    # Parents before children: a tmpfs over a parent would hide a child's tmpfs made before it.
    hidden = [p for p in sorted(set(layout.hidden), key=lambda p: len(p.parts))
              if p.is_dir() and p != Path("/")]
    for path in hidden:
        out += ["--tmpfs", str(path)]
    # A read-only mount does not stop connect(): a socket is hidden by a file over it.
    for path in sorted(set(layout.hidden)):
        if path.exists() and not path.is_dir() and not any(path.is_relative_to(p) for p in hidden):
            out += ["--ro-bind", os.devnull, str(path)]
    # Only what a hidden directory covers: the rest is already read-only, and a bind of a device such as the
    # wave test's prompt file /dev/null can lose its device access (EACCES on open).
    for path in layout.readonly:
        if path.exists() and any(path.is_relative_to(hidden) for hidden in layout.hidden):
            out += ["--ro-bind", str(path), str(path)]
    for path in (layout.private, *layout.writable, layout.tree):
        if path.exists():
            out += ["--bind", str(path), str(path)]
    # Read-only once the mount points inside them exist; the binds on those keep their own flags.
    for path in hidden:
        out += ["--remount-ro", str(path)]
    out += ["--chdir", str(layout.tree), "--", *argv]
    return out


def private_dirs(private: Path) -> tuple[Path, Path]:
    """(HOME, TMPDIR) inside an attempt's private directory, created empty."""
    home, tmp = private / "home", private / "tmp"
    for path in (home, tmp):
        path.mkdir(parents=True, exist_ok=True)
        os.chmod(path, 0o700)
    return home, tmp


SECRET_FILE_VARS = (TOKEN_FILE_VAR, APP_KEY_FILE_VAR)
"""Files of secrets (the token, a GitHub App's key) whose folders no attempt sees."""


def attempt_layout(repo: Repo, settings: SandboxConfig, tree: Path, private: Path, shown: tuple[Path, ...],
                   environ: Mapping[str, str]) -> Layout:
    """One attempt's view: ``tree`` and ``private`` writable, ``shown`` files (the prompt) readable.

    Hidden: the checkout, the repository's git directory (wavegit's state, logs, other attempts), the user's
    HOME (keys, logins, cloud credentials), the runner's temporary directory (step scripts, the token file),
    and the well-known agent sockets (ssh-agent, the session bus and gpg-agent, docker), through which a
    worker could act as the user outside the sandbox.
    Git's object store stays readable, so git in the tree can read the objects it borrows from the repository.
    """
    hidden = [repo.root, repo.git_dir, repo.common_dir, *AGENT_SOCKETS]
    named = ("HOME", "RUNNER_TEMP", *SECRET_FILE_VARS, *AGENT_SOCKET_VARS)
    hidden += [Path(environ[name]).parent if name in SECRET_FILE_VARS else Path(environ[name])
               for name in named if environ.get(name)]
    return Layout(tree=tree, private=private, hidden=tuple(hidden),
                  readonly=(*shown, repo.common_dir / "objects", *_paths(settings.ro_paths, repo.root)),
                  writable=_paths(settings.rw_paths, repo.root), network=settings.network)


def _paths(configured: Sequence[str], root: Path) -> tuple[Path, ...]:
    """Configured paths, ``~`` expanded, relative ones from the repository root."""
    return tuple(root / Path(p).expanduser() for p in configured)
