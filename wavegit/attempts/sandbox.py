"""The sandbox a worker (and its item's test) runs in: bubblewrap on Linux, or nothing.

Under ``bwrap`` the whole filesystem is read-only, the attempt's tree and a private HOME and TMPDIR are
writable, and the user's checkout, the repository's git directory (wavegit's state), the folder of the
attempt trees (other attempts), wavegit's own HOME, the runner's temporary directory and the token file's
directory are replaced by empty read-only directories. The process sees only its own PID namespace
(``/proc`` of outside processes, wavegit's included, is gone) and
the namespace dies with its first process, so a ``setsid`` daemon cannot outlive the attempt; it holds no
capabilities, even when wavegit runs as root (root's would unmount what hides the checkout);
``--die-with-parent`` kills bwrap and that first process when the thread of wavegit that launched bwrap
dies (``kill -9`` of wavegit included).
It has a user namespace of its own (no further one inside it), its own System V IPC, host name and cgroup
view, HOME and TMPDIR as tmpfs of ``sandbox.tmp_bytes``, and, for an item's or the wave's test (or with
``sandbox.network: false``), a network namespace with nothing but its own loopback. Its cgroup, rlimits and
keyring filter are :mod:`wavegit.attempts.limits`'.

No ``--new-session``: the worker already starts in a session of its own, with pipes for stdin and output,
so it has no controlling terminal to inject keystrokes into, and staying in bwrap's process group lets
wavegit's SIGTERM-then-SIGKILL of the group reach it with the usual grace period.

Mode ``auto`` uses bwrap when a probe run of it works (probed once per process), else runs unsandboxed with
one warning in the report; in GitHub Actions ``auto`` without a working bwrap is an error (exit 2), as is an
explicit ``bwrap`` that cannot run."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from wavegit.core import git
from wavegit.core.credentials import APP_KEY_FILE_VAR, TOKEN_FILE_VAR
from wavegit.core.errors import UsageError
from wavegit.core.repo import Repo
from wavegit.core.soon import soon
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
    hardened: bool = True
    """Whether this bwrap takes the user, IPC, UTS and cgroup namespaces and sized tmpfs (bubblewrap 0.8+);
    an older one runs without them, and the wave's report says so."""

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
    """False: a network namespace of its own, with nothing but its own loopback."""
    tmp_bytes: int = 0
    """The size of HOME's and TMPDIR's own tmpfs (0: no tmpfs, the private directory's disk)."""
    hardened: bool = True
    """See :attr:`Decision.hardened`."""
    programs_only: tuple[Path, ...] = ()
    """Hidden directories where a launch is shown only the programs it passes through, never their folders
    (but the install folders of a ``PREFIX/bin``): all but HOME (a checkout's program lies beside its
    untracked files, an ``.env``)."""

    def shows(self, path: Path) -> bool:
        """Whether ``path`` (absolute) is visible inside the sandbox."""
        if not any(_within(path, hidden) for hidden in self.hidden):
            return True
        shown = (self.tree, self.private, *self.readonly, *self.writable)
        return any(_within(path, visible) for visible in shown)


def _within(path: Path, folder: Path) -> bool:
    """``path.is_relative_to(folder)``, by the parts both paths keep: asked a hundred times a launch, where
    pathlib parses both paths each time (and raises inside for every path that is not)."""
    parts = folder.parts
    return path.parts[:len(parts)] == parts and path.is_absolute() == folder.is_absolute()


