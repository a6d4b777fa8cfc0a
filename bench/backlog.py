"""A deterministic, realistic backlog for wavegit's benchmarks, as tracker YAML and as the same data in JSON.

Shape (defaults): 10,000 items; about 6,500 todo, 500 in flight (in_progress or review), the rest done,
failed or blocked; 1-6 owned patterns each over a source tree of packages, modules and tests; mostly files,
some directories and a few globs; priorities mixed (P2 most common); about 1 in 10 items depends on an older
one.

    python bench/backlog.py OUT_DIR [--items N] [--seed S]   # writes OUT_DIR/tracker.yaml and backlog.json
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import dataclass
from pathlib import Path

STATUS_SHARES = {"todo": 0.65, "in_progress": 0.04, "review": 0.01, "done": 0.25, "failed": 0.03,
                 "blocked": 0.02}
PRIORITY_WEIGHTS = {"P0": 2, "P1": 18, "P2": 55, "P3": 25}
PACKAGES = ("auth", "billing", "search", "api", "storage", "ui", "jobs", "metrics", "mail", "admin",
            "import", "export", "cache", "auditlog", "payments", "reports", "users", "teams", "files", "sync",
            "notify", "webhooks", "geo", "i18n", "cli", "plugins", "scheduler", "inventory", "orders",
            "pricing")
MODULES = ("core", "models", "views", "handlers", "utils", "client", "schema", "tasks", "config", "errors",
           "forms", "serializers", "permissions", "signals", "migrations")
FILES = ("__init__.py", "base.py", "service.py", "helpers.py", "types.py", "io.py", "rules.py", "query.py",
         "cache.py", "events.py", "limits.py", "render.py")


@dataclass(frozen=True)
class BenchItem:
    id: str
    title: str
    prompt: str
    owns: tuple[str, ...]
    test: str
    priority: str
    status: str
    depends_on: tuple[str, ...]
    extra: tuple[tuple[str, str | int], ...]
    """Fields wavegit writes (wave, pr, attempts, ...), in file order."""

    def as_dict(self) -> dict[str, object]:
        data: dict[str, object] = {"id": self.id, "title": self.title, "prompt": self.prompt,
                                   "owns": list(self.owns), "test": self.test, "priority": self.priority}
        if self.depends_on:
            data["depends_on"] = list(self.depends_on)
        data["status"] = self.status
        data.update(self.extra)
        return data


def _tree_pattern(rng: random.Random) -> str:
    """One owned pattern: 93% a file, 5% a directory, 2% a glob."""
    pkg, mod = rng.choice(PACKAGES), rng.choice(MODULES)
    roll = rng.random()
    if roll < 0.02:
        return rng.choice((f"src/{pkg}/{mod}/*.py", f"tests/{pkg}/**", f"docs/{pkg}/*.md"))
    if roll < 0.07:
        return rng.choice((f"src/{pkg}/{mod}/", f"tests/{pkg}/{mod}/"))
    if roll < 0.70:
        return f"src/{pkg}/{mod}/{rng.choice(FILES)}"
    if roll < 0.93:
        return f"tests/{pkg}/{mod}/test_{rng.choice(FILES).removesuffix('.py').strip('_')}.py"
    return f"docs/{pkg}/{mod}.md"


def generate(n_items: int = 10_000, seed: int = 7) -> list[BenchItem]:
    rng = random.Random(seed)
    statuses = [status for status, share in STATUS_SHARES.items() for _ in range(round(share * n_items))]
    statuses = (statuses + ["todo"] * n_items)[:n_items]
    rng.shuffle(statuses)
    priorities = rng.choices(list(PRIORITY_WEIGHTS), weights=list(PRIORITY_WEIGHTS.values()), k=n_items)
    items: list[BenchItem] = []
    for k in range(n_items):
        item_id = f"ITEM-{k + 1}"
        owns = tuple(dict.fromkeys(_tree_pattern(rng) for _ in range(rng.randint(1, 6))))
        depends_on = (f"ITEM-{rng.randint(1, k)}",) if k and rng.random() < 0.1 else ()
        status = statuses[k]
        extra: list[tuple[str, str | int]] = []
        if status in ("in_progress", "review"):
            extra += [("wave", f"w{k % 40:03d}"), ("claimed_at", "2026-01-01T00:00:00Z"), ("attempts", 1)]
        if status == "review":
            extra.append(("pr", 1000 + k))
        if status == "failed":
            extra += [("attempts", 2), ("last_error", "test exited 1")]
        items.append(BenchItem(
            id=item_id,
            title=f"Improve {owns[0].split('/')[1]} ({k + 1})",
            prompt=f"Change {', '.join(owns)} so that case {k + 1} is handled.\nKeep the API stable.\n",
            owns=owns,
            test=f"pytest -q tests/{owns[0].split('/')[1]}",
            priority=priorities[k],
            status=status,
            depends_on=depends_on,
            extra=tuple(extra),
        ))
    return items


def _scalar(value: str | int) -> str:
    # json.dumps quotes any string as a valid YAML double-quoted scalar.
    return str(value) if isinstance(value, int) else json.dumps(value)


def to_yaml(items: list[BenchItem]) -> str:
    """The tracker in the block style wavegit writes."""
    out = ["version: 1", "items:"]
    for item in items:
        out.append(f"  - id: {item.id}")
        out.append(f"    title: {_scalar(item.title)}")
        out.append("    prompt: |")
        out.extend(f"      {line}" for line in item.prompt.splitlines())
        out.append(f"    owns: [{', '.join(_scalar(p) for p in item.owns)}]")
        out.append(f"    test: {_scalar(item.test)}")
        out.append(f"    priority: {item.priority}")
        if item.depends_on:
            out.append(f"    depends_on: [{', '.join(item.depends_on)}]")
        out.append(f"    status: {item.status}")
        out.extend(f"    {key}: {_scalar(value)}" for key, value in item.extra)
    return "\n".join(out) + "\n"


def to_json(items: list[BenchItem]) -> str:
    return json.dumps({"version": 1, "items": [item.as_dict() for item in items]})


def write(out_dir: Path, n_items: int = 10_000, seed: int = 7) -> tuple[Path, Path]:
    """Write ``tracker.yaml`` and ``backlog.json`` (the same backlog) into ``out_dir``."""
    items = generate(n_items, seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    yaml_path, json_path = out_dir / "tracker.yaml", out_dir / "backlog.json"
    yaml_path.write_text(to_yaml(items))
    json_path.write_text(to_json(items))
    return yaml_path, json_path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    yaml_path, json_path = write(args.out_dir, args.items, args.seed)
    print(f"wrote {yaml_path} ({yaml_path.stat().st_size} bytes) and {json_path}")


if __name__ == "__main__":
    main()
