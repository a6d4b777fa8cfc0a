"""A hostile worker against the limits of its attempt: each line of the prompt (after the first) is an action;
what the actions found is written, after a first line ``ok`` (or the ``content`` action's text), to every
file the item owns.

- ``flood N``: N bytes on stdout without a newline, ``HEAD-MARK`` first and ``TAIL-MARK`` last.
- ``fill DIR MAX``: a file in DIR (``TMPDIR``: the variable's value; ``PRIVATE``: the attempt's private
  directory, the cost file's) grown until the disk refuses (or it holds MAX bytes: a test's safety net); the
  error ends the worker (exit 1), the file stays.
- ``fill-quiet DIR MAX``: the same, but the worker goes on (exit 0).
- ``hold-full DIR STOP``: a daemon in a clean environment (so that the unsandboxed attempt's sweep misses it)
  that keeps the disk of DIR full until the file STOP exists (at most a minute).
- ``cgroup-escape``: the worker moves itself out of its attempt's pids and memory cgroups into the ones
  they were made under (wavegit's own), where it may write (root, or a cgroup delegated to its user).
- ``forkbomb MAX SECONDS``: children that sleep SECONDS, forked until a fork fails or MAX are running.
- ``hog N``: N bytes of memory, touched.
- ``shm-leave KEY`` / ``shm-read KEY``: a System V shared memory segment left holding a secret / looked for.
- ``keyring DESC``: the kernel keyring searched (user and session keyrings) for a ``user`` key DESC, read.
- ``plant-git-config DESC OUT``: unsandboxed, the scheduler's repository (its working directory) gets a
  ``remote.origin.uploadpack`` and ``receivepack`` that run ``keyring_dump.py DESC OUT`` first: wavegit's
  own next fetch or push, outside the attempt and its filter, reads the keyring.
- ``squat PORT SECONDS``: an HTTP server on 127.0.0.1:PORT answering ``ok``, until it served once.
- ``wait-port PORT``: until something listens on 127.0.0.1:PORT.
- ``connect PORT``: whether 127.0.0.1:PORT can be reached.
- ``sleep S``: S seconds.
- ``write-owned``: the owned files written now (the first line only), not at the end.
- ``content TEXT``: TEXT instead of ``ok`` as the owned files' first line.
- ``hardlinks N``: the owned files (but ``*.link``) written now as one file of N bytes (``ok``, then
  ``x``s) and hard links to it: N bytes of disk in the tree, a few KB in git's objects, N bytes per owned
  file wherever its commit is checked out.
- ``ident PATH N``: PATH holds N bytes of ``$Id$``, and a ``.gitattributes`` beside it gives it git's
  ``ident`` attribute: each four bytes are 47 (``$Id: <object id> $``) wherever its commit is checked out.
- ``longlink PATH``: a symlink at PATH whose target is 300 characters long (a tmpfs keeps it in a page of
  its own: creating it on a full one is ENOSPC).
- ``dirlinks DIR``: symlinks in DIR, each to DIR itself by a 300-character path (``././...``, a page each),
  made until the disk refuses; the worker then fails (exit 1), the links stay.
"""

from __future__ import annotations

import contextlib
import ctypes
import http.server
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.shmat.restype = ctypes.c_void_p
IPC_CREAT = 0o1000
KEYCTL_SEARCH, KEYCTL_READ = 10, 11
SYSCALLS = {"x86_64": (248, 250), "aarch64": (217, 219)}  # add_key, keyctl
KEY_SPEC_SESSION, KEY_SPEC_USER = -3, -4
SHM_SECRET = b"SHM-SECRET-OF-AN-EARLIER-WAVE"

found = ["ok"]
written = False


def write_owned() -> None:
    """Every owned file an action did not make (``hardlinks``, ``ident``, ``longlink``)."""
    for owned in os.environ["WAVEGIT_OWNS"].splitlines():
        if os.path.lexists(owned):
            continue
        Path(owned).parent.mkdir(parents=True, exist_ok=True)
        Path(owned).write_text("\n".join(found) + "\n")


def flood(size: int) -> None:
    out = sys.stdout.buffer
    out.write(b"HEAD-MARK")
    chunk = b"x" * (1 << 20)
    left = size
    while left > 0:
        out.write(chunk[:left])
        left -= len(chunk)
    out.write(b"TAIL-MARK")
    out.flush()


def fill(where: str, most: int) -> None:
    folder = (Path(os.environ["WAVEGIT_COST_FILE"]).parent if where == "PRIVATE"
              else Path(os.environ[where] if where == "TMPDIR" else where))
    chunk = b"\0" * (1 << 20)
    with (folder / "filler").open("wb", buffering=0) as fh:
        for _ in range(most >> 20):
            fh.write(chunk)
    found.append(f"filled {most} bytes")


HOLD_FULL = """
import os, sys, time
end = time.monotonic() + 60
with open(sys.argv[1], "ab", buffering=0) as fh:
    while time.monotonic() < end and not os.path.exists(sys.argv[2]):
        try:
            fh.write(bytes(4096))
        except OSError:
            time.sleep(0.0005)
os.unlink(sys.argv[1])
"""


def hold_full(where: str, stop: str) -> None:
    subprocess.Popen([sys.executable, "-c", HOLD_FULL, str(Path(where).absolute() / "held"), stop], env={},
                     start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)
    time.sleep(0.5)


