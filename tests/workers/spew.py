"""Writes argv[1] numbered lines to stdout and every 1000th to stderr, then exits 0."""
import sys

count = int(sys.argv[1])
out = sys.stdout
for i in range(count):
    out.write(f"line {i:07d} " + "x" * 80 + "\n")
    if i % 1000 == 0:
        print(f"err {i}", file=sys.stderr, flush=True)
out.write("last line\n")
