"""Prints one line, then goes silent forever."""
import time

print("thinking...", flush=True)
while True:
    time.sleep(1)
