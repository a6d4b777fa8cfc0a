"""What one worker or test may use of the machine, and what of the kernel it may not reach.

- **Processes and memory**: a cgroup of its own per process wavegit starts (``pids.max``, and
  ``memory.max`` or v1's ``memory.limit_in_bytes``), made under wavegit's own cgroup when wavegit may write
  there (root, or a delegated cgroup); the child joins it before it runs anything (:meth:`Cgroup.entry`),
  so all it starts is counted, and the count is its own: a fork bomb fails its own forks, not a sibling's
  or wavegit's. Without a writable cgroup, memory is ``RLIMIT_DATA`` per process, and processes are
  ``RLIMIT_NPROC`` set inside the sandbox's user namespace (by ``prlimit``, as the sandbox's first
  command), where the kernel counts only that namespace's processes; root ignores ``RLIMIT_NPROC``, so
  wavegit run by root without a writable cgroup bounds processes only by the PID namespace dying with the
  attempt.
- **The kernel keyring**: a seccomp filter makes ``add_key``, ``request_key`` and ``keyctl`` fail with
  EPERM, in every sandbox mode (bwrap installs it through ``--seccomp``; unsandboxed, a thread of a wave's
  item pool carries it, with ``no_new_privs``, and every process it starts inherits it; elsewhere the
  child installs it itself), so a secret the user keeps there (``keyctl add user ... @u``) is out of reach.
- **Disk**: the attempt trees share one disk with no quota of their own. A failed attempt is counted only
  when the disk had room, or when its own tree holds clearly the most of what the trees hold
  (:func:`excused_by_full_disk`): a worker that fills the disk and holds it pays, its siblings do not.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import re
import resource
import shutil
import signal
import struct
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

_CGROUP_ROOT = Path("/sys/fs/cgroup")
_CONTROLLERS = ("pids", "memory")
_V1_MEMORY_FILE = "memory.limit_in_bytes"
_REMOVE_WAIT_S = 2.0
_JOIN_SCRIPT = ('n=$1; shift; while [ "$n" -gt 0 ]; do echo 0 > "$1"; shift; n=$((n - 1)); done 2>/dev/null; '
                'exec "$@"')
"""``sh -c _JOIN_SCRIPT sh N FILE... COMMAND...``: a constant script; files and command are arguments."""

# Classic BPF for seccomp (linux/filter.h, linux/seccomp.h): the syscall number is at offset 0 of
# seccomp_data, the audit architecture at offset 4.
_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_X32_BIT = 0x40000000
_KEY_SYSCALLS = {  # audit arch -> (add_key, request_key, keyctl)
    0xC000003E: (248, 249, 250),  # x86_64
    0x40000003: (286, 287, 288),  # i386, also reachable from x86_64
    0xC00000B7: (217, 218, 219),  # aarch64
    0x40000028: (309, 310, 311),  # arm
}
_NATIVE_ARCHES = {"x86_64": (0xC000003E, 0x40000003), "aarch64": (0xC00000B7, 0x40000028)}
_PR_SET_PDEATHSIG, _PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 1, 38, 22, 2


@dataclass(frozen=True)
class Limits:
    """The ceilings of one process tree; 0 = none."""

    pids: int = 0
    memory_bytes: int = 0


NO_LIMITS = Limits()


def keyring_filter() -> bytes:
    """The seccomp program denying the keyring syscalls (EPERM) on this machine's architectures, allowing
    everything else; on an architecture it does not know, it allows everything."""
    program: list[tuple[int, int, int, int]] = []
    for arch in _NATIVE_ARCHES.get(os.uname().machine, ()):
        numbers = _KEY_SYSCALLS[arch]
        block = [(_LD_W_ABS, 0, 0, 0)]
        # x32 syscalls (the x32 bit set on x86_64) are denied outright: nothing here needs them.
        block += [(_JEQ_K, -1, 0, n) for n in numbers]
        if arch == 0xC000003E:
            block.append((_JGE_K, -1, 0, _X32_BIT))
        block.append((_RET_K, 0, 0, _RET_ALLOW))
        program += [(_LD_W_ABS, 0, 0, 4), (_JEQ_K, 0, len(block), arch), *block]
    program.append((_RET_K, 0, 0, _RET_ALLOW))
    deny = len(program)
    program.append((_RET_K, 0, 0, _RET_ERRNO | errno.EPERM))
    # A jump of -1 means "to the denying return": relative to the next instruction.
    return b"".join(struct.pack("=HBBI", code, deny - pc - 1 if jt == -1 else jt, jf, k)
                    for pc, (code, jt, jf, k) in enumerate(program))


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class _SeccompHook:
    """A ``preexec_fn`` part installing :func:`keyring_filter` in the child (built here, in the parent)."""

    def __init__(self, prctl: Callable[..., int]) -> None:
        code = keyring_filter()
        self._prctl = prctl
        self._buffer = ctypes.create_string_buffer(code, len(code))
        self._fprog = _SockFprog(len(code) // 8, ctypes.addressof(self._buffer))
        # A pointer, not a Python int (ctypes would pass that as a 32-bit int).
        self._fprog_at = ctypes.c_void_p(ctypes.addressof(self._fprog))

    def install(self) -> bool:
        """Install the filter on the calling thread (and so on every process it starts); whether it holds."""
        prctl = self._prctl
        return prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 and \
            prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, self._fprog_at, 0, 0) == 0

    def __call__(self) -> None:
        # A filter that cannot be installed kills the child before it runs anything, rather than unfiltered.
        if not self.install():
            os.kill(os.getpid(), signal.SIGKILL)


def _own_cgroups() -> dict[str, Path]:
    """The cgroup directory of this process for each controller we limit with, where one is mounted."""
    found: dict[str, Path] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers:
            for name in set(controllers.split(",")) & set(_CONTROLLERS):
                found[name] = _CGROUP_ROOT / name / path.lstrip("/")
        elif (_CGROUP_ROOT / "cgroup.controllers").is_file():
            own = _CGROUP_ROOT / path.lstrip("/")
            with contextlib.suppress(OSError):
                for name in set((own / "cgroup.subtree_control").read_text().split()) & set(_CONTROLLERS):
                    found.setdefault(name, own)
    return {name: path for name, path in found.items() if path.is_dir()}


class Cgroup:
    """The cgroups (one per hierarchy) one process tree is limited by."""

    def __init__(self, dirs: list[Path]) -> None:
        self.dirs = dirs

    @classmethod
    def make(cls, name: str, limits: Limits) -> Cgroup | None:
        """A new cgroup holding ``limits``, or None when no limit is asked or wavegit may not make one."""
        wanted = {"pids": limits.pids, "memory": limits.memory_bytes}
        own = {c: d for c, d in _own_cgroups().items() if wanted[c] > 0}
        if not own:
            return None
        made: list[Path] = []
        try:
            for directory in dict.fromkeys(own.values()):
                made.append(directory / name)
                made[-1].mkdir()
            for controller, directory in own.items():
                _write_limit(directory / name, controller, wanted[controller])
            return cls(made)
        except OSError:
            for directory in made:
                with contextlib.suppress(OSError):
                    directory.rmdir()
            return None

    def entry(self) -> tuple[str, ...]:
        """What the process starts through to join the cgroups before it runs anything: a POSIX shell
        writes ``0`` to each ``cgroup.procs``, then becomes the process (``exec``). A move the kernel refuses
        leaves it where it was rather than unstarted."""
        return ("/bin/sh", "-c", _JOIN_SCRIPT, "sh", str(len(self.dirs)),
                *(str(directory / "cgroup.procs") for directory in self.dirs))

    def remove(self) -> None:
        """Once the process tree has ended: kill what is left in it, then remove the cgroups."""
        deadline = time.monotonic() + _REMOVE_WAIT_S
        for directory in self.dirs:
            pause = 0.001  # a PID namespace's last processes go within milliseconds of its first
            while True:
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        break
                    _kill_members(directory)
                    time.sleep(pause)
                    pause = min(pause * 2, 0.01)


def _write_limit(directory: Path, controller: str, value: int) -> None:
    if controller == "pids":
        (directory / "pids.max").write_text(str(value))
    elif (directory / "memory.max").exists():
        (directory / "memory.max").write_text(str(value))
    else:
        (directory / _V1_MEMORY_FILE).write_text(str(value))


def _kill_members(directory: Path) -> None:
    with contextlib.suppress(OSError):
        for pid in (directory / "cgroup.procs").read_text().split():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(pid), signal.SIGKILL)


@dataclass
class Launch:
    """How a process is started within its limits: the hooks its child runs before exec, the descriptor
    bwrap reads the seccomp program from, and what to undo once it ended."""

    hooks: list[Callable[[], None]]
    seccomp_fd: int | None = None
    cgroup: Cgroup | None = None
    prefix: tuple[str, ...] = ()
    """What runs the command inside the sandbox (``prlimit --nproc``), or nothing."""
    wrapper: tuple[str, ...] = ()
    """What the process (bwrap, or unsandboxed the command itself) is started through: ``setpriv
    --pdeathsig``, ``prlimit --data``; the hooks' work done by programs, so that none has to run."""

    def preexec(self) -> Callable[[], None] | None:
        """The child's hooks as one ``preexec_fn``; None when there is none, so that Python starts the child
        with vfork rather than fork: a fork copies wavegit's page tables and holds the GIL meanwhile (7 ms a
        launch beside 0.3, eight launches at once spread over 46-83 ms instead of 17)."""
        hooks = self.hooks
        if not hooks:
            return None

        def run_all() -> None:
            for hook in hooks:
                hook()

        return run_all