def with_toolchain(layout: Layout, program: Path, search_path: str | None, *,
                   bins_only: bool = False) -> Layout:
    """``layout`` also showing, read-only, the installs that launching ``program`` (absolute) needs and it
    hides: a toolchain under the hidden HOME (pyenv, uv, nvm, an agent CLI installed there) then starts with
    the default config, and nothing else of HOME shows.

    What exec really opens is the launch chain: the program, its symlinks' target (a virtualenv's ``python``
    points into pyenv or uv) and a script's ``#!`` interpreter (``/usr/bin/env NAME``: NAME on
    ``search_path``), each resolved the same way. Each hidden step shows its install prefix:
    ``PREFIX/bin/NAME`` -> ``PREFIX`` (a Python's standard library, a virtualenv's ``pyvenv.cfg``, a node's
    modules), a shim in ``ROOT/shims`` -> ``ROOT`` (pyenv's shims run ``ROOT/libexec/pyenv``, which picks the
    version); a prefix shared by unrelated programs (``~/.local``: its ``share`` holds keyrings), holding a
    hidden directory (the checkout, HOME itself) or a program of :attr:`Layout.programs_only` (the checkout's
    ``scripts/tool.sh``) shows only that one file; a prefix that is a hidden directory's own folder
    (``~/.cargo``) or lies in one of :attr:`Layout.programs_only` (the checkout's untracked ``.venv``) shows
    only its install folders (:data:`_INSTALL_PARTS`).

    ``bins_only``: ``program`` is a link nothing runs here (in a ``bin`` of ``sandbox.ro_paths``): only the
    ``PREFIX/bin`` steps of its links count, each showing the install folders of ``PREFIX``, and no ``#!``; a
    link to a program beside tokens (``~/.aws/helper``) showed that folder to every attempt."""
    shown: list[Path] = []
    chain = _hops(program) if bins_only else _launch_chain(program, search_path, layout.tree)
    for path in chain:
        if layout.shows(path) or any(_within(path, p) for p in shown):
            continue
        if bins_only and path.parent.name != "bin":
            continue
        prefix = _install_prefix(path)
        installed = path.parent.name == "bin"
        confined = any(_within(path, folder) for folder in layout.programs_only)
        shared = prefix.name in _SHARED_PREFIXES or any(_within(h, prefix) for h in layout.hidden)
        if shared or (confined and not installed):
            shown.append(path)
        elif installed and (prefix.parent in layout.hidden or confined or bins_only):
            shown += [prefix / part for part in _INSTALL_PARTS if (prefix / part).exists()]
        else:
            shown.append(prefix)
    return replace(layout, readonly=(*layout.readonly, *shown)) if shown else layout


def with_command(layout: Layout, program: Path, args: Sequence[str], search_path: str | None,
                 cwd: Path) -> Layout:
    """:func:`with_toolchain` of ``program`` (absolute) and, when it is ``env``, of the program env runs:
    commands never go through a shell, so ``env PYTHONPATH=src /abs/venv/bin/python -m pytest`` is how a
    test sets a variable, and that venv's python may link into pyenv under the hidden HOME (exit 127)."""
    shown = with_toolchain(layout, program, search_path)
    if program.name != "env":
        return shown
    # ``-S WORDS`` splits its argument as a ``#!`` line's words are split; _env_program reads the rest.
    words = [part for index, word in enumerate(args)
             for part in (word.split() if index and args[index - 1] in ("-S", "--split-string") else [word])]
    runs = _env_program(words)
    if runs is None:
        return shown
    found = shutil.which(cwd / runs if "/" in runs else runs, path=search_path)
    return with_toolchain(shown, Path(found).absolute(), search_path) if found is not None else shown


_SHARED_PREFIXES = frozenset({".local", ".config", ".cache"})
_INSTALL_PARTS = ("bin", "lib", "lib64", "libexec", "share", "include", "etc", "tools", "pyvenv.cfg")
"""What a program installed in a folder of HOME's own (``~/.cargo/bin/x``, ``~/miniconda3/bin/python``,
``~/venv/bin/python``) may need of it. The rest of such a folder is the tool's own settings, often with its
tokens: ``~/.cargo/credentials.toml``, ``~/.pulumi/credentials.json``, ``~/.fly/config.yml``."""


def _install_prefix(path: Path) -> Path:
    if path.parent.name == "shims":
        root = path.parent.parent
        # A plugin's shims (pyenv-virtualenv) run the tool they extend: ROOT/plugins/NAME/shims.
        return root.parent.parent if root.parent.name == "plugins" else root
    return path.parent.parent if path.parent.name == "bin" else path.parent


def _launch_chain(program: Path, search_path: str | None, cwd: Path) -> list[Path]:
    chain = _hops(program)
    interpreter = _shebang(chain[-1], search_path, cwd)
    return chain + _hops(interpreter) if interpreter is not None else chain


_MAX_HOPS = 40


