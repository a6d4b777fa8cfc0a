"""Installing and uninstalling wavegit's pre-push hook.

The hook goes into ``<git common dir>/hooks`` (shared by every linked worktree) unless a directory is given.
A pre-push hook that is not wavegit's is kept as ``pre-push.wavegit-chained`` and run first, with the same
arguments and the same stdin (buffered, since git writes it once); uninstalling puts it back. The script
runs ``wavegit hook pre-push`` with the Python that installed it, isolated (``-I``: the repository's
directory is not on the module path, so a file such as ``subprocess.py`` at its root cannot run in the
hook, and no ``PYTHON*`` variable applies) and without ``site`` (``-S``): it puts on the path only the
directories this Python imported wavegit and PyYAML from when the hook was installed. That skips the
``.pth`` files of site-packages, whose import hooks (an editable install's) cost a hook ~8 ms warm.
Reinstall the hook after moving wavegit to another environment.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path

import yaml

from wavegit.core import git
from wavegit.core.errors import UsageError
from wavegit.core.repo import Repo

HOOK_NAME = "pre-push"
CHAINED_NAME = "pre-push.wavegit-chained"
MARKER = "# wavegit-managed pre-push hook"

# {python} and {boot} are substituted already shell-quoted; everything else is literal sh.
_SCRIPT = """#!/bin/sh
{marker} (written by `wavegit hooks install`; `wavegit hooks uninstall` removes it and
# restores the hook it replaced). Reinstalling overwrites this file.
python={python}
boot={boot}
run_wavegit() {{
    if [ ! -x "$python" ]; then
        echo "wavegit: $python (the Python that installed this hook) is gone;" \\
            "run \\`wavegit hooks install\\` again, or push with --no-verify at your own risk" >&2
        exit 1
    fi
    exec "$python" -I -S -c "$boot" hook pre-push{options} "$@"
}}
case $0 in
    */*) chained="${{0%/*}}/{chained}" ;;
    *) chained="./{chained}" ;;
esac
if [ ! -x "$chained" ]; then
    run_wavegit "$@"
fi
# git writes the pushed refs to stdin once: keep them (trailing newlines too) for both hooks.
input=$(cat; echo x)
input=${{input%x}}
printf '%s' "$input" | "$chained" "$@" || exit $?
printf '%s' "$input" | run_wavegit "$@"
"""
NO_FETCH = "--no-fetch"
"""In the script of a hook installed with ``--no-fetch``: it never refreshes the tracker branch."""


@dataclass(frozen=True)
class InstallResult:
    hook: Path
    chained: Path | None
    """The foreign hook that now runs first, if any."""
    refreshed: bool
    """True when wavegit's hook was already there (it was rewritten in place)."""
    fetches: bool
    """Whether the hook refreshes a stale tracker branch before checking (``hook.max_age_s``)."""


@dataclass(frozen=True)
class UninstallResult:
    removed: bool
    restored: Path | None
    """Where the previously chained hook was put back, if any."""
    note: str = ""


def hooks_dir(repo: Repo, explicit: Path | None, *, refuse_hooks_path: bool = True) -> Path:
    """``explicit`` if given, else the common dir's hooks -- refused (``refuse_hooks_path``: installing) when
    git would not run a hook from there: core.hooksPath names another directory than the one chosen."""
    if not refuse_hooks_path:
        return explicit.resolve() if explicit is not None else repo.common_dir / "hooks"
    configured = git.config_value(repo.root, "core.hooksPath")
    if explicit is not None:
        # git reads a relative core.hooksPath from the work tree's root, where hooks run.
        runs_from = (repo.root / Path(configured).expanduser() if configured else repo.common_dir / "hooks")
        if explicit.resolve() != runs_from.resolve():
            why = f"core.hooksPath is {configured}" if configured else "core.hooksPath is not set"
            fix = f"--hooks-dir {shlex.quote(configured)}" if configured else "without --hooks-dir"
            raise UsageError(f"--hooks-dir {explicit}: git runs this repository's hooks from {runs_from} "
                             f"({why}), so a hook in {explicit} would never run: install {fix}; "
                             "nothing written")
        return explicit.resolve()
    if configured:
        raise UsageError(f"core.hooksPath is set ({configured}), so git does not run hooks from "
                         f"{repo.common_dir / 'hooks'}; pass --hooks-dir to say where to install "
                         "(e.g. --hooks-dir " + shlex.quote(configured) + ")")
    return repo.common_dir / "hooks"


def render(python: str, *, fetch: bool = True) -> str:
    """The hook script that runs wavegit with ``python``; ``fetch`` False: one that never fetches."""
    return _SCRIPT.format(marker=MARKER, python=shlex.quote(python), boot=shlex.quote(_boot()),
                          chained=CHAINED_NAME, options="" if fetch else f" {NO_FETCH}")


def _boot() -> str:
    """The Python the hook runs: wavegit's CLI, with the directories this Python imported wavegit and PyYAML
    from put after the standard library's (so that no module in them can shadow a standard one)."""
    roots = dict.fromkeys(str(Path(file).resolve().parents[depth])
                          for file, depth in ((__file__, 2), (yaml.__file__ or "", 1)))
    # repr, not JSON: JSON spells a character past U+FFFF as two \u escapes, which Python reads as two lone
    # surrogates, so a directory named with an emoji was not found and every push failed.
    return (f"import sys; sys.path += {list(roots)!r}; "
            "from wavegit.cli import main; sys.exit(main())")


def _fetches(hook: Path) -> bool:
    """Whether wavegit's installed ``hook`` refreshes the tracker branch (not installed with --no-fetch)."""
    return not any(line.endswith(f'hook pre-push {NO_FETCH} "$@"')
                   for line in hook.read_text(encoding="utf-8", errors="replace").splitlines())


def is_wavegit_hook(path: Path) -> bool:
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            return MARKER in handle.read(4096)
    except OSError:  # absent, a directory, unreadable: not ours
        return False


def _present(path: Path) -> bool:
    """Whether anything (even a dangling symlink) sits at ``path``."""
    return path.exists() or path.is_symlink()


def _write_executable(path: Path, text: str) -> None:
    """Write atomically so git never runs a half-written hook."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.chmod(0o755)
    os.replace(tmp, path)


def install(directory: Path, python: str, *, fetch: bool | None = None) -> InstallResult:
    """Install the hook; ``fetch`` None keeps the choice of the hook it refreshes (else: it fetches)."""
    hook, chained = directory / HOOK_NAME, directory / CHAINED_NAME
    ours = is_wavegit_hook(hook)
    if fetch is None:
        fetch = _fetches(hook) if ours else True
    foreign = not ours and _present(hook)
    if foreign and _present(chained):
        raise UsageError(f"both {hook} (not wavegit's) and {chained} exist; move one of them away first, "
                         "wavegit chains only one foreign hook")
    directory.mkdir(parents=True, exist_ok=True)
    if foreign:
        os.replace(hook, chained)
    _write_executable(hook, render(python, fetch=fetch))
    kept = chained if _present(chained) else None
    return InstallResult(hook=hook, chained=kept, refreshed=ours, fetches=fetch)


def uninstall(directory: Path) -> UninstallResult:
    hook, chained = directory / HOOK_NAME, directory / CHAINED_NAME
    has_chained = _present(chained)
    if not is_wavegit_hook(hook):
        if _present(hook) or not has_chained:
            return UninstallResult(removed=False, restored=None,
                                   note=f"wavegit's hook is not installed in {directory}; nothing changed")
        # Our hook was deleted by hand but the hook it replaced is still set aside: put that back.
        os.replace(chained, hook)
        return UninstallResult(removed=False, restored=hook)
    if has_chained:
        os.replace(chained, hook)
        return UninstallResult(removed=True, restored=hook)
    hook.unlink()
    return UninstallResult(removed=True, restored=None)
