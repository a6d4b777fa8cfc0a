"""The pre-push hook: git's protocol, and real pushes to a bare origin running the installed hook."""

from __future__ import annotations

import gc
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from tests.helpers.hook import ItemSpec, commit, hook_env, install_hook, publish_tracker, push, remote_oid
from tests.helpers.repos import CliResult, RemoteRepo, git, make_remote_repo, wavegit
from wavegit.attempts import wavebranch
from wavegit.core.errors import UsageError
from wavegit.hook import prepush, pushed

Z40, Z64 = "0" * 40, "0" * 64
W1, W2, W3, W9 = (f"w-20260101-000000-000{n}" for n in (1, 2, 3, 9))
MAIN, ITEM_BRANCH = "refs/heads/main", f"refs/heads/wavegit/items/{W1}/AUTH-1"
A40, B40, A64 = "a" * 40, "b" * 40, "c" * 64

FILES = {
    "README.md": "hello\n",
    "src/auth/limiter.py": "limit = 1\n",
    "src/auth/session.py": "session = 1\n",
    "lib/util.py": "util = 1\n",
    "src/billing/invoice.py": "invoice = 1\n",
    "config/app.yaml": "debug: false\n",
    "docs/guide.md": "guide\n",
    "src/done.py": "done = 1\n",
}
ITEMS = [
    ItemSpec("AUTH-1", ["src/auth/"], wave=W1),
    ItemSpec("UTIL-1", ["lib/util.py"], wave=W1),
    ItemSpec("BILL-1", ["src/billing/invoice.py"], status="review", wave=W2, pr=42),
    # No glob may reach the tracker (a protected path): this one owns config files only.
    ItemSpec("CONF-1", ["config/**/*.yaml"], wave=W3),
    ItemSpec("DOCS-1", ["docs/"], status="todo"),
    ItemSpec("DONE-1", ["src/done.py"], status="done", extra={"merge_sha": "ab" * 20}),
]


@pytest.fixture
def flight(tmp_path: Path) -> RemoteRepo:
    """Origin with the tracker above on main, a clone that fetched it, and the hook installed in the clone."""
    remote = make_remote_repo(tmp_path, FILES)
    publish_tracker(remote, ITEMS)
    install_hook(remote.clone)
    return remote


Finished = subprocess.CompletedProcess[str] | CliResult


def refused(result: Finished) -> str:
    """stderr of a push that the hook refused (fails the test otherwise)."""
    assert result.returncode != 0, result.stderr
    assert "push refused" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    return result.stderr


def allowed(result: Finished) -> str:
    assert result.returncode == 0, result.stderr
    assert "refused" not in result.stderr
    return result.stderr


def branch(repo: Path, name: str, start: str = "origin/main") -> None:
    git(repo, "checkout", "-q", "-b", name, start)


# --- git's stdin protocol -----------------------------------------------------------------------------

def test_update_lines_are_split_from_the_right_so_a_local_ref_may_contain_spaces() -> None:
    [update] = pushed.parse_updates(f"main@{{1 day ago}} {A40} refs/heads/x {B40}\n")
    assert (update.local_ref, update.local_oid, update.remote_ref, update.remote_oid) == (
        "main@{1 day ago}", A40, "refs/heads/x", B40)


def test_all_zero_remote_oid_is_a_new_ref_for_sha1_and_sha256() -> None:
    sha1, sha256 = pushed.parse_updates(f"refs/heads/a {A40} refs/heads/a {Z40}\n"
                                      f"refs/heads/b {A64} refs/heads/b {Z64}")
    assert sha1.is_new and sha256.is_new
    assert not sha1.is_delete and not sha256.is_delete


def test_delete_lines_are_deletions_for_sha1_and_sha256() -> None:
    updates = pushed.parse_updates(f"(delete) {Z40} refs/heads/a {A40}\n(delete) {Z64} refs/heads/b {A64}\n")
    assert [u.is_delete for u in updates] == [True, True]
    assert [u.is_new for u in updates] == [False, False]


def test_empty_and_blank_stdin_has_no_updates() -> None:
    assert pushed.parse_updates("") == []
    assert pushed.parse_updates("\n\n") == []


@pytest.mark.parametrize(("line", "reason"), [
    (f"refs/heads/a {A40} refs/heads/a", "expected"),
    (f"refs/heads/a {A40[:-1]} refs/heads/a {Z40}", "not an object id"),
    (f"refs/heads/a {A40.upper()} refs/heads/a {Z40}", "not an object id"),
    (f"refs/heads/a {A40} refs/heads/a {Z64}", "SHA-1 and SHA-256"),
    (f"(delete) {A40} refs/heads/a {B40}", "(delete)"),
    (f"refs/heads/a {A40}  {Z40}", "expected"),
])
def test_malformed_stdin_lines_are_rejected_with_their_line_number(line: str, reason: str) -> None:
    with pytest.raises(UsageError, match=rf"^stdin line 2: .*{re.escape(reason)}"):
        pushed.parse_updates(f"refs/heads/ok {A40} refs/heads/ok {B40}\n{line}\n")


def test_malformed_stdin_exits_2_with_one_clear_line(tmp_path: Path) -> None:
    result = wavegit(tmp_path, "hook", "pre-push", "origin", "url", input="garbage\n")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "wavegit hook: stdin line 1: expected '<local ref> <local oid> <remote ref> <remote oid>', "
        "got 'garbage'"]


# As git starts the hook (the process's own argv), listing the modules loaded when it ends.
STARTED_AS_GIT_DOES = """
import json, os, sys
from wavegit import cli
out, sys.argv = sys.argv[1], ["wavegit", *sys.argv[2:]]
real_exit = os._exit
def exit_listing(code):
    json.dump(sorted(sys.modules), open(out, "w"))
    real_exit(code)
os._exit = exit_listing
cli.main()
"""