def _hops(path: Path) -> list[Path]:
    """``path``, each symlink it leads through (``python`` -> ``python3`` -> ``~/.pyenv/.../python3.11``: each
    in an install of its own, maybe) and the file it resolves to, each in the folder it really lies in."""
    hops = [_real(path)]
    while hops[-1].is_symlink() and len(hops) < _MAX_HOPS:
        hops.append(_real(hops[-1].parent / os.readlink(hops[-1])))
    return [*hops, path.resolve()]


def _real(path: Path) -> Path:
    """``path``'s name in its folder as the kernel finds that folder: each link followed before the ``..``
    after it. Read as text, ``L/..`` cancels out, so a link a worker commits (``L/../../..`` past the root,
    then ``home/u/.ssh/n``) named a folder of HOME the kernel never reaches, and the sandbox showed it."""
    if path.name in ("", ".."):
        return Path(os.path.realpath(path))
    return Path(os.path.realpath(path.parent)) / path.name


def _shebang(script: Path, search_path: str | None, cwd: Path) -> Path | None:
    """The absolute interpreter of a ``#!`` script (``#!/usr/bin/env [-S] NAME``: NAME found on
    ``search_path``, or from ``cwd``, where the script starts, when it holds a slash), or None (also when it
    is no program exec could run)."""
    try:
        with script.open("rb") as fh:
            first = fh.readline(256)
    except OSError:
        return None
    words = [os.fsdecode(word) for word in first[2:].split()] if first.startswith(b"#!") else []
    if not words or not words[0].startswith("/"):
        return None
    if Path(words[0]).name == "env":
        program = _env_program(words[1:])
        if program is None or search_path is None:
            return None
        # Not from wavegit's own folder (the user's checkout): a worker could name one of its programs there
        # and have its folder shown.
        found = shutil.which(cwd / program if "/" in program else program, path=search_path)
        return Path(found).absolute() if found is not None else None
    # Exec runs only a program: a `#!` naming a key (`#!HOME/.ssh/id_ed25519`) or a folder fails, and showed
    # that folder of HOME to every attempt when a link in `sandbox.ro_paths` led to the script.
    interpreter = Path(words[0])
    return interpreter if interpreter.is_file() and os.access(interpreter, os.X_OK) else None


_ENV_FLAGS = frozenset({"-S", "--split-string", "-i", "--ignore-environment", "-"})
"""What ``env`` may be given before its program, taking no word of the line: ``-S`` splits the rest."""


def _env_program(words: Sequence[str]) -> str | None:
    """The program an ``env`` line runs, or None when an option of it could take the next word as its own
    (``-u NAME``, ``-iu NAME``, ``--un NAME``: the name was taken for the program, a program of a hidden
    folder named there was shown while env ran another)."""
    for word in words:
        if word in _ENV_FLAGS or ("=" in word and not word.startswith("-")):
            continue
        return None if word.startswith("-") else word
    return None


def probe(bwrap: str, extra: Sequence[str] = ()) -> str | None:
    """None when ``bwrap`` can build a sandbox here (with ``extra`` options), else why not (one line); a few
    milliseconds."""
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid",
            "--die-with-parent", *extra, "--tmpfs", "/tmp", "true"]
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
    # The hardened sandbox first: where it runs (the usual case), one probe says all (20 ms fewer).
    if found is not None and probe(found, [*_ISOLATION, "--size", "65536", "--perms", "0700"]) is None:
        return Decision(found)
    problem = probe(found) if found is not None else f"{BWRAP} not found on PATH"
    if problem is None and found is not None:
        return Decision(found, f"sandbox: {found} lacks the user, IPC and UTS namespaces or sized tmpfs "
                        "(bubblewrap 0.8 or later has them): workers ran without them", hardened=False)
    if settings.mode == "bwrap":
        raise UsageError(f"sandbox: bwrap was asked for but cannot run ({problem})")
    if environ.get("GITHUB_ACTIONS") == "true":
        raise UsageError(f"sandbox: bwrap cannot run on this runner ({problem}); install bubblewrap or set "
                         "`sandbox: none` to run workers unsandboxed")
    return Decision(None, f"sandbox: bwrap cannot run here ({problem}); workers run unsandboxed")


