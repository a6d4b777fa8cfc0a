"""``wavegit drop ID [--force]``: removed from the tracker; dependents named; idempotent through history."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.itemops import last_ops
from tests.helpers.reliability import wavegit_in_process as wavegit_here
from tests.helpers.repos import git, wavegit
from tests.helpers.sync import claimed, commit_files, entry, make_tracker_repo, origin_head, origin_tracker

HAND_WRITTEN = """\
version: 1
items:
  # the first one
  - id: A
    prompt: do A
    owns: [src/a.txt]
    test: "true"
  - id: B
    prompt: |
      do B
    owns: [src/b.txt]
    test: "true"
  # the last one
  - id: C
    prompt: do C
    owns: [src/c.txt]
    test: "true"
"""


def test_drop_removes_only_the_items_lines_in_one_commit_and_a_retry_writes_nothing(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [])
    commit_files(remote.clone, {".wavegit/tracker.yaml": HAND_WRITTEN}, "hand-written tracker")
    result = wavegit(remote.clone, "drop", "B")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("dropped B (todo): commit ")
    text = git(remote.origin, "show", "main:.wavegit/tracker.yaml") + "\n"
    assert text == HAND_WRITTEN.replace("  - id: B\n    prompt: |\n      do B\n    owns: [src/b.txt]\n"
                                        "    test: \"true\"\n", "")
    assert last_ops(remote)[0] == "drop B"
    head = origin_head(remote)
    again = wavegit_here(remote.clone, "drop", "B")
    assert again.returncode == 0 and again.stdout.startswith("B was dropped already by commit ")
    assert origin_head(remote) == head
    other = wavegit_here(remote.clone, "done", "B")
    assert other.returncode == 2 and "no item B in .wavegit/tracker.yaml on origin/main: it was dropped by " \
                                     "commit " in other.stderr


def test_drop_refuses_an_item_others_depend_on_naming_them_and_force_unlinks_them(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("A"), entry("B", depends_on=["A"]),
                                          entry("C", depends_on=["A", "B"])])
    head = origin_head(remote)
    refused = wavegit_here(remote.clone, "drop", "A")
    assert refused.returncode == 2
    assert "B, C depend on A: drop them first, or --force" in refused.stderr and origin_head(remote) == head
    forced = wavegit_here(remote.clone, "drop", "A", "--force")
    assert forced.returncode == 0, forced.stderr
    assert "(and from the depends_on of B, C)" in forced.stdout
    loaded = origin_tracker(remote)  # strict: the tracker stays valid
    assert [(i.id, i.depends_on) for i in loaded.items] == [("B", ()), ("C", ("B",))]


def test_drop_never_removes_an_item_in_progress_and_one_in_review_only_with_force(tmp_path: Path) -> None:
    wave = "w-20260101-000001-ab01"
    remote = make_tracker_repo(tmp_path, [claimed("A", wave), entry("B", "review", wave=wave, pr=2)])
    head = origin_head(remote)
    in_progress = wavegit_here(remote.clone, "drop", "A", "--force")
    assert in_progress.returncode == 2 and f"wavegit release --wave {wave}" in in_progress.stderr
    review = wavegit_here(remote.clone, "drop", "B")
    assert review.returncode == 2 and "in review (PR #2)" in review.stderr
    assert origin_head(remote) == head
    assert wavegit_here(remote.clone, "drop", "B", "--force").returncode == 0
    assert [i.id for i in origin_tracker(remote).items] == ["A"]
