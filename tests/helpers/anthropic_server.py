"""A local Anthropic Messages API for the real Claude Code CLI: ``POST /v1/messages`` answered with a
streamed (SSE) or plain message, scripted per test.

A test gives a :class:`Script`: the turns the main conversation's model answers, in order, each a list of
blocks (text, or a ``tool_use`` the CLI runs with its own Write/Edit/Bash tools), or a :class:`Fault` (an HTTP
error status with Anthropic's error body, a hang, a slow trickle of pings, a dropped connection). A request
is "main" when it offers tools and asks for the script's model; anything else the CLI sends on the side (a
title, a quota probe, a haiku call) gets a one-word text answer. An ``Agent`` tool_use makes the CLI start a
sub-agent, whose requests (on ``subagent_model``: the CLI's ``CLAUDE_CODE_SUBAGENT_MODEL``) get the sub-agent
script.

Every request is logged (:attr:`AnthropicServer.requests`) and every token the server reports is summed per
model (:attr:`AnthropicServer.sent`), so a test compares what wavegit read with what was sent.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Block = dict[str, Any]


def text(words: str) -> Block:
    return {"type": "text", "text": words}


def tool(name: str, **arguments: Any) -> Block:
    return {"type": "tool_use", "name": name, "input": arguments}


def write(path: str, content: str) -> Block:
    """The CLI's Write tool (an absolute path: the CLI wants one; ``{cwd}`` is replaced by the request's)."""
    return tool("Write", file_path=path, content=content)


@dataclass(frozen=True)
class Fault:
    """A turn the server fails: ``status`` (an HTTP error with Anthropic's body), or ``hang`` seconds of
    silence, ``trickle`` seconds of SSE pings (a stream that never gets to its message), or ``drop`` (the
    connection closed mid-stream); ``times``: how many requests in a row get it before the script goes on."""

    status: int = 0
    hang: float = 0.0
    trickle: float = 0.0
    drop: bool = False
    times: int = 1


Turn = list[Block] | Fault
Turns = Sequence[Turn]


@dataclass
class Script:
    """What the model of the main conversation answers, turn by turn (the last turn repeats)."""

    turns: Turns
    model: str = "claude-sonnet-4-5"
    subagent: Turns = field(default_factory=lambda: [[text("Sub-agent done.")]])
    subagent_model: str = "claude-haiku-4-5"
    input_tokens: int = 1000
    output_tokens: int = 100
    delay: float = 0.0
    """Seconds each answer of the main conversation takes before it starts (a model that thinks)."""


ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
               404: "not_found_error", 429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}


class _Conversation:
    """Where one script stands: the next turn, and how often the current fault has been served."""

    def __init__(self, turns: Turns) -> None:
        self.turns = turns
        self.index = 0
        self.served = 0

    def next(self) -> Turn:
        turn = self.turns[min(self.index, len(self.turns) - 1)]
        if isinstance(turn, Fault):
            self.served += 1
            if self.served >= turn.times:
                self.index, self.served = self.index + 1, 0
        else:
            self.index += 1
        return turn


class AnthropicServer:
    """The server on 127.0.0.1 (a free port) for the duration of a ``with`` block."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.sent: dict[str, dict[str, int]] = {}
        self._lock = threading.Lock()
        self._main = _Conversation(script.turns)
        self._sub = _Conversation(script.subagent)
        self._ids = 0
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> AnthropicServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    @property
    def main_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r.get("role") == "main"]

    def total_sent(self) -> tuple[int, int]:
        """(input, output) tokens reported over all models."""
        return (sum(u["input"] for u in self.sent.values()), sum(u["output"] for u in self.sent.values()))

    # -- answering ------------------------------------------------------------------------------------

    def answer(self, path: str, body: dict[str, Any]) -> tuple[str, Turn]:
        """The role of a request (main, subagent, side, count) and the turn that answers it."""
        model = str(body.get("model", ""))
        turn: Turn
        with self._lock:
            if path.startswith("/v1/messages/count_tokens"):
                role, turn = "count", []
            elif body.get("tools") and model == self.script.model:
                role, turn = "main", self._main.next()
            elif body.get("tools") and model == self.script.subagent_model:
                role, turn = "subagent", self._sub.next()
            else:
                role, turn = "side", [text("ok")]
            fault = turn if isinstance(turn, Fault) else None
            self.requests.append({"path": path, "model": model, "role": role, "fault": fault})
            return role, turn

    def usage(self, model: str) -> tuple[int, int]:
        with self._lock:
            spent = self.sent.setdefault(model, {"input": 0, "output": 0})
            spent["input"] += self.script.input_tokens
            spent["output"] += self.script.output_tokens
        return self.script.input_tokens, self.script.output_tokens

    def new_id(self, prefix: str) -> str:
        with self._lock:
            self._ids += 1
            return f"{prefix}_{self._ids:024d}"


