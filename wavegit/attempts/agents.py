"""The agent CLIs wavegit drives, and the worker profiles that pick one for an item.

A **preset** knows one CLI: how to build its command line for a model and for where it runs (inside
wavegit's bubblewrap sandbox, which is then the boundary, or unsandboxed), how to read its account of the run
(error, tokens, dollars) from the log, and which variables carry its credentials. Checked against Claude Code
2.1.197 and codex-cli 0.171.0:

- ``claude -p --output-format json`` reads the prompt on stdin and prints one JSON result: ``is_error`` with
  its ``result`` text (e.g. "Not logged in") and ``permission_denials`` say why it failed, ``total_cost_usd``
  and ``usage`` what it spent. In print mode ``acceptEdits`` lets it edit but run no command (not even the
  item's test), so in the sandbox the preset grants every permission; unsandboxed it keeps edits only.
- ``codex exec --json`` reads the prompt on stdin (``-``) and prints JSON events: ``turn.completed`` carries
  ``usage`` (tokens only, so the config's ``prices`` give dollars), ``turn.failed`` and ``error`` why it
  failed. Its own sandbox cannot nest inside bwrap: in wavegit's sandbox it runs with
  ``--dangerously-bypass-approvals-and-sandbox`` (codex's flag for externally sandboxed environments),
  otherwise with ``-s workspace-write``.

A **profile** (config ``workers: {NAME: {preset, model, args} | {command}}``) is what an item names with
``worker: NAME``; an item without one runs config ``worker`` (a preset name, a profile name or a command).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from wavegit.attempts import preset_codex
from wavegit.attempts.account import Account, count, most, usd_amount
from wavegit.attempts.runner import command_argv
from wavegit.core import schema, yamlcompose
from wavegit.core.errors import Problem, UsageError, ValidationError
from wavegit.core.jsondecode import reject_constant
from wavegit.model.config import Config, WorkerProfile

LOG_SCAN_BYTES = 4 * 1024 * 1024
"""How much of a log's end is scanned for an agent's JSON result or events."""

@dataclass(frozen=True)
class Preset:
    """One agent CLI."""

    name: str
    credentials: tuple[str, ...]
    """Variables that carry its credentials, any one of which will do."""
    build: Callable[[str, bool, str], list[str]]
    """``(model, sandboxed, base_url) -> argv`` before the profile's extra args."""
    read: Callable[[Sequence[object]], Account]
    """The account of a run from the JSON objects of its log, in order."""
    tail: tuple[str, ...] = ()
    """Arguments after the profile's extra args (Codex's ``-``: the prompt on stdin)."""
    unsandboxed: str = ""
    """What the report says of a run outside wavegit's sandbox, when it is given less there."""
    misread: tuple[str, ...] = ()
    """Variables users set for this CLI that it does not read for its credentials."""

    def argv(self, model: str, args: Sequence[str], sandboxed: bool, base_url: str = "") -> list[str]:
        return [*self.build(model, sandboxed, base_url), *args, *self.tail]


def _claude_argv(model: str, sandboxed: bool, base_url: str) -> list[str]:
    del base_url
    permissions = "bypassPermissions" if sandboxed else "acceptEdits"
    return ["claude", "-p", "--output-format", "json", "--permission-mode", permissions,
            *(["--model", model] if model else [])]


def _claude_read(objects: Sequence[object]) -> Account:
    results = [_claude_result(o) for o in objects if isinstance(o, dict) and o.get("type") == "result"]
    if len(results) <= 1:
        return results[0] if results else Account()
    # Claude prints one result, last; any other is a line something in the sandbox wrote into its output
    # (through /proc/PID/fd/1): none may lower the account, and one that cannot be read spoils it.
    return replace(results[-1], usd=most([r.usd for r in results]),
                   input_tokens=most([r.input_tokens for r in results]),
                   output_tokens=most([r.output_tokens for r in results]))


