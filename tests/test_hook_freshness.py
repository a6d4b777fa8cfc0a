"""The pre-push hook's copy of the tracker branch: refreshed when older than hook.max_age_s, within
hook.fetch_timeout_s, and checked as it is (with a warning naming its age) when the fetch fails."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.helpers.hook import ItemSpec, commit, install_hook, publish_tracker, push, remote_oid
from tests.helpers.repos import RemoteRepo, git, make_remote_repo
from wavegit.core import repo as repo_mod
from wavegit.hook import freshness, install

WAVE, CLAIMING_WAVE = "w-20260101-000000-0001", "w-20260101-000000-0009"
# The tracker on a branch of its own (`wavegit init`'s layout with a remote): claims never make a push of
# main a non-fast-forward, which git would reject before the hook could say anything.
TRACKER_BRANCH = "wavegit-tracker"
FILES = {"README.md": "hello\n", "src/auth/limiter.py": "limit = 1\n", "docs/guide.md": "guide\n",
         ".wavegit/config.yaml": f"tracker_branch: {TRACKER_BRANCH}\n"}
ITEMS = [ItemSpec("AUTH-1", ["src/auth/"], wave=WAVE), ItemSpec("DOCS-1", ["docs/"], status="todo")]
TRACKING = f"refs/remotes/origin/{TRACKER_BRANCH}"


@pytest.fixture
def remote(tmp_path: Path) -> RemoteRepo:
    """Origin with AUTH-1 in flight and DOCS-1 todo on the tracker branch, fetched by the clone (a loose
    tracking ref)."""
    remote = make_remote_repo(tmp_path, FILES)
    publish_tracker(remote, ITEMS)
    git(remote.base / "admin", "push", "-q", "origin", f"main:{TRACKER_BRANCH}")
    git(remote.clone, "fetch", "-q", "origin")
    assert (remote.clone / ".git" / TRACKING).is_file()
    return remote


def claim_docs_elsewhere(remote: RemoteRepo) -> None:
    """Another clone claims DOCS-1 (docs/) and pushes the claim; ``remote.clone`` does not fetch it."""
    admin = remote.base / "admin"
    tracker = admin / ".wavegit/tracker.yaml"
    commit(admin, {".wavegit/tracker.yaml": tracker.read_text().replace(
        "status: todo", f"status: in_progress\n    wave: {CLAIMING_WAVE}")}, "claim DOCS-1")
    git(admin, "push", "-q", "origin", f"main:{TRACKER_BRANCH}")


def age_the_copy(clone: Path, seconds: float) -> None:
    """Make the clone's copy of the tracker branch look last fetched ``seconds`` ago."""
    then = time.time() - seconds
    os.utime(clone / ".git" / TRACKING, (then, then))
    stamp = repo_mod.discover(clone).fetch_stamp(TRACKING)
    if stamp.exists():
        os.utime(stamp, (then, then))


def test_a_stale_copy_is_fetched_first_so_a_file_claimed_since_is_refused(remote: RemoteRepo) -> None:
    install_hook(remote.clone)
    claim_docs_elsewhere(remote)
    age_the_copy(remote.clone, 120)
    head = commit(remote.clone, {"docs/guide.md": "written after the claim\n"})
    result = push(remote.clone, "origin", "main")
    assert result.returncode == 1, result.stderr
    assert f"docs/guide.md: owned by DOCS-1 (in_progress, wave {CLAIMING_WAVE}" in result.stderr
    assert remote_oid(remote, "refs/heads/main") != head
    assert "warning" not in result.stderr
    # The fetch is remembered: the copy is fresh now, though the claim had already moved the ref.
    assert freshness.is_fresh(repo_mod.discover(remote.clone), "origin", TRACKER_BRANCH, 60)


def test_a_fresh_copy_is_not_fetched_and_is_checked_as_it_is(remote: RemoteRepo) -> None:
    install_hook(remote.clone)
    claim_docs_elsewhere(remote)
    age_the_copy(remote.clone, 5)  # younger than hook.max_age_s (60 s): the claim is not seen
    head = commit(remote.clone, {"docs/guide.md": "pushed within the minute\n"})
    result = push(remote.clone, "origin", "main")
    assert result.returncode == 0, result.stderr
    assert remote_oid(remote, "refs/heads/main") == head
    # With hook.max_age_s 0 it always fetches: the next push sees the claim.
    commit(remote.clone, {"docs/guide.md": "and again\n"})
    always = push(remote.clone, "origin", "main", env={"WAVEGIT_HOOK_MAX_AGE_S": "0"})
    assert always.returncode == 1 and "owned by DOCS-1" in always.stderr


def test_a_hook_installed_with_no_fetch_checks_the_stale_copy(remote: RemoteRepo) -> None:
    install_hook(remote.clone, "--no-fetch")
    claim_docs_elsewhere(remote)
    age_the_copy(remote.clone, 3600)
    head = commit(remote.clone, {"docs/guide.md": "not fetched\n"})
    result = push(remote.clone, "origin", "main")
    assert result.returncode == 0, result.stderr
    assert remote_oid(remote, "refs/heads/main") == head
    assert git(remote.clone, "rev-parse", f"origin/{TRACKER_BRANCH}") != git(
        remote.base / "admin", "rev-parse", "HEAD")  # the claim was never fetched


