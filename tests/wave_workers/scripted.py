"""A fake worker that does what its prompt says, one action per line (the wave tests' stand-in agent).

Actions: ``write PATH TEXT``, ``delete PATH``, ``rename OLD NEW``, ``chmod-x PATH``, ``symlink PATH TARGET``,
``say TEXT`` (print), ``sleep SECONDS`` (quietly), ``busy SECONDS`` (printing every 50 ms), ``cost USD``
(write $WAVEGIT_COST_FILE), ``cost-text TEXT`` (write TEXT to it as it is), ``meet DIR N`` (wait until
N workers have reached DIR: concurrent attempts without sleeps), ``crash`` (SIGKILL itself), ``exit N``,
``run ARGV...`` (run a command),
``if-feedback ACTION...`` / ``no-feedback ACTION...`` (ACTION only on a retry / only on a first attempt),
``env PATH`` (append the WAVEGIT_* environment, prompt and feedback as JSON to PATH, outside the worktree).
Lines that are not actions (wavegit's appended feedback) are ignored.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ACTIONS = {"write", "delete", "rename", "chmod-x", "symlink", "say", "sleep", "busy", "cost", "cost-text",
           "meet", "crash", "exit", "if-feedback", "no-feedback", "env", "run"}


def act(words: list[str], retry: bool) -> None:
    verb, args = words[0], words[1:]
    if verb == "if-feedback":
        if retry:
            act(args, retry)
    elif verb == "no-feedback":
        if not retry:
            act(args, retry)
    elif verb == "write":
        Path(args[0]).parent.mkdir(parents=True, exist_ok=True)
        Path(args[0]).write_text(" ".join(args[1:]) + "\n")
    elif verb == "delete":
        Path(args[0]).unlink()
    elif verb == "rename":
        Path(args[1]).parent.mkdir(parents=True, exist_ok=True)
        Path(args[0]).rename(args[1])
    elif verb == "chmod-x":
        Path(args[0]).chmod(0o755)
    elif verb == "symlink":
        Path(args[0]).parent.mkdir(parents=True, exist_ok=True)
        Path(args[0]).symlink_to(args[1])
    elif verb == "say":
        print(" ".join(args), flush=True)
    elif verb == "sleep":
        time.sleep(float(args[0]))
    elif verb == "busy":
        end = time.monotonic() + float(args[0])
        while time.monotonic() < end:
            print("working", flush=True)
            time.sleep(0.05)
    elif verb == "cost":
        Path(os.environ["WAVEGIT_COST_FILE"]).write_text(json.dumps({"usd": float(args[0])}))
    elif verb == "cost-text":
        Path(os.environ["WAVEGIT_COST_FILE"]).write_text(" ".join(args))
    elif verb == "meet":
        here = Path(args[0])
        (here / os.urandom(8).hex()).touch()  # not the pid: sandboxed workers share pid 2
        end = time.monotonic() + 30
        while len(list(here.iterdir())) < int(args[1]) and time.monotonic() < end:
            time.sleep(0.02)
    elif verb == "crash":
        os.kill(os.getpid(), signal.SIGKILL)
    elif verb == "run":
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    elif verb == "exit":
        sys.exit(int(args[0]))
    elif verb == "env":
        names = sorted(k for k in os.environ if k.startswith(("WAVEGIT_", "GITHUB_")))
        dump = {k: os.environ[k] for k in names}
        dump["prompt_file_text"] = Path(os.environ["WAVEGIT_PROMPT_FILE"]).read_text()
        feedback = os.environ.get("WAVEGIT_FEEDBACK_FILE")
        dump["feedback_text"] = Path(feedback).read_text() if feedback else ""
        with open(args[0], "a") as fh:
            fh.write(json.dumps(dump) + "\n")


def main() -> None:
    prompt = sys.stdin.read()
    retry = bool(os.environ.get("WAVEGIT_FEEDBACK_FILE"))
    for line in prompt.splitlines():
        words = line.split()
        if words and words[0] in ACTIONS:
            act(words, retry)


if __name__ == "__main__":
    main()
