"""The pre-push hook's guards of the tracker branch (wavegit/hook/tracker_guard.py), through real pushes and
the installed hook: a rewind that drops wavegit's own commits, a pushed tracker that is invalid."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.hook import ItemSpec, commit, install_hook, publish_tracker, push, remote_oid, tracker_yaml
from tests.helpers.repos import RemoteRepo, git, make_remote_repo, wavegit
from tests.helpers.wave import item, make_wave_repo, origin_item
from wavegit.hook import prepush, pushed, tracker_guard

TRACKER = ".wavegit/tracker.yaml"
W1 = "w-20260101-000000-0001"


def claimed_elsewhere(tmp_path: Path) -> tuple[RemoteRepo, str]:
    """An origin whose main a scheduler in another clone has just claimed a wave on (``wavegit claim``),
    and the user's clone, hook installed, that has fetched it; the commit before the claim."""
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])])
    install_hook(remote.clone)
    before = git(remote.origin, "rev-parse", "main")
    scheduler = remote.new_clone("scheduler")
    claimed = wavegit(scheduler, "claim")
    assert claimed.returncode == 0, claimed.stderr
    assert origin_item(remote, "A").status == "in_progress"
    return remote, before


def test_a_force_push_rewinding_past_a_claim_is_refused_and_the_claim_stays(tmp_path: Path) -> None:
    remote, before_claim = claimed_elsewhere(tmp_path)
    git(remote.clone, "pull", "-q", "--ff-only")
    claim = git(remote.origin, "rev-parse", "main")
    git(remote.clone, "reset", "-q", "--hard", before_claim)
    commit(remote.clone, {"docs/notes.md": "mine\n"})
    result = push(remote.clone, "-f", "origin", "main")
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "wavegit: push refused: refs/heads/main is not a fast-forward: it drops 1 wavegit commit(s)" \
        in result.stderr
    assert f"{claim[:7]} wavegit: claim wave" in result.stderr and "git pull --rebase" in result.stderr
    assert git(remote.origin, "rev-parse", "main") == claim
    assert origin_item(remote, "A").status == "in_progress"


def test_a_force_push_over_commits_never_fetched_is_refused_as_unknowable(tmp_path: Path) -> None:
    remote, _ = claimed_elsewhere(tmp_path)  # the user's clone has not fetched the claim
    claim = git(remote.origin, "rev-parse", "main")
    commit(remote.clone, {"docs/notes.md": "mine\n"})
    result = push(remote.clone, "-f", "origin", "main")
    assert result.returncode != 0
    assert f"the remote's {claim[:12]} is not in this repository" in result.stderr
    assert git(remote.origin, "rev-parse", "main") == claim


def test_a_force_push_dropping_only_the_users_own_commits_is_allowed(tmp_path: Path) -> None:
    remote, _ = claimed_elsewhere(tmp_path)
    git(remote.clone, "pull", "-q", "--ff-only")
    commit(remote.clone, {"docs/notes.md": "first\n"})
    assert push(remote.clone, "origin", "main").returncode == 0
    git(remote.clone, "commit", "-q", "--amend", "-m", "reworded")
    result = push(remote.clone, "-f", "origin", "main")
    assert result.returncode == 0, result.stderr
    assert git(remote.origin, "log", "-1", "--format=%s", "main") == "reworded"


def test_a_rewind_among_several_pushed_refs_is_refused_and_a_fast_forward_among_them_is_not(
        tmp_path: Path) -> None:
    remote, before_claim = claimed_elsewhere(tmp_path)
    git(remote.clone, "pull", "-q", "--ff-only")
    commit(remote.clone, {"docs/notes.md": "ahead\n"})
    allowed = push(remote.clone, "origin", "main", "HEAD:refs/heads/copy")
    assert allowed.returncode == 0, allowed.stderr
    head = git(remote.origin, "rev-parse", "main")  # the user's commit on top of the claim
    git(remote.clone, "reset", "-q", "--hard", before_claim)
    commit(remote.clone, {"docs/notes.md": "behind\n"})
    result = push(remote.clone, "-f", "origin", "main", "HEAD:refs/heads/other")
    assert result.returncode != 0 and "refs/heads/main is not a fast-forward" in result.stderr
    assert git(remote.origin, "rev-parse", "main") == head


def test_a_hand_edit_setting_a_claimed_item_back_to_todo_is_refused_and_the_claim_stays(
        tmp_path: Path) -> None:
    # Seen on a real project: a fast-forward returning a running item to todo passed, `plan` selected it
    # again while its worker ran, and its wave's record then found it no longer claimed.
    remote, _ = claimed_elsewhere(tmp_path)
    git(remote.clone, "pull", "-q", "--ff-only")
    claim = git(remote.origin, "rev-parse", "main")
    text = (remote.clone / TRACKER).read_text()
    commit(remote.clone, {TRACKER: text.replace("status: in_progress", "status: todo")}, "A: back to todo")
    result = push(remote.clone, "origin", "main")
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "wavegit: push refused: it changes items in flight by hand:" in result.stderr
    assert "A: back to todo: A (in_progress, wave w-" in result.stderr
    assert git(remote.origin, "rev-parse", "main") == claim


