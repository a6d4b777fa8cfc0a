"""Running one process the way wavegit runs workers and tests.

Each process gets its own session (so its whole process group can be signalled), its stdout and
stderr merged into a log file, its stdin fed and closed, and a watchdog for a wall-clock limit, an
idle limit (no output bytes) and cancellation. Stopping is SIGTERM to the group, then SIGKILL after
a grace period. Everything runs in the calling thread with a selector: no reader threads to leak
when a grandchild keeps the pipe open. The selector also watches a pidfd (Linux), so the leader's
exit wakes the loop at once; elsewhere the exit is polled, quickly at first once the output closed.

Every process gets ``PR_SET_PDEATHSIG`` (SIGKILL): it dies when the thread that launched it does, a
``kill -9`` of wavegit included. What the child must do before it runs (that, its memory ceiling, the keyring
filter) is done by small programs it starts through, or inherited from a launching thread that carries the
filter, so that no Python runs in the child (:meth:`wavegit.attempts.limits.Launch.preexec`).

A sandboxed process starts at its gate (:mod:`wavegit.attempts.gate`): a shell that says when bwrap has built
the sandbox (namespaces, mounts, seccomp; some 9 ms of CPU) and execs the worker or test only on the exact
go line written before the prompt. It is told to go once built, or, started ahead (:func:`park`), once its
turn comes: its sandbox is built while it waits.

A :class:`Confinement` runs it in the attempt's sandbox (:mod:`wavegit.attempts.sandbox`), or, unsandboxed,
marks it with ``WAVEGIT_ATTEMPT_TOKEN`` so that what it leaves behind, even a daemon that left its session
with ``setsid``, is found in ``/proc`` and killed when it ends.

No git runs here (git goes through ``wavegit.core.git``), and no command is ever run through a shell (the
shells, joining a cgroup and a sandbox's gate, run constant scripts of wavegit's own, the command
their arguments: ``limits.Cgroup.entry``, ``gate.SCRIPT``).
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import errno
import math
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from wavegit.attempts import gate, limits, logcap, programs, sandbox, sweep
from wavegit.attempts.processio import Watch
from wavegit.core.errors import UsageError

KillReason = Literal["wall", "idle", "cancelled"]

# How often the limits and cancellation are looked at; output and (with a pidfd) exit wake the loop at once.
_POLL_S = 0.05
# Without a pidfd: the first wait for the leader's exit after its output closed (doubled up to _POLL_S).
_EXIT_POLL_S = 0.001
# After the leader exits, how long a descendant may keep the output pipe open before the group
# is stopped (a worker that backgrounds a daemon must not hold the wave forever).
DEFAULT_PIPE_LINGER_S = 1.0
DEFAULT_KILL_GRACE_S = 5.0
# After SIGKILL, a process that escaped the group (its own setsid) may still hold the pipe; stop
# reading after this long rather than wait for it.
_ABANDON_PIPE_S = 1.0
# bwrap reports a child killed by signal N as exit 128 + N.
_SIGNAL_EXIT_BASE = 128

@dataclass(frozen=True)
class ProcessResult:
    """How one process ended. ``exit_code`` is negative (-N) when a signal N ended it."""

    exit_code: int | None
    killed: KillReason | None
    launch_error: str | None
    duration_s: float
    log_path: Path
    started_at: datetime
    finished_at: datetime
    limit_s: float | None = None
    """The limit that killed it (``timeout_s`` or ``idle_timeout_s``), for :meth:`describe`."""
    log_lost: str | None = None
    """Why some of its output is missing from the log (the disk refused a write), or None: all of it is there
    (but for what ``log_bytes`` dropped between head and tail)."""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and self.killed is None and self.launch_error is None

    def describe(self) -> str:
        """One line for humans: why the process ended."""
        if self.launch_error is not None:
            return self.launch_error
        if self.killed == "cancelled":
            return "cancelled"
        if self.killed == "idle":
            return f"killed: no output for {self.limit_s:g} s (idle_timeout_s)"
        if self.killed == "wall":
            return f"timed out after {self.limit_s:g} s (timeout_s)"
        assert self.exit_code is not None
        if self.exit_code < 0:
            return f"killed by {_signal_name(-self.exit_code)}"
        if self.exit_code == _NOT_FOUND:
            return (f"exited {_NOT_FOUND} (a shell's 'command not found': a program it runs is missing, or "
                    "hidden by the sandbox, which sandbox.ro_paths can show read-only)")
        return f"exited {self.exit_code}"

    def tail(self, n_lines: int) -> str:
        """The last ``n_lines`` lines of the log (undecodable bytes replaced)."""
        return logcap.log_tail(self.log_path, n_lines)


_NOT_FOUND = 127
"""The exit code of a POSIX shell that could not find a command (a wrapper script whose interpreter lives
under the sandbox's hidden HOME exits with it)."""


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


def _leader_exited(proc: subprocess.Popen[bytes]) -> bool:
    """Whether the leader has exited, WITHOUT reaping it where the OS allows.

    An unreaped (zombie) leader keeps its pid, and so its process-group id, from being reused, so
    signalling the group afterwards can never hit an unrelated process.
    """
    waitid = getattr(os, "waitid", None)
    if waitid is None:
        return proc.poll() is not None
    try:
        info = waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None and info.si_pid == proc.pid


@dataclass(frozen=True)
class Confinement:
    """Where a worker or test runs: in bwrap with ``layout`` (``bwrap`` its path), or unsandboxed."""

    bwrap: str | None
    layout: sandbox.Layout
    marker: str
    """The value of WAVEGIT_ATTEMPT_TOKEN in the process's environment."""
    ceilings: limits.Limits = limits.NO_LIMITS

    def argv(self, argv: Sequence[str], launch: limits.Launch | None = None) -> list[str]:
        if not self.bwrap:
            return list(argv)
        launch = launch or limits.Launch([])
        return sandbox.bwrap_argv(self.bwrap, self.layout, [*launch.prefix, *argv], launch.seccomp_fd)


def new_marker() -> str:
    return os.urandom(16).hex()


def _libc_prctl() -> Callable[..., int] | None:
    """libc's prctl, looked up in the parent: the child between fork and exec must only call it."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return prctl


_PRCTL = _libc_prctl()


@contextlib.contextmanager
def _launching(confine: Confinement | None) -> Iterator[limits.Launch]:
    """How the process starts: dying with its launcher and, confined, within its limits and keyring filter."""
    if confine is None:
        launch = limits.Launch([])
        limits.die_with_launcher(launch, _PRCTL)
        yield launch
        return
    with limits.launching(f"wavegit-{confine.marker}", confine.ceilings, bwrap=bool(confine.bwrap),
                          userns=confine.layout.hardened, prctl=_PRCTL) as launch:
        limits.die_with_launcher(launch, _PRCTL, bwrap=bool(confine.bwrap))
        yield launch


def _launchable(argv: Sequence[str], cwd: str | Path, env: Mapping[str, str] | None,
                confine: Confinement) -> Confinement:
    """``confine`` showing the toolchain ``argv`` starts with (:func:`sandbox.with_command`); raise the
    OSError exec would, before bwrap hides it behind its own exit 1."""
    path = (env if env is not None else os.environ).get("PATH", os.defpath)
    shown = sandbox.with_command(confine.layout, programs.found(argv[0], cwd, env), argv[1:], path, Path(cwd))
    return dataclasses.replace(confine, layout=shown)


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def _limit(value: float | None) -> float:
    """A limit in seconds; None or <= 0 means none."""
    return value if value is not None and value > 0 else math.inf


def run_process(
    argv: Sequence[str],
    *,
    cwd: str | Path,
    env: Mapping[str, str] | None,
    stdin_text: str | None,
    log_path: Path,
    timeout_s: float | None,
    idle_timeout_s: float | None,
    cancel: threading.Event | None = None,
    kill_grace_s: float = DEFAULT_KILL_GRACE_S,
    pipe_linger_s: float = DEFAULT_PIPE_LINGER_S,
    confine: Confinement | None = None,
    on_line: Callable[[bytes], None] | None = None,
    log_bytes: int = 0,
    parked: Parked | None = None,
    on_start: Callable[[], None] | None = None,
) -> ProcessResult:
    """Run ``argv`` to completion (or until a limit or ``cancel`` stops it) and say how it ended.

    Setting ``cancel`` stops the process as a timeout would. The log file is created (parents
    too) even when the launch fails, and then holds the launch error; it keeps at most ``log_bytes`` of the
    output (its head and tail; 0: all of it). With ``confine``, the process runs in its sandbox and limits,
    or unsandboxed its leftovers are swept when it ends. ``on_line`` is called with each
    complete line of output as it arrives (from this thread: it must be quick). A sandboxed process starts at
    its gate and is told to go once its sandbox is built; ``parked``: the same process started so ahead
    (:func:`park`, same arguments), unless the launch would now differ (then it is dropped and the process
    started afresh). ``on_start``: called once the process started (its sandbox built), or failed to.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    if parked is not None and not parked.fits(argv, cwd, env, confine):
        parked.drop()
        parked = None
    with contextlib.ExitStack() as stack:
        raw = stack.enter_context(log_path.open("wb", buffering=0))
        gated = confine is not None and bool(confine.bwrap)
        if parked is not None:
            stack.callback(parked.drop)
            started = parked.started
        else:
            started = stack.enter_context(_starting(argv, cwd, env, confine, gated=gated))
        if on_start is not None:
            on_start()
        return _run(argv, started, logcap.CappedLog(raw, log_bytes), log_path, stdin_text, timeout_s,
                    idle_timeout_s, cancel, kill_grace_s, pipe_linger_s, on_line, gated=gated)


def park(argv: Sequence[str], *, cwd: str | Path, env: Mapping[str, str] | None,
         confine: Confinement, building: bool = False) -> Parked:
    """``argv`` started in its sandbox (``confine``: bwrap) up to a gate that runs nothing of it until
    :func:`run_process` is given the result; its limits, idle timer and duration count from then. Called from
    the thread that runs it (bwrap dies with the thread that started it). ``building``: returned while bwrap
    builds the sandbox (its tree made meanwhile); :func:`run_process` waits for the gate to say it is up."""
    return Parked(argv, cwd, env, confine, building=building)


@dataclass(frozen=True)
class _Started:
    """A process started (``proc``), or why it could not be (``error``), and the confinement it got."""

    proc: subprocess.Popen[bytes] | None
    error: OSError | ValueError | None
    confine: Confinement | None
    launched_after: sweep.PidMark | None = None
    before: bytes | None = b""
    """Its output before its gate said it was up (bwrap's own messages); None while not yet awaited."""

    def up(self) -> _Started:
        """This process once its gate said it is up (or it ended): awaited here if it was not."""
        if self.before is not None or self.proc is None:
            return self
        assert self.proc.stdout is not None
        return dataclasses.replace(self, before=gate.await_up(self.proc.stdout.fileno()))


class Parked:
    """A process in its sandbox parked at its gate (see :func:`park`); :meth:`drop` kills it unrun."""

    def __init__(self, argv: Sequence[str], cwd: str | Path, env: Mapping[str, str] | None,
                 confine: Confinement, *, building: bool = False) -> None:
        assert confine.bwrap, "only a sandbox is parked"
        self._argv, self._cwd, self._env = list(argv), cwd, dict(env) if env is not None else None
        self._binds = _identities(confine.layout)
        self._stack = contextlib.ExitStack()
        self._started = self._stack.enter_context(_starting(argv, cwd, env, confine, gated=True,
                                                            awaited=not building))

    @property
    def started(self) -> _Started:
        """The process, its gate up (awaited now if it was parked still building)."""
        self._started = self._started.up()
        return self._started

    def fits(self, argv: Sequence[str], cwd: str | Path, env: Mapping[str, str] | None,
             confine: Confinement | None) -> bool:
        """Whether the launch asked for now is the one parked: same command and sandbox, the toolchain it
        shows unchanged, and the directories it binds the very ones it bound (not removed and made again)."""
        if self._started.error is not None or confine is None or not confine.bwrap:
            return False
        if (list(argv), cwd, dict(env) if env is not None else None) != (self._argv, self._cwd, self._env):
            return False
        try:
            now = _launchable(argv, cwd, env, confine)
        except OSError:
            return False
        return now == self._started.confine and _identities(confine.layout) == self._binds

    def drop(self) -> None:
        """Kill the process (unrun, if it was never told to go) and remove its cgroup; again does nothing."""
        self._stack.close()


def _identities(layout: sandbox.Layout) -> tuple[tuple[int, int] | None, ...]:
    """The device and inode of each writable directory a sandbox binds (one made again cannot take back the
    old inode while the parked sandbox lives: its bind keeps it in use; ext4 reuses a freed one at once)."""
    found: list[tuple[int, int] | None] = []
    for path in (layout.tree, layout.private):
        try:
            info = os.stat(path)
        except OSError:
            found.append(None)
            continue
        found.append((info.st_dev, info.st_ino))
    return tuple(found)


@contextlib.contextmanager
def _starting(argv: Sequence[str], cwd: str | Path, env: Mapping[str, str] | None,
              confine: Confinement | None, *, gated: bool = False, awaited: bool = True
              ) -> Iterator[_Started]:
    """``argv`` started within its limits (``gated``: behind :mod:`wavegit.attempts.gate`, its sandbox built
    once this yields, unless not ``awaited``: :meth:`_Started.up`); on leaving, its group killed, the leader
    reaped, an unsandboxed attempt's leftovers swept and its cgroup removed."""
    with _launching(confine) as launch:
        try:
            if not argv:
                raise ValueError("empty command")
            if confine is not None and confine.bwrap:
                confine = _launchable(argv, cwd, env, confine)
            elif launch.wrapper:
                programs.executable(argv[0], cwd, env)
            launched_after = sweep.mark() if confine is not None and not confine.bwrap else None
            command = [*gate.SCRIPT, *argv] if gated else list(argv)
            proc = subprocess.Popen(
                [*launch.wrapper, *(confine.argv(command, launch) if confine is not None else command)],
                cwd=cwd, env=dict(env) if env is not None else None,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                start_new_session=True, close_fds=True, preexec_fn=launch.preexec(),
                pass_fds=() if launch.seccomp_fd is None else (launch.seccomp_fd,),
            )
        except (OSError, ValueError) as exc:
            yield _Started(None, exc, confine)
            return
        assert proc.stdout is not None
        before = (gate.await_up(proc.stdout.fileno()) if awaited else None) if gated else b""
        try:
            yield _Started(proc, None, confine, launched_after, before)
        finally:
            if proc.returncode is None:
                # Never run, or never reaped: the group dies; its leader unreaped, its id cannot be reused.
                _signal_group(proc.pid, signal.SIGKILL)
                proc.wait()
            if confine is not None and not confine.bwrap:
                sweep.sweep(confine.marker, launched_after)
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()


def _run(argv: Sequence[str], started: _Started, log: logcap.CappedLog, log_path: Path,
         stdin_text: str | None, timeout_s: float | None, idle_timeout_s: float | None,
         cancel: threading.Event | None, kill_grace_s: float, pipe_linger_s: float,
         on_line: Callable[[bytes], None] | None, *, gated: bool) -> ProcessResult:
    """Feed, watch and end a started process; its time counts from here (a parked one's from its go)."""
    started_at = _utc_now()
    start = time.monotonic()
    proc, confine = started.proc, started.confine
    if proc is None:
        assert started.error is not None
        message = _launch_error(argv, started.error)
        log.write(f"wavegit: {message}\n".encode())
        log.finish()
        return ProcessResult(None, None, message, time.monotonic() - start, log_path, started_at, _utc_now())
    assert proc.stdin is not None and proc.stdout is not None
    text = gate.go_line(stdin_text) if gated else stdin_text
    log.write(started.before or b"")
    watch = Watch(proc.pid, proc.stdin, proc.stdout, log, text, on_line)
    try:
        killed = _supervise(proc, watch, start, _limit(timeout_s), _limit(idle_timeout_s), cancel,
                            kill_grace_s, pipe_linger_s)
    finally:
        # Stragglers in the group (daemons that closed their output) die with the attempt;
        # the leader is still unreaped here, so the group id cannot have been reused.
        _signal_group(proc.pid, signal.SIGKILL)
        exit_code = proc.wait()
        watch.close()
        log.finish()
    if confine is not None and confine.bwrap and _SIGNAL_EXIT_BASE < exit_code <= _SIGNAL_EXIT_BASE + 64:
        exit_code = _SIGNAL_EXIT_BASE - exit_code
    limit = {"wall": timeout_s, "idle": idle_timeout_s}.get(killed or "")
    return ProcessResult(exit_code, killed, None, time.monotonic() - start, log_path, started_at, _utc_now(),
                         limit, log.lost)


def _supervise(proc: subprocess.Popen[bytes], watch: Watch, start: float, wall: float, idle: float,
               cancel: threading.Event | None, grace: float, linger: float) -> KillReason | None:
    """Pump output until the leader has exited and the pipe is closed; enforce the limits."""
    killed: KillReason | None = None
    term_at: float | None = None
    kill_at: float | None = None
    exited_at: float | None = None
    pgid = proc.pid
    exit_poll = _EXIT_POLL_S
    while True:
        if watch.eof and exited_at is None and watch.exit_fd is None:
            # Output closed, no pidfd: the exit usually follows within a millisecond; poll fast, backing off.
            watch.pump(exit_poll)
            exit_poll = min(exit_poll * 2, _POLL_S)
        else:
            watch.pump(_POLL_S)
        now = time.monotonic()
        if exited_at is None and _leader_exited(proc):
            exited_at = now
        if exited_at is not None and watch.eof:
            return killed
        if term_at is None:
            if exited_at is None:
                killed = _kill_reason(now - start, now - watch.last_output, wall, idle, cancel)
            if killed is not None or (exited_at is not None and now - exited_at >= linger):
                _signal_group(pgid, signal.SIGTERM)
                term_at = now
        elif kill_at is None and now - term_at >= grace:
            _signal_group(pgid, signal.SIGKILL)
            kill_at = now
        elif kill_at is not None and exited_at is not None and now - kill_at >= _ABANDON_PIPE_S:
            return killed


def _kill_reason(elapsed: float, silent: float, wall: float, idle: float,
                 cancel: threading.Event | None) -> KillReason | None:
    if cancel is not None and cancel.is_set():
        return "cancelled"
    if elapsed >= wall:
        return "wall"
    if silent >= idle:
        return "idle"
    return None


def _launch_error(argv: Sequence[str], exc: OSError | ValueError) -> str:
    if isinstance(exc, ValueError):
        return f"cannot launch: {exc}"
    where = f": {exc.filename}" if exc.filename else ""
    relative = "/" in argv[0] and not os.path.isabs(argv[0]) and exc.errno == errno.ENOENT
    return f"cannot launch {argv[0]!r}: {exc.strerror or exc}{where}{_RELATIVE_HINT if relative else ''}"


_RELATIVE_HINT = (" (relative to the item's tree, which holds only committed files: for an untracked "
                  "virtualenv give its absolute path)")


def command_argv(command: str) -> list[str]:
    """Split a configured command line the way a POSIX shell would, without running a shell."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise UsageError(f"cannot parse command {command!r}: {exc}") from exc
    if not argv:
        raise UsageError("command is empty")
    return argv


_DETACHED_ENV = ("PATH", "PYTHONPATH", "PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE", "LANG", "LC_ALL")
"""What a detached wavegit helper keeps of wavegit's environment: enough to start the same Python and find
the same wavegit, never a token."""


def start_detached(argv: Sequence[str], cwd: Path) -> None:
    """Start ``argv`` in ``cwd``, in a session of its own with no input or output, and do not wait for it:
    work that may outlive the command (as ``git gc --auto`` detaches). Best effort: a failed start is
    ignored, since what it would have done is done again later."""
    env = {name: os.environ[name] for name in _DETACHED_ENV if name in os.environ}
    with contextlib.suppress(OSError):
        subprocess.Popen(list(argv), cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True, env=env)


