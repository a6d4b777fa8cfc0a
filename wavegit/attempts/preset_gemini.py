"""The ``gemini`` preset: Gemini CLI (gemini-cli 0.61.0) in headless mode.

``gemini -p "" --output-format stream-json`` reads the prompt on stdin (``-p`` is appended to it) and prints
one JSON event a line: ``tool_use`` for each tool it runs (the action ``wavegit status`` shows),
``tool_result``, ``message``, and one ``result`` last: ``status`` ``success`` or ``error`` with
``error.message``, and ``stats`` with the run's ``input_tokens`` and ``output_tokens`` over every model
(tokens only: the config's ``prices`` give dollars). It retries 429 and 5xx on its own (on stderr).

Its key is ``GEMINI_API_KEY``. A profile's ``base_url`` becomes ``GOOGLE_GEMINI_BASE_URL``; with that variable
set, 0.61.0 picks an auth type ("gateway") its own check rejects ("Invalid auth method selected.", exit 41),
so the preset writes ``~/.gemini/settings.json`` into the attempt's private HOME, selecting the API key (and
no usage statistics). Not a system settings file (``GEMINI_CLI_SYSTEM_SETTINGS_PATH``): the CLI ignores one
that is not owned by root, which root's files are not inside an ordinary user's bwrap namespace.

Inside wavegit's sandbox it approves every tool (``--yolo``); unsandboxed, edits only (``auto_edit``: no shell
command runs). ``--skip-trust``: the attempt's tree is a folder it has never seen.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from wavegit.attempts.preset import Account, Launch, Preset, count, most, short

SETTINGS = {"security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": False}}
"""The CLI's settings for workers: the API key as the auth type, no usage statistics."""

_PERMANENT = (
    (re.compile(r"API key not valid|API_KEY_INVALID|\b(401|403)\b.*(UNAUTHENTICATED|PERMISSION_DENIED)"),
     "the model API rejected the key: check GEMINI_API_KEY"),
    (re.compile(r"is not found for API version|ModelNotFoundError"),
     "the model does not exist: check `model` of the profile"),
    (re.compile(r"Invalid auth method selected"), "the CLI ignored the auth type in ~/.gemini/settings.json"),
)


def _argv(launch: Launch) -> list[str]:
    approval = ["--yolo"] if launch.sandboxed else ["--approval-mode", "auto_edit"]
    return ["gemini", "-p", "", "--output-format", "stream-json", "--skip-trust", *approval,
            *(["-m", launch.model] if launch.model else [])]


def _env(launch: Launch) -> dict[str, str]:
    return {"GOOGLE_GEMINI_BASE_URL": launch.base_url} if launch.base_url else {}


def _home(launch: Launch) -> dict[str, str]:
    del launch
    return {".gemini/settings.json": json.dumps(SETTINGS)}


def _read(objects: Sequence[object], last_words: str) -> Account:
    results = [_result(o) for o in objects if isinstance(o, Mapping) and o.get("type") == "result"]
    if not results:
        return Account(error=f"gemini: {short(last_words)}" if last_words else None)
    # One result, last; another is a line something in the sandbox wrote into its output: none may lower
    # the account, and the last is not the CLI's word on how the run went (see preset_claude).
    error = results[0].error if len(results) == 1 else (
        f"gemini: {len(results)} result lines where the CLI prints one: something in its sandbox wrote into "
        "its output")
    return Account(input_tokens=most([r.input_tokens for r in results]),
                   output_tokens=most([r.output_tokens for r in results]), error=error, found=True)


def _result(result: Mapping[str, object]) -> Account:
    stats = result.get("stats")
    stats = stats if isinstance(stats, Mapping) else {}
    error = None
    if result.get("status") != "success":
        detail = result.get("error")
        message = detail.get("message") if isinstance(detail, Mapping) else None
        error = f"gemini: {short(str(message or result.get('status') or 'failed'))}"
    return Account(input_tokens=count(stats.get("input_tokens")),
                   output_tokens=count(stats.get("output_tokens")), error=error, found=True)


def _action(event: object) -> str | None:
    if not isinstance(event, Mapping) or event.get("type") != "tool_use":
        return None
    parameters = event.get("parameters")
    parameters = parameters if isinstance(parameters, Mapping) else {}
    target = next((parameters[k] for k in ("file_path", "command", "dir_path", "pattern")
                   if isinstance(parameters.get(k), str)), "")
    return short(f"{event.get('tool_name', '?')} {target}".strip())


def _permanent(account: Account) -> str | None:
    if account.error is None:
        return None
    return next((why for pattern, why in _PERMANENT if pattern.search(account.error)), None)


GEMINI = Preset("gemini", ("GEMINI_API_KEY",), _argv, _read, unsandboxed="edits only: unsandboxed", env=_env,
                home=_home, action=_action, permanent=_permanent, npm=("@google/gemini-cli", "0.61.0"))
