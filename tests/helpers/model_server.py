"""What the local model APIs of the real-agent tests share (tests/helpers/openai_server.py for codex,
gemini_server.py for gemini): the per-test :class:`Script` of the model, the :class:`Fault` a request gets
instead of an answer, the record of what was :class:`Sent`, and :class:`ScriptedServer`, an HTTP server on
127.0.0.1 in a thread of the test process."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar


@dataclass(frozen=True)
class Fault:
    """What one request gets instead of an answer: ``status`` (an HTTP error with ``message`` and the API's
    error ``code``), ``hang`` (read, never answered) or ``disconnect`` (the stream ends before it
    completes)."""

    kind: str
    status: int = 0
    message: str = ""
    code: str = ""


def status(code: int, message: str, error_code: str = "") -> Fault:
    return Fault("status", code, message, error_code)


HANG = Fault("hang")
DISCONNECT = Fault("disconnect")


@dataclass
class Script:
    """What the model does in one test."""

    commands: list[str] = field(default_factory=list)
    """Tool calls, one an answer (shell commands); the answer after the last is ``text``."""
    text: str = "Done."
    usage: tuple[int, int] = (1200, 80)
    """(input, output) tokens each answer reports."""
    faults: list[Fault] = field(default_factory=list)
    """Given to the first requests, one each, before any is answered."""
    always: Fault | None = None
    """Given to every request (a rejected key, an unknown model)."""
    websocket: bool = True
    """Whether a WebSocket upgrade is accepted (else refused with 404, as a gateway without it does)."""


@dataclass
class Sent:
    """What the server answered: responses completed and the tokens they reported, the requests and the
    credential each carried."""

    responses: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    upgrades: int = 0
    authorization: list[str] = field(default_factory=list)


_Server = TypeVar("_Server", bound="ScriptedServer")


class ScriptedServer:
    """A model API on 127.0.0.1 answering with ``handler`` (a request handler class whose ``api`` is this
    server), from a thread of the test process; a ``with`` block runs it."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], script: Script | None = None) -> None:
        self.script = script or Script()
        self.sent = Sent()
        self.lock = threading.Lock()
        self.release = threading.Event()
        """Set when the test ends: hanging requests return."""
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), type("Handler", (handler,), {"api": self}))
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self: _Server) -> _Server:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def next_fault(self, credential: str) -> Fault | None:
        """The fault the next request gets (None: it is answered); counts it with its ``credential``."""
        with self.lock:
            self.sent.requests += 1
            self.sent.authorization.append(credential)
            if self.script.always is not None:
                return self.script.always
            return self.script.faults.pop(0) if self.script.faults else None

    def count(self) -> tuple[int, int]:
        """Count one answer as sent; its (input, output) tokens."""
        inputs, outputs = self.script.usage
        with self.lock:
            self.sent.responses += 1
            self.sent.input_tokens += inputs
            self.sent.output_tokens += outputs
        return inputs, outputs


class JsonHandler(BaseHTTPRequestHandler):
    """A quiet HTTP/1.1 handler that can answer with a JSON body."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def start_stream(self, api: ScriptedServer, fault: Fault | None, error: dict[str, Any]) -> bool:
        """Answer a request's ``fault``, a hang (until the test ends) or an HTTP error with the API's
        ``error`` body, and return False; else start its SSE stream and return True."""
        if fault is not None and fault.kind == "hang":
            api.release.wait()
            self.close_connection = True
            return False
        if fault is not None and fault.kind == "status":
            self.json_answer(fault.status, {"error": error})
            return False
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        return True

    def json_answer(self, code: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