def test_the_hook_as_git_runs_it_is_parsed_without_argparse(flight: RemoteRepo, tmp_path: Path) -> None:
    head = commit(flight.clone, {"src/auth/limiter.py": "limit = 21\n"})
    line = f"refs/heads/main {head} refs/heads/main {git(flight.clone, 'rev-parse', 'origin/main')}\n"
    out = tmp_path / "modules.json"
    for options in ((), ("--no-fetch",), ("--fetch",)):
        argv = [sys.executable, "-c", STARTED_AS_GIT_DOES, str(out), "hook", "pre-push", *options, "origin",
                str(flight.origin)]
        done = subprocess.run(argv, cwd=flight.clone, input=line, text=True, capture_output=True,
                              env=hook_env(), check=False, timeout=120)
        assert done.returncode == 1 and "src/auth/limiter.py: owned by AUTH-1" in done.stderr, done.stderr
        loaded = set(json.loads(out.read_text()))
        assert "wavegit.commands.hook" in loaded and not loaded & {"argparse", "shutil"}, options


@pytest.mark.parametrize(("args", "says"), [(("--fetch", "--no-fetch"), "not allowed with argument"),
                                            (("--fecth",), "unrecognized arguments: --fecth"),
                                            (("a", "b", "c"), "unrecognized arguments: c")])
def test_what_the_quick_parse_does_not_know_argparse_rejects_with_exit_2(
        tmp_path: Path, args: tuple[str, ...], says: str) -> None:
    result = wavegit(tmp_path, "hook", "pre-push", *args, "origin", "url", input="")
    assert result.returncode == 2 and says in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_hook_help_still_comes_from_argparse(tmp_path: Path) -> None:
    result = wavegit(tmp_path, "hook", "pre-push", "--help")
    assert result.returncode == 0 and "--no-fetch" in result.stdout and "hook.refuse_on" in result.stdout


def test_empty_stdin_and_pure_deletions_pass_without_reading_a_repository(tmp_path: Path) -> None:
    # tmp_path is no git repository at all: nothing but stdin may be looked at (a branch's deletion reads
    # the config: it may be the tracker branch's).
    for stdin in ("", f"(delete) {Z40} refs/tags/a {A40}\n"):
        result = wavegit(tmp_path, "hook", "pre-push", "origin", "url", input=stdin)
        assert (result.returncode, result.stderr) == (0, "")


def test_missing_remote_arguments_are_a_usage_error(tmp_path: Path) -> None:
    result = wavegit(tmp_path, "hook", "pre-push", input="")
    assert result.returncode == 2
    assert "REMOTE and URL" in result.stderr


def test_pre_commit_variables_become_one_update() -> None:
    remote, url, [update] = pushed.updates_from_pre_commit({
        "PRE_COMMIT_REMOTE_NAME": "origin", "PRE_COMMIT_REMOTE_URL": "/x.git", "PRE_COMMIT_TO_REF": A40,
        "PRE_COMMIT_FROM_REF": B40, "PRE_COMMIT_LOCAL_BRANCH": "refs/heads/f",
        "PRE_COMMIT_REMOTE_BRANCH": f"refs/heads/wavegit/{W1}"})
    assert (remote, url) == ("origin", "/x.git")
    assert update == pushed.RefUpdate("refs/heads/f", A40, f"refs/heads/wavegit/{W1}", B40)
    # A whole history down to its root commit: pre-commit sets no range, so there is nothing to check.
    assert pushed.updates_from_pre_commit({"PRE_COMMIT_REMOTE_NAME": "o"}) == ("o", "o", [])
    with pytest.raises(UsageError, match="PRE_COMMIT_REMOTE_NAME is not set"):
        pushed.updates_from_pre_commit({"PRE_COMMIT_TO_REF": A40, "PRE_COMMIT_FROM_REF": B40})


def test_wave_of_ref_reads_wave_and_per_item_branches_only() -> None:
    assert prepush.wave_of_ref(f"refs/heads/wavegit/{W1}") == W1
    assert prepush.wave_of_ref(f"refs/heads/wavegit/items/{W1}/AUTH-1") == W1
    assert prepush.wave_of_ref(f"refs/heads/wavegit/{W1}/AUTH-1") is None
    assert prepush.wave_of_ref("refs/heads/wavegit/not-a-wave-id") is None
    assert prepush.wave_of_ref("refs/heads/wavegit") is None
    assert prepush.wave_of_ref("refs/heads/main") is None
    assert prepush.wave_of_ref(f"refs/tags/wavegit/{W1}") is None
    assert prepush.WAVE_REFS == "refs/heads/" + wavebranch.BRANCH_PREFIX
    assert wavebranch.item_branch(W1, "X").startswith(wavebranch.BRANCH_PREFIX)


def test_a_state_path_an_item_owns_is_refused_on_main_but_passes_on_the_tracker_branch() -> None:
    # Off a wave branch only the owned paths are listed; the tracker branch's .wavegit/ ones are dropped then.
    in_flight = [prepush.Owner("S", "in_progress", W1, None, (".wavegit/notes.md", "src/s.py"))]
    changed = {MAIN: {".wavegit/notes.md", "free.txt"},
               "refs/heads/tracker": {".wavegit/notes.md", "src/s.py"}}
    found = [(v.ref, v.path) for v in prepush.find_violations(changed, prepush.indexed(in_flight), "tracker")]
    assert found == [(MAIN, ".wavegit/notes.md"), ("refs/heads/tracker", "src/s.py")]


def test_find_violations_applies_every_rule_and_skips_invalid_patterns() -> None:
    in_flight = [prepush.Owner("A", "in_progress", W1, None, ("src/a/", "/not/valid")),
                 prepush.Owner("B", "review", W2, 7, ("src/b.py",))]
    changed = {
        MAIN: ["src/a/x.py", "src/b.py", "free.txt", ".wavegit/tracker.yaml"],
        f"refs/heads/wavegit/{W1}": ["src/a/y.py", "src/b.py", "free.txt"],
        "refs/heads/tracker": [".wavegit/tracker.yaml", "src/a/z.py"],
    }
    found = [(v.ref, v.path, v.owner.id if v.owner else None)
             for v in prepush.find_violations(changed, prepush.indexed(in_flight), "tracker")]
    assert found == [
        (MAIN, "src/a/x.py", "A"), (MAIN, "src/b.py", "B"),
        ("refs/heads/tracker", "src/a/z.py", "A"),
        (f"refs/heads/wavegit/{W1}", "free.txt", None), (f"refs/heads/wavegit/{W1}", "src/b.py", "B"),
    ]


# --- real pushes --------------------------------------------------------------------------------------