def test_a_hand_edit_whose_subject_holds_a_unicode_line_end_is_judged_not_crashed_on(tmp_path: Path) -> None:
    # The hook read `git log`'s records with str.splitlines, which splits at U+2028: one record became two,
    # too few fields to unpack (a traceback, the push refused for no reason).
    remote, _ = claimed_elsewhere(tmp_path)
    git(remote.clone, "pull", "-q", "--ff-only")
    claim = git(remote.origin, "rev-parse", "main")
    text = (remote.clone / TRACKER).read_text()
    edited = text.replace("status: in_progress", "status: todo")
    commit(remote.clone, {TRACKER: edited}, "A:\u2028back to todo")
    result = push(remote.clone, "origin", "main")
    assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr
    assert "wavegit: push refused: it changes items in flight by hand:" in result.stderr
    assert git(remote.origin, "rev-parse", "main") == claim


def test_a_hand_edit_of_other_items_passes_while_one_is_in_flight_also_merged_over_a_claim(
        tmp_path: Path) -> None:
    remote, _ = claimed_elsewhere(tmp_path)  # the user's clone has not fetched the claim yet
    text = (remote.clone / TRACKER).read_text()
    added = text.replace("items:\n", "items:\n- id: B\n  prompt: write src/b.txt ok\n  owns: [src/b.txt]\n"
                                      "  test: 'true'\n", 1)
    commit(remote.clone, {TRACKER: added}, "B, by hand")
    git(remote.clone, "pull", "-q", "--no-rebase", "--no-edit")  # a merge with the claim, which changed A
    result = push(remote.clone, "origin", "main")
    assert result.returncode == 0, result.stderr
    assert origin_item(remote, "A").status == "in_progress" and origin_item(remote, "B").status == "todo"


# --- the pushed tracker -------------------------------------------------------------------------------

def published(tmp_path: Path) -> RemoteRepo:
    remote = make_remote_repo(tmp_path, {"README.md": "hello\n", "src/a/x.py": "x = 1\n"})
    publish_tracker(remote, [ItemSpec("A", ["src/a/"], wave=W1), ItemSpec("B", ["docs/"], status="todo")])
    install_hook(remote.clone)
    return remote


def test_a_push_leaving_a_tab_in_the_tracker_is_refused_saying_where(tmp_path: Path) -> None:
    remote = published(tmp_path)
    before = remote_oid(remote, "refs/heads/main")
    text = (remote.clone / TRACKER).read_text()
    commit(remote.clone, {TRACKER: text.replace("  - id: B", "\t- id: B")}, "edit the tracker by hand")
    result = push(remote.clone, "origin", "main")
    assert result.returncode != 0 and "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert "wavegit: push refused: the tracker it leaves on refs/heads/main is invalid:" in lines
    line = 1 + text.splitlines().index("  - id: B")
    assert any(entry.startswith(f"  {TRACKER}:{line}:1: not valid YAML") for entry in lines), result.stderr
    assert remote_oid(remote, "refs/heads/main") == before
    # The command it names checks the refused file (plain `validate` checks the remote's, still valid).
    assert "`wavegit validate --worktree` names each problem" in result.stderr
    checked = wavegit(remote.clone, "validate", "--worktree")
    assert checked.returncode == 2 and f"{TRACKER}:{line}:1: not valid YAML" in checked.stderr


def test_a_push_removing_the_tracker_is_refused(tmp_path: Path) -> None:
    remote = published(tmp_path)
    commit(remote.clone, {TRACKER: None}, "no more tracker")
    result = push(remote.clone, "origin", "main")
    assert result.returncode != 0
    assert f"  {TRACKER}: the push removes the tracker" in result.stderr


def test_a_valid_tracker_edit_and_an_invalid_one_on_another_branch_are_allowed(tmp_path: Path) -> None:
    remote = published(tmp_path)
    text = (remote.clone / TRACKER).read_text()
    commit(remote.clone, {TRACKER: text + "# reviewed\n"})
    assert push(remote.clone, "origin", "main").returncode == 0
    git(remote.clone, "checkout", "-q", "-b", "draft")
    commit(remote.clone, {TRACKER: "version: 1\nitems: {unclosed\n"})
    result = push(remote.clone, "origin", "draft")
    assert result.returncode == 0, result.stderr  # only the tracker branch's tracker is what wavegit reads


def test_item_level_problems_are_refused_like_wavegits_own_writes_would_be(tmp_path: Path) -> None:
    remote = published(tmp_path)
    both = tracker_yaml([ItemSpec("A", ["src/a/"], wave=W1), ItemSpec("A", ["docs/"], status="todo")])
    commit(remote.clone, {TRACKER: both})
    result = push(remote.clone, "origin", "main")
    assert result.returncode != 0 and "is invalid:" in result.stderr
    assert f"  {TRACKER}:" in result.stderr and "duplicate" in result.stderr.lower()


def test_the_refusal_lists_at_most_a_few_problems_and_counts_the_rest(tmp_path: Path) -> None:
    remote = published(tmp_path)
    many = tracker_yaml([ItemSpec(f"X{n}", ["/abs/path"], status="todo") for n in range(8)])
    commit(remote.clone, {TRACKER: many})
    result = push(remote.clone, "origin", "main")
    listed = [line for line in result.stderr.splitlines() if line.startswith(f"  {TRACKER}:")]
    assert len(listed) == tracker_guard.MAX_LISTED
    assert "  ... and 3 more" in result.stderr


def test_the_default_settled_branches_are_the_configs_defaults() -> None:
    from wavegit.model.config import Config

    defaults = Config()
    assert prepush.settled_branches(defaults.tracker_branch, defaults.base_branch) == pushed.DEFAULT_SETTLED