def _tool(name: str) -> str | None:
    """util-linux's ``name`` (``setpriv``, ``prlimit``) in the system's directories, or None."""
    return shutil.which(name, path=os.defpath)


def _nproc_prefix(pids: int) -> tuple[str, ...]:
    """``prlimit --nproc`` for a sandbox's first command, where it binds (not root) and is installed."""
    found = _tool("prlimit")
    if not pids or found is None or os.geteuid() == 0:
        return ()
    return (found, f"--nproc={pids}:{pids}", "--")


_THREAD = threading.local()


def carry_keyring_filter() -> None:
    """Let the calling thread carry the keyring filter itself (a thread of a wave's item pool): its
    unsandboxed processes then inherit the filter when they start, with nothing to run in the child."""
    _THREAD.may_filter = True


def _filtered_thread(prctl: Callable[..., int]) -> bool:
    """Whether the calling thread carries :func:`keyring_filter` (installed on its first call here, for the
    thread alone: seccomp filters and ``no_new_privs`` are per thread, and every child inherits them)."""
    if not getattr(_THREAD, "may_filter", False):
        return False
    if not getattr(_THREAD, "filtered", False):
        _THREAD.filtered = _SeccompHook(prctl).install()
    return bool(_THREAD.filtered)


def die_with_launcher(launch: Launch, prctl: Callable[..., int] | None, *, bwrap: bool = False) -> None:
    """The process gets ``PR_SET_PDEATHSIG`` (SIGKILL): it dies when the thread that launched it does, a
    ``kill -9`` of wavegit included. ``bwrap``: bwrap's own ``--die-with-parent`` does it (for bwrap and the
    sandbox). Else through ``setpriv --pdeathsig`` when no hook has to run in the child anyway (see
    :meth:`Launch.preexec`), or as one more hook."""
    if bwrap:
        return
    setpriv = _tool("setpriv")
    if not launch.hooks and setpriv is not None:
        launch.wrapper = (setpriv, "--pdeathsig", "KILL", "--", *launch.wrapper)
    elif prctl is not None:
        def hook() -> None:
            prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)

        launch.hooks.insert(0, hook)


