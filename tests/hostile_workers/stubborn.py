"""A hostile worker that will not be stopped: it ignores SIGTERM, SIGINT and SIGHUP, starts a child in a
session of its own (``setsid``) that ignores them too and keeps the worker's stdout open, writes both pids
(one a line) to the file its first argument names, then sleeps. Only SIGKILL ends either."""

from __future__ import annotations

import os
import signal
import sys
import time

for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(number, signal.SIG_IGN)
child = os.fork()
if child == 0:
    os.setsid()
    while True:
        time.sleep(1)
with open(sys.argv[1], "a", encoding="ascii") as fh:
    fh.write(f"{os.getpid()}\n{child}\n")
while True:
    time.sleep(1)