def _message(server: AnthropicServer, model: str, blocks: list[Block], cwd: str) -> dict[str, Any]:
    content = []
    for block in blocks:
        block = json.loads(json.dumps(block).replace("{cwd}", cwd))
        if block["type"] == "tool_use":
            block = {"type": "tool_use", "id": server.new_id("toolu"), **block}
        content.append(block)
    stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
    inputs, outputs = server.usage(model)
    return {"id": server.new_id("msg"), "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": inputs, "output_tokens": outputs, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0}}


def _events(message: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    start = {**message, "content": [], "stop_reason": None,
             "usage": {**message["usage"], "output_tokens": 1}}
    yield "message_start", {"type": "message_start", "message": start}
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            yield "content_block_start", {"type": "content_block_start", "index": index,
                                          "content_block": {"type": "text", "text": ""}}
            yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                          "delta": {"type": "text_delta", "text": block["text"]}}
        else:
            yield "content_block_start", {"type": "content_block_start", "index": index,
                                          "content_block": {**block, "input": {}}}
            yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                          "delta": {"type": "input_json_delta",
                                                    "partial_json": json.dumps(block["input"])}}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield "message_delta", {"type": "message_delta",
                            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                            "usage": {"output_tokens": message["usage"]["output_tokens"]}}
    yield "message_stop", {"type": "message_stop"}


def _handler(server: AnthropicServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            del format, args

        def do_GET(self) -> None:
            with server._lock:
                server.requests.append({"path": self.path, "method": "GET", "role": "get"})
            self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": "not found"}})

        def do_HEAD(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            role, turn = server.answer(self.path, body)
            if role == "count":
                self._json(200, {"input_tokens": 10})
                return
            model = str(body.get("model", ""))
            if isinstance(turn, Fault):
                if self._fault(turn):
                    return
                turn = [text("Recovered.")]
            if role == "main":
                time.sleep(server.script.delay)
            message = _message(server, model, turn, _cwd(body))
            if body.get("stream"):
                self._stream(message)
            else:
                self._json(200, message)

        def _fault(self, fault: Fault) -> bool:
            """Serve ``fault``; True when the request is answered (or dropped) by it."""
            if fault.status:
                kind = ERROR_TYPES.get(fault.status, "api_error")
                self._json(fault.status, {"type": "error", "error": {
                    "type": kind, "message": f"scripted {fault.status} ({kind})"}})
                return True
            if fault.hang:
                time.sleep(fault.hang)
                self.close_connection = True
                return True
            if fault.drop or fault.trickle:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                self.close_connection = True
                end = time.monotonic() + fault.trickle
                while True:
                    self.wfile.write(b"event: ping\ndata: {\"type\": \"ping\"}\n\n")
                    self.wfile.flush()
                    if time.monotonic() >= end:
                        return True
                    time.sleep(0.5)
            return False

        def _json(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if status == 429:
                self.send_header("retry-after", "0")
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, message: dict[str, Any]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            self.close_connection = True
            for name, data in _events(message):
                self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()

    return Handler


def _cwd(body: dict[str, Any]) -> str:
    """The working directory the CLI told the model about ("Primary working directory: ..."), for ``{cwd}``
    in a script."""
    found = _CWD.search(json.dumps(body.get("messages", [])))
    return found.group(1) if found else ""


_CWD = re.compile(r"[Ww]orking directory: ([^\s\"\\]+)")