@contextlib.contextmanager
def launching(name: str, limits: Limits, *, bwrap: bool, userns: bool,
              prctl: Callable[..., int] | None) -> Iterator[Launch]:
    """The :class:`Launch` of one process named ``name`` (unique), cleaned up on leaving: the cgroup
    emptied and removed, the seccomp pipe closed. ``bwrap``: the filter goes to bwrap, not to its parent;
    ``userns``: the sandbox has a user namespace of its own."""
    launch = Launch([])
    launch.cgroup = Cgroup.make(name, limits)
    if launch.cgroup is not None:
        launch.wrapper = launch.cgroup.entry()
    else:
        launch.prefix = _nproc_prefix(limits.pids) if bwrap and userns else ()
        if limits.memory_bytes > 0:
            memory = limits.memory_bytes
            prlimit = _tool("prlimit")
            if prlimit is not None:
                launch.wrapper = (prlimit, f"--data={memory}:{memory}", "--")
            else:
                launch.hooks.append(lambda: resource.setrlimit(resource.RLIMIT_DATA, (memory, memory)))
    write_end: int | None = None
    try:
        if bwrap:
            launch.seccomp_fd, write_end = os.pipe()
            os.write(write_end, keyring_filter())
            os.close(write_end)
        elif prctl is not None and not _filtered_thread(prctl):
            launch.hooks.append(_SeccompHook(prctl))
        yield launch
    finally:
        if launch.seccomp_fd is not None:
            os.close(launch.seccomp_fd)
        if launch.cgroup is not None:
            launch.cgroup.remove()


