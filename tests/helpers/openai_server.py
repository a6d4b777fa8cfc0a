"""A local OpenAI Responses API for the real ``codex`` CLI (codex-cli 0.171.0), scripted per test.

Codex posts each model request to ``{openai_base_url}/responses``: first over a WebSocket (a ``GET`` with
``Upgrade: websocket``, then one ``response.create`` message per request), else, when the upgrade is
refused, as ``POST`` with an SSE stream. Both carry the same events: ``response.created``,
``response.output_item.added`` and ``.done`` per output item, ``response.completed`` with the ``usage`` of
the response.

The model is scripted, not simulated: it answers with the :class:`Script`'s ``commands`` one at a time, each
an ``exec_command`` function call (codex's own shell tool runs it in the attempt's tree), the next once the
request carries the previous one's output, then with the final message. Every answered request is counted in
:attr:`OpenAIServer.sent` (the tokens the server reported), so a test compares what wavegit read against it.

Faults, for the failures codex retries and those it does not: an HTTP status with an OpenAI error body for
every request (``always``: a bad key, an unknown model) or for the first few (``faults``: 429, 500), a hang
(the request is read and never answered), and a transient disconnect (the stream ends before
``response.completed``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
from collections.abc import Iterator
from typing import Any

from tests.helpers.model_server import DISCONNECT, HANG, Fault, JsonHandler, Script, ScriptedServer, status

__all__ = ["DISCONNECT", "HANG", "UNAUTHORIZED", "UNKNOWN_MODEL", "OpenAIServer", "Script", "status"]

_WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


UNAUTHORIZED = status(401, "Incorrect API key provided: sk-bad. You can find your API key at "
                           "https://platform.openai.com/account/api-keys.", "invalid_api_key")
UNKNOWN_MODEL = status(404, "The model `gpt-nope` does not exist or you do not have access to it.",
                       "model_not_found")


class OpenAIServer(ScriptedServer):
    """The Responses API; ``base_url`` ends in ``/v1``."""

    def __init__(self, script: Script | None = None) -> None:
        super().__init__(_Handler, script)
        self.started = 0

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    def answer(self, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """The events of the scripted answer to ``request``; its usage counts as sent with its last event."""
        with self.lock:
            self.started += 1
            number = self.started
        rid = f"resp_{number}"
        yield {"type": "response.created", "response": {"id": rid, "status": "in_progress"}}
        # One command a response, as a model that reads each output before the next step: the step after the
        # latest whose output the request carries (its call id names it; over a WebSocket codex sends only
        # what is new since the previous response).
        done = [int(str(item.get("call_id", "")).split("_")[1]) for item in request.get("input") or []
                if isinstance(item, dict) and item.get("type") == "function_call_output"
                and str(item.get("call_id", "")).startswith("call_")]
        step = max(done) + 1 if done else 0
        outputs: list[dict[str, Any]]
        if step < len(self.script.commands):
            outputs = [{"type": "function_call", "id": f"fc_{number}", "call_id": f"call_{step}_{number}",
                        "name": "exec_command", "arguments": json.dumps({"cmd": self.script.commands[step]}),
                        "status": "completed"}]
        else:
            outputs = [{"type": "message", "id": f"msg_{number}", "role": "assistant", "status": "completed",
                        "content": [{"type": "output_text", "text": self.script.text, "annotations": []}]}]
        for index, item in enumerate(outputs):
            yield {"type": "response.output_item.added", "output_index": index, "item": item}
            yield {"type": "response.output_item.done", "output_index": index, "item": item}
        inputs, outputs_n = self.count()
        yield {"type": "response.completed", "response": {
            "id": rid, "status": "completed",
            "usage": {"input_tokens": inputs, "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens": outputs_n, "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": inputs + outputs_n}}}


def _error(fault: Fault) -> dict[str, Any]:
    kind = "invalid_request_error" if fault.status in (401, 404) else "server_error"
    return {"message": fault.message or f"status {fault.status}", "type": kind, "param": None,
            "code": fault.code or None}


class _Handler(JsonHandler):
    api: OpenAIServer

    def do_GET(self) -> None:
        if self.headers.get("Upgrade", "").lower() != "websocket" or not self.path.endswith("/responses"):
            self.json_answer(404, {"error": {"message": "not found"}})
            return
        with self.api.lock:
            self.api.sent.upgrades += 1
        if not self.api.script.websocket:
            self.json_answer(404, {"error": {"message": "websockets are not served here"}})
            return
        key = self.headers.get("Sec-WebSocket-Key", "")
        accept = base64.b64encode(hashlib.sha1((key + _WS_GUID).encode()).digest()).decode()
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        self.end_headers()
        self.close_connection = True
        authorization = self.headers.get("Authorization", "")
        while True:
            message = self._ws_read()
            if message is None:
                return
            request = json.loads(message)
            if request.get("type") != "response.create":
                continue
            if request.get("generate") is False:  # a prewarm: nothing generated, nothing counted
                rid = "resp_prewarm"
                self._ws_send({"type": "response.created", "response": {"id": rid}})
                self._ws_send({"type": "response.completed", "response": {"id": rid, "status": "completed"}})
                continue
            fault = self.api.next_fault(authorization)
            if fault is not None:
                if fault.kind == "hang":
                    self.api.release.wait()
                    return
                if fault.kind == "status":
                    self._ws_send({"type": "error", "status": fault.status,
                                   "error": _error(fault)})
                    return
            for event in self.api.answer(request):
                self._ws_send(event)
                if fault is not None and fault.kind == "disconnect":
                    return

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        if not self.path.endswith("/responses"):
            self.json_answer(404, {"error": {"message": "not found"}})
            return
        fault = self.api.next_fault(self.headers.get("Authorization", ""))
        if not self.start_stream(self.api, fault, _error(fault) if fault else {}):
            return
        for event in self.api.answer(json.loads(body)):
            self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
            self.wfile.flush()
            if fault is not None and fault.kind == "disconnect":
                return

    def _ws_read(self) -> str | None:
        """The next text message from the client (frames joined), None when it closes."""
        parts: list[bytes] = []
        while True:
            head = self.rfile.read(2)
            if len(head) < 2:
                return None
            opcode, length = head[0] & 0x0F, head[1] & 0x7F
            if length == 126:
                (length,) = struct.unpack("!H", self.rfile.read(2))
            elif length == 127:
                (length,) = struct.unpack("!Q", self.rfile.read(8))
            mask = self.rfile.read(4) if head[1] & 0x80 else b"\0\0\0\0"
            data = bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(length)))
            if opcode == 0x8:
                return None
            if opcode == 0x9:
                self._ws_frame(0xA, data)
                continue
            if opcode in (0x0, 0x1, 0x2):
                parts.append(data)
                if head[0] & 0x80:
                    return b"".join(parts).decode()

    def _ws_send(self, event: dict[str, Any]) -> None:
        self._ws_frame(0x1, json.dumps(event).encode())

    def _ws_frame(self, opcode: int, data: bytes) -> None:
        size = len(data)
        if size < 126:
            head = struct.pack("!BB", 0x80 | opcode, size)
        elif size < 1 << 16:
            head = struct.pack("!BBH", 0x80 | opcode, 126, size)
        else:
            head = struct.pack("!BBQ", 0x80 | opcode, 127, size)
        self.wfile.write(head + data)
        self.wfile.flush()