def test_a_foreign_in_flight_file_is_refused_with_item_wave_and_advice(flight: RemoteRepo) -> None:
    before = remote_oid(flight, "refs/heads/main")
    commit(flight.clone, {"src/auth/limiter.py": "limit = 2\n"})
    stderr = refused(push(flight.clone, "origin", "main"))
    assert f"src/auth/limiter.py: owned by AUTH-1 (in_progress, wave {W1}; pushed to {MAIN})" in stderr
    assert "If this push merges" not in stderr
    assert f"wait until wave {W1} is merged" in stderr.lower()
    assert "git push --no-verify" in stderr
    assert remote_oid(flight, "refs/heads/main") == before


def test_refusal_names_the_pr_of_an_item_in_review(flight: RemoteRepo) -> None:
    commit(flight.clone, {"src/billing/invoice.py": "invoice = 2\n"})
    stderr = refused(push(flight.clone, "origin", "main"))
    assert f"src/billing/invoice.py: owned by BILL-1 (review, wave {W2}, PR #42" in stderr
    assert "If this push merges" not in stderr  # its pull request is how it gets merged


def test_owned_paths_match_case_insensitively(flight: RemoteRepo) -> None:
    commit(flight.clone, {"SRC/Auth/new.py": "x\n"})
    assert "SRC/Auth/new.py: owned by AUTH-1" in refused(push(flight.clone, "origin", "main"))


def test_files_of_unowned_todo_and_done_items_push_fine(flight: RemoteRepo) -> None:
    head = commit(flight.clone, {"docs/guide.md": "more\n", "src/done.py": "done = 2\n", "new.txt": "n\n"})
    allowed(push(flight.clone, "origin", "main"))
    assert remote_oid(flight, "refs/heads/main") == head


def test_the_owning_wave_branch_and_its_per_item_branches_accept_the_waves_files(flight: RemoteRepo) -> None:
    branch(flight.clone, "work")
    head = commit(flight.clone, {"src/auth/limiter.py": "limit = 3\n", "lib/util.py": "util = 3\n"})
    allowed(push(flight.clone, "origin", f"HEAD:refs/heads/wavegit/{W1}"))
    allowed(push(flight.clone, "origin", f"HEAD:refs/heads/wavegit/items/{W1}/AUTH-1"))
    assert remote_oid(flight, f"refs/heads/wavegit/items/{W1}/AUTH-1") == head


def test_a_wave_branch_touching_another_waves_file_is_refused(flight: RemoteRepo) -> None:
    branch(flight.clone, "work")
    commit(flight.clone, {"src/auth/limiter.py": "limit = 3\n", "src/billing/invoice.py": "invoice = 3\n"})
    stderr = refused(push(flight.clone, "origin", f"HEAD:refs/heads/wavegit/{W1}"))
    assert f"src/billing/invoice.py: owned by BILL-1 (review, wave {W2}, PR #42" in stderr
    assert "limiter" not in stderr


def test_a_wave_branch_touching_files_outside_its_items_is_refused(flight: RemoteRepo) -> None:
    branch(flight.clone, "work")
    commit(flight.clone, {"docs/guide.md": "changed\n"})
    stderr = refused(push(flight.clone, "origin", f"HEAD:{ITEM_BRANCH}"))
    assert f"docs/guide.md: outside the items of wave {W1} (pushed to {ITEM_BRANCH})" in stderr


def test_deleting_a_branch_that_holds_in_flight_files_is_allowed(flight: RemoteRepo) -> None:
    branch(flight.clone, "feature")
    commit(flight.clone, {"src/auth/limiter.py": "limit = 4\n"})
    assert push(flight.clone, "--no-verify", "origin", "feature").returncode == 0
    allowed(push(flight.clone, "origin", "--delete", "feature"))
    assert remote_oid(flight, "refs/heads/feature") == ""


def test_a_new_branch_at_a_commit_the_remote_has_is_allowed(flight: RemoteRepo) -> None:
    allowed(push(flight.clone, "origin", "main:refs/heads/copy", "origin/main~1:refs/heads/older"))
    assert remote_oid(flight, "refs/heads/older") == git(flight.clone, "rev-parse", "origin/main~1")


def test_a_new_branch_with_a_foreign_commit_is_refused_on_a_branch_hook_refuse_on_names(
        flight: RemoteRepo) -> None:
    branch(flight.clone, "feature")
    commit(flight.clone, {"docs/guide.md": "fine\n"})
    commit(flight.clone, {"lib/util.py": "util = 5\n"})
    stderr = refused(push(flight.clone, "origin", "feature",
                          env={"WAVEGIT_HOOK_REFUSE_ON": "release, feature"}))
    assert f"lib/util.py: owned by UTIL-1 (in_progress, wave {W1}; pushed to refs/heads/feature)" in stderr
    assert "docs/guide.md" not in stderr
    assert remote_oid(flight, "refs/heads/feature") == ""


def test_a_feature_branch_touching_an_in_flight_file_is_pushed_with_a_warning_by_default(
        flight: RemoteRepo) -> None:
    branch(flight.clone, "feature")
    head = commit(flight.clone, {"lib/util.py": "util = 6\n", "docs/guide.md": "backed up\n"})
    stderr = allowed(push(flight.clone, "origin", "feature"))
    assert "warning: 1 pushed path(s) collide with work in flight; allowed, as hook.refuse_on" in stderr
    assert f"lib/util.py: owned by UTIL-1 (in_progress, wave {W1}; pushed to refs/heads/feature)" in stderr
    assert remote_oid(flight, "refs/heads/feature") == head
    # The same commits are refused on the base branch (by default the base and tracker branches refuse).
    git(flight.clone, "checkout", "-q", "main")
    git(flight.clone, "merge", "-q", "--ff-only", "feature")
    assert "lib/util.py: owned by UTIL-1" in refused(push(flight.clone, "origin", "main"))
    assert remote_oid(flight, "refs/heads/main") != head


def test_hook_refuse_on_replaces_the_default_branches_and_star_names_every_branch(flight: RemoteRepo) -> None:
    head = commit(flight.clone, {"lib/util.py": "util = 7\n"})
    only_release = {"WAVEGIT_HOOK_REFUSE_ON": "release"}
    assert "pushed path(s) collide" in allowed(push(flight.clone, "origin", "main", env=only_release))
    assert remote_oid(flight, "refs/heads/main") == head
    commit(flight.clone, {"lib/util.py": "util = 8\n"})
    assert "lib/util.py: owned by UTIL-1" in refused(push(flight.clone, "origin", "main:refs/heads/any",
                                                          env={"WAVEGIT_HOOK_REFUSE_ON": "*"}))


