"""Prints a line, then dies by the signal named in argv[1] (e.g. SIGSEGV)."""
import os
import signal
import sys

print("about to crash", flush=True)
os.kill(os.getpid(), getattr(signal, sys.argv[1]))
