"""A GitHub Actions job log as the runner reads it: which lines it obeys as workflow commands."""

from __future__ import annotations

import re


def obeyed_commands(log: str) -> list[tuple[str, str]]:
    """The workflow commands the runner would obey in ``log`` (``::name props::data`` lines), minus what
    ``::stop-commands::TOKEN`` ... ``::TOKEN::`` fences off."""
    found, resume = [], None
    for line in log.splitlines():
        line = line.lstrip()
        if resume is not None:
            resume = None if line == f"::{resume}::" else resume
            continue
        match = re.match(r"::(?P<name>[a-z-]+)(?: (?P<props>[^:]*))?::(?P<data>.*)", line)
        if match is None:
            continue
        if match["name"] == "stop-commands":
            resume = match["data"]
            continue
        found.append((match["name"], match["props"] or ""))
    return found
