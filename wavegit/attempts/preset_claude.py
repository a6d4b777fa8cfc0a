"""The ``claude`` preset: Claude Code (checked against 2.1.332, the version CI and the Action install).

``claude -p --output-format stream-json --verbose`` reads the prompt on stdin and streams one JSON object a
line as it works: ``assistant`` messages with the ``tool_use`` blocks it runs (the last one is the action
``wavegit status`` shows), ``system`` events (``api_retry`` while it retries a 429/500/529 on its own),
and one ``result`` last. Each line counts as output for ``idle_timeout_s``, so a long run that keeps
working is not killed as hung.

The ``result`` says how the run went: ``is_error`` with its ``result`` text ("Failed to authenticate. API
Error: 401 ...") or, for ``error_max_turns`` and the like, ``errors[]``; ``permission_denials``; what it
spent: ``total_cost_usd`` and ``modelUsage``, per model, which covers sub-agents and side requests (its
``usage`` covers the main conversation only). Without a result (it refused to start) the log's last line
that is not JSON is its word (stderr, merged into the log).

In print mode ``acceptEdits`` lets it edit but run no command (not even the item's test), so in the sandbox
the preset grants every permission (``bypassPermissions``), and sets ``IS_SANDBOX=1``: as root the CLI refuses
that mode unless told it runs in a sandbox. Unsandboxed it keeps edits only, and as root a profile that asks
for every permission anyway is refused before the claim (:attr:`Preset.refuses_root`). It never updates
itself or sends telemetry from a worker (``DISABLE_AUTOUPDATER``,
``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC``), and the profile's ``base_url`` becomes ``ANTHROPIC_BASE_URL``.
"""

from __future__ import annotations

from collections.abc import Sequence

from wavegit.attempts.preset import Account, Launch, Preset, count, most, short, total, usd_amount

BYPASS_FLAGS = ("--dangerously-skip-permissions", "bypassPermissions")
"""Arguments by which a profile asks for every permission (refused by the CLI as root outside a sandbox)."""


def _argv(launch: Launch) -> list[str]:
    permissions = "bypassPermissions" if launch.sandboxed else "acceptEdits"
    return ["claude", "-p", "--output-format", "stream-json", "--verbose", "--permission-mode", permissions,
            *(["--model", launch.model] if launch.model else [])]


