"""Spawns a grandchild that inherits stdout and sleeps; writes its pid to argv[1].

argv[2] is what the parent does next: "hang" (print forever) or "exit" (exit 0 at once, leaving
the grandchild holding the output pipe).
"""
import subprocess
import sys
import time

GRANDCHILD = "import time\nprint('grandchild up', flush=True)\ntime.sleep(600)"

child = subprocess.Popen([sys.executable, "-c", GRANDCHILD])
with open(sys.argv[1], "w") as fh:
    fh.write(str(child.pid))
if sys.argv[2] == "hang":
    while True:
        print("parent working", flush=True)
        time.sleep(0.05)
