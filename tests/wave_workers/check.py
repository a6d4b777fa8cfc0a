"""A fake item test: exit 0 when PATH exists and contains TEXT, else 1 with a message (feedback)."""

from __future__ import annotations

import sys
from pathlib import Path

path, expected = sys.argv[1], " ".join(sys.argv[2:])
content = Path(path).read_text() if Path(path).is_file() else None
if content is None or expected not in content:
    print(f"check failed: {path} should contain {expected!r}, has {content!r}")
    sys.exit(1)
print(f"check ok: {path}")