def test_a_wave_branch_refuses_whatever_hook_refuse_on_says(flight: RemoteRepo) -> None:
    commit(flight.clone, {"src/billing/invoice.py": "invoice = 9\n"})
    stderr = refused(push(flight.clone, "origin", f"HEAD:refs/heads/wavegit/{W1}",
                          env={"WAVEGIT_HOOK_REFUSE_ON": "release"}))
    assert "src/billing/invoice.py: owned by BILL-1" in stderr


def test_an_invalid_hook_refuse_on_is_bad_input_naming_the_key(flight: RemoteRepo) -> None:
    head = commit(flight.clone, {"docs/guide.md": "x\n"})
    line = f"refs/heads/main {head} refs/heads/main {git(flight.clone, 'rev-parse', 'origin/main')}\n"
    result = wavegit(flight.clone, "hook", "pre-push", "origin", str(flight.origin), input=line,
                     env={"WAVEGIT_HOOK_REFUSE_ON": "main, bad..name"})
    assert result.returncode == 2, result.stderr
    assert "WAVEGIT_HOOK_REFUSE_ON" in result.stderr and "'bad..name'" in result.stderr
    assert "Traceback" not in result.stderr


def test_renaming_a_file_into_an_owned_directory_is_refused(flight: RemoteRepo) -> None:
    git(flight.clone, "mv", "docs/guide.md", "src/auth/guide.md")
    git(flight.clone, "commit", "-q", "-m", "move in")
    stderr = refused(push(flight.clone, "origin", "main"))
    assert "src/auth/guide.md: owned by AUTH-1" in stderr
    assert "docs/guide.md:" not in stderr


def test_renaming_a_file_out_of_an_owned_directory_is_refused(flight: RemoteRepo) -> None:
    (flight.clone / "attic").mkdir()
    git(flight.clone, "mv", "src/auth/session.py", "attic/session.py")
    git(flight.clone, "commit", "-q", "-m", "move out")
    stderr = refused(push(flight.clone, "origin", "main"))
    assert "src/auth/session.py: owned by AUTH-1" in stderr
    assert "attic/session.py:" not in stderr


def test_a_multi_ref_push_is_judged_per_ref(flight: RemoteRepo) -> None:
    commit(flight.clone, {"src/auth/limiter.py": "limit = 6\n"})
    stderr = refused(push(flight.clone, "origin", "main", f"main:refs/heads/wavegit/{W1}"))
    assert f"src/auth/limiter.py: owned by AUTH-1 (in_progress, wave {W1}; pushed to {MAIN})" in stderr
    assert f"refs/heads/wavegit/{W1})" not in stderr


# --- merges -------------------------------------------------------------------------------------------

def test_merging_main_into_a_pushed_feature_branch_does_not_count_mains_commits(flight: RemoteRepo) -> None:
    branch(flight.clone, "feature")
    commit(flight.clone, {"docs/guide.md": "feature\n"})
    allowed(push(flight.clone, "origin", "feature"))
    # Someone else's change to an owned file, already on the remote (made before the claim, say).
    publish_tracker(flight, ITEMS, {"src/auth/limiter.py": "limit = 7\n"})
    git(flight.clone, "merge", "-q", "--no-edit", "origin/main")
    allowed(push(flight.clone, "origin", "feature"))


def test_a_merged_side_branch_commit_touching_an_owned_file_is_refused(flight: RemoteRepo) -> None:
    branch(flight.clone, "side")
    commit(flight.clone, {"src/auth/session.py": "session = 8\n"})
    git(flight.clone, "checkout", "-q", "main")
    commit(flight.clone, {"docs/guide.md": "main side\n"})
    git(flight.clone, "merge", "-q", "--no-ff", "--no-edit", "side")
    stderr = refused(push(flight.clone, "origin", "main"))
    assert "src/auth/session.py: owned by AUTH-1" in stderr


def test_an_edit_made_inside_a_merge_commit_is_refused(flight: RemoteRepo) -> None:
    branch(flight.clone, "side")
    commit(flight.clone, {"docs/guide.md": "side\n"})
    git(flight.clone, "checkout", "-q", "main")
    commit(flight.clone, {"README.md": "main\n"})
    git(flight.clone, "merge", "-q", "--no-ff", "--no-commit", "side")
    commit(flight.clone, {"src/billing/invoice.py": "evil merge\n"}, "merge side")
    assert len(git(flight.clone, "rev-parse", "HEAD^@").split()) == 2
    stderr = refused(push(flight.clone, "origin", "main"))
    assert "src/billing/invoice.py: owned by BILL-1" in stderr
    assert "docs/guide.md" not in stderr and "README.md" not in stderr


@pytest.mark.parametrize("how", [["--ff"], ["--no-ff", "--no-edit"]], ids=["fast-forward", "merge-commit"])
def test_merging_a_remote_feature_branch_touching_an_in_flight_file_is_refused(flight: RemoteRepo,
                                                                               how: list[str]) -> None:
    # feat is already on the remote (pushed before the claim, or with --no-verify): its commits are still
    # new to main, so they are checked when they reach it.
    branch(flight.clone, "feat")
    commit(flight.clone, {"src/auth/limiter.py": "limit = 11\n"})
    assert push(flight.clone, "--no-verify", "origin", "feat").returncode == 0
    git(flight.clone, "checkout", "-q", "main")
    git(flight.clone, "merge", "-q", *how, "origin/feat")
    before = remote_oid(flight, MAIN)
    stderr = refused(push(flight.clone, "origin", "main"))
    assert f"src/auth/limiter.py: owned by AUTH-1 (in_progress, wave {W1}; pushed to {MAIN})" in stderr
    assert remote_oid(flight, MAIN) == before


