"""``wavegit review --check --event`` (issue 20, point 6): the job without secrets asks the API for the
commenter's permission, so a maintainer whose organisation membership is private (``author_association``
CONTRIBUTOR or NONE) is obeyed and a reader is not, whatever the association says."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.ghserver import ALICE, BOT, BOT_TOKEN, MALLORY, Running, github_env, running
from tests.helpers.reliability import wavegit_in_process
from tests.helpers.repos import RemoteRepo, git

WAVE = "wavegit/w-20261202-120000-abcd"
MAINTAINER = "pat"
"""A maintainer whose organisation membership is private."""


@pytest.fixture
def gh(remote_repo: RemoteRepo) -> Iterator[Running]:
    git(remote_repo.clone, "push", "-q", "origin", f"HEAD:refs/heads/{WAVE}", "HEAD:refs/heads/feature")
    with running(remote_repo.origin) as server:
        server.fake.permissions[MAINTAINER] = "maintain"
        # The check job's token: it may read pull requests, nothing else (metadata is always granted).
        server.fake.token_permissions[BOT_TOKEN] = {"pull_requests": "read"}
        yield server


def check(gh: Running, tmp_path: Path, *, author: str, body: str, association: str,
          head: str = WAVE, head_repo: str | None = None) -> tuple[str, str]:
    """(what ``--check`` printed, the ``obey`` output it wrote)."""
    number = gh.fake.open_fork_pr(head_repo or gh.fake.repo, head, "main", BOT)
    event = tmp_path / "event.json"
    event.write_text(json.dumps({
        "action": "created", "issue": {"number": number, "pull_request": {"url": "x"}},
        "comment": {"id": 7, "body": body, "user": {"login": author}, "author_association": association}}))
    output = tmp_path / "output"
    output.write_text("")
    env = {**github_env(gh), "GITHUB_EVENT_PATH": str(event), "GITHUB_OUTPUT": str(output)}
    # In this process: the check job's real process runs in the Actions engine (test_workflows_engine.py).
    result = wavegit_in_process(tmp_path, "review", "--check", "--event", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = output.read_text().splitlines()
    return result.stdout.strip(), lines[1] if len(lines) == 3 and lines[0].startswith("obey<<") else ""


def test_a_maintainer_with_a_private_membership_is_obeyed_by_the_permission_the_api_gives(
        gh: Running, tmp_path: Path) -> None:
    said, obey = check(gh, tmp_path, author=MAINTAINER, body="/wavegit retry IT-0", association="CONTRIBUTOR")
    assert obey == "true" and said.startswith("obey: pat has maintain permission"), said
    assert gh.fake.count("GET", f"/collaborators/{MAINTAINER}/permission") == 1


@pytest.mark.parametrize("association", ["OWNER", "MEMBER", "COLLABORATOR"])
def test_a_reader_is_ignored_whatever_association_the_event_claims(gh: Running, tmp_path: Path,
                                                                   association: str) -> None:
    said, obey = check(gh, tmp_path, author=MALLORY, body="/wavegit drop IT-0", association=association)
    assert obey == "false" and "mallory may not run wavegit commands (permission read" in said, said


def test_a_writer_with_a_malformed_command_is_obeyed_so_the_review_job_replies(gh: Running,
                                                                               tmp_path: Path) -> None:
    said, obey = check(gh, tmp_path, author=ALICE, body="thanks!\n/wavegit please", association="NONE")
    assert obey == "true", said


@pytest.mark.parametrize(("body", "head", "head_repo", "says"), [
    ("looks good", WAVE, None, "holds no /wavegit command"),
    ("/wavegit retry IT-0", "feature", None, "is not a wave of acme/widgets"),
    ("/wavegit retry IT-0", WAVE, "mallory/widgets", "is not a wave of acme/widgets"),
])
def test_no_command_or_no_wave_pr_of_this_repository_is_ignored_before_asking_any_permission(
        gh: Running, tmp_path: Path, body: str, head: str, head_repo: str | None, says: str) -> None:
    said, obey = check(gh, tmp_path, author=ALICE, body=body, association="OWNER", head=head,
                       head_repo=head_repo)
    assert obey == "false" and says in said, said
    assert gh.fake.count("GET", "/permission") == 0
