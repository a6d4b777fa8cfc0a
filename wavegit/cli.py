"""Command-line parsing and dispatch only; each subcommand lives in ``wavegit.commands.<name>``.

Only the chosen subcommand's module is imported, so ``wavegit hook pre-push`` and ``wavegit plan``
start without loading anything they do not use.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TextIO

from wavegit import __version__
from wavegit.core import terminal
from wavegit.core.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, ValidationError, WavegitError

if TYPE_CHECKING:  # imported when parsing: `wavegit hook pre-push` as git runs it does without (see _quick)
    import argparse

# name -> (module under wavegit.commands, one-line summary)
COMMANDS: dict[str, tuple[str, str]] = {
    "init": ("init", "create .wavegit/tracker.yaml and .wavegit/config.yaml and commit them"),
    "add": ("add", "add an item to the tracker (a compare-and-swap commit)"),
    "import": ("import_", "add another tool's backlog (aesop JSON, JSONL, CSV) in one CAS commit"),
    "intake": ("intake", "turn GitHub issues labelled for wavegit into items (one CAS commit)"),
    "validate": ("validate", "check the tracker and config; one path:line:col line per problem"),
    "ls": ("ls", "list tracker items"),
    "done": ("done", "mark an item done by hand (a compare-and-swap commit)"),
    "reopen": ("reopen", "send an item back to todo with its attempts reset"),
    "block": ("block", "keep an item out of every wave until it is reopened"),
    "drop": ("drop", "remove an item from the tracker"),
    "edit": ("edit", "change an item's prompt, ownership, test or priority"),
    "release": ("release", "return the claims of a wave whose scheduler is gone, now"),
    "plan": ("plan", "show what the next wave would take, and why the rest is not taken"),
    "run": ("run", "claim a wave, run its workers, verify, report"),
    "status": ("status", "the live state of waves run here, from their event logs"),
    "sync": ("sync", "reconcile in-flight waves with their branches, PRs and leases"),
    "pull": ("pull", "fast-forward the local tracker branch to the remote's (its checkout too, if clean)"),
    "halt": ("halt", "commit .wavegit/HALT so that no new wave starts"),
    "resume": ("resume", "remove .wavegit/HALT"),
    "demo": ("demo", "run a whole wave in a throwaway repository with a built-in worker"),
    "gate": ("gate", "the merge gate: check a PR's report and set the wavegit/gate status"),
    "gate-test": ("gate_test", "run the tests on a wave PR brought up to date with its base, for the gate"),
    "hook": ("hook", "git hook entry points (pre-push)"),
    "hooks": ("hooks", "install or uninstall wavegit's git hooks"),
    "review": ("review", "act on a /wavegit retry|drop comment on a wave's pull request"),
    "claim": ("claim", "claim a wave for scale-out and print its GitHub Actions matrix"),
    "work": ("work", "run one claimed item of a scaled-out wave and push its result branch"),
    "collect": ("collect", "combine a scaled-out wave's item branches, record, open the PR, report"),
    "report": ("report", "the last wave's report (or a given wave's): text, --json, --markdown or --html"),
}


EXIT_BROKEN_PIPE = 141
"""128 + SIGPIPE, as a shell reports a program killed by a closed pipe."""

# Commands that run workers or tests: started again without GITHUB_TOKEN (see wavegit.core.credentials).
_RUNS_WORKERS = frozenset({"run", "work", "collect", "review", "gate-test"})


def _parser_class() -> type[argparse.ArgumentParser]:
    import argparse

    class _Parser(argparse.ArgumentParser):
        def error(self, message: str) -> None:  # type: ignore[override]
            self.print_usage(sys.stderr)
            self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")

    return _Parser


def _top_parser(parser_class: type[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    import argparse

    width = max(len(name) for name in COMMANDS)
    listing = "\n".join(f"  {name:<{width}}  {summary}" for name, (_, summary) in COMMANDS.items())
    parser = parser_class(
        prog="wavegit",
        usage="wavegit [-h] [--version] [-C PATH] COMMAND [ARGS]",
        description="Run many workers on one git repository in parallel without collisions.",
        epilog=f"commands:\n{listing}\n\nexit codes: 0 ok, 1 work failed, 2 bad input, "
        "3 halted or over budget, 4 lost a compare-and-swap race",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"wavegit {__version__}")
    parser.add_argument("-C", dest="directory", default=".", metavar="PATH",
                        help="run as if started in PATH (like git -C)")
    # Optional here, required below: argparse's own message named the remainder too ("COMMAND, args").
    parser.add_argument("command", nargs="?", choices=sorted(COMMANDS), metavar="COMMAND")
    parser.add_argument("args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; ``argv`` None means the process's own arguments (the console script, ``-m``).

    Then, for a command module with ``FAST_EXIT = True``, the process ends here once its output is flushed,
    skipping the interpreter's teardown (freeing every object and module), which costs a warm ``plan`` or
    pre-push hook 13-19% (ARCHITECTURE.md, speed rules). Only commands that register no atexit handler,
    start no thread and leave no file half-written may set it. Any other command ends so too, once its
    atexit handlers ran, when no other thread runs (:func:`_alone`): the teardown then only frees memory;
    ``wavegit run``'s was 15-30 ms of the wave's end. A caller passing ``argv`` keeps its process.
    """
    # No git wavegit runs may prompt (a wave has no one to answer): set once, its git calls inherit the
    # environment as it is (git.clean_env).
    os.environ.setdefault("GIT_TERMINAL_PROMPT", "0")
    # Whatever a command prints quotes workers' text: made inert for the terminal in one place.
    with terminal.inert_output():
        code, fast_exit = _run(argv)
    if argv is None and (fast_exit or _alone()):
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BrokenPipeError:
            # The reader left (`wavegit run | head -2`): the interpreter's own flush at exit would fail the
            # same way and end with 120.
            return _output_closed()
        except OSError:
            return code  # e.g. a full disk: the normal exit reports it
        os._exit(code)
    if argv is None:
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            return _output_closed()
    return code