def test_commits_already_on_the_remote_base_branch_have_landed_and_are_not_checked_again(
        flight: RemoteRepo) -> None:
    # Someone's change to an owned file is on origin/develop (made before the claim, say).
    branch(flight.clone, "develop")
    commit(flight.clone, {"src/auth/limiter.py": "limit = 12\n"})
    assert push(flight.clone, "--no-verify", "origin", "develop").returncode == 0
    branch(flight.clone, "feature")
    commit(flight.clone, {"docs/guide.md": "feature\n"})
    git(flight.clone, "merge", "-q", "--no-edit", "origin/develop")
    # develop is just another branch: its commits are new to feature.
    everywhere = {"WAVEGIT_HOOK_REFUSE_ON": "*"}  # what is refused, not where (that is hook.refuse_on's)
    assert "src/auth/limiter.py: owned by AUTH-1" in refused(push(flight.clone, "origin", "feature",
                                                                  env=everywhere))
    # As the base branch, what is on it has landed (like the tracker branch's commits).
    allowed(push(flight.clone, "origin", "feature", env={**everywhere, "WAVEGIT_BASE_BRANCH": "develop"}))


def test_merging_an_in_flight_wave_branch_into_main_is_refused(flight: RemoteRepo) -> None:
    branch(flight.clone, "wave")
    commit(flight.clone, {"src/auth/limiter.py": "limit = 9\n"})
    allowed(push(flight.clone, "origin", f"HEAD:refs/heads/wavegit/{W1}"))
    git(flight.clone, "checkout", "-q", "main")
    git(flight.clone, "merge", "-q", "--no-ff", "--no-edit", f"origin/wavegit/{W1}")
    stderr = refused(push(flight.clone, "origin", "main"))
    assert f"src/auth/limiter.py: owned by AUTH-1 (in_progress, wave {W1}; pushed to {MAIN})" in stderr
    assert "If this push merges" not in stderr


def reviewed_wave(tmp_path: Path) -> RemoteRepo:
    """A clone whose wave W9 pushed its branch (two commits to src/auth/, owned by AUTH-1; the second changes
    limiter.py again) and whose item is
    in review, with no pull request; main has moved on since (the tracker's commit); the clone is on main,
    up to date."""
    remote = make_remote_repo(tmp_path, FILES)
    install_hook(remote.clone)
    branch(remote.clone, "wave")
    commit(remote.clone, {"src/auth/limiter.py": "limit = 9\n"})
    commit(remote.clone, {"src/auth/limiter.py": "limit = 19\n", "src/auth/session.py": "session = 9\n"})
    allowed(push(remote.clone, "origin", f"HEAD:refs/heads/wavegit/{W9}"))
    publish_tracker(remote, [ItemSpec("AUTH-1", ["src/auth/"], status="review", wave=W9)])
    git(remote.clone, "checkout", "-q", "main")
    git(remote.clone, "merge", "-q", "--ff-only", "origin/main")
    return remote


def land_by_hand(clone: Path, form: str) -> None:
    """Bring wave W9's pushed branch onto main the way ``form`` does it."""
    head = f"origin/wavegit/{W9}"
    if form == "merge":
        git(clone, "merge", "-q", "--no-ff", "--no-edit", head)
    elif form == "squash":
        git(clone, "merge", "-q", "--squash", head)
        git(clone, "commit", "-q", "-m", f"wave {W9}, squashed")
    elif form == "rebase":
        git(clone, "checkout", "-q", "-b", "rebased", head)
        git(clone, "rebase", "-q", "main")
        git(clone, "checkout", "-q", "main")
        git(clone, "merge", "-q", "--ff-only", "rebased")
    else:
        git(clone, "cherry-pick", f"origin/main..{head}")


@pytest.mark.parametrize("form", ["merge", "squash", "rebase", "cherry-pick"])
def test_a_reviewed_wave_landed_by_hand_in_any_form_passes_and_says_to_sync(tmp_path: Path,
                                                                            form: str) -> None:
    remote = reviewed_wave(tmp_path)
    land_by_hand(remote.clone, form)
    stderr = allowed(push(remote.clone, "origin", "main"))
    assert (f"this push lands wave {W9} as pushed (in-flight files as on origin/wavegit/<wave>), whose "
            "items are in review: run `wavegit sync` to mark them done") in stderr
    assert remote_oid(remote, MAIN) == git(remote.clone, "rev-parse", "HEAD").strip()


def test_one_push_landing_two_reviewed_waves_names_both_waves(tmp_path: Path) -> None:
    remote = reviewed_wave(tmp_path)
    publish_tracker(remote, [ItemSpec("AUTH-1", ["src/auth/"], status="review", wave=W9),
                             ItemSpec("UTIL-1", ["lib/util.py"], status="review", wave=W2)])
    git(remote.clone, "merge", "-q", "--ff-only", "origin/main")
    branch(remote.clone, "second")
    commit(remote.clone, {"lib/util.py": "util = 2\n"})
    allowed(push(remote.clone, "origin", f"HEAD:refs/heads/wavegit/{W2}"))
    git(remote.clone, "checkout", "-q", "main")
    for wave in (W9, W2):
        git(remote.clone, "merge", "-q", "--no-ff", "--no-edit", f"origin/wavegit/{wave}")
    stderr = allowed(push(remote.clone, "origin", "main"))
    assert "this push lands waves " in stderr and W9 in stderr and W2 in stderr, stderr



@pytest.mark.parametrize("form", ["merge", "squash"])
def test_a_change_to_a_reviewed_waves_file_beyond_its_pushed_head_is_refused_with_how_to_push_it(
        tmp_path: Path, form: str) -> None:
    remote = reviewed_wave(tmp_path)
    land_by_hand(remote.clone, form)
    commit(remote.clone, {"src/auth/limiter.py": "limit = 10\n"})  # not the wave's: a hand edit on top
    stderr = refused(push(remote.clone, "origin", "main"))
    assert f"src/auth/limiter.py: owned by AUTH-1 (review, wave {W9}; pushed to {MAIN})" in stderr
    assert "src/auth/session.py" not in stderr  # as the wave pushed it
    assert (f"If this push merges wave {W9} itself (no pull request), its files must be exactly as on "
            f"origin/wavegit/{W9} (a merge, squash, rebase or cherry-pick of it as pushed): "
            "`git fetch origin`, redo the merge from it, push, then run `wavegit sync` to mark its items "
            "done; push a further change to those files after that.") in stderr
    assert "--no-verify`, then" not in stderr


