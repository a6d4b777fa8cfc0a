"""``wavegit sync`` on real repositories with a bare origin (and the fake GitHub server for PR states)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.helpers.ghserver import github_env, running
from tests.helpers.repos import git, make_remote_repo, wavegit
from tests.helpers.sync import (
    claimed,
    commit_files,
    entry,
    make_tracker_repo,
    make_wave_branch,
    origin_head,
    origin_item,
    origin_tracker,
    tracker_text,
    wave_id,
)
from wavegit.core.repo import discover
from wavegit.github.api import OUTCOME_PREFIX, Settings
from wavegit.github.client import PyGithubClient
from wavegit.github.retry import RetryPolicy
from wavegit.model import report, report_markdown, tracker

W1, W2 = wave_id(1), wave_id(2)


def sync(clone: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = wavegit(clone, "sync", *args, env=env)
    return result.returncode, result.stdout, result.stderr


def test_expired_claim_without_a_wave_branch_returns_to_todo_with_the_attempt_counted(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [claimed("A", W1, attempts=1), entry("B")])
    code, out, err = sync(remote.clone)
    assert (code, err) == (0, "")
    item = origin_item(remote, "A")
    assert (item.status, item.attempts, item.wave, item.claimed_at) == ("todo", 2, None, None)
    assert item.last_error is not None
    assert "lease expired" in item.last_error and f"no branch wavegit/{W1} on origin" in item.last_error
    assert out.splitlines()[0].startswith("A: in_progress -> todo (lease expired")
    # Only A's lines changed in the one sync commit.
    diff = git(remote.origin, "diff", "main~1", "main", "--", ".wavegit/tracker.yaml")
    assert "B" not in "".join(line for line in diff.splitlines() if line.startswith(("+ ", "- ")))
    assert git(remote.origin, "log", "-1", "--format=%s", "main").startswith("wavegit: sync")


def test_expired_claim_that_reaches_max_attempts_becomes_failed(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [claimed("A", W1, attempts=3)], max_attempts=4)
    assert sync(remote.clone)[0] == 0
    item = origin_item(remote, "A")
    assert (item.status, item.attempts) == ("failed", 4)
    assert item.last_error is not None and "lease expired" in item.last_error
    # Regression: a failed item kept its lease while one back in todo lost it; it keeps only its wave.
    assert (item.wave, item.claimed_at) == (W1, None)


def test_a_claim_without_a_readable_claimed_at_counts_as_expired(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("A", "in_progress", wave=W1),
                                          claimed("B", W1, at="yesterday")], lease_ttl_s=3600)
    code, out, _ = sync(remote.clone)
    assert code == 0
    assert [origin_item(remote, i).status for i in ("A", "B")] == ["todo", "todo"]
    assert out.startswith("A: in_progress -> todo (lease expired (no valid claimed_at); no branch")


def test_a_live_lease_is_left_alone_until_it_expires(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [claimed("A", W1, at=report.utc_timestamp())], lease_ttl_s=3600)
    before = origin_head(remote)
    code, out, _ = sync(remote.clone)
    assert (code, out.splitlines()[0]) == (0, "in sync: nothing to change")
    assert f"wave {W1} holds A: its scheduler: unknown" in out  # and how its claims come back
    assert origin_head(remote) == before
    # The same claim with a one-second lease (WAVEGIT_LEASE_TTL_S overrides the config) once it has passed.
    time.sleep(1.2)
    assert sync(remote.clone, env={"WAVEGIT_LEASE_TTL_S": "1"})[0] == 0
    assert origin_item(remote, "A").status == "todo"


def test_a_wave_killed_after_its_push_is_recovered_from_the_commit_trailers(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [claimed("A", W1), claimed("B", W1), claimed("C", W1)])
    make_wave_branch(remote.clone, W1, ["A", "B"])
    code, out, _ = sync(remote.clone, "--json")
    assert code == 0
    changes = {c["id"]: c for c in json.loads(out)}
    assert {k: (c["from"], c["to"]) for k, c in changes.items()} == {
        "A": ("in_progress", "review"), "B": ("in_progress", "review"), "C": ("in_progress", "todo")}
    for item_id in ("A", "B"):
        item = origin_item(remote, item_id)
        assert (item.status, item.wave, item.attempts) == ("review", W1, 1)
    c = origin_item(remote, "C")
    assert (c.status, c.wave, c.attempts) == ("todo", None, 1)
    assert c.last_error is not None and "has no commit of this item" in c.last_error


def test_a_wave_branch_merged_into_main_marks_its_items_done_with_the_merge_commit(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [
        entry("A", "review", wave=W1, attempts=1),
        # Verified but never recorded; its lease is still live, the merge settles it anyway.
        claimed("B", W1, at=report.utc_timestamp()),
        entry("C", "review", wave=W2, attempts=1),
    ], lease_ttl_s=3600)
    make_wave_branch(remote.clone, W1, ["A", "B"])
    make_wave_branch(remote.clone, W2, ["C"])  # pushed, never merged
    git(remote.clone, "checkout", "-q", "-B", "main", "origin/main")
    git(remote.clone, "merge", "-q", "--no-ff", "-m", "merge the wave", f"origin/wavegit/{W1}")
    git(remote.clone, "push", "-q", "origin", "main")
    merge = git(remote.clone, "rev-parse", "HEAD")
    code, out, _ = sync(remote.clone)
    assert code == 0, out
    for item_id in ("A", "B"):
        item = origin_item(remote, item_id)
        assert (item.status, item.merge_sha) == ("done", merge)
        # Done keeps where it was delivered; the lease is over.
        assert (item.wave, item.claimed_at) == (W1, None)
    assert origin_item(remote, "C").status == "review"
    assert f"A: review -> done by ancestry (wavegit/{W1} is merged into main)" in out.splitlines()


def test_a_fast_forward_merge_records_the_wave_tip_as_the_merge_sha(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("A", "review", wave=W1)])
    tip = make_wave_branch(remote.clone, W1, ["A"])
    git(remote.clone, "push", "-q", "origin", f"{tip}:refs/heads/main")
    assert sync(remote.clone)[0] == 0
    assert (origin_item(remote, "A").status, origin_item(remote, "A").merge_sha) == ("done", tip)


def test_a_deleted_wave_branch_is_not_taken_for_a_merge(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("A", "review", wave=W1)])
    make_wave_branch(remote.clone, W1, ["A"])
    git(remote.clone, "push", "-q", "origin", "--delete", f"wavegit/{W1}")
    before = origin_head(remote)
    assert sync(remote.clone)[1].strip() == "in sync: nothing to change"
    assert (origin_item(remote, "A").status, origin_head(remote)) == ("review", before)


def test_a_review_item_whose_wave_branch_is_gone_everywhere_is_left_in_review_with_what_to_do(
        tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("A", "review", wave=W1), entry("B", "review", wave=W2)])
    make_wave_branch(remote.clone, W1, ["A"])
    make_wave_branch(remote.clone, W2, ["B"])
    git(remote.clone, "push", "-q", "origin", "--delete", f"wavegit/{W1}")
    git(remote.clone, "branch", "-q", "-D", f"wavegit/{W1}")  # rejected by hand, here and on origin
    before = origin_head(remote)
    code, out, err = sync(remote.clone)
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "in sync: nothing to change",
        f"A stays in review: its wave branch wavegit/{W1} is gone (on origin and here) and its change is not "
        "in main; `wavegit reopen A --reason ...` runs it again, `wavegit done A --merge-sha SHA` records a "
        "merge sync cannot see"]  # B's branch is still there: sync watches it, and says nothing
    assert (origin_item(remote, "A").status, origin_head(remote)) == ("review", before)
    stranded = [c for c in json.loads(sync(remote.clone, "--json")[1]) if c["kind"] == "stranded"]
    assert [(c["id"], c["wave"]) for c in stranded] == [("A", W1)]
    assert wavegit(remote.clone, "reopen", "A", "--reason", "rejected").returncode == 0
    assert "stays in review" not in sync(remote.clone)[1]


def test_a_second_sync_changes_nothing_and_makes_no_commit(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [claimed("A", W1), claimed("B", W2), claimed("C", W2)])
    make_wave_branch(remote.clone, W2, ["B"])
    first = sync(remote.clone)
    assert first[0] == 0 and len(first[1].splitlines()) == 4  # three items and the commit line
    after_first = origin_head(remote)
    second = sync(remote.clone, "--json")
    assert (second[0], json.loads(second[1])) == (0, [])
    assert origin_head(remote) == after_first


def test_dry_run_shows_the_changes_and_writes_nothing(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [claimed("A", W1)])
    leftover = discover(remote.clone).worktrees_dir / W1 / "A-1"
    git(remote.clone, "worktree", "add", "-q", "--detach", str(leftover), "HEAD")
    before = origin_head(remote)
    code, out, _ = sync(remote.clone, "--dry-run")
    assert code == 0
    assert out.splitlines() == [
        f"would move A: in_progress -> todo (lease expired (claimed at 2026-01-01T00:00:00Z); "
        f"no branch wavegit/{W1} on origin)",
        f"would prune worktrees {leftover.parent} (wave {W1})",
    ]
    assert origin_head(remote) == before and leftover.is_dir()


def test_leftover_worktrees_and_item_branches_are_pruned_only_for_waves_not_in_flight(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [claimed("A", W1), claimed("B", W2, at=report.utc_timestamp())],
                               lease_ttl_s=3600)
    state = discover(remote.clone).worktrees_dir
    for wave, item_id in ((W1, "A"), (W2, "B")):
        tree = state / wave / f"{item_id}-1"
        tree.mkdir(parents=True)
        (tree / "work.txt").write_text("left by a killed wave\n")
        git(remote.clone, "branch", "-q", f"wavegit/items/{wave}/{item_id}", "HEAD")
    git(remote.clone, "branch", "-q", f"wavegit/items/{W1}/Z", "HEAD")
    code, out, _ = sync(remote.clone, "--json")
    assert code == 0
    pruned = [c for c in json.loads(out) if c["kind"] == "prune"]
    assert pruned == [
        {"kind": "prune", "what": "worktrees", "wave": W1, "target": str(state / W1)},
        {"kind": "prune", "what": "branch", "wave": W1, "target": f"wavegit/items/{W1}/A"},
        {"kind": "prune", "what": "branch", "wave": W1, "target": f"wavegit/items/{W1}/Z"},
    ]
    assert not (state / W1).exists() and (state / W2 / "B-1" / "work.txt").exists()
    branches = git(remote.clone, "for-each-ref", "--format=%(refname:short)", "refs/heads/wavegit/items/")
    assert branches.splitlines() == [f"wavegit/items/{W2}/B"]
    assert json.loads(sync(remote.clone, "--json")[1]) == []


def test_without_a_remote_the_local_wave_branch_is_what_counts(tmp_path: Path) -> None:
    repo = tmp_path / "solo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit_files(repo, {"README.md": "solo\n", ".wavegit/config.yaml": "lease_ttl_s: 60\n",
                        ".wavegit/tracker.yaml": tracker_text([claimed("A", W1), claimed("B", W1)])},
                 "start", push_to=None)
    make_wave_branch(repo, W1, ["A"], start="main", push=False)
    assert sync(repo)[0] == 0
    loaded = tracker.loads(git(repo, "show", "main:.wavegit/tracker.yaml"))
    assert [(i.id, i.status) for i in loaded.items] == [("A", "review"), ("B", "todo")]


def test_an_invalid_tracker_is_refused_with_its_location_and_nothing_is_written(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [claimed("A", W1)])
    text = tracker_text([claimed("A", W1)]).replace("status: in_progress", "status: stuck")
    commit_files(remote.clone, {".wavegit/tracker.yaml": text}, "break the tracker")
    before = origin_head(remote)
    code, out, err = sync(remote.clone)
    assert (code, out) == (2, "")
    assert len(err.splitlines()) == 1 and err.startswith(".wavegit/tracker.yaml:") and "stuck" in err
    assert origin_head(remote) == before


def test_with_github_merged_and_closed_prs_settle_items_and_say_so_on_the_report(tmp_path: Path) -> None:
    remote = make_remote_repo(tmp_path)
    with running(remote.origin) as gh:
        env = github_env(gh)
        client = PyGithubClient(Settings(env["GITHUB_TOKEN"], gh.fake.repo, gh.url),
                                RetryPolicy(deadline_s=20.0, backoff_s=0.01, max_backoff_s=0.05))
        numbers = {}
        for wave, item_id in ((W1, "A"), (W2, "B")):
            make_wave_branch(remote.clone, wave, [item_id])
            pr = client.find_or_create_pr(f"wavegit/{wave}", "main", f"wave {wave}", "a wave")
            marker = report_markdown.MARKER
            client.upsert_report_comment(pr.number, f"{marker}\nthe report of {wave}\n", marker)
            numbers[item_id] = pr.number
        git(remote.clone, "checkout", "-q", "-B", "main", "origin/main")
        items = [entry("A", "review", wave=W1, pr=numbers["A"]),
                 entry("B", "review", wave=W2, pr=numbers["B"])]
        commit_files(remote.clone, {".wavegit/config.yaml": "lease_ttl_s: 60\n",
                                    ".wavegit/tracker.yaml": tracker_text(items)}, "tracker")
        merge_sha = gh.fake.merge(numbers["A"])
        gh.fake.close(numbers["B"])
        code, out, err = sync(remote.clone, env=env)
        assert code == 0, err
        # The closed PR's branch holds work main does not have: kept, and said so once.
        assert f"keep branch wavegit/{W2} on origin: 1 commit not in main (" in out
        a, b = origin_item(remote, "A"), origin_item(remote, "B")
        assert (a.status, a.merge_sha) == ("done", merge_sha)
        assert (b.status, b.pr, b.wave) == ("todo", None, None)
        assert b.last_error == f"PR #{numbers['B']} was closed without merging"
        bodies = {item_id: gh.fake.issue_comments(n)[0].body for item_id, n in numbers.items()}
        assert bodies["A"].splitlines()[:3] == [
            report_markdown.MARKER,
            f"{OUTCOME_PREFIX}merged as {merge_sha[:12]}; `wavegit sync` marked A done",
            f"the report of {W1}"]
        closed_line = f"{OUTCOME_PREFIX}closed without merging; `wavegit sync` returned B to todo"
        assert bodies["B"].splitlines()[1] == closed_line
        # Settled items are not looked at again: no commit, no comment edit.
        edits = gh.fake.count("PATCH")
        again = sync(remote.clone, env=env)[1].splitlines()
        assert again == ["in sync: nothing to change"]
        assert gh.fake.count("PATCH") == edits
        assert [i.status for i in origin_tracker(remote).items] == ["done", "todo"]