def _alone() -> bool:
    """Whether no thread but this one runs; if so, the atexit handlers (GitHub App tokens revoked, temporary
    directories removed, logging flushed) are run now, as the teardown would: what is left of it only frees
    memory (wavegit writes its files in ``with`` blocks, closed as they end)."""
    import atexit
    import threading

    if threading.active_count() > 1:
        return False
    atexit._run_exitfuncs()
    return True


def _quick(argv: Sequence[str], own_process: bool) -> Callable[[], int] | None:
    """``wavegit hook pre-push ...``, which git runs on every push, parsed without argparse (importing it and
    building the parsers cost the warm hook 16%); None for anything else."""
    if list(argv[:2]) != ["hook", "pre-push"]:
        return None
    if own_process:
        import gc

        # The hook's process lives some 50 ms and makes no garbage worth a collection: the collector's
        # passes over what its imports allocate were 2.6% of its instructions (ARCHITECTURE.md).
        gc.disable()
    from wavegit.commands import hook

    return hook.quick(argv[2:])


def _run(argv: Sequence[str] | None) -> tuple[int, bool]:
    """The command's exit code, and whether its module allows a fast exit."""
    quick = _quick(sys.argv[1:] if argv is None else argv, own_process=argv is None)
    if quick is not None:
        return _call("hook", quick, own_process=argv is None), True  # commands.hook's FAST_EXIT
    parser_class = _parser_class()
    top_parser = _top_parser(parser_class)
    top = top_parser.parse_args(argv)
    if top.command is None:
        top_parser.print_help(sys.stderr)
        top_parser.exit(EXIT_BAD_INPUT, "wavegit: error: a command is required (listed above)\n")
    module_name, summary = COMMANDS[top.command]
    if argv is None and top.command == "run":
        # Before its imports: a SIGINT ignored meanwhile was lost (wavegit.core.interrupts).
        from wavegit.core import interrupts

        interrupts.defer()
    module = importlib.import_module(f"wavegit.commands.{module_name}")
    fast_exit = getattr(module, "FAST_EXIT", False) is True
    if argv is None and not fast_exit:
        # The hot paths (the FAST_EXIT commands) never talk to GitHub nor run workers: no token to hold.
        from wavegit.core import credentials

        credentials.protect(os.environ, restart=top.command in _RUNS_WORKERS)
    parser = parser_class(prog=f"wavegit {top.command}", description=summary)
    module.add_arguments(parser)
    args = parser.parse_args(top.args)
    args.directory = top.directory
    def run() -> int:
        if argv is None and not fast_exit:
            _app_credentials()
        code: int = module.run(args)
        return code

    return _call(top.command, run, own_process=argv is None), fast_exit


def _app_credentials() -> None:
    """With a GitHub App configured, the process's App tokens from the start, so that the first fetch and
    push already carry one (:mod:`wavegit.github.appauth`); a malformed configuration is exit 2 here."""
    if os.environ.get("WAVEGIT_APP_ID") and os.environ.get("GITHUB_REPOSITORY"):
        from wavegit.github import api

        api.settings_from_env()


def _call(command: str, run: Callable[[], int], *, own_process: bool = True) -> int:
    """``run()``'s exit code, or the one of the error it raised, said in one line."""
    try:
        return _said(command, run)
    except BrokenPipeError:
        # Ours only when the reader of our own output left (`wavegit run | head -2`, after the work was
        # done; `wavegit validate 2>&1 | head -1` while it says what is wrong); a pipe to some other
        # process breaking is a failure like any other.
        if not own_process or not any(map(_reader_gone, (sys.stdout, sys.stderr))):
            raise
        return _output_closed()


def _said(command: str, run: Callable[[], int]) -> int:
    """``run()``'s exit code, or the one of the error it raised, said on stderr (which may be a closed
    pipe: :func:`_call` ends as SIGPIPE would then)."""
    try:
        return run()
    except ValidationError as exc:
        # One `path:line:col: message` line per problem, nothing else, so editors can jump to them.
        print(exc, file=sys.stderr)
        return exc.exit_code
    except WavegitError as exc:
        print(f"wavegit {command}: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"wavegit {command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _reader_gone(stream: TextIO) -> bool:
    """Whether ``stream`` is a pipe whose reading end is closed (poll reports an error on it)."""
    import select

    try:
        poller = select.poll()
        poller.register(stream.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (OSError, ValueError):
        return False


def _output_closed() -> int:
    """End as a program killed by SIGPIPE would: without a traceback, nor a second failure when the
    interpreter flushes the closed streams at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.dup2(devnull, sys.stderr.fileno())
    return EXIT_BROKEN_PIPE