def decide_soon(settings: SandboxConfig, environ: Mapping[str, str]) -> Callable[[], Decision]:
    """:func:`decide` begun in a thread of its own: its probe (a bwrap started, some 9 ms) overlaps the
    claim's reads. The function returned waits for it, then returns the decision or raises its UsageError."""
    if settings.mode == "none":
        return lambda: Decision(None)
    return soon(lambda: decide(settings, environ), "wavegit-sandbox-probe")


def others_soon(repo: Repo, settings: SandboxConfig) -> Callable[[], tuple[Path, ...]]:
    """:func:`others` (five git calls) read in a thread of their own while the claim reads: the first
    launches do not wait for them (the function returned waits, or raises what reading them raised)."""
    if settings.mode == "none":
        return tuple
    return soon(lambda: others(repo), "wavegit-sandbox-view")


def bwrap_argv(bwrap: str, layout: Layout, argv: Sequence[str], seccomp_fd: int | None = None) -> list[str]:
    """``argv`` wrapped in bwrap with ``layout``; later mounts win, so hidden come before what shows.
    ``seccomp_fd``: where bwrap reads the seccomp program it installs before ``argv`` runs."""
    # No capabilities: run by root, bwrap would leave them all, and CAP_SYS_ADMIN unmounts what hides the
    # checkout and remounts / writable.
    out = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid",
           "--die-with-parent", "--cap-drop", "ALL", *_namespaces(layout)]
    if seccomp_fd is not None:
        out += ["--seccomp", str(seccomp_fd)]
    # First: a checkout under /dev/shm is then hidden on this tmpfs, not covered by it.
    out += _sized_shm(layout)
    # Where each really lies: bwrap makes a name through a link an earlier tmpfs covers a new folder in it.
    real = {Path(os.path.realpath(p)) for p in layout.hidden}
    # Parents before children: a tmpfs over a parent would hide a child's tmpfs made before it.
    hidden = [p for p in sorted(real, key=lambda p: len(p.parts)) if p.is_dir() and p != Path("/")]
    mounted = _outermost(hidden)
    for path in mounted:
        out += ["--tmpfs", str(path)]
    # A read-only mount does not stop connect(): a socket is hidden by a file over it.
    for path in sorted(real):
        if path.exists() and not path.is_dir() and not any(_within(path, p) for p in hidden):
            out += ["--ro-bind", os.devnull, str(path)]
    # Only what a hidden directory covers: the rest is already read-only, and a bind of a device such as the
    # wave test's prompt file /dev/null can lose its device access (EACCES on open).
    for path in layout.readonly:
        if path.exists() and any(_within(path, folder) for folder in (*layout.hidden, *hidden)):
            out += ["--ro-bind", str(path), str(path)]
    for path in (layout.private, *layout.writable, layout.tree):
        if path.exists():
            out += ["--bind", str(path), str(path)]
    out += _sized_private_dirs(layout)
    # Read-only once the mount points inside them exist; the binds on those keep their own flags.
    for path in mounted:
        out += ["--remount-ro", str(path)]
    out += ["--chdir", str(layout.tree), "--", *argv]
    return out


def _outermost(hidden: Sequence[Path]) -> list[Path]:
    """The hidden directories (real paths, parents first) less each that lies within one before it, which
    its tmpfs hides too (bwrap reads the mount table for each mount: two fewer took a sandbox from 8.0 to
    6.8 ms of CPU)."""
    mounted: list[Path] = []
    for path in hidden:
        if not any(_within(path, outer) for outer in mounted):
            mounted.append(path)
    return mounted


