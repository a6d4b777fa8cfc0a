"""A hostile worker: does what an attacker steering a coding agent would, one action per prompt line.

Actions (paths relative to the attempt's tree unless absolute):
``write PATH TEXT``; ``symlink PATH TARGET``; ``siblings NAME TEXT`` (write NAME into every other
directory found through ``..``); ``wait-for PATH`` (up to 20 s); ``touch PATH`` (outside the tree too);
``plant-hooks MARKER`` (hooks in ``$(git rev-parse --git-common-dir)/hooks``, and ``core.hooksPath``,
``core.fsmonitor``, ``credential.helper`` in its git config, each appending its name to MARKER);
``move-main PATH`` (commit PATH in its repository and ``git update-ref refs/heads/main`` to it);
``rm-git`` (``rm -rf .git``); ``git-anyway`` (``git config`` and ``git branch`` wherever git finds a
repository from the tree, failures ignored); ``index-lock`` (leave ``.git/index.lock``); ``deep PATH
LEVELS`` (nested directories whose full path is too long for the system to name); ``sparse PATH BYTES``
(``truncate -s``); ``cost USD``; ``exit N``; ``odd-name PATH [TEXT]`` (escapes such as ``\\n``, ``\\r``,
``\\xe9`` as bytes; its content TEXT, else ``odd``);
``cost-fifo``, ``cost-link TARGET``, ``cost-sparse BYTES`` (the cost file as a FIFO, a symlink, a huge file);
``flood BYTES`` (output without a newline); ``deep-home LEVELS`` (nested directories in ``$HOME``);
``unmount MARKER`` (unmount what hides the checkout, remount ``/`` writable, write MARKER there);
``connect SOCKET`` (``@NAME``: abstract); ``plant-in DIR MARKER`` (hooks in DIR); ``retarget-origin URL``
(the checkout's ``remote.origin.url``); ``leak-token PATH``; ``steal PATH OUT`` (write into OUT what PATH
shows: a file's text, a folder's names, else ``hidden``); ``forge-report URL WAVE`` (push to URL a report
ref for WAVE whose ``report.json`` is not UTF-8, failures ignored). Lines that are not actions (wavegit's
feedback) are ignored.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

HOOKS = ("pre-commit", "post-commit", "post-checkout", "reference-transaction", "pre-push",
         "post-index-change", "pre-auto-gc", "post-rewrite", "push-to-checkout")


def _script(path: Path, name: str, marker: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho {name} >> '{marker}'\ncat >/dev/null 2>&1 || true\n")
    path.chmod(0o755)


def plant_hooks(marker: str) -> None:
    common = Path(subprocess.run(["git", "rev-parse", "--git-common-dir"], capture_output=True, text=True,
                                 check=True).stdout.strip())
    for name in HOOKS:
        _script(common / "hooks" / name, name, marker)
    elsewhere = Path.cwd().parent / "planted-hooks"
    for name in HOOKS:
        _script(elsewhere / name, f"hooksPath:{name}", marker)
    _script(elsewhere / "fsmonitor", "fsmonitor", marker)
    _script(elsewhere / "credential", "credential", marker)
    for key, value in (("core.hooksPath", str(elsewhere)), ("core.fsmonitor", str(elsewhere / "fsmonitor")),
                       ("credential.helper", str(elsewhere / "credential"))):
        subprocess.run(["git", "config", key, value], check=True)


def move_main(path: str) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text("unowned, committed by the worker\n")
    subprocess.run(["git", "add", "-A"], check=True)
    subprocess.run(["git", "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "-m", "sneak"],
                   check=True)
    subprocess.run(["git", "update-ref", "refs/heads/main", "HEAD"], check=True)
    Path(path).unlink()


def forge_report(url: str, wave: str) -> None:
    def git(*args: str, data: bytes = b"") -> str:
        done = subprocess.run(["git", *args], input=data, capture_output=True, check=False)
        return done.stdout.decode().strip()
    blob = git("hash-object", "-w", "--stdin", data=b'{"wave_id": "\xff\xfe not UTF-8"}')
    tree = git("mktree", data=f"100644 blob {blob}\treport.json\n".encode())
    commit = git("-c", "user.name=x", "-c", "user.email=x@x", "commit-tree", tree, "-m", "forged")
    git("push", "-f", url, f"{commit}:refs/wavegit/reports/{wave}")


def scheduler_git_dir() -> Path:
    """The scheduler's git directory, found as a worker would: unsandboxed, the working directory of an
    ancestor process (``wavegit run`` runs in the checkout); sandboxed, the mount that hides it
    (``/proc/self/mountinfo`` names every mount point)."""
    tree, pid = Path.cwd().resolve(), os.getppid()
    while pid > 1:
        with contextlib.suppress(OSError):
            cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
            if (cwd / ".git").is_dir() and cwd != tree:
                return cwd / ".git"
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            break
    points = [Path(line.split()[4].replace("\\040", " "))
              for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    # The git directory, or the checkout holding it (a hidden directory's own folder is hidden with it).
    for found in [p for p in points if p.name == ".git"] + [p / ".git" for p in points if p != tree]:
        if found.is_dir():
            return found
    raise SystemExit("the scheduler's git directory was not found")


def unmount_and_write(marker: str) -> None:
    """Unmount what hides the checkout and its git directory (root's capabilities in the sandbox would
    allow it), remount ``/`` writable, then write MARKER into both; each failure is ignored."""
    libc = ctypes.CDLL(None, use_errno=True)
    git_dir = scheduler_git_dir()
    tree = os.open(".", os.O_RDONLY)  # the tree's mount goes with its parent's; this keeps it reachable
    for path in (git_dir, git_dir.parent):
        libc.umount2(os.fsencode(path), 2)  # MNT_DETACH
    libc.mount(b"none", b"/", None, 32 | 4096 | 16384, None)  # MS_REMOUNT | MS_BIND | MS_REC, rw
    for target in (git_dir.parent / marker, git_dir / marker, git_dir / "hooks" / "pre-push"):
        with contextlib.suppress(OSError):
            target.write_text(f"#!/bin/sh\necho {marker}\n")
    os.fchdir(tree)


def act(verb: str, args: list[str]) -> None:
    if verb == "write":
        Path(args[0]).parent.mkdir(parents=True, exist_ok=True)
        Path(args[0]).write_text(" ".join(args[1:]) + "\n")
    elif verb == "symlink":
        Path(args[0]).parent.mkdir(parents=True, exist_ok=True)
        Path(args[0]).symlink_to(args[1])
    elif verb == "siblings":
        here = Path.cwd().resolve()
        for sibling in here.parent.iterdir():
            if sibling != here and sibling.is_dir():
                (sibling / args[0]).write_text(" ".join(args[1:]) + "\n")
    elif verb == "wait-for":
        deadline = time.monotonic() + 20
        while not Path(args[0]).exists() and time.monotonic() < deadline:
            time.sleep(0.02)
    elif verb == "touch":
        Path(args[0]).touch()
    elif verb == "plant-hooks":
        plant_hooks(args[0])
    elif verb == "move-main":
        move_main(args[0])
    elif verb == "rm-git":
        shutil.rmtree(".git")
    elif verb == "git-anyway":
        for command in (["git", "config", "wavegit.planted", "yes"], ["git", "branch", "planted"],
                        ["git", "update-ref", "refs/heads/main", "refs/heads/main~1"]):
            subprocess.run(command, capture_output=True, check=False)
    elif verb == "index-lock":
        Path(".git/index.lock").write_text("")
    elif verb == "deep":
        here = os.getcwd()
        Path(args[0]).mkdir(parents=True, exist_ok=True)
        os.chdir(args[0])
        for _ in range(int(args[1])):
            os.mkdir("d" * 200)
            os.chdir("d" * 200)
        Path("bottom.txt").write_text("too deep to name\n")
        os.chdir(here)
    elif verb == "sparse":
        Path(args[0]).parent.mkdir(parents=True, exist_ok=True)
        with open(args[0], "wb") as handle:
            handle.truncate(int(args[1]))
    elif verb == "cost":
        Path(os.environ["WAVEGIT_COST_FILE"]).write_text(json.dumps({"usd": float(args[0])}))
    elif verb == "exit":
        sys.exit(int(args[0]))
    elif verb == "odd-name":
        # Bytes as Python writes them (``\\n``, ``\\xe9``): a name no shell prompt line can carry.
        name = args[0].encode().decode("unicode_escape").encode("latin-1")
        os.makedirs(os.path.dirname(name) or b".", exist_ok=True)
        with open(name, "wb") as handle:
            handle.write(f"{' '.join(args[1:]) or 'odd'}\n".encode())
    elif verb == "plant-in":
        # A directory wavegit trusts to stay empty (its own user may write any directory of its own).
        target = Path(args[0])
        with contextlib.suppress(OSError):
            target.chmod(0o755)
            for name in HOOKS:
                _script(target / name, f"planted:{name}", args[1])
    elif verb == "retarget-origin":
        checkout = scheduler_git_dir().parent
        subprocess.run(["git", "-C", str(checkout), "config", "remote.origin.url", args[0]], check=False)
    elif verb == "forge-report":
        forge_report(args[0], args[1])
    elif verb == "steal":
        found = ""
        with contextlib.suppress(OSError):
            source = Path(args[0])
            found = source.read_text() if source.is_file() else " ".join(sorted(os.listdir(source)))
        Path(args[1]).parent.mkdir(parents=True, exist_ok=True)
        Path(args[1]).write_text((found.strip() or "hidden") + "\n")
    elif verb == "leak-token":
        Path(args[0]).write_text(os.environ.get("GITHUB_TOKEN", "") + "\n")
    elif verb == "unmount":
        unmount_and_write(args[0])
    elif verb == "connect":
        with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as client:
            client.connect("\0" + args[0][1:] if args[0].startswith("@") else args[0])
            client.sendall(b"reached from the sandbox")
    elif verb == "cost-fifo":
        os.mkfifo(os.environ["WAVEGIT_COST_FILE"])
    elif verb == "cost-link":
        os.symlink(args[0], os.environ["WAVEGIT_COST_FILE"])
    elif verb == "cost-sparse":
        with open(os.environ["WAVEGIT_COST_FILE"], "wb") as handle:
            handle.truncate(int(args[0]))
    elif verb == "flood":
        chunk = b"x" * 65536
        for _ in range(int(args[0]) // len(chunk)):
            sys.stdout.buffer.write(chunk)
        sys.stdout.flush()
    elif verb == "deep-home":
        here_dir = os.getcwd()
        os.chdir(os.environ["HOME"])
        for _ in range(int(args[0])):
            os.mkdir("d")
            os.chdir("d")
        os.chdir(here_dir)


ACTIONS = {"write", "symlink", "siblings", "wait-for", "touch", "plant-hooks", "move-main", "rm-git",
           "git-anyway", "index-lock", "deep", "sparse", "cost", "exit", "odd-name", "cost-fifo", "cost-link",
           "cost-sparse", "flood", "deep-home", "unmount", "connect", "plant-in", "retarget-origin",
           "leak-token", "forge-report", "steal"}


def main() -> None:
    for line in sys.stdin.read().splitlines():
        words = line.split()
        if words and words[0] in ACTIONS:
            act(words[0], words[1:])


if __name__ == "__main__":
    main()
