"""Keeps printing a line every 0.05 s forever (never idle, never done).

With argv[1] == "ignore-term" it ignores SIGTERM, so only SIGKILL stops it.
"""
import signal
import sys
import time

if sys.argv[1:] == ["ignore-term"]:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
while True:
    print("working", flush=True)
    time.sleep(0.05)
