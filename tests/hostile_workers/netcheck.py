"""An item test that serves its tree on a loopback port (``serve PORT PATH``: passes when what it reads back
from 127.0.0.1:PORT is ``ok``; a port already taken is ignored, as a careless test would), or that passes only
when a port of the host's loopback is out of its reach (``unreachable PORT``)."""

from __future__ import annotations

import http.server
import socket
import sys
import threading
import urllib.request
from pathlib import Path

mode, port = sys.argv[1], int(sys.argv[2])
if mode == "unreachable":
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except OSError:
        sys.exit(0)
    print(f"reached the host's 127.0.0.1:{port}")
    sys.exit(1)
content = Path(sys.argv[3]).read_bytes()


class Serve(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(content)


try:
    server = http.server.HTTPServer(("127.0.0.1", port), Serve)
    threading.Thread(target=server.serve_forever, daemon=True).start()
except OSError as exc:
    print(f"serving failed ({exc}); testing anyway")
body = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5).read()
print(f"read back {body!r}")
sys.exit(0 if body.strip() == b"ok" else 1)