def _env(launch: Launch) -> dict[str, str]:
    env = {"DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    if launch.sandboxed:
        env["IS_SANDBOX"] = "1"
    if launch.base_url:
        env["ANTHROPIC_BASE_URL"] = launch.base_url
    return env


def _read(objects: Sequence[object], last_words: str) -> Account:
    results = [_result(o) for o in objects if isinstance(o, dict) and o.get("type") == "result"]
    if not results:
        return Account(error=f"claude: {short(last_words)}" if last_words else None)
    if len(results) == 1:
        return results[0]
    # Claude prints a result for each turn of its session: a background task's (a sub-agent's) notification
    # after the first result starts another turn, whose result holds the session's totals so far. Any other
    # is a line something in the sandbox wrote into its output (through /proc/PID/fd/1): none may lower the
    # account (each total is the most any result says), and one that cannot be read spoils it. Nor is an
    # error among them Claude's word on its profile (a forged "Not logged in" after Claude's own stopped every
    # item of the profile as failed for good): the run failed, no more.
    failed = any(r.error for r in results)
    return Account(usd=most([r.usd for r in results]), input_tokens=most([r.input_tokens for r in results]),
                   output_tokens=most([r.output_tokens for r in results]),
                   error=_SEVERAL.format(len(results)) if failed else None, denied=results[-1].denied,
                   found=True)


_SEVERAL = ("claude: {} result lines, not every one a success: the run failed (none of them is taken as the "
            "CLI's word on its profile: something in its sandbox may have written it)")


def _result(result: dict[str, object]) -> Account:
    inputs, outputs = _model_usage(result.get("modelUsage"))
    if inputs is None and outputs is None:
        inputs, outputs = _usage(result.get("usage"))
    return Account(usd=usd_amount(result.get("total_cost_usd")), input_tokens=inputs, output_tokens=outputs,
                   error=_error(result) if result.get("is_error") is True else None,
                   denied=_denials(result.get("permission_denials")), found=True)


def _model_usage(per_model: object) -> tuple[int | None, int | None]:
    """Input (cache reads and writes included) and output tokens over every model of ``modelUsage``: the main
    conversation, its sub-agents and side requests; (None, None) when there is no such map."""
    if not isinstance(per_model, dict) or not per_model:
        return None, None
    entries = [u if isinstance(u, dict) else {} for u in per_model.values()]
    inputs = [total([count(u.get("inputTokens")), *(count(u[k]) for k in _CACHE_KEYS if k in u)])
              for u in entries]
    return total(inputs), total([count(u.get("outputTokens")) for u in entries])


_CACHE_KEYS = ("cacheReadInputTokens", "cacheCreationInputTokens")


def _usage(usage: object) -> tuple[int | None, int | None]:
    """The main conversation's tokens (``usage``), for a result without ``modelUsage``."""
    usage = usage if isinstance(usage, dict) else {}
    known = [n for n in (count(usage.get(k)) for k in
                         ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
             if n is not None]
    return (sum(known) if known else None), count(usage.get("output_tokens"))


def _error(result: dict[str, object]) -> str:
    text = result.get("result")
    errors = result.get("errors")
    if isinstance(text, str) and text.strip():
        said = text
    elif isinstance(errors, list) and errors:
        said = "; ".join(str(e) for e in errors)
    else:
        said = str(result.get("subtype") or "error")
    return f"claude: {short(said)}"


def _denials(denials: object) -> str | None:
    if not isinstance(denials, list) or not denials:
        return None
    tools = sorted({str(d.get("tool_name", "?")) for d in denials if isinstance(d, dict)})
    number = f"{len(denials)} denial{'s' if len(denials) != 1 else ''}"
    return f"claude was denied permission for {', '.join(tools) or 'a tool'} ({number})"


_TARGETS = ("file_path", "notebook_path", "path", "pattern", "url", "description")


def _action(line: object) -> str | None:
    """``Write /tree/src/a.py``, ``Bash: pytest -q``, ``retrying: API error 529 (attempt 2 of 10)``."""
    if not isinstance(line, dict):
        return None
    kind = line.get("type")
    if kind == "system" and line.get("subtype") == "api_retry":
        return short(f"retrying: API error {line.get('error_status')} ({line.get('error')}), attempt "
                     f"{line.get('attempt')} of {line.get('max_retries')}")
    message = line.get("message")
    if kind != "assistant" or not isinstance(message, dict) or not isinstance(message.get("content"), list):
        return None
    uses = [b for b in message["content"] if isinstance(b, dict) and b.get("type") == "tool_use"]
    if not uses:
        return None
    name, arguments = str(uses[-1].get("name", "?")), uses[-1].get("input")
    arguments = arguments if isinstance(arguments, dict) else {}
    if isinstance(arguments.get("command"), str):
        return short(f"{name}: {arguments['command']}")
    target = next((str(arguments[k]) for k in _TARGETS if isinstance(arguments.get(k), str)), "")
    return short(f"{name} {target}".strip())


MAX_TURNS = "the run reached its maximum number of turns"
"""A failure that repeats for its item (the same prompt needs as many turns) but not for another one."""
_PERMANENT = (("Failed to authenticate", "the API rejected the credentials"),
              ("API Error: 401", "the API rejected the credentials"),
              ("Invalid API key", "the API rejected the credentials"),
              ("Not logged in", "no credentials reached the CLI"),
              ("issue with the selected model", "the model does not exist or is not available"),
              ("API Error: 404", "the model does not exist or is not available"),
              ("maximum number of turns", MAX_TURNS),
              ("cannot be used with root/sudo privileges", "claude refuses every permission as root"))


def _permanent(account: Account) -> str | None:
    said = account.error or ""
    return next((why for marker, why in _PERMANENT if marker in said), None)


def _refuses_root(argv: Sequence[str]) -> str | None:
    if not any(flag in argv for flag in BYPASS_FLAGS):
        return None
    return ("claude refuses every permission (--dangerously-skip-permissions, --permission-mode "
            "bypassPermissions) as root outside a sandbox: drop it from the profile's `args`, run wavegit as "
            "another user, or use `sandbox: bwrap`")


CREDENTIALS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN")
CLAUDE = Preset("claude", CREDENTIALS, _argv, _read, unsandboxed="edits only: unsandboxed", env=_env,
                action=_action, permanent=_permanent, item_bound=(MAX_TURNS,), refuses_root=_refuses_root,
                npm=("@anthropic-ai/claude-code", "2.1.332"))