def test_landing_part_of_a_reviewed_wave_is_refused(tmp_path: Path) -> None:
    remote = reviewed_wave(tmp_path)
    git(remote.clone, "cherry-pick", f"origin/wavegit/{W9}~1")  # its first commit only: limiter.py as it was
    stderr = refused(push(remote.clone, "origin", "main"))
    assert f"src/auth/limiter.py: owned by AUTH-1 (review, wave {W9}; pushed to {MAIN})" in stderr


def test_a_reviewed_wave_landing_with_another_waves_file_is_refused_for_that_file(tmp_path: Path) -> None:
    remote = reviewed_wave(tmp_path)
    publish_tracker(remote, [ItemSpec("AUTH-1", ["src/auth/"], status="review", wave=W9),
                             ItemSpec("BILL-1", ["src/billing/"], wave=W2)])
    git(remote.clone, "merge", "-q", "--ff-only", "origin/main")
    git(remote.clone, "merge", "-q", "--squash", f"origin/wavegit/{W9}")
    git(remote.clone, "commit", "-q", "-m", "squash")
    commit(remote.clone, {"src/billing/invoice.py": "invoice = 2\n"})
    stderr = refused(push(remote.clone, "origin", "main"))
    assert f"src/billing/invoice.py: owned by BILL-1 (in_progress, wave {W2}" in stderr
    assert "src/auth/" not in stderr


# --- the tracker --------------------------------------------------------------------------------------

def test_tracker_commits_pass_and_a_file_an_in_flight_glob_owns_is_refused(flight: RemoteRepo) -> None:
    tracker = flight.clone / ".wavegit/tracker.yaml"
    commit(flight.clone, {".wavegit/tracker.yaml": tracker.read_text() + "# touched\n"})
    allowed(push(flight.clone, "origin", "main"))
    commit(flight.clone, {"config/app.yaml": "debug: true\n"})
    assert "config/app.yaml: owned by CONF-1" in refused(push(flight.clone, "origin", "main"))


def test_an_absent_tracker_is_a_warning_and_the_push_proceeds(tmp_path: Path) -> None:
    remote = make_remote_repo(tmp_path, FILES)
    install_hook(remote.clone)
    commit(remote.clone, {"src/auth/limiter.py": "limit = 10\n"})
    stderr = allowed(push(remote.clone, "origin", "main"))
    assert "warning: no tracker at refs/remotes/origin/main:.wavegit/tracker.yaml" in stderr
    assert "hook.strict" in stderr


def test_an_invalid_tracker_is_a_warning_and_the_push_proceeds(tmp_path: Path) -> None:
    remote = make_remote_repo(tmp_path, FILES)
    publish_tracker(remote, ITEMS)
    admin = remote.base / "admin"
    commit(admin, {".wavegit/tracker.yaml": "version: 1\nitems: {unclosed\n"})
    git(admin, "push", "-q", "origin", "main")
    git(remote.clone, "pull", "-q", "--ff-only")
    install_hook(remote.clone)
    commit(remote.clone, {"src/auth/limiter.py": "limit = 11\n"})
    stderr = allowed(push(remote.clone, "origin", "main"))
    assert "warning: the tracker at refs/remotes/origin/main:.wavegit/tracker.yaml is invalid: " in stderr


def test_strict_mode_refuses_when_the_tracker_cannot_be_read(tmp_path: Path) -> None:
    remote = make_remote_repo(tmp_path, FILES)
    install_hook(remote.clone)
    head = commit(remote.clone, {"README.md": "strict\n"})
    assert push(remote.clone, "origin", "main", env={"WAVEGIT_HOOK_STRICT": "true"}).returncode != 0
    line = f"refs/heads/main {head} refs/heads/main {git(remote.clone, 'rev-parse', 'origin/main')}\n"
    result = wavegit(remote.clone, "hook", "pre-push", "origin", str(remote.origin), input=line,
                     env={"WAVEGIT_HOOK_STRICT": "true"})
    assert result.returncode == 2
    assert "hook.strict is true" in result.stderr and "Traceback" not in result.stderr
    commit(remote.clone, {".wavegit/config.yaml": "hook:\n  strict: true\n"})
    assert push(remote.clone, "origin", "main").returncode != 0
    assert remote_oid(remote, "refs/heads/main") != head


def test_the_hooks_cached_config_follows_the_files_text_and_the_environment(tmp_path: Path) -> None:
    # A warm hook reads its keys from a cache entry named by the config's text: a changed file or a variable
    # overriding a key must be obeyed at once, not the keys the entry holds.
    remote = make_remote_repo(tmp_path, FILES)
    head = commit(remote.clone, {"README.md": "cached\n"})
    line = f"refs/heads/main {head} refs/heads/main {git(remote.clone, 'rev-parse', 'origin/main')}\n"

    def hook(env: dict[str, str] | None = None) -> CliResult:
        return wavegit(remote.clone, "hook", "pre-push", "origin", str(remote.origin), input=line, env=env)

    assert [hook().returncode for _ in range(2)] == [0, 0]  # no tracker: a warning; the second run is warm
    strict = hook({"WAVEGIT_HOOK_STRICT": "true"})
    assert strict.returncode == 2 and "hook.strict is true" in strict.stderr
    assert hook().returncode == 0
    bad = hook({"WAVEGIT_HOOK_MAX_AGE_S": "soon"})
    assert bad.returncode == 2 and "WAVEGIT_HOOK_MAX_AGE_S='soon'" in bad.stderr
    (remote.clone / ".wavegit").mkdir()
    (remote.clone / ".wavegit/config.yaml").write_text("hook:\n  strict: true\n")
    assert hook().returncode == 2
    (remote.clone / ".wavegit/config.yaml").write_text("hook:\n  strict: maybe\n")
    invalid = hook()
    assert invalid.returncode == 2 and ".wavegit/config.yaml:2:" in invalid.stderr


