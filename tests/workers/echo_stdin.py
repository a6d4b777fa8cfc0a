"""Prints what it reads on stdin, then exits with the code given as argv[1] (default 0)."""
import sys

sys.stdout.write(sys.stdin.read())
sys.stdout.flush()
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
