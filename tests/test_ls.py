"""`wavegit ls` as a real subprocess in a real repository."""

from __future__ import annotations

import json

from support import RemoteRepo, wavegit
from test_validate import EXAMPLE, with_tracker


def test_ls_table_lists_items_in_file_order(remote_repo: RemoteRepo) -> None:
    result = wavegit(with_tracker(remote_repo), "ls")
    assert result.returncode == 0
    header, *rows = result.stdout.splitlines()
    assert header.split() == ["id", "status", "priority", "wave", "pr", "title"]
    assert [r.split()[0] for r in rows] == ["AUTH-3", "AUTH-12", "API-7", "API-8", "DB-2", "UI-4", "DOCS-1",
                                            "OPS-5"]
    ui = next(r for r in rows if r.startswith("UI-4")).split()
    assert ui[:5] == ["UI-4", "review", "P2", "w-20260101-0001", "41"]


def test_ls_status_filter_and_json(remote_repo: RemoteRepo) -> None:
    result = wavegit(with_tracker(remote_repo), "ls", "--status", "in_progress", "review", "--json")
    assert result.returncode == 0
    items = json.loads(result.stdout)
    assert [(i["id"], i["status"]) for i in items] == [("API-7", "in_progress"), ("UI-4", "review")]
    assert items[1]["owns"] == ["web/styles/**/*.css", "web/theme.ts"]


def test_ls_shows_invalid_items_and_warns(remote_repo: RemoteRepo) -> None:
    bad = EXAMPLE.read_text().replace("priority: P3", "priority: P7")
    result = wavegit(with_tracker(remote_repo, bad), "ls", "--json")
    assert result.returncode == 0
    api8 = next(i for i in json.loads(result.stdout) if i["id"] == "API-8")
    assert api8["problems"] and "P7" in api8["problems"][0]
    assert "1 item(s) have problems" in result.stderr


def test_ls_rejects_unknown_status(remote_repo: RemoteRepo) -> None:
    result = wavegit(with_tracker(remote_repo), "ls", "--status", "doing")
    assert result.returncode == 2 and "invalid choice" in result.stderr