def test_a_configured_tracker_branch_wins_over_the_default_one_resolved_early(flight: RemoteRepo) -> None:
    # The hook resolves the default tracker spec (origin/main) while it finds the repository; a tracker
    # branch set in the environment must still be the one checked, even with origin/main's entry cached.
    admin = flight.base / "admin"
    git(admin, "checkout", "-q", "-b", "claims")
    commit(admin, {".wavegit/tracker.yaml": (admin / ".wavegit/tracker.yaml").read_text().replace(
        "status: todo", f"status: in_progress\n    wave: {W9}")})
    git(admin, "push", "-q", "--no-verify", "origin", "claims")
    git(flight.clone, "fetch", "-q", "origin")
    head = commit(flight.clone, {"docs/guide.md": "claimed\n"})
    line = f"refs/heads/main {head} refs/heads/main {git(flight.clone, 'rev-parse', 'origin/main')}\n"
    args = ("hook", "pre-push", "origin", str(flight.origin))
    for _ in range(2):  # cold, then warm with origin/main's in-flight items cached
        on_main = wavegit(flight.clone, *args, input=line)
        assert on_main.returncode == 0, on_main.stderr
        on_claims = wavegit(flight.clone, *args, input=line, env={"WAVEGIT_TRACKER_BRANCH": "claims"})
        assert on_claims.returncode == 1
        assert f"docs/guide.md: owned by DOCS-1 (in_progress, wave {W9}" in on_claims.stderr


def test_fetch_option_sees_a_claim_made_since_the_last_fetch(flight: RemoteRepo) -> None:
    admin = flight.base / "admin"
    commit(admin, {".wavegit/tracker.yaml": (admin / ".wavegit/tracker.yaml").read_text().replace(
        "status: todo", f"status: in_progress\n    wave: {W9}")})
    git(admin, "push", "-q", "origin", "main")
    head = commit(flight.clone, {"docs/guide.md": "late\n"})
    line = f"refs/heads/main {head} refs/heads/main {git(flight.clone, 'rev-parse', 'origin/main')}\n"
    stale = wavegit(flight.clone, "hook", "pre-push", "origin", str(flight.origin), input=line)
    assert stale.returncode == 0, stale.stderr
    fresh = wavegit(flight.clone, "hook", "pre-push", "--fetch", "origin", str(flight.origin), input=line)
    assert fresh.returncode == 1
    assert f"docs/guide.md: owned by DOCS-1 (in_progress, wave {W9}" in fresh.stderr


def test_a_failed_fetch_warns_and_checks_against_the_last_fetched_tracker(flight: RemoteRepo) -> None:
    head = commit(flight.clone, {"src/auth/limiter.py": "limit = 15\n"})
    line = f"refs/heads/main {head} refs/heads/main {git(flight.clone, 'rev-parse', 'origin/main')}\n"
    flight.origin.rename(flight.base / "gone.git")
    result = wavegit(flight.clone, "hook", "pre-push", "--fetch", "origin", str(flight.origin), input=line)
    assert result.returncode == 1
    assert "warning: could not fetch the tracker branch" in result.stderr
    assert "src/auth/limiter.py: owned by AUTH-1" in result.stderr


def test_an_invalid_config_refuses_with_its_location(flight: RemoteRepo) -> None:
    commit(flight.clone, {".wavegit/config.yaml": "hook:\n  strickt: true\n"})
    result = push(flight.clone, "origin", "main")
    assert result.returncode != 0
    assert re.search(r"^\.wavegit/config\.yaml:2:3: .*strickt", result.stderr, re.MULTILINE), result.stderr
    assert "Traceback" not in result.stderr


def test_inherited_git_variables_do_not_redirect_the_hook(flight: RemoteRepo, tmp_path: Path) -> None:
    other = tmp_path / "other"
    git(tmp_path, "init", "-q", str(other))
    head = commit(flight.clone, {"src/auth/limiter.py": "limit = 16\n"})
    line = f"refs/heads/main {head} refs/heads/main {git(flight.clone, 'rev-parse', 'origin/main')}\n"
    env = {"GIT_DIR": str(other / ".git"), "GIT_WORK_TREE": str(other), "GIT_INDEX_FILE": str(other / "x")}
    result = wavegit(flight.clone, "hook", "pre-push", "origin", str(flight.origin), input=line, env=env)
    assert result.returncode == 1
    assert "src/auth/limiter.py: owned by AUTH-1" in result.stderr


def test_pushing_to_a_url_uses_the_configured_remotes_tracker(flight: RemoteRepo) -> None:
    commit(flight.clone, {"src/auth/limiter.py": "limit = 12\n"})
    assert "owned by AUTH-1" in refused(push(flight.clone, str(flight.origin), "main"))


def test_sha256_repository_end_to_end(tmp_path: Path) -> None:
    origin, clone = tmp_path / "origin.git", tmp_path / "work"
    git(tmp_path, "init", "-q", "--bare", "--object-format=sha256", "-b", "main", str(origin))
    # Cloning an empty repository would not carry its hash algorithm over.
    git(tmp_path, "init", "-q", "--object-format=sha256", "-b", "main", str(clone))
    git(clone, "remote", "add", "origin", str(origin))
    remote = RemoteRepo(origin=origin, clone=clone, base=tmp_path)
    commit(clone, FILES, "initial")
    git(clone, "push", "-q", "-u", "origin", "main")
    publish_tracker(remote, ITEMS)
    install_hook(clone)
    assert len(git(clone, "rev-parse", "HEAD")) == 64
    allowed(push(clone, "origin", "main:refs/heads/new-empty"))
    commit(clone, {"src/auth/limiter.py": "limit = 13\n"})
    assert "src/auth/limiter.py: owned by AUTH-1" in refused(push(clone, "origin", "main"))
    allowed(push(clone, "origin", "--delete", "new-empty"))


# --- speed --------------------------------------------------------------------------------------------

def _git_calls(flight: RemoteRepo, stdin: str) -> list[str]:
    """The git subcommands one hook run starts (through a logging `git` first on PATH)."""
    bin_dir, log = flight.base / "bin", flight.base / "git-calls"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "git"
    real_git = shutil.which("git") or "git"
    # Log the subcommand: the first argument that is neither an option nor the value of -c/-C.
    shim.write_text("#!/bin/sh\nsubcommand() { while [ $# -gt 0 ]; do case $1 in -c|-C) shift 2;; "
                    f"-*) shift;; *) echo $1 >> {shlex.quote(str(log))}; return;; esac; done; }}\n"
                    "subcommand \"$@\"\n"
                    f"exec {shlex.quote(real_git)} \"$@\"\n")
    shim.chmod(0o755)
    log.unlink(missing_ok=True)
    result = wavegit(flight.clone, "hook", "pre-push", "origin", str(flight.origin), input=stdin,
                     env={"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"})
    assert result.returncode == 0, result.stderr
    return log.read_text().split()


