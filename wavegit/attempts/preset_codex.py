"""The ``codex`` preset: codex-cli 0.171.0 in ``exec`` mode, as it behaves against the OpenAI Responses API.

``codex exec --json`` reads the prompt on stdin (``-``) and prints one JSON event a line as it works:
``item.started`` / ``item.completed`` per command it runs and file it changes (the agent's current action,
for ``wavegit status``), ``turn.completed`` with the turn's ``usage`` (tokens only, so the config's
``prices`` give dollars), ``turn.failed`` with the cause when it gives up.

``{"type": "error", "message": "Reconnecting... 1/5 (...)"}`` is *not* a failure: codex prints one for each
retry of a request, and for each failed WebSocket connection before it falls back to HTTPS (every request,
against a gateway without WebSockets), and then carries on. A run is judged by its exit status,
``turn.failed`` and its tree; the attempt's error is ``turn.failed``'s message alone, one line, and the
retries stay in the log.

Codex reads its key from ``CODEX_API_KEY`` only (with just ``OPENAI_API_KEY`` set it sends none) and its
endpoint from its config, never from ``OPENAI_BASE_URL``: a profile's ``base_url`` becomes
``-c openai_base_url="..."``.

Its own sandbox cannot nest inside bwrap: in wavegit's sandbox it runs with
``--dangerously-bypass-approvals-and-sandbox`` (codex's flag for externally sandboxed environments),
otherwise with ``-s workspace-write``.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, Sequence

from wavegit.attempts.preset import Account, Launch, Preset, count, short, total

_PERMANENT = (
    (re.compile(r"\b401 Unauthorized\b|invalid_api_key|Incorrect API key", re.IGNORECASE),
     "the model API rejected the key (401): check CODEX_API_KEY"),
    (re.compile(r"model `[^`]*` does not exist|model_not_found", re.IGNORECASE),
     "the model does not exist or the key has no access to it: check `model` of the profile"),
)
_SHELLS = ("/bin/bash", "/bin/sh", "/usr/bin/bash", "bash", "sh", "/bin/zsh", "zsh")


def _argv(launch: Launch) -> list[str]:
    jail = ["--dangerously-bypass-approvals-and-sandbox"] if launch.sandboxed else ["-s", "workspace-write"]
    # -c takes TOML: the URL as a quoted string (a JSON string of a URL is one).
    gateway = ["-c", f"openai_base_url={json.dumps(launch.base_url)}"] if launch.base_url else []
    return ["codex", "exec", "--json", *jail, *gateway, *(["-m", launch.model] if launch.model else [])]


def _read(objects: Sequence[object], last_words: str) -> Account:
    """The account of a run: tokens summed over every ``turn.completed``; the error from ``turn.failed``,
    else (no turn completed) from the last ``error`` event or what codex said last on stderr."""
    events = [o for o in objects if isinstance(o, Mapping)]
    usages = [e["usage"] for e in events
              if e.get("type") == "turn.completed" and isinstance(e.get("usage"), Mapping)]
    failed = [_message(e.get("error")) for e in events if e.get("type") == "turn.failed"]
    said = [_message(e) for e in events if e.get("type") == "error"]
    cause = failed[-1] if failed else None
    if cause is None and not usages:
        cause = said[-1] if said else (last_words or None)
    error = f"codex: {short(cause)}" if cause else None
    if not usages:
        return Account(error=error, found=bool(failed or said))
    return Account(input_tokens=total([count(u.get("input_tokens")) for u in usages]),
                   output_tokens=total([count(u.get("output_tokens")) for u in usages]),
                   error=error, found=True)


def _message(value: object) -> str:
    message = value.get("message") if isinstance(value, Mapping) else None
    return message if isinstance(message, str) and message.strip() else "turn failed"


def action(event: object) -> str | None:
    """What codex is doing, from one event it streamed: ``shell: CMD``, ``edit PATH``; None for others."""
    if not isinstance(event, Mapping) or event.get("type") not in ("item.started", "item.completed"):
        return None
    item = event.get("item")
    if not isinstance(item, Mapping):
        return None
    kind = item.get("type")
    if kind == "command_execution" and isinstance(item.get("command"), str):
        return short(f"shell: {_unwrapped(item['command'])}")
    if kind == "file_change" and isinstance(item.get("changes"), list):
        paths = [str(c.get("path")) for c in item["changes"] if isinstance(c, Mapping) and c.get("path")]
        return short(f"edit {', '.join(paths)}") if paths else None
    if kind == "mcp_tool_call":
        return short(f"tool: {item.get('server', '?')}.{item.get('tool', '?')}")
    if kind == "web_search":
        return short(f"web search: {item.get('query', '')}")
    return None


def _unwrapped(command: str) -> str:
    """The command a ``/bin/bash -lc "..."`` wrapper runs (codex reports both)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return command
    if len(words) == 3 and words[0] in _SHELLS and words[1] in ("-lc", "-c"):
        return words[2]
    return command


def _permanent(account: Account) -> str | None:
    """Why a failed run will fail the same way on every try (a rejected key, an unknown model), or None.

    Not after a completed turn: the API took the key and the model then, and a `turn.failed` saying
    otherwise was written into codex's output by something in its sandbox (a tool, through
    /proc/PID/fd/1), which would stop every item of the profile as failed for good."""
    if account.error is None or account.input_tokens is not None or account.output_tokens is not None:
        return None
    return next((why for pattern, why in _PERMANENT if pattern.search(account.error)), None)


CODEX = Preset("codex", ("CODEX_API_KEY",), _argv, _read, summed=True, tail=("-",),
               misread=("OPENAI_API_KEY",),
               action=action, permanent=_permanent, npm=("@openai/codex", "0.171.0"))