_ISOLATION = ("--unshare-user", "--disable-userns", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try")
"""A user namespace (the kernel keyring's, and its own process count), with no further one inside it;
System V IPC (shared memory, message queues, semaphores) that dies with the sandbox; its own host name and
cgroup view."""
_PRIVATE_DIRS = ("home", "tmp")


def _namespaces(layout: Layout) -> list[str]:
    """The namespaces the process gets besides its PID namespace; without network, its own loopback only."""
    out = list(_ISOLATION) if layout.hardened else []
    return out if layout.network else [*out, "--unshare-net"]


def _sized_private_dirs(layout: Layout) -> list[str]:
    """HOME and TMPDIR as tmpfs of ``tmp_bytes`` each (/dev/shm too: :func:`_sized_shm`): filling them is
    ENOSPC in the sandbox, not on the disk that holds wavegit's state or in the machine's memory (gone with
    the sandbox; only the cost file stays in the private directory)."""
    if not layout.tmp_bytes or not layout.hardened:
        return []
    out: list[str] = []
    for name in _PRIVATE_DIRS:
        out += ["--size", str(layout.tmp_bytes), "--perms", "0700", "--tmpfs", str(layout.private / name)]
    # /dev is read-only (its devices are still written to); its sized /dev/shm was mounted first.
    out += ["--remount-ro", "/dev"]
    # What wavegit seeded into HOME before the launch (an agent CLI's settings) is shown again over the
    # tmpfs, read-only: bwrap reads a bind's source on the host, where the tmpfs does not cover it.
    seeded = sorted(path for path in (layout.private / "home").rglob("*") if path.is_file())
    for path in seeded:
        out += ["--ro-bind", str(path), str(path)]
    return out


def _sized_shm(layout: Layout) -> list[str]:
    """bwrap's own /dev is a writable tmpfs of half the machine's memory, /dev/shm with it: POSIX shared
    memory gets a sized tmpfs of its own."""
    if not layout.tmp_bytes or not layout.hardened:
        return []
    return ["--size", str(layout.tmp_bytes), "--tmpfs", "/dev/shm"]


def private_dirs(private: Path) -> tuple[Path, Path]:
    """(HOME, TMPDIR) inside an attempt's private directory, created empty."""
    home, tmp = (private / name for name in _PRIVATE_DIRS)
    for path in (home, tmp):
        path.mkdir(parents=True, exist_ok=True)
        os.chmod(path, 0o700)
    return home, tmp


def others(repo: Repo) -> tuple[Path, ...]:
    """The repository's :func:`checkouts` and :func:`local_stores`, which every sandbox hides."""
    return (*checkouts(repo), *local_stores(repo))


def checkouts(repo: Repo) -> tuple[Path, ...]:
    """Every checkout of the repository: the main work tree and each linked one (``git worktree list``),
    whichever of them wavegit runs in; each holds untracked files (an ``.env``) no commit has."""
    return tuple(found.path for found in git.worktrees(repo.root))


def local_stores(repo: Repo) -> tuple[Path, ...]:
    """The repositories on this machine the repository's objects come from or go to: each remote whose URL is
    a path (a bare repository beside it, ``file://``) and each object directory it borrows from (``git clone
    --reference``). Each holds every branch and object of its own, which no base limits."""
    found: list[Path] = []
    for url in git.remote_urls(repo.root):
        path = url.removeprefix("file://")
        if "://" in path or ":" in path.split("/", 1)[0]:
            continue  # another machine's: `https://host/x`, `host:x`
        found += [near for near in (repo.root / path, repo.root / f"{path}.git") if near.is_dir()]
    alternates = repo.common_dir / "objects" / "info" / "alternates"
    with contextlib.suppress(OSError):
        lines = alternates.read_text(encoding="utf-8", errors="surrogateescape").splitlines()
        borrowed = [Path(os.path.realpath(alternates.parent.parent / line)) for line in lines
                    if line and not line.startswith("#")]
        # The git directory an object directory belongs to: its refs name every branch.
        found += [store.parent if store.name == "objects" else store for store in borrowed]
    # As the kernel finds each (git did): read as text, ``link/..`` cancels out, and named another folder.
    return tuple(Path(os.path.realpath(path)) for path in found)


SECRET_FILE_VARS = (TOKEN_FILE_VAR, APP_KEY_FILE_VAR)
"""Files of secrets (the token, a GitHub App's key) whose folders no attempt sees."""


def attempt_layout(repo: Repo, settings: SandboxConfig, tree: Path, private: Path, shown: tuple[Path, ...],
                   environ: Mapping[str, str], others: Sequence[Path] = (),
                   objects: Path | None = None, *, isolated_network: bool = False,
                   hardened: bool = True) -> Layout:
    """One attempt's view: ``tree`` and ``private`` writable, ``shown`` files (the prompt) readable.

    Hidden: the checkout and the repository's ``others`` (:func:`checkouts`), the repository's git directory
    (wavegit's state, logs), the folder of every repository's wave trees (other attempts), the user's HOME
    (keys, logins, cloud credentials), the runner's temporary directory (step scripts, the token file), and
    the well-known agent sockets (ssh-agent, the session bus and gpg-agent, docker), through which a worker
    could act as the user outside the sandbox.
    Of git's objects only ``objects`` is readable: the wave's store, what its base reaches
    (:mod:`wavegit.attempts.objectstore`), from which the tree borrows; the repository's own store (a stash,
    unreachable blobs, other branches) is hidden with its git directory.
    ``isolated_network``: a network namespace of its own whatever ``sandbox.network`` says (a test's)."""
    # Every repository's trees, not only this one's: the cache may lie outside the hidden HOME.
    hidden = [repo.root, *others, repo.git_dir, repo.common_dir, repo.trees_dir.parent, *AGENT_SOCKETS]
    named = ("HOME", "RUNNER_TEMP", *AGENT_SOCKET_VARS)
    hidden += [Path(environ[name]) for name in named if environ.get(name)]
    # A secret file's folder and, through a link, the folder of the file it leads to, which holds it.
    hidden += [Path(path).parent for name in SECRET_FILE_VARS if environ.get(name)
               for path in (environ[name], os.path.realpath(environ[name]))]
    ro_paths = _paths(settings.ro_paths, repo.root)
    home = Path(environ["HOME"]) if environ.get("HOME") else None
    layout = Layout(tree=tree, private=private, hidden=tuple(hidden),
                    programs_only=tuple(path for path in hidden if path != home),
                    readonly=(*shown, *([objects] if objects else []), *ro_paths),
                    writable=_paths(settings.rw_paths, repo.root),
                    network=settings.network and not isolated_network, tmp_bytes=settings.tmp_bytes,
                    hardened=hardened)
    for program in _linked_programs((*ro_paths, *_shown_virtualenvs(layout, environ.get("PATH")))):
        layout = with_toolchain(layout, program, environ.get("PATH"), bins_only=True)
    return layout


def _shown_virtualenvs(layout: Layout, search_path: str | None) -> list[Path]:
    """The ``bin`` folders on ``search_path`` of the virtualenvs ``layout`` shows: where an activated venv's
    ``python3`` links into a hidden HOME, ``sh -c 'python3 ...'`` silently ran the system's Python."""
    folders = (Path(entry) for entry in (search_path or "").split(os.pathsep))
    return [folder for folder in folders if folder.is_absolute() and folder.name == "bin"
            and (folder.parent / "pyvenv.cfg").is_file() and layout.shows(folder)]


_MAX_LINKED = 256
"""Links looked at in the ``bin`` folders of ``sandbox.ro_paths`` (a virtualenv holds a few)."""


def _linked_programs(ro_paths: Sequence[Path]) -> list[Path]:
    """The links to programs in the ``bin`` folders of ``ro_paths`` (a virtualenv, a folder of them, or a
    ``bin`` itself): a virtualenv's ``python`` links into pyenv or uv under the hidden HOME, which the sandbox
    would hide; shown like a worker's own launch chain (:func:`with_toolchain`), a command that calls it
    through ``sh -c`` starts too."""
    found: list[Path] = []
    for root in ro_paths:
        folders = [root] if root.name == "bin" else [root / "bin", *sorted(root.glob("*/bin"))]
        for folder in folders:
            with contextlib.suppress(OSError):
                # Programs only: a link to a key file would show its folder.
                found += sorted(entry for entry in folder.iterdir()
                                if entry.is_symlink() and entry.is_file() and os.access(entry, os.X_OK))
            if len(found) >= _MAX_LINKED:
                return found[:_MAX_LINKED]
    return found


def _paths(configured: Sequence[str], root: Path) -> tuple[Path, ...]:
    """Configured paths, ``~`` expanded, relative ones from the repository root."""
    return tuple(root / Path(p).expanduser() for p in configured)
