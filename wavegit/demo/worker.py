"""The demo's built-in worker: a deterministic stand-in for a coding agent.

Run as ``python -m wavegit.demo.worker`` in an item's worktree. It reads the prompt from stdin (as any
worker must), looks up the scripted edit for ``$WAVEGIT_ITEM_ID`` in :mod:`wavegit.demo.project` and
writes those files. Exit 2 for an item it has no script for.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from wavegit.demo.project import EDITS


def main() -> int:
    prompt = sys.stdin.read()
    item_id = os.environ.get("WAVEGIT_ITEM_ID", "")
    edits = EDITS.get(item_id)
    if edits is None:
        print(f"demo worker: no scripted edit for item {item_id!r}", file=sys.stderr)
        return 2
    first_line = prompt.strip().splitlines()[0] if prompt.strip() else "(empty prompt)"
    print(f"demo worker: {item_id}: {first_line}", flush=True)
    if os.environ.get("WAVEGIT_FEEDBACK_FILE"):
        # A real agent would use this; the demo worker only shows that it arrived.
        print("demo worker: retry with feedback from the previous attempt", flush=True)
    for path, text in edits.items():
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        print(f"demo worker: wrote {path}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
