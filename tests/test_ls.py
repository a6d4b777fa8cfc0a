"""`wavegit ls` as a real subprocess in a real repository."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers.reliability import wavegit_in_process as wavegit_here
from tests.helpers.repos import EXAMPLE, RemoteRepo, git, wavegit
from tests.helpers.repos import with_tracker as in_work_tree


def with_tracker(repo: RemoteRepo, text: str | None = None) -> Path:
    """The tracker committed on main and pushed: `ls` reads the tracker branch, not the work tree."""
    clone = in_work_tree(repo, text)
    git(clone, "add", ".wavegit/tracker.yaml")
    git(clone, "commit", "-q", "-m", "tracker")
    git(clone, "push", "-q", "origin", "main")
    return clone


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


def test_the_table_shows_an_invalid_items_status_as_invalid_not_as_a_default(remote_repo: RemoteRepo) -> None:
    bad = EXAMPLE.read_text().replace("priority: P3", "priority: P7")
    rows = wavegit(with_tracker(remote_repo, bad), "ls").stdout.splitlines()[1:]
    statuses = {row.split()[0]: row.split()[1] for row in rows}
    assert statuses["API-8"] == "invalid" and statuses["UI-4"] == "review"


def test_ls_names_the_tracker_it_read_on_stderr_which_validate_checks_too(remote_repo: RemoteRepo) -> None:
    clone = with_tracker(remote_repo, EXAMPLE.read_text().replace("priority: P3", "priority: P7"))
    blob = git(clone, "rev-parse", "origin/main:.wavegit/tracker.yaml")
    # The work tree's copy is fine: ls's hint to run validate must point at the tracker ls read.
    (clone / ".wavegit" / "tracker.yaml").write_text(EXAMPLE.read_text())
    result = wavegit(clone, "ls")
    lines = result.stderr.splitlines()
    assert [lines[0], lines[-1]] == [f"tracker: origin/main:.wavegit/tracker.yaml blob {blob[:12]}",
                                     "1 item(s) have problems; run `wavegit validate` for details; this "
                                     "is origin/main as last fetched; `wavegit pull` fetches the remote's, "
                                     "which may be fixed already"]
    assert lines[1] == "claims held (1 wave(s) not running in this clone):"  # API-7, in flight
    validate = wavegit_here(clone, "validate")
    assert validate.returncode == 2 and "API-8" in validate.stderr and "P7" in validate.stderr


def test_ls_rejects_unknown_status(remote_repo: RemoteRepo) -> None:
    result = wavegit(with_tracker(remote_repo), "ls", "--status", "doing")
    assert result.returncode == 2 and "invalid choice" in result.stderr


def test_ls_reads_the_tracker_branch_not_the_work_tree_copy(remote_repo: RemoteRepo) -> None:
    clone = with_tracker(remote_repo)
    (clone / ".wavegit" / "tracker.yaml").write_text("not: [a, tracker")
    result = wavegit_here(clone, "ls", "--json")
    assert result.returncode == 0, result.stderr
    assert len(json.loads(result.stdout)) == 8


def test_ls_fetch_shows_an_item_another_clone_added(remote_repo: RemoteRepo) -> None:
    with_tracker(remote_repo)
    other = remote_repo.new_clone("other")
    added = wavegit_here(other, "add", "NEW-1", "--prompt", "p", "--owns", "new/", "--test", "true", "--push")
    assert added.returncode == 0, added.stderr
    before = [i["id"] for i in json.loads(wavegit_here(remote_repo.clone, "ls", "--json").stdout)]
    after = [i["id"] for i in json.loads(wavegit_here(remote_repo.clone, "ls", "--fetch", "--json").stdout)]
    assert "NEW-1" not in before and after[-1] == "NEW-1"


def test_ls_without_a_tracker_says_to_run_init(remote_repo: RemoteRepo) -> None:
    result = wavegit_here(remote_repo.clone, "ls")
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "wavegit ls: no tracker at origin/main:.wavegit/tracker.yaml (no .wavegit/config.yaml in this "
        "checkout: if someone ran `wavegit init` already, `git pull` brings it and it says where the tracker "
        "is; else run `wavegit init`)")


def test_a_config_naming_a_remote_the_repository_lacks_is_named_at_its_key_not_told_to_init(
        remote_repo: RemoteRepo) -> None:
    # It used to say "run `wavegit init`", which would start a second tracker on a local branch.
    (remote_repo.clone / ".wavegit").mkdir()
    (remote_repo.clone / ".wavegit" / "config.yaml").write_text("tracker_branch: wavegit-tracker\n"
                                                               "remote: orign\n")
    result = wavegit_here(remote_repo.clone, "ls")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "wavegit ls: .wavegit/config.yaml:2:9: remote 'orign' is not a remote of this repository (it has "
        "origin), so no tracker was found at wavegit-tracker:.wavegit/tracker.yaml: fix `remote`"]



def test_a_mistyped_tracker_path_is_named_at_its_key_not_only_told_to_init(remote_repo: RemoteRepo) -> None:
    # "run `wavegit init`" alone would start a second, empty tracker at the typo.
    assert wavegit(remote_repo.clone, "init").returncode == 0
    config = remote_repo.clone / ".wavegit" / "config.yaml"
    config.write_text(config.read_text().replace("tracker_path: .wavegit/tracker.yaml",
                                                 "tracker_path: tracker.yml"))
    lines = config.read_text().splitlines()
    line = next(n for n, text in enumerate(lines, 1) if text.startswith("tracker_path"))
    result = wavegit_here(remote_repo.clone, "ls")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"wavegit ls: no tracker at origin/wavegit-tracker:tracker.yml (.wavegit/config.yaml:{line}:15: "
        "tracker_path is 'tracker.yml', not the default .wavegit/tracker.yaml: fix it if the tracker is "
        "elsewhere, else run `wavegit init`)"]

def test_a_valid_items_wave_and_title_print_their_terminal_escapes_inert(remote_repo: RemoteRepo) -> None:
    # A valid item's wave and title are free text (its id, status, priority and pr are checked words).
    hostile = EXAMPLE.read_text().replace("wave: w-20260101-0001", 'wave: "w-1\\e]52;c;cm0gLXJm\\a"', 1)
    result = wavegit(with_tracker(remote_repo, hostile), "ls")
    assert result.returncode == 0
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "w-1\\x1b]52;c;cm0gLXJm\\x07" in result.stdout


# In-process through cli.main, then the modules it loaded: the table comes from the cached columns.
_MODULES = """
import json, sys
from wavegit import cli
cli.main(sys.argv[1:])
print(json.dumps(sorted(sys.modules)))
"""


def test_a_warm_ls_table_builds_no_item_nor_imports_the_item_model(remote_repo: RemoteRepo) -> None:
    # The item model (`model.tracker` and `dataclasses`, ~20 ms of imports, and 10,000 Items at 10,000 items)
    # is what kept `ls` past 1.5x `plan`; `--json` alone, which prints every field, loads it.
    clone = with_tracker(remote_repo)

    def modules(*argv: str) -> set[str]:
        done = subprocess.run([sys.executable, "-c", _MODULES, *argv], cwd=clone, capture_output=True,
                              text=True, check=True, timeout=120)
        return set(json.loads(done.stdout.splitlines()[-1]))

    modules("ls")  # fills the parse caches
    assert not {"wavegit.model.tracker", "dataclasses", "yaml"} & modules("ls")
    assert "wavegit.model.tracker" in modules("ls", "--json")
