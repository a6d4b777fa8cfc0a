"""wavegit's configuration: ``.wavegit/config.yaml`` with a default for every key, overridden by
``WAVEGIT_<KEY>`` environment variables (nested keys joined with ``_``: ``WAVEGIT_BUDGET_WAVE_USD``).

The parsed file is cached by its text (a CRC-32 names the entry, which holds the text), so a warm load does
not import yaml.
"""

import math
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, NamedTuple

from wavegit import __version__
from wavegit.core import parsecache, schema
from wavegit.core.errors import Problem, UsageError, ValidationError
from wavegit.model.hookconfig import CONFIG_PATH as CONFIG_PATH
from wavegit.model.hookconfig import read_file

TRACKER_PATH = ".wavegit/tracker.yaml"
HALT_PATH = ".wavegit/HALT"
ENV_PREFIX = "WAVEGIT_"


def _repo_path(value: schema.Value) -> str | None:
    from wavegit.ownership.patterns import PatternError, normalize

    try:
        normalize(str(value))
    except PatternError as exc:
        return str(exc)
    return None


def _repo_paths(value: schema.Value) -> str | None:
    for path in value if isinstance(value, tuple) else ():
        complaint = _repo_path(path)
        if complaint is not None:
            return complaint
    return None


def _workflow_files(value: schema.Value) -> str | None:
    for name in value if isinstance(value, tuple) else ():
        if "/" in name or not name.endswith((".yml", ".yaml")) or name.startswith("."):
            return f"must list workflow file names of .github/workflows/ (like ci.yml), not {name!r}"
    return None


def protected_of(config: "Config") -> tuple[str, ...] | None:
    """The protected paths of ``config`` (``wavegit.ownership.protected``), or None when they are the
    defaults (so that a warm ``plan`` need not import the module that computes them)."""
    if not config.protected_paths and not config.allow_protected and config.tracker_path == TRACKER_PATH:
        return None
    from wavegit.ownership.patterns import PatternError
    from wavegit.ownership.protected import protected_set

    try:
        return protected_set(config.protected_paths, config.allow_protected, config.tracker_path)
    except PatternError as exc:
        raise UsageError(f"{CONFIG_PATH}: {exc}") from None


def _ref_name(value: schema.Value) -> str | None:
    text = str(value)
    bad = (not text.strip() or any(c in text for c in " ~^:?*[\\") or text.startswith(("-", "/"))
           or ".." in text)
    return "must be a valid git branch name" if bad else None


# Every key is declared once, here: name, type, default, validation and doc line. CONFIG_SCHEMA (what the
# file and the environment may set), the commented file `wavegit init` writes and the README's table come
# from these records. NamedTuples, annotations not postponed: the pre-push hook loads the config (see
# wavegit.core.git.GitResult).
class Budget(NamedTuple):
    wave_usd: Annotated[float, schema.key("ceiling per wave in USD; 0 = none", schema.at_least(0))] = 0.0
    day_usd: Annotated[float, schema.key("ceiling per UTC day in USD; 0 = none", schema.at_least(0))] = 0.0
    wave_tokens: Annotated[int, schema.key(
        "ceiling per wave in tokens (input + output); 0 = none", schema.at_least(0))] = 0


