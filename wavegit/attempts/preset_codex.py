"""The ``codex`` preset: codex-cli 0.171.0 in ``exec`` mode.

``codex exec --json`` reads the prompt on stdin (``-``) and prints JSON events: ``turn.completed`` carries
``usage`` (tokens only, so the config's ``prices`` give dollars), ``turn.failed`` and ``error`` why it failed.
Its own sandbox cannot nest inside bwrap: in wavegit's sandbox it runs with
``--dangerously-bypass-approvals-and-sandbox`` (codex's flag for externally sandboxed environments), otherwise
with ``-s workspace-write``.
"""

from __future__ import annotations

from collections.abc import Sequence

from wavegit.attempts.preset import Account, Launch, Preset, count, total


def _argv(launch: Launch) -> list[str]:
    jail = ["--dangerously-bypass-approvals-and-sandbox"] if launch.sandboxed else ["-s", "workspace-write"]
    return ["codex", "exec", "--json", *jail, *(["-m", launch.model] if launch.model else [])]


def _read(objects: Sequence[object], last_words: str) -> Account:
    del last_words
    events = [o for o in objects if isinstance(o, dict)]
    usages = [e["usage"] for e in events
              if e.get("type") == "turn.completed" and isinstance(e.get("usage"), dict)]
    errors = []
    for event in events:
        if event.get("type") == "turn.failed" and isinstance(event.get("error"), dict):
            errors.append(str(event["error"].get("message", "turn failed")))
        elif event.get("type") == "error":
            errors.append(str(event.get("message", "error")))
    error = f"codex: {'; '.join(dict.fromkeys(errors))}" if errors else None
    if not usages:
        return Account(error=error, found=bool(errors))
    inputs = [count(u.get("input_tokens")) for u in usages]
    outputs = [count(u.get("output_tokens")) for u in usages]
    return Account(input_tokens=total(inputs), output_tokens=total(outputs), error=error, found=True)


CODEX = Preset("codex", ("OPENAI_API_KEY", "CODEX_API_KEY"), _argv, _read, tail=("-",))
