"""The benchmark's reference pipeline: load the backlog as JSON and pick a greedy file-disjoint set.

This is what a plain scheduler does (exact path strings, file order, in-flight items ignored), so it is the
floor that ``wavegit plan`` is measured against. Prints the picked ids as a JSON list.

    python bench/json_greedy.py backlog.json
"""

from __future__ import annotations

import json
import sys


def main(path: str) -> None:
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    used: set[str] = set()
    picks: list[str] = []
    for item in data["items"]:
        if item["status"] != "todo" or any(pattern in used for pattern in item["owns"]):
            continue
        used.update(item["owns"])
        picks.append(item["id"])
    json.dump(picks, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