def cgroup_escape() -> None:
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in set(controllers.split(",")) & {"pids", "memory"}:
            above = Path("/sys/fs/cgroup", controller, path.lstrip("/")).parent
            try:
                (above / "cgroup.procs").write_text(str(os.getpid()))
                found.append(f"left {controller} {path}")
            except OSError as exc:
                found.append(f"stayed in {controller} {path}: {exc.strerror}")


def forkbomb(most: int, seconds: float) -> None:
    children = 0
    while children < most:
        try:
            pid = os.fork()
        except OSError as exc:
            print(f"fork failed after {children}: {exc}", flush=True)
            break
        if pid == 0:
            time.sleep(seconds)
            os._exit(0)
        children += 1
    found.append(f"forked {children}")
    time.sleep(seconds)


def hog(size: int) -> None:
    held = []
    for _ in range(size >> 24):
        held.append(bytearray(1 << 24))  # zero-filled: every page touched
    found.append(f"held {len(held) << 24}")


def shm(key: int, leave: bool) -> None:
    shmid = LIBC.shmget(key, 1 << 20, (IPC_CREAT | 0o600) if leave else 0)
    if shmid < 0:
        found.append("shm: none")
        return
    address = LIBC.shmat(shmid, None, 0)
    if leave:
        ctypes.memmove(address, SHM_SECRET, len(SHM_SECRET))
    else:
        found.append(f"shm: {ctypes.string_at(address, len(SHM_SECRET)).decode(errors='replace')}")
    LIBC.shmdt(ctypes.c_void_p(address))


def keyring(description: str) -> None:
    keyctl = SYSCALLS[os.uname().machine][1]
    for ring in (KEY_SPEC_USER, KEY_SPEC_SESSION):
        serial = LIBC.syscall(keyctl, KEYCTL_SEARCH, ring, b"user", description.encode(), 0)
        if serial < 0:
            found.append(f"keyring {ring}: {os.strerror(ctypes.get_errno())}")
            continue
        buffer = ctypes.create_string_buffer(256)
        size = LIBC.syscall(keyctl, KEYCTL_READ, serial, buffer, 256)
        found.append(f"keyring {ring}: {buffer.raw[:max(size, 0)].decode(errors='replace')}")


def plant_git_config(description: str, out: str) -> None:
    scheduler = Path(os.readlink(f"/proc/{os.getppid()}/cwd"))
    dump = f"{sys.executable} {Path(__file__).with_name('keyring_dump.py')} {description} {out}"
    for key, program in (("uploadpack", "git-upload-pack"), ("receivepack", "git-receive-pack")):
        subprocess.run(["git", "config", "--file", str(scheduler / ".git" / "config"), f"remote.origin.{key}",
                        f"{dump}; {program}"], check=True)
    found.append(f"planted in {scheduler}")


def squat(port: int, seconds: float) -> None:
    served = threading.Event()

    class Answer(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"ok\n")
            served.set()

    server = http.server.HTTPServer(("127.0.0.1", port), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    found.append(f"squatted, served: {served.wait(seconds)}")


def reachable(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except OSError:
        return False
    return True


def wait_port(port: int) -> None:
    deadline = time.monotonic() + 20
    while not reachable(port) and time.monotonic() < deadline:
        time.sleep(0.05)


for action, *args in (line.split() for line in sys.stdin.read().splitlines() if line.strip()):
    if action == "flood":
        flood(int(args[0]))
    elif action in ("fill", "fill-quiet"):
        try:
            fill(args[0], int(args[1]))
        except OSError as exc:
            print(f"fill: {exc}", flush=True)
            if action == "fill":
                raise
    elif action == "hold-full":
        hold_full(args[0], args[1])
    elif action == "cgroup-escape":
        cgroup_escape()
    elif action == "forkbomb":
        forkbomb(int(args[0]), float(args[1]))
    elif action == "hog":
        hog(int(args[0]))
    elif action in ("shm-leave", "shm-read"):
        shm(int(args[0]), action == "shm-leave")
    elif action == "keyring":
        keyring(args[0])
    elif action == "plant-git-config":
        plant_git_config(args[0], args[1])
    elif action == "squat":
        squat(int(args[0]), float(args[1]))
    elif action == "wait-port":
        wait_port(int(args[0]))
    elif action == "connect":
        found.append(f"connect: {'reached' if reachable(int(args[0])) else 'unreachable'}")
    elif action == "sleep":
        time.sleep(float(args[0]))
    elif action == "write-owned":
        write_owned()
        written = True
    elif action == "content":
        found[0] = " ".join(args)
    elif action == "hardlinks":
        first, *rest = (Path(owned) for owned in os.environ["WAVEGIT_OWNS"].splitlines()
                        if not owned.endswith(".link"))
        first.parent.mkdir(parents=True, exist_ok=True)
        first.write_bytes(b"ok\n" + b"x" * (int(args[0]) - 3))
        for owned in rest:
            owned.parent.mkdir(parents=True, exist_ok=True)
            os.link(first, owned)
        written = True
    elif action == "ident":
        target = Path(args[0])
        target.parent.mkdir(parents=True, exist_ok=True)
        (target.parent / ".gitattributes").write_text(f"{target.name} ident\n")
        target.write_text("$Id$" * (int(args[1]) // 4))
    elif action == "longlink":
        Path(args[0]).symlink_to("x" * 300)
    elif action == "dirlinks":
        Path(args[0]).mkdir(parents=True, exist_ok=True)
        n = 0
        with contextlib.suppress(OSError):
            while True:
                (Path(args[0]) / f"l{n}").symlink_to("./" * 149 + ".")
                n += 1
        sys.exit(f"dirlinks: {n} links, then the disk was full")
if not written:
    write_owned()
