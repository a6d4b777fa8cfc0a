"""A worker on a full disk: it caps its own file size with RLIMIT_FSIZE (ignoring SIGXFSZ, so writes
fail with EFBIG as on a full filesystem) and tries to write ``FILL_BYTES`` bytes into each owned file.

On a retry (``$WAVEGIT_FEEDBACK_FILE`` set) with ``FILL_RETRY_SMALL=1`` it writes a small ``ok`` instead,
as an agent told "no space left" would. A write that fails leaves the partial file and exits 1.
"""

from __future__ import annotations

import errno
import os
import resource
import signal
import sys
from pathlib import Path

LIMIT = 4096
sys.stdin.read()
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))
retry = bool(os.environ.get("WAVEGIT_FEEDBACK_FILE"))
small = retry and os.environ.get("FILL_RETRY_SMALL") == "1"
payload = b"ok\n" if small else b"x" * int(os.environ.get("FILL_BYTES", str(LIMIT * 4)))
for owned in os.environ["WAVEGIT_OWNS"].splitlines():
    Path(owned).parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(owned, "wb") as fh:
            fh.write(payload)
    except OSError as exc:
        print(f"fill: {owned}: {os.strerror(exc.errno or 0)} (EFBIG={exc.errno == errno.EFBIG})", flush=True)
        sys.exit(1)
print(f"fill: wrote {len(payload)} bytes", flush=True)