def test_installing_records_the_fetch_choice_and_reinstalling_keeps_it(remote: RemoteRepo) -> None:
    hook = remote.clone / ".git" / "hooks" / install.HOOK_NAME
    install_hook(remote.clone, "--no-fetch")
    assert f'hook pre-push {install.NO_FETCH} "$@"' in hook.read_text()
    install_hook(remote.clone)
    assert install.NO_FETCH in hook.read_text()
    install_hook(remote.clone, "--fetch")
    assert install.NO_FETCH not in hook.read_text()


def unreachable_for_fetching(clone: Path, origin: Path) -> None:
    """Fetches from origin fail (no such repository); pushes still reach it (``pushurl``)."""
    git(clone, "config", "remote.origin.pushurl", str(origin))
    git(clone, "config", "remote.origin.url", str(origin.parent / "gone.git"))


def test_when_the_fetch_fails_the_stale_copy_decides_with_a_warning_naming_its_age(
        remote: RemoteRepo) -> None:
    install_hook(remote.clone)
    unreachable_for_fetching(remote.clone, remote.origin)
    age_the_copy(remote.clone, 180)
    owned = commit(remote.clone, {"src/auth/limiter.py": "limit = 2\n"})
    result = push(remote.clone, "origin", "main")
    assert result.returncode == 1 and "src/auth/limiter.py: owned by AUTH-1" in result.stderr
    warning = f"warning: could not fetch the tracker branch {TRACKER_BRANCH} from origin ("
    assert warning in result.stderr
    assert "checking the push against the copy fetched 3 min ago" in result.stderr
    assert result.stderr.count(warning) == 1 and "Traceback" not in result.stderr
    assert remote_oid(remote, "refs/heads/main") != owned
    git(remote.clone, "reset", "-q", "--hard", "HEAD~1")
    free = commit(remote.clone, {"README.md": "unowned\n"})
    result = push(remote.clone, "origin", "main")
    assert result.returncode == 0, result.stderr
    assert warning in result.stderr and remote_oid(remote, "refs/heads/main") == free


def test_a_fetch_that_hangs_is_stopped_at_the_timeout_and_the_push_checked_against_the_copy(
        remote: RemoteRepo) -> None:
    install_hook(remote.clone)
    # The remote's side of a fetch hangs (as a stuck network would); a push does not use it.
    git(remote.clone, "config", "remote.origin.uploadpack", "sleep 300; git-upload-pack")
    age_the_copy(remote.clone, 7200)
    head = commit(remote.clone, {"README.md": "pushed while the remote hangs\n"})
    result = push(remote.clone, "origin", "main", env={"WAVEGIT_HOOK_FETCH_TIMEOUT_S": "1"})
    assert result.returncode == 0, result.stderr
    assert "timed out after 1 s" in result.stderr and "the copy fetched 2 h ago" in result.stderr
    assert remote_oid(remote, "refs/heads/main") == head


def test_a_packed_ref_never_fetched_by_the_hook_counts_as_stale_until_it_fetches(remote: RemoteRepo) -> None:
    git(remote.clone, "pack-refs", "--all")
    found = repo_mod.discover(remote.clone)
    assert not (remote.clone / ".git" / TRACKING).exists()
    assert not freshness.is_fresh(found, "origin", TRACKER_BRANCH, 3600)
    assert freshness.age_s(found, "origin", TRACKER_BRANCH) is None
    assert freshness.refresh(found, "origin", TRACKER_BRANCH, 30) is None
    assert freshness.is_fresh(found, "origin", TRACKER_BRANCH, 3600)
    assert not freshness.is_fresh(found, "origin", TRACKER_BRANCH, 0)  # 0: always stale


@pytest.mark.parametrize(("seconds", "said"), [(None, "of unknown age"), (4.9, "fetched 4 s ago"),
                                               (61, "fetched 1 min ago"), (7300, "fetched 2 h ago"),
                                               (86400 * 3, "fetched 3 days ago")])
def test_the_age_of_the_copy_is_said_in_its_largest_unit(seconds: float | None, said: str) -> None:
    assert freshness.describe_age(seconds) == said


def test_an_in_flight_file_parked_on_a_tracker_branch_that_does_not_refuse_is_still_refused_on_main(
        remote: RemoteRepo) -> None:
    # Attack: hook.refuse_on names main only; the collision goes first to the tracker branch (a warning),
    # then main is moved to it. The tracker branch's commits had been left out as "landed".
    install_hook(remote.clone)
    only_main = {"WAVEGIT_HOOK_REFUSE_ON": "main"}
    head = commit(remote.clone, {"src/auth/limiter.py": "limit = 99\n"})
    parked = push(remote.clone, "origin", f"HEAD:{TRACKER_BRANCH}", env=only_main)
    assert parked.returncode == 0 and "collide with work in flight; allowed" in parked.stderr, parked.stderr
    result = push(remote.clone, "origin", "main", env=only_main)
    assert result.returncode == 1 and "src/auth/limiter.py: owned by AUTH-1" in result.stderr, result.stderr
    assert remote_oid(remote, "refs/heads/main") != head
