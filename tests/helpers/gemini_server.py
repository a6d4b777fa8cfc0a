"""A local Gemini API for the real ``gemini`` CLI (gemini-cli 0.61.0), scripted per test like
tests/helpers/openai_server.py (tests/helpers/model_server.py).

The CLI posts every model request to ``{GOOGLE_GEMINI_BASE_URL}/v1beta/models/{model}:streamGenerateContent
?alt=sse`` with the whole conversation, the key in ``x-goog-api-key``; the answer is SSE ``data:`` chunks of
``candidates`` (``functionCall`` or ``text`` parts) and ``usageMetadata``. The scripted model answers with its
``commands`` one at a time as ``run_shell_command`` calls (the CLI's own shell tool; ``write_file PATH TEXT``
as its file tool), then its ``text``.
"""

from __future__ import annotations

import json
from typing import Any

from tests.helpers.model_server import Fault, JsonHandler, Script, ScriptedServer

API_KEY_INVALID = Fault("status", 400, "API key not valid. Please pass a valid API key.", "INVALID_ARGUMENT")
UNKNOWN_MODEL = Fault("status", 404, "models/gemini-nope is not found for API version v1beta, or is not "
                                     "supported for generateContent.", "NOT_FOUND")


class GeminiServer(ScriptedServer):
    """The Gemini API; ``base_url`` is what ``GOOGLE_GEMINI_BASE_URL`` takes."""

    def __init__(self, script: Script | None = None) -> None:
        super().__init__(_Handler, script)

    @property
    def base_url(self) -> str:
        return self.origin

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        """The one chunk of the scripted answer to ``request``, counted as sent."""
        contents = [c for c in request.get("contents") or [] if isinstance(c, dict)]
        step = sum(1 for content in contents for part in content.get("parts") or []
                   if isinstance(part, dict) and "functionResponse" in part)
        parts: list[dict[str, Any]]
        if step < len(self.script.commands):
            parts = [{"functionCall": _call(self.script.commands[step])}]
        else:
            parts = [{"text": self.script.text}]
        inputs, outputs = self.count()
        candidate = {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        return {"candidates": [candidate],
                "usageMetadata": {"promptTokenCount": inputs, "candidatesTokenCount": outputs,
                                  "totalTokenCount": inputs + outputs}}


def _call(command: str) -> dict[str, Any]:
    """``write_file PATH TEXT`` as the CLI's file tool (allowed when only edits are), else its shell tool."""
    words = command.split(" ", 2)
    if words[0] == "write_file" and len(words) == 3:
        return {"name": "write_file", "args": {"file_path": words[1], "content": words[2] + "\n"}}
    return {"name": "run_shell_command", "args": {"command": command}}


class _Handler(JsonHandler):
    api: GeminiServer

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if ":streamGenerateContent" not in self.path:
            self.json_answer(404, {"error": {"code": 404, "message": f"not served here: {self.path}",
                                        "status": "NOT_FOUND"}})
            return
        fault = self.api.next_fault(self.headers.get("x-goog-api-key", ""))
        error = {"code": fault.status, "message": fault.message, "status": fault.code or "INTERNAL"
                 } if fault else {}
        if not self.start_stream(self.api, fault, error) or fault is not None:
            return  # a disconnect: the stream ends before its chunk
        self.wfile.write(f"data: {json.dumps(self.api.answer(json.loads(body)))}\r\n\r\n".encode())
