"""The agent CLIs wavegit drives, and the worker profiles that pick one for an item.

A **preset** knows one CLI (:mod:`wavegit.attempts.preset`, one module per CLI): its command line and
variables for a model, a gateway and for where it runs (inside wavegit's bubblewrap sandbox, which is then the
boundary, or unsandboxed), the actions it streams, its account of the run (error, tokens, dollars), which
failures will repeat, and which variables carry its credentials.

A **profile** (config ``workers: {NAME: {preset, model, args, base_url} | {command}}``) is what an item
names with ``worker: NAME``; an item without one runs config ``worker`` (a preset name, a profile name or a
command).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from wavegit.attempts import preset as presets
from wavegit.attempts.preset import Account, Launch, Preset
from wavegit.attempts.preset_claude import CLAUDE
from wavegit.attempts.preset_codex import CODEX
from wavegit.attempts.preset_gemini import GEMINI
from wavegit.attempts.runner import command_argv
from wavegit.core import schema, yamlcompose, yamlread
from wavegit.core.errors import Problem, UsageError, ValidationError
from wavegit.model.config import Config, WorkerProfile

PRESETS: Mapping[str, Preset] = {preset.name: preset for preset in (CLAUDE, CODEX, GEMINI)}
__all__ = ["CLAUDE", "CODEX", "GEMINI", "PRESETS", "Account", "Agent", "Preset"]


@dataclass(frozen=True)
class Agent:
    """The worker of one item: the profile it names (``worker`` for config ``worker``), what it runs."""

    profile: str
    preset: Preset | None
    model: str = ""
    args: tuple[str, ...] = ()
    command: str = ""
    base_url: str = ""

    def launch(self, sandboxed: bool) -> Launch:
        return Launch(self.model, sandboxed, self.base_url)

    def argv(self, sandboxed: bool) -> list[str]:
        if self.preset is not None:
            return self.preset.argv(self.launch(sandboxed), self.args)
        return command_argv(self.command)

    def env(self, sandboxed: bool) -> dict[str, str]:
        """What the preset's CLI gets on top of the worker's environment (nothing for a command)."""
        return self.preset.env(self.launch(sandboxed)) if self.preset is not None else {}

    def seed_home(self, sandboxed: bool, home: Path) -> None:
        """Put the files the preset's CLI needs (its settings) into the attempt's private ``home``."""
        if self.preset is not None:
            presets.seed_home(home, self.preset.home(self.launch(sandboxed)))

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
        values, last_words, whole = presets.read_log(log_path)
        account = self.preset.read(values, last_words)
        results = sum(1 for value in values if isinstance(value, dict) and value.get("type") == "result")
        if whole or not (self.preset.summed or results > 1):
            return account
        # What is left of a log cut short (a tool flooding the output): a sum over it lowers the cost (the
        # turns before the flood cut), and of several results (forged ones) the CLI's own may be the one cut.
        return replace(account, usd=None, input_tokens=None, output_tokens=None)

    def action(self, line: bytes) -> str | None:
        """The action one line of the worker's output says it is taking (None for a command)."""
        return self.preset.action(presets.parse_line(line)) if self.preset is not None else None

    def permanent(self, account: Account) -> str | None:
        """Why a failed run of this agent will fail again on every try, or None."""
        return self.preset.permanent(account) if self.preset is not None else None

    def stops_profile(self, why: str) -> bool:
        """Whether a failure that will repeat for ``why`` (:meth:`permanent`) will for every item of the
        profile: a rejected key does, the item's own maximum of turns does not."""
        return self.preset is not None and why not in self.preset.item_bound

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
    known = tuple(profile.name for profile in config.workers)
    if name is not None and name not in known:
        guess = schema.nearest(name, known)
        hint = f"; did you mean '{guess}'?" if guess else ""
        raise UsageError(f"--worker {name!r}: no such profile in `workers` of the config "
                         f"({', '.join(known) or 'it has none'}){hint}")


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
        problems.append(Problem(path, *yamlread.position(text, node.start_mark),
                                f"worker '{bad[item_id]}' is no profile of the config ({_known(config)})",
                                item_id, hint))
    return problems


def _worker_nodes(root: yamlread.Node | None, ids: set[str]) -> Iterator[tuple[str, yamlread.Node]]:
    """The ``worker:`` value nodes of the items (the first of each id) whose id is in ``ids``."""
    if root is None or not yamlread.is_mapping(root):
        return
    items = next((value for key, value in root.value if yamlread.key_text(key) == "items"), None)
    for entry in items.value if items is not None and yamlread.is_sequence(items) else ():
        if not yamlread.is_mapping(entry):
            continue
        fields = {yamlread.key_text(key): value for key, value in entry.value}
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



def root_refusal(agent: Agent, argv: Sequence[str]) -> str | None:
    """Why ``agent``'s CLI, started as root outside wavegit's sandbox with ``argv``, would refuse to run, with
    the fix; else None."""
    return agent.preset.refuses_root(argv) if agent.preset is not None else None
