"""Whether the program a worker runs is found, and where the config names it: ``plan`` warns, before any
wave, about a typo in ``worker:`` that ``run`` would refuse (exit 2) only when the wave starts.

A preset's program is its name (``claude``, ``codex``, ``gemini``), so nothing here imports the presets; the
config's text is composed to locate the key only when a program is not found.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path

from wavegit.model.config import CONFIG_PATH, ENV_PREFIX, Config
from wavegit.model.hookconfig import read_text


def program_found(program: str, environ: Mapping[str, str]) -> bool:
    """Whether ``program`` runs: a bare name on ``environ``'s ``PATH``, an absolute path an executable file.
    A relative path is relative to the item's tree, which only the launch has: it counts as found."""
    if "/" not in program:
        return shutil.which(program, path=environ.get("PATH", os.defpath)) is not None
    if os.path.isabs(program):
        return os.path.isfile(program) and os.access(program, os.X_OK)
    return True


def found_as(program: str) -> str:
    """What ``program`` would have to be to be found: ``on PATH`` (a bare name) or ``an executable file``."""
    return "on PATH" if "/" not in program else "an executable file"


def unfound(root: Path, config: Config, workers: Iterable[str | None],
            environ: Mapping[str, str]) -> str | None:
    """One line for the first of ``workers`` (profile names; None: config ``worker``) whose program is not
    found, starting with where it is configured (``path:line:col`` or the variable); None when each is found.
    The default (``worker`` set nowhere) is left to ``run``: a repository not yet set up for agents plans
    without a word. A profile the config lacks is skipped: ``plan`` refuses it by itself."""
    for name in dict.fromkeys(workers):
        found = configured(config, name)
        if found is None:
            continue
        keys, command = found
        program = _program(command)
        if program is None or program_found(program, environ):
            continue
        where = where_set(root, keys, environ)
        if where is None:
            continue
        key = ".".join(keys)
        fix = f"change `{key}`" if where.startswith(CONFIG_PATH) else f"change {where}"
        return (f"{where}: warning: the worker program {program!r} is not {found_as(program)}; "
                f"`wavegit run` here refuses to start (exit 2) until it is: install it, or {fix}")
    return None


def configured(config: Config, name: str | None) -> tuple[tuple[str, ...], str] | None:
    """The config keys that set the worker of profile ``name`` (None: config ``worker``) and their command;
    None for a profile the config lacks."""
    profile = next((p for p in config.workers if p.name == (config.worker.strip() if name is None else name)),
                   None)
    if profile is None:
        return None if name is not None else (("worker",), config.worker)
    field = "command" if profile.command else "preset"
    return ("workers", profile.name, field), profile.command or profile.preset


def _program(command: str) -> str | None:
    """The program of a command line (its first word, split as ``run`` splits it); None when it does not
    split (``run`` refuses that with its own message)."""
    if command.isascii() and command.isprintable() and not any(mark in command for mark in "'\"\\"):
        return next(iter(command.split()), None)  # plain words: no shlex (0.7 ms of a warm plan's imports)
    import shlex

    try:
        words = shlex.split(command)
    except ValueError:
        return None
    return words[0] if words else None


def where_set(root: Path, keys: tuple[str, ...], environ: Mapping[str, str]) -> str | None:
    """Where ``keys`` is set: its variable (``WAVEGIT_WORKER``, which overrides the file) or the file's
    ``path:line:col`` of its value; None when it is set nowhere (the default)."""
    variable = ENV_PREFIX + keys[0].upper()
    if len(keys) == 1 and variable in environ:
        return variable
    text = read_text(root) or ""
    found = value_position(text, keys) if text else None
    return f"{CONFIG_PATH}:{found[0]}:{found[1]}" if found is not None else None


def value_position(text: str, keys: tuple[str, ...]) -> tuple[int, int] | None:
    """The line and column of the value of ``keys`` (nested) in the config ``text``; None when not set."""
    # Only when a program is missing: a warm plan reads no YAML.
    from wavegit.core import yamlread
    from wavegit.core.yamlcompose import compose

    node = compose(text, CONFIG_PATH)
    for key in keys:
        if node is None or not yamlread.is_mapping(node):
            return None
        node = yamlread.value_node(node, key)
    return None if node is None else yamlread.position(text, node.start_mark)