# Variables that let a process steer the GitHub Actions job it runs in (later steps' environment, PATH,
# outputs) or talk to the runner: a worker never gets them, listed or not.
FORBIDDEN_WORKER_ENV = ("GITHUB_ENV", "GITHUB_PATH", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_STATE")
TOKEN_VARS = ("GITHUB_TOKEN", "GH_TOKEN", "GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN",
              "WAVEGIT_APP_PRIVATE_KEY", "WAVEGIT_APP_PRIVATE_KEY_FILE")


def _worker_env_names(value: schema.Value) -> str | None:
    for name in value if isinstance(value, tuple) else ():
        if name in FORBIDDEN_WORKER_ENV or name.startswith("ACTIONS_"):
            return f"must not list {name}: it would let a worker steer the workflow job"
        if name in TOKEN_VARS and name.startswith("WAVEGIT_APP"):
            return f"must not list {name}: a GitHub App's private key never reaches a worker"
        if name in TOKEN_VARS:
            return f"must not list {name}: set worker_github_token: true to pass the token"
        if not name or "=" in name or "\0" in name:
            return f"has an invalid variable name {name!r}"
    return None


def _prompt_template(value: schema.Value) -> str | None:
    from wavegit.model.prompt import template_problem

    return template_problem(value) if isinstance(value, str) else None


class SandboxConfig(NamedTuple):
    mode: Annotated[str, schema.key(
        "`auto`: bwrap when it works, else unsandboxed with a warning; `bwrap`; `none`",
        choices=("auto", "bwrap", "none"))] = "auto"
    network: Annotated[bool, schema.key(
        "whether sandboxed workers reach the network (the machine's, its loopback included); item tests and "
        "the wave test always get a network namespace of their own")] = True
    ro_paths: Annotated[tuple[str, ...], schema.key(
        "extra paths sandboxed workers see read-only (toolchains the sandbox hides)")] = ()
    rw_paths: Annotated[tuple[str, ...], schema.key("extra paths sandboxed workers may write (caches)")] = ()
    log_bytes: Annotated[int, schema.key(
        "bytes of a worker's or test's output kept in its log (head and tail, the middle dropped); 0 = all",
        schema.at_least(0))] = 4 * 1024 * 1024
    tmp_bytes: Annotated[int, schema.key(
        "size of the tmpfs each sandboxed process gets as HOME, as TMPDIR and as /dev/shm (memory: only what "
        "is used); 0 = on disk, unlimited",
        schema.at_least(0))] = 1024 * 1024 * 1024
    pids: Annotated[int, schema.key(
        "processes (and threads) one worker or test may run at once; 0 = unlimited",
        schema.at_least(0))] = 1024
    memory_bytes: Annotated[int, schema.key(
        "memory one worker or test may use (its whole attempt with a writable cgroup, else each process); "
        "0 = unlimited", schema.at_least(0))] = 4 * 1024 * 1024 * 1024


PRESETS = ("claude", "codex", "gemini")
"""The agent CLIs wavegit knows how to drive (``wavegit.attempts.agents``)."""


def _profile(value: schema.Value) -> str | None:
    if not isinstance(value, dict):
        return None
    if bool(value.get("preset")) == bool(value.get("command")):
        return "needs either `preset` or `command`"
    if value.get("command") and (value.get("model") or value.get("args") or value.get("base_url")):
        return "takes `model`, `args` and `base_url` only with a `preset` (put them in the command)"
    return None


def _http_url(value: schema.Value) -> str | None:
    if isinstance(value, str) and value and not re.fullmatch(r"https?://[^\s/?#]+[^\s]*", value):
        return f"is {value!r}: it must be an http:// or https:// URL"
    return None


class WorkerProfile(NamedTuple):
    """One entry of config ``workers``: a named way to run a worker, which an item picks with ``worker:``."""

    name: str
    preset: Annotated[str, schema.key("a preset (`claude`, `codex`, `gemini`)", choices=PRESETS)] = ""
    model: Annotated[str, schema.key("the model the preset asks for; empty = the CLI's default")] = ""
    args: Annotated[tuple[str, ...], schema.key("extra arguments for the preset's command")] = ()
    base_url: Annotated[str, schema.key(
        "the model API (a gateway or proxy) the preset's CLI talks to, in the variable or option that CLI "
        "reads; empty = the CLI's default", _http_url)] = ""
    command: Annotated[str, schema.key(
        "a command line instead of a preset", schema.command(required=False))] = ""


class ModelPrice(NamedTuple):
    """One entry of config ``prices``: what a model's tokens cost, for agents that report only tokens."""

    model: str
    input_per_mtok: Annotated[float, schema.key("USD per million input tokens", schema.at_least(0))] = 0.0
    output_per_mtok: Annotated[float, schema.key("USD per million output tokens", schema.at_least(0))] = 0.0


def _branch_names(value: schema.Value) -> str | None:
    for name in value if isinstance(value, tuple) else ():
        if name != "*" and _ref_name(name) is not None:
            return f"has {name!r}: each must be a valid git branch name, or *"
    return None


class HookConfig(NamedTuple):
    strict: Annotated[bool, schema.key(
        "the pre-push hook refuses (instead of warning) when the tracker cannot be read")] = False
    max_age_s: Annotated[float, schema.key(
        "the pre-push hook fetches the tracker branch first when its copy is older than this; 0 = always",
        schema.seconds(schema.at_least(0)))] = 60.0
    fetch_timeout_s: Annotated[float, schema.key(
        "how long that fetch may take before the hook warns and checks the copy it has",
        schema.seconds())] = 5.0
    refuse_on: Annotated[tuple[str, ...], schema.key(
        "branches to which a push touching files in flight is refused; elsewhere it is a warning; empty = "
        "`base_branch` and `tracker_branch`, `*` = every branch", _branch_names)] = ()


class Config(NamedTuple):
    worker: Annotated[str, schema.key(
        "command run in each item's worktree, prompt on stdin and in `$WAVEGIT_PROMPT_FILE`; presets "
        "`claude`, `codex` and `gemini`, or the name of a `workers` profile; items without `worker:` use it",
        schema.command(required=True))] = "claude"
    workers: Annotated[tuple[WorkerProfile, ...], schema.key(
        "worker profiles by name, `NAME: {preset: claude, model: opus, args: [..]}` or "
        "`NAME: {command: ..}`, which an item picks with `worker: NAME`", _profile)] = ()
    prices: Annotated[tuple[ModelPrice, ...], schema.key(
        "token prices by model (`MODEL: {input_per_mtok: 3, output_per_mtok: 15}`), for agents that report "
        "only tokens")] = ()
    prompt_template: Annotated[str, schema.key(
        "what a worker receives: `$prompt` inside the contract (`$id`, `$title`, `$owns`, `$test`); empty "
        "= the default, which says what it may change and what judges it", _prompt_template)] = ""
    concurrency: Annotated[int, schema.key("workers at once", schema.at_least(1))] = 4
    max_items: Annotated[int, schema.key("items per wave", schema.at_least(1))] = 8
    wave_window_s: Annotated[float, schema.key(
        "`run --continuous`: a wave takes new items for this long after its first claim (or until it has "
        "`max_items`), then closes and is delivered once its last item ends", schema.seconds())] = 600.0
    timeout_s: Annotated[float, schema.key(
        "wall-clock limit per attempt in seconds (the process group is killed: SIGTERM, then SIGKILL)",
        schema.seconds())] = 1800.0
    idle_timeout_s: Annotated[float, schema.key("no output for this long = hung", schema.seconds())] = 600.0
    attempts: Annotated[int, schema.key("tries per item per wave", schema.at_least(1))] = 2
    max_attempts: Annotated[int, schema.key(
        "tries per item across all waves; an item reaching it becomes `failed` instead of `todo`",
        schema.at_least(1))] = 4
    max_file_bytes: Annotated[int, schema.key(
        "a changed file larger than this (50 MB) fails the attempt as a violation, before anything is staged",
        schema.at_least(1))] = 52428800
    max_changed_files: Annotated[int, schema.key(
        "more changed files than this fail the attempt as a violation, before anything is staged",
        schema.at_least(1))] = 5000
    wave_test: Annotated[str, schema.key(
        "run on the combined wave branch; empty = none", schema.command(required=False))] = ""
    lease_ttl_s: Annotated[float, schema.key(
        "a claim with no wave branch after this long is released by `sync`", schema.seconds())] = 7200.0
    heartbeat_s: Annotated[float, schema.key(
        "a running wave pushes its scheduler's heartbeat (`refs/wavegit/heartbeat/<W>`) this often; "
        "missing 4 says the scheduler is gone", schema.seconds())] = 30.0
    keep_branches: Annotated[bool, schema.key(
        "`sync` keeps the wave and item branches of settled waves instead of deleting those whose work is "
        "in the base branch")] = False
    budget: Annotated[Budget, schema.key("cost ceilings")] = Budget()
    base_branch: Annotated[str, schema.key(
        "waves branch from here and pull requests target it", _ref_name)] = "main"
    tracker_branch: Annotated[str, schema.key(
        "where tracker commits go; `wavegit init` with a remote writes `wavegit-tracker`, a branch of its "
        "own (see *Where the tracker lives*)", _ref_name)] = "main"
    tracker_path: Annotated[str, schema.key(
        "the tracker file, relative to the repository root", _repo_path)] = TRACKER_PATH
    remote: Annotated[str, schema.key(
        "the remote waves push to; without it everything stays local", schema.not_blank)] = "origin"
    report_authors: Annotated[tuple[str, ...], schema.key(
        "whose report comments the merge gate believes, besides the identity wavegit's own token posts as "
        "(never `github-actions[bot]` unless listed)")] = ("github-actions[bot]",)
    ci_workflows: Annotated[tuple[str, ...], schema.key(
        "workflow files of `.github/workflows/` (with a `workflow_dispatch` trigger) that a wave starts on "
        "its branch when it publishes with `GITHUB_TOKEN`, whose pull requests start no workflow",
        _workflow_files)] = ()
    intake_label: Annotated[str, schema.key(
        "`wavegit intake` takes the open GitHub issues carrying this label", schema.not_blank)] = "wavegit"
    worker_github_token: Annotated[bool, schema.key(
        "pass `GITHUB_TOKEN` to workers (never, unless you say so)")] = False
    hook: Annotated[HookConfig, schema.key("the pre-push hook")] = HookConfig()
    worker_env: Annotated[tuple[str, ...], schema.key(
        "variables passed to workers besides `PATH`, `LANG`/`LC_*`, `TERM`, `PYENV_VERSION` and "
        "wavegit's own `WAVEGIT_*` "
        "(others are not passed)",
        _worker_env_names)] = ()
    sandbox: Annotated[SandboxConfig, schema.key(
        "where workers run: `sandbox: auto|bwrap|none`, or this mapping", shorthand="mode")] = SandboxConfig()
    protected_paths: Annotated[tuple[str, ...], schema.key(
        "paths no item may own nor any worker change, besides `.wavegit/`, `.github/workflows/`, "
        "`.github/actions/`, `.gitmodules`, the agents' files (below) and the tracker", _repo_paths)] = ()
    allow_protected: Annotated[tuple[str, ...], schema.key(
        "protected paths items may own after all (each must equal one of them)", _repo_paths)] = ()

CONFIG_SCHEMA = schema.record_schema("config", Config)

# Bump when parsing or validation changes: entries are keyed by content, not by the code that parsed them.
_CACHE_FORMAT = f"wavegit-config-cache-9-{__version__}"


def config_from(text: str | None, cache_dir: Path | None, environ: Mapping[str, str]) -> Config:
    """The configuration that the file text ``text`` (None: no file) gives, with ``environ``'s overrides."""
    values = _file_values(text, cache_dir) if text is not None else {}
    _apply_env(values, environ)
    return _build(values)


def load_config(repo_root: Path, cache_dir: Path | None = None,
                environ: Mapping[str, str] | None = None) -> Config:
    """The configuration of the repository at ``repo_root`` (defaults when the file is absent).

    ``cache_dir`` (normally ``repo.cache_dir``) enables the parse cache; ``environ`` defaults to
    ``os.environ``. File problems raise ValidationError; bad environment values raise UsageError naming
    the variable.
    """
    try:
        text = read_file(repo_root)
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{CONFIG_PATH}: cannot read: {exc}") from None
    return config_from(text or None, cache_dir, os.environ if environ is None else environ)  # "": no file


def _file_values(text: str, cache_dir: Path | None) -> dict[str, schema.Value]:
    entry = parsecache.text_entry(cache_dir, "config", text) if cache_dir is not None else None
    cached = parsecache.read_text_keyed(entry, _CACHE_FORMAT, text) if entry is not None else None
    if not isinstance(cached, tuple):
        try:
            cached = ("ok", parse_config_text(text))
        except ValidationError as exc:
            cached = ("error", tuple((p.line, p.col, p.message, p.item_id, p.hint) for p in exc.problems))
        if entry is not None:
            parsecache.write_text_keyed(entry, _CACHE_FORMAT, text, cached)
    if cached[0] == "error":
        raise ValidationError([Problem(CONFIG_PATH, *p) for p in cached[1]])
    values: dict[str, schema.Value] = cached[1]
    return values


def parse_config_text(text: str, path: str = CONFIG_PATH) -> dict[str, schema.Value]:
    """The typed values the config text sets (a subset of the keys); ValidationError lists every problem."""
    # A parse only: a warm run never composes.
    from wavegit.core import yamlread
    from wavegit.core.yamlcompose import compose

    root = compose(text, path)
    if root is None or (root.id == "scalar" and root.tag == yamlread.NULL):
        return {}
    where = yamlread.Located(path, text)
    if root.id != "mapping":
        where.at(root, f"the config must be a mapping, got {yamlread.describe(root)}", None,
                 "write one 'key: value' per line")
        raise ValidationError(where.problems)
    values = yamlread.read_mapping(root, CONFIG_SCHEMA, where)
    if where.problems:
        raise ValidationError(where.problems)
    return values


def env_targets() -> Iterator[tuple[str | None, schema.Field, str]]:
    """(section, field, variable) of each variable that overrides a key (``section``: None at the top)."""
    for spec in CONFIG_SCHEMA.fields:
        if spec.kind == "records":
            continue  # set in the file only
        if spec.nested is None:
            yield None, spec, ENV_PREFIX + spec.name.upper()
            continue
        if spec.shorthand is not None:
            # WAVEGIT_SANDBOX=none sets the mode, as `sandbox: none` does in the file.
            yield spec.name, spec.nested.index[spec.shorthand], ENV_PREFIX + spec.name.upper()
        for sub in spec.nested.fields:
            yield spec.name, sub, f"{ENV_PREFIX}{spec.name.upper()}_{sub.name.upper()}"


def _apply_env(values: dict[str, schema.Value], environ: Mapping[str, str]) -> None:
    errors: list[str] = []
    for section, spec, var in env_targets():
        target = values
        if section is not None:  # a nested mapping's key
            nested = values.get(section)
            target = values[section] = dict(nested) if isinstance(nested, dict) else {}
        _env_value(target, spec, var, environ, errors)
    if errors:
        raise UsageError("; ".join(errors))


_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def _env_value(values: dict[str, schema.Value], spec: schema.Field, var: str, environ: Mapping[str, str],
               errors: list[str]) -> None:
    raw = environ.get(var)
    if raw is None:
        return
    value: schema.Value
    text = raw.strip()
    try:
        if spec.kind == "int":
            value = int(text)
        elif spec.kind == "float":
            value = float(text)
            if not math.isfinite(value):
                raise ValueError(text)
        elif spec.kind == "bool":
            if text.lower() not in _TRUE + _FALSE:
                raise ValueError(text)
            value = text.lower() in _TRUE
        elif spec.kind == "str_list":
            value = tuple(part.strip() for part in raw.split(",") if part.strip())
        else:
            value = raw
    except ValueError:
        errors.append(f"environment variable {var}={raw!r}: expected {schema.EXPECTED[spec.kind]}")
        return
    refused = schema.refusal(value, spec)
    if refused is not None:
        errors.append(f"environment variable {var}={raw!r}: {spec.name} {refused}")
        return
    values[spec.name] = value


def _build(values: Mapping[str, schema.Value]) -> Config:
    """The defaults with ``values`` set; a section (a nested mapping) sets the fields of its record."""
    defaults = Config()
    sections = {name: _records(name, section) if name in _RECORDS else getattr(defaults, name)._replace(
        **_set(section)) for name, section in values.items() if isinstance(section, dict)}
    # The schema has checked every value's type against the records' fields.
    return defaults._replace(**_set(values), **sections)  # type: ignore[arg-type]


_RECORDS = {"workers": WorkerProfile, "prices": ModelPrice}
"""The record of each ``records`` key, named by its first field."""


def _records(name: str, entries: Mapping[str, schema.Value]) -> tuple[tuple[object, ...], ...]:
    record = _RECORDS[name]
    return tuple(record(key, **_set(fields)) for key, fields in entries.items() if isinstance(fields, dict))


def _set(values: Mapping[str, schema.Value]) -> dict[str, schema.Value]:
    return {name: value for name, value in values.items()
            if value is not None and not isinstance(value, dict)}


def initial_config_text(values: Config | None = None) -> str:
    """The commented config ``wavegit init`` writes: every key with its value (by default, the default) and
    what it is for."""
    from wavegit.core.yamledit import render

    defaults = values or Config()
    lines = ["# wavegit configuration. Every key has a default; WAVEGIT_<KEY> in the environment overrides",
             "# it (nested keys joined with '_', e.g. WAVEGIT_BUDGET_WAVE_USD; lists comma-separated)."]
    for spec in CONFIG_SCHEMA.fields:
        value = getattr(defaults, spec.name)
        if spec.kind == "records":
            lines.append(f"{spec.name}: {{}}  # {spec.doc}")
            continue
        if spec.nested is None:
            lines.append(f"{spec.name}: {render(_plain(value))}  # {spec.doc}")
            continue
        lines.append(f"{spec.name}:  # {spec.doc}")
        lines.extend(f"  {sub.name}: {render(_plain(getattr(value, sub.name)))}  # {sub.doc}"
                     for sub in spec.nested.fields)
    return "\n".join(lines) + "\n"


def _plain(value: object) -> object:
    return list(value) if isinstance(value, tuple) else value