def test_git_calls_do_not_grow_with_the_number_of_pushed_commits(flight: RemoteRepo) -> None:
    base = git(flight.clone, "rev-parse", "origin/main")
    commit(flight.clone, {"docs/guide.md": "0\n"})
    line = f"refs/heads/main {git(flight.clone, 'rev-parse', 'HEAD')} {MAIN} {base}\n"
    # A warm run names the tracker's blob (one cat-file) and finds it cached; cold, its text is read too (a
    # second cat-file) to fill the cache. The log runs alongside: the order varies.
    assert sorted(_git_calls(flight, line)) == ["cat-file", "cat-file", "log", "rev-parse"]
    one = sorted(_git_calls(flight, line))
    for n in range(1, 30):
        commit(flight.clone, {f"docs/page{n}.md": f"{n}\n"})
    head = git(flight.clone, "rev-parse", "HEAD")
    many = sorted(_git_calls(flight, f"refs/heads/main {head} {MAIN} {base}\n"))
    assert one == many == ["cat-file", "log", "rev-parse"]
    two_refs = _git_calls(flight, f"refs/heads/main {head} {MAIN} {base}\nrefs/heads/main {head} "
                                  f"refs/heads/copy {Z40}\n")
    assert sorted(two_refs) == ["cat-file", "log", "rev-list", "rev-list", "rev-parse"]


def test_the_hook_run_through_cli_main_in_process_leaves_the_callers_collector_running(
        flight: RemoteRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    # The hook's own process runs without the cyclic collector; a caller that passes argv keeps its process,
    # and its collector.
    from wavegit import cli

    head = commit(flight.clone, {"src/auth/in_process.py": "x = 1\n"})
    line = f"refs/heads/main {head} refs/heads/main {remote_oid(flight, 'main')}\n"
    monkeypatch.chdir(flight.clone)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(line.encode())))
    assert gc.isenabled()
    assert cli.main(["hook", "pre-push", "origin", str(flight.origin)]) == 1  # AUTH-1 owns src/auth/
    assert gc.isenabled()


def test_check_push_with_a_log_started_early_finds_what_it_finds_without(flight: RemoteRepo) -> None:
    from wavegit.core.repo import discover

    head = commit(flight.clone, {"src/auth/early.py": "x = 1\n"})
    updates = pushed.parse_updates(f"refs/heads/main {head} refs/heads/main {remote_oid(flight, 'main')}\n")
    found = discover(flight.clone / "src")
    cfg = prepush.load_settings(found)
    # Started from a subdirectory, as the hook may be: git reports paths from the repository root.
    early = pushed.start_pushed_paths(flight.clone / "src", updates, "origin")
    verdict = prepush.check_push(found, cfg, "origin", "url", updates, pushed=early)
    assert [(v.path, v.owner.id if v.owner else None) for v in verdict.violations] == [
        ("src/auth/early.py", "AUTH-1")]
    # Pushing to a URL (no remote name) checks against config.remote: a log started for the URL is redone.
    url = str(flight.origin)
    for_url = pushed.start_pushed_paths(flight.clone, updates, url)
    again = prepush.check_push(found, cfg, url, url, updates, pushed=for_url)
    assert again.violations == verdict.violations


def test_the_pushed_paths_are_each_commits_own_even_a_name_spelled_like_the_logs_commit_mark(
        flight: RemoteRepo) -> None:
    # The log is split per commit at its mark: a name starting with \x01 and a sha pair is still a path, not
    # a commit whose "parents" would make a rewind look like a fast-forward; a merge lists an empty name
    # before its own edits, an empty commit lists none.
    clone, base = flight.clone, remote_oid(flight, "refs/heads/main")
    forged = f"\x01{A40} {B40}"
    commit(clone, {forged: "x\n", "src/auth/one.py": "1\n"})
    git(clone, "checkout", "-q", "-b", "side", base)
    commit(clone, {"lib/side.py": "side\n"})
    git(clone, "checkout", "-q", "main")
    git(clone, "merge", "-q", "--no-ff", "--no-commit", "side")
    commit(clone, {"docs/guide.md": "edited in the merge\n"}, "merge side")
    git(clone, "commit", "-q", "--allow-empty", "-m", "nothing")
    head = git(clone, "rev-parse", "HEAD")
    paths, rests_on = pushed.pushed_changes(clone, [pushed.RefUpdate(MAIN, head, MAIN, base)], "origin")
    assert paths == {MAIN: {forged, "src/auth/one.py", "lib/side.py", "docs/guide.md"}}
    assert base in rests_on[MAIN] and not {A40, B40} & rests_on[MAIN]
    # Several refs at once: the same paths, from one log of exactly their commits.
    again, _ = pushed.pushed_changes(clone, [pushed.RefUpdate(MAIN, head, MAIN, base),
                                             pushed.RefUpdate("refs/heads/x", head, "refs/heads/x", Z40)],
                                     "origin")
    assert again == {MAIN: paths[MAIN], "refs/heads/x": paths[MAIN]}


@pytest.mark.parametrize("path", ["src/auth./limiter.py", "src/auth /limiter.py", "SRC/Auth../x.py"])
def test_a_name_windows_reads_as_an_in_flight_directory_is_refused(flight: RemoteRepo, path: str) -> None:
    # Windows drops a name's trailing dots and spaces: on a Windows checkout this is src/auth/, AUTH-1's.
    before = remote_oid(flight, "refs/heads/main")
    commit(flight.clone, {path: "shadow\n"})
    assert f"{path}: owned by AUTH-1" in refused(push(flight.clone, "origin", "main"))
    assert remote_oid(flight, "refs/heads/main") == before


def test_a_decomposed_name_of_an_in_flight_file_is_refused(tmp_path: Path) -> None:
    remote = make_remote_repo(tmp_path, FILES)
    publish_tracker(remote, [ItemSpec("CAFE-1", ["src/caf\u00e9/"], wave=W1)])
    install_hook(remote.clone)
    commit(remote.clone, {unicodedata.normalize("NFD", "src/caf\u00e9/menu.txt"): "menu\n"})
    assert "owned by CAFE-1" in refused(push(remote.clone, "origin", "main"))