def _claude_result(result: dict[str, object]) -> Account:
    usage = result.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    inputs = [count(usage.get(k)) for k in
              ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")]
    known = [n for n in inputs if n is not None]
    text = result.get("result")
    error = (f"claude: {text if isinstance(text, str) and text else result.get('subtype')}"
             if result.get("is_error") is True else None)
    return Account(usd=usd_amount(result.get("total_cost_usd")), input_tokens=sum(known) if known else None,
                   output_tokens=count(usage.get("output_tokens")), error=error,
                   denied=_claude_denials(result.get("permission_denials")), found=True)


def _claude_denials(denials: object) -> str | None:
    if not isinstance(denials, list) or not denials:
        return None
    tools = sorted({str(d.get("tool_name", "?")) for d in denials if isinstance(d, dict)})
    count = f"{len(denials)} denial{'s' if len(denials) != 1 else ''}"
    return f"claude was denied permission for {', '.join(tools) or 'a tool'} ({count})"


CLAUDE = Preset("claude", ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"), _claude_argv, _claude_read,
                unsandboxed="edits only: unsandboxed")
CODEX = Preset("codex", preset_codex.CREDENTIALS, preset_codex.argv, preset_codex.read, tail=("-",),
               misread=preset_codex.MISREAD)
PRESETS: Mapping[str, Preset] = {preset.name: preset for preset in (CLAUDE, CODEX)}


@dataclass(frozen=True)
class Agent:
    """The worker of one item: the profile it names (``worker`` for config ``worker``), what it runs."""

    profile: str
    preset: Preset | None
    model: str = ""
    args: tuple[str, ...] = ()
    command: str = ""
    base_url: str = ""

    def argv(self, sandboxed: bool) -> list[str]:
        if self.preset is not None:
            return self.preset.argv(self.model, self.args, sandboxed, self.base_url)
        return command_argv(self.command)

    def label(self, sandboxed: bool) -> str:
        """What ran, for the report and the ``Wavegit-Worker`` trailer: ``deep (claude, opus)``, with the
        preset's ``unsandboxed`` note when it ran outside wavegit's sandbox."""
        if self.preset is None:
            return f"{self.profile} (command)"
        what = [self.preset.name, self.model, "" if sandboxed else self.preset.unsandboxed]
        return f"{self.profile} ({', '.join(part for part in what if part)})"

    def read_log(self, log_path: Path) -> Account:
        """The preset's account of the run in its log (nothing for a command)."""
        if self.preset is None:
            return Account()
        return self.preset.read(list(_json_lines(log_path)))


DEFAULT_PROFILE = "worker"
"""The profile name of config ``worker`` when it is not itself a profile's name."""


def resolve(config: Config, name: str | None) -> Agent:
    """The agent of an item whose ``worker`` is ``name`` (None: config ``worker``); UsageError for an unknown
    profile."""
    profiles = {profile.name: profile for profile in config.workers}
    if name is not None:
        profile = profiles.get(name)
        if profile is None:
            raise UsageError(f"unknown worker profile {name!r}: {_known(config)}")
        return _agent(profile)
    default = config.worker.strip()
    if default in profiles:
        return _agent(profiles[default])
    preset = PRESETS.get(default)
    if preset is not None:
        return Agent(DEFAULT_PROFILE, preset)
    return Agent(DEFAULT_PROFILE, None, command=config.worker)


def check_option(config: Config, name: str | None) -> None:
    """UsageError naming ``--worker`` unless ``name`` (None: not given) is a profile of ``config``."""
    if name is not None and name not in {profile.name for profile in config.workers}:
        names = ", ".join(profile.name for profile in config.workers) or "it has none"
        raise UsageError(f"--worker {name!r}: no such profile in `workers` of the config ({names})")


def _agent(profile: WorkerProfile) -> Agent:
    preset = PRESETS.get(profile.preset) if profile.preset else None
    return Agent(profile.name, preset, profile.model, profile.args, profile.command, profile.base_url)


def _known(config: Config) -> str:
    names = [profile.name for profile in config.workers]
    return (f"config workers has {', '.join(repr(n) for n in names)}" if names
            else "config workers has no profiles")


def unknown_profiles(text: str, path: str, config: Config,
                     workers: Sequence[tuple[str, str | None]]) -> list[Problem]:
    """One ``path:line:col`` problem per item of ``workers`` (id, its ``worker``) naming no profile of
    ``config``, located at its ``worker:`` value in the tracker ``text`` (composed only when one does)."""
    known = {profile.name for profile in config.workers}
    bad = {item_id: name for item_id, name in workers if name is not None and name not in known}
    if not bad:
        return []
    problems = []
    for item_id, node in _worker_nodes(yamlcompose.compose(text, path), set(bad)):
        guess = schema.nearest(bad[item_id], tuple(known))
        hint = f"did you mean '{guess}'?" if guess else "add it to `workers` in .wavegit/config.yaml"
        problems.append(Problem(path, node.start_mark.line + 1, node.start_mark.column + 1,
                                f"worker '{bad[item_id]}' is no profile of the config ({_known(config)})",
                                item_id, hint))
    return problems


def _worker_nodes(root: schema.Node | None, ids: set[str]) -> Iterator[tuple[str, schema.Node]]:
    """The ``worker:`` value nodes of the items (the first of each id) whose id is in ``ids``."""
    if root is None or not schema.is_mapping(root):
        return
    items = next((value for key, value in root.value if schema.key_text(key) == "items"), None)
    for entry in items.value if items is not None and schema.is_sequence(items) else ():
        if not schema.is_mapping(entry):
            continue
        fields = {schema.key_text(key): value for key, value in entry.value}
        item_id = fields.get("id")
        if item_id is not None and item_id.value in ids and "worker" in fields:
            ids.discard(item_id.value)
            yield item_id.value, fields["worker"]


def check_profiles(text: str, path: str, config: Config, workers: Sequence[tuple[str, str | None]]) -> None:
    """ValidationError listing :func:`unknown_profiles`, if any."""
    problems = unknown_profiles(text, path, config, workers)
    if problems:
        raise ValidationError(problems)


def missing_credentials(agent: Agent, config: Config, environ: Mapping[str, str]) -> str | None:
    """Why ``agent``'s preset would start without credentials, or None: one of its variables must be set
    here and listed in ``worker_env`` (the worker gets nothing else, and a private, empty HOME: a login
    of yours under ``~/.claude`` or ``~/.codex`` does not reach it)."""
    preset = agent.preset
    if preset is None:
        return None
    if any(environ.get(name) and name in config.worker_env for name in preset.credentials):
        return None
    names = " or ".join(preset.credentials)
    unlisted = [name for name in preset.credentials if environ.get(name) and name not in config.worker_env]
    if unlisted:
        return (f"{unlisted[0]} is set but not listed in `worker_env`, so the worker would not get it; add "
                f"`worker_env: [{unlisted[0]}]` to .wavegit/config.yaml")
    misread = [name for name in preset.misread if environ.get(name)]
    if misread:
        return (f"{preset.name} reads its key from {names}, not {misread[0]}: set {preset.credentials[0]} "
                f"(e.g. {preset.credentials[0]}=${misread[0]}) and list it in `worker_env`")
    return (f"{preset.name} needs {names} set and listed in `worker_env` (workers get a private, empty "
            "HOME: your login does not reach them)")


def _json_lines(log_path: Path) -> Iterator[object]:
    """The JSON values of the lines of the last ``LOG_SCAN_BYTES`` of the log that parse as one."""
    try:
        with log_path.open("rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - LOG_SCAN_BYTES))
            text = fh.read().decode("utf-8", errors="replace")
    except OSError:
        return
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            yield json.loads(line, parse_constant=reject_constant)
        except (ValueError, RecursionError):
            continue