FULL_BYTES = 4 << 20
"""Less room than this on the trees' disk is a full disk: a write that needs more fails."""


def excused_by_full_disk(tree: Path, trees: Path, private: Path, privates: Path,
                         test: Sequence[Path] = ()) -> bool:
    """Whether the disk of ``tree`` is full and not by this attempt's doing: its tree, its private
    directory ``private`` and its ``test``'s checkout and private directory (the test runs the worker's code)
    do not hold at least ``FULL_BYTES`` more than every other attempt's, a tree under
    ``trees`` (``<trees>/<wave>/<tree>``, every wave's) or a private directory under ``privates``
    (``<privates>/<wave>/<stem>``: HOME and TMPDIR are sized tmpfs, but the folder they lie in, the cost
    file's, is on this disk). A sibling's bigger share, or space held outside every attempt, excuses its
    failure."""
    if not disk_full(tree):
        return False
    # Only attempts' (`<item>-<n>`): a wave's object store, skeleton and test checkouts are wavegit's,
    # and the store, bigger than most trees, would excuse the very worker that filled the disk. A wave's
    # folder may move to the trash meanwhile (a rolling wave ending): it is skipped, not an error.
    attempts = [other for root in (trees, privates) for wave in _folders(root) for other in _folders(wave)
                if other not in (tree, private) and _ATTEMPT_TREE.fullmatch(other.name)]
    own = sum(_bytes_under(path) for path in (tree, private, *test))
    # The test's folders are being removed meanwhile: full still, what is left of them is less than `own`.
    if not disk_full(tree):
        return False
    # Not its item's earlier attempts, of this wave or another still running: their folders wait for their
    # wave's cleanup, and a retry that filled the rest of the disk was excused by what its first one left.
    others = (other for other in attempts if not _same_item(other, tree))
    return own < max((_bytes_under(other) for other in others), default=0) + FULL_BYTES


_ATTEMPT_TREE = re.compile(r".+-[0-9]+")


def _same_item(other: Path, tree: Path) -> bool:
    """Whether ``other`` (an attempt's tree or private directory, ``<item>-<n>``) is of ``tree``'s item."""
    return other.name.rpartition("-")[0] == tree.name.rpartition("-")[0]


def disk_full(path: Path) -> bool:
    """Whether the disk of ``path`` has less than ``FULL_BYTES`` of room."""
    try:
        disk = os.statvfs(path)
    except OSError:
        return False
    return disk.f_bavail * disk.f_frsize < FULL_BYTES


def _folders(path: Path) -> list[Path]:
    try:
        return [entry for entry in path.iterdir() if entry.is_dir() and not entry.is_symlink()]
    except OSError:
        return []


def _bytes_under(folder: Path) -> int:
    """The disk space the entries under ``folder`` take (links not followed; unreadable entries skipped)."""
    total = 0
    for parent, folders, files in os.walk(folder):
        # Folders, and links to folders, which os.walk lists among them: their pages count too (a tree of
        # links to a folder, each a page of the disk, filled it with no file in it).
        for name in (*folders, *files):
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(parent, name)).st_blocks * 512
    return total
