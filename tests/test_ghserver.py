"""The fake GitHub server itself, through real PyGithub: the semantics the other tests rely on."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from github import Auth, Github, GithubException
from github.InputGitTreeElement import InputGitTreeElement
from github.Repository import Repository

from tests.helpers.ghserver import (
    ALICE,
    ALICE_TOKEN,
    APP,
    APP_TOKEN,
    BOT,
    BOT_TOKEN,
    MALLORY_TOKEN,
    Fault,
    Running,
    running,
    served,
)
from tests.helpers.repos import RemoteRepo, git


@pytest.fixture
def gh(remote_repo: RemoteRepo) -> Iterator[Running]:
    with running(remote_repo.origin) as server:
        yield server


def repo_as(gh: Running, token: str = BOT_TOKEN, per_page: int = 30) -> Repository:
    client = Github(auth=Auth.Token(token), base_url=gh.url, retry=None, lazy=True, per_page=per_page,
                    seconds_between_requests=None, seconds_between_writes=None)
    return client.get_repo(gh.fake.repo)


def push_branch(remote_repo: RemoteRepo, branch: str, files: dict[str, str]) -> str:
    clone = remote_repo.clone
    git(clone, "checkout", "-q", "-B", branch, "origin/main")
    for rel, text in files.items():
        (clone / rel).parent.mkdir(parents=True, exist_ok=True)
        (clone / rel).write_text(text)
    git(clone, "add", "-A")
    git(clone, "commit", "-q", "-m", f"work on {branch}")
    git(clone, "push", "-q", "origin", f"{branch}:refs/heads/{branch}")
    return git(clone, "rev-parse", "HEAD")


def test_contents_put_creates_a_real_commit_and_a_stale_sha_is_409(
        gh: Running, remote_repo: RemoteRepo) -> None:
    repo = repo_as(gh)
    before = repo.get_contents("README.md", ref="main")
    assert not isinstance(before, list)
    result = repo.update_file("README.md", "edit readme", "new\n", before.sha, branch="main")
    assert git(remote_repo.origin, "show", "main:README.md") == "new"
    assert git(remote_repo.origin, "rev-parse", "main") == result["commit"].sha
    with pytest.raises(GithubException) as caught:
        repo.update_file("README.md", "again", "newer\n", before.sha, branch="main")
    assert caught.value.status == 409
    assert git(remote_repo.origin, "show", "main:README.md") == "new"


def test_contents_put_without_sha_on_an_existing_file_is_422(gh: Running) -> None:
    with pytest.raises(GithubException) as caught:
        repo_as(gh).create_file("README.md", "clobber", "x\n", branch="main")
    assert caught.value.status == 422


def test_pull_files_are_served_in_pages_linked_by_the_link_header(
        gh: Running, remote_repo: RemoteRepo) -> None:
    push_branch(remote_repo, "many", {f"src/f{i:03}.py": f"{i}\n" for i in range(7)})
    repo = repo_as(gh, per_page=3)
    pr = repo.create_pull(base="main", head="many", title="t", body="b")
    names = [f.filename for f in pr.get_files()]
    assert names == [f"src/f{i:03}.py" for i in range(7)]
    assert gh.fake.count("GET", f"/pulls/{pr.number}/files") == 3


def test_pull_files_read_in_pages_cost_one_diff_and_a_pushed_head_is_listed_anew(
        gh: Running, remote_repo: RemoteRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    push_branch(remote_repo, "many", {f"src/f{i:03}.py": f"{i}\n" for i in range(7)})
    repo = repo_as(gh, per_page=3)
    pr = repo.create_pull(base="main", head="many", title="t", body="b")
    processes = counted_processes(monkeypatch)
    assert len([f.filename for f in repo.get_pull(pr.number).get_files()]) == 7
    assert len([f.filename for f in repo.get_pull(pr.number).get_files()]) == 7
    assert len([p for p in processes if p[1] == "diff"]) == 1  # 6 pages, one diff of the same two commits
    (remote_repo.clone / "src" / "late.py").write_text("late\n")
    git(remote_repo.clone, "add", "-A")
    git(remote_repo.clone, "commit", "-q", "-m", "late")
    git(remote_repo.clone, "push", "-q", "origin", "many")
    assert "src/late.py" in [f.filename for f in repo.get_pull(pr.number).get_files()]
    assert len([p for p in processes if p[1] == "diff"]) == 2


def test_merge_moves_the_base_branch_and_reports_the_merge_sha(gh: Running, remote_repo: RemoteRepo) -> None:
    head = push_branch(remote_repo, "feature", {"src/a.py": "a\n"})
    repo = repo_as(gh)
    pr = repo.create_pull(base="main", head="feature", title="t", body="b")
    merged = pr.merge()
    main = git(remote_repo.origin, "rev-parse", "main")
    assert merged.sha == main and git(remote_repo.origin, "rev-parse", "main^2") == head
    again = repo.get_pull(pr.number)
    assert (again.state, again.merged, again.merge_commit_sha) == ("closed", True, main)


def test_a_copy_onto_a_copied_origin_serves_the_same_state_and_changes_apart_from_the_original(
        gh: Running, remote_repo: RemoteRepo, tmp_path: Path) -> None:
    push_branch(remote_repo, "feature", {"src/a.py": "a\n"})
    number = repo_as(gh).create_pull(base="main", head="feature", title="t", body="b").number
    gh.fake.add_comment(number, ALICE, "first")
    origin = tmp_path / "copy.git"
    shutil.copytree(remote_repo.origin, origin, symlinks=True)
    with served(gh.fake.copy_onto(origin)) as copy:
        assert copy.url != gh.url
        repo = repo_as(copy)
        assert [c.body for c in repo.get_issue(number).get_comments()] == ["first"]
        repo.get_pull(number).merge()
        repo.get_issue(number).create_comment("second")
        assert git(origin, "rev-parse", "main^2") == git(origin, "rev-parse", "feature")
    # The original: its PR open, one comment, its origin's main not merged.
    original = repo_as(gh)
    assert original.get_pull(number).state == "open"
    assert [c.body for c in original.get_issue(number).get_comments()] == ["first"]
    assert git(remote_repo.origin, "rev-list", "--count", "main..feature") == "1"
    assert git(remote_repo.origin, "rev-list", "--count", "feature..main") == "0"


def test_a_token_made_read_only_on_a_copy_keeps_its_rights_on_the_original(
        gh: Running, remote_repo: RemoteRepo) -> None:
    """A test takes a token's rights on its copy of a shared world (test_publish's read-only gate): the next
    copy, and the original, still grant them."""
    copy = gh.fake.copy_onto(remote_repo.origin)
    copy.token_permissions[BOT_TOKEN] = {"statuses": "read"}
    assert gh.fake.token_permissions == {} and gh.fake.copy_onto(remote_repo.origin).token_permissions == {}

def test_comment_authors_are_the_token_users_and_only_they_may_edit(
        gh: Running, remote_repo: RemoteRepo) -> None:
    push_branch(remote_repo, "feature", {"src/a.py": "a\n"})
    pr = repo_as(gh).create_pull(base="main", head="feature", title="t", body="b")
    comment = repo_as(gh, ALICE_TOKEN).get_issue(pr.number).create_comment("hi")
    assert comment.user.login == ALICE
    forged = repo_as(gh, MALLORY_TOKEN).get_issue(pr.number).get_comment(comment.id)
    with pytest.raises(GithubException) as refused:
        forged.edit("mallory was here")
    assert refused.value.status == 403
    assert [c.body for c in gh.fake.issue_comments(pr.number)] == ["hi"]
    with pytest.raises(GithubException) as unknown:
        repo_as(gh, "ghp_unknown").get_issue(pr.number).create_comment("who?")
    assert unknown.value.status == 401


def test_list_pulls_filters_by_head_base_and_state(gh: Running, remote_repo: RemoteRepo) -> None:
    push_branch(remote_repo, "one", {"a.txt": "1\n"})
    push_branch(remote_repo, "two", {"b.txt": "2\n"})
    repo = repo_as(gh)
    first = repo.create_pull(base="main", head="one", title="1", body="")
    repo.create_pull(base="main", head="two", title="2", body="")
    gh.fake.close(first.number)
    owner = gh.fake.repo.split("/")[0]
    assert [p.head.ref for p in repo.get_pulls(state="open")] == ["two"]
    assert [p.number for p in repo.get_pulls(state="all", head=f"{owner}:one")] == [first.number]
    assert list(repo.get_pulls(state="open", head=f"{owner}:one")) == []


def test_ref_update_that_is_not_a_fast_forward_is_422(gh: Running, remote_repo: RemoteRepo) -> None:
    repo = repo_as(gh)
    start = git(remote_repo.origin, "rev-parse", "main")
    base = repo.get_git_commit(start)
    tree = repo.create_git_tree([InputGitTreeElement("x.txt", "100644", "blob", content="x\n")], base.tree)
    sibling = repo.create_git_commit("sibling", tree, [base])
    push_branch(remote_repo, "main", {"y.txt": "y\n"})
    with pytest.raises(GithubException) as caught:
        repo.get_git_ref("heads/main").edit(sibling.sha, force=False)
    assert caught.value.status == 422
    assert git(remote_repo.origin, "rev-parse", "main") != sibling.sha


def test_a_fault_after_the_write_applies_it_and_still_answers_5xx(
        gh: Running, remote_repo: RemoteRepo) -> None:
    push_branch(remote_repo, "feature", {"src/a.py": "a\n"})
    pr = repo_as(gh).create_pull(base="main", head="feature", title="t", body="b")
    gh.fake.set_faults([Fault("5xx", after=True)])
    with pytest.raises(GithubException) as caught:
        repo_as(gh).get_issue(pr.number).create_comment("landed anyway")
    assert caught.value.status == 502
    assert [c.body for c in gh.fake.issue_comments(pr.number)] == ["landed anyway"]


def test_rate_limit_faults_carry_retry_after_or_reset_headers(gh: Running) -> None:
    gh.fake.set_faults([Fault("secondary", wait_s=7), Fault("primary", wait_s=5)])
    repo = repo_as(gh)
    with pytest.raises(GithubException) as secondary:
        repo.get_contents("README.md")
    with pytest.raises(GithubException) as primary:
        repo.get_contents("README.md")
    assert secondary.value.status == 403 and secondary.value.headers["retry-after"] == "7"
    assert primary.value.headers["x-ratelimit-remaining"] == "0"
    assert int(primary.value.headers["x-ratelimit-reset"]) > 0
    assert [r.fault for r in gh.fake.requests] == ["secondary", "primary"]


# ---- as strict as GitHub (issue 13) ----

def test_installation_tokens_cannot_read_get_user_but_graphql_viewer_names_them(gh: Running) -> None:
    for token, login in ((BOT_TOKEN, BOT), (APP_TOKEN, APP)):
        with pytest.raises(GithubException) as caught:
            _ = Github(auth=Auth.Token(token), base_url=gh.url, retry=None).get_user().login
        assert (caught.value.status, caught.value.data["message"]) == (
            403, "Resource not accessible by integration")
        _, data = Github(auth=Auth.Token(token), base_url=gh.url, retry=None).requester.graphql_query(
            "query { viewer { login } }", {})
        assert data["data"]["viewer"]["login"] == login
    assert Github(auth=Auth.Token(ALICE_TOKEN), base_url=gh.url, retry=None).get_user().login == ALICE


def test_a_token_without_pull_requests_write_gets_githubs_403_on_opening_a_pr(
        gh: Running, remote_repo: RemoteRepo) -> None:
    push_branch(remote_repo, "feature", {"src/a.py": "a\n"})
    gh.fake.token_permissions[BOT_TOKEN] = {"contents": "write", "pull_requests": "read", "issues": "write"}
    with pytest.raises(GithubException) as caught:
        repo_as(gh).create_pull(base="main", head="feature", title="t", body="b")
    assert caught.value.status == 403
    assert caught.value.data["message"] == "Resource not accessible by integration"
    assert caught.value.headers["x-accepted-github-permissions"] == "pull_requests=write"
    assert gh.fake.pulls == {} and list(repo_as(gh).get_pulls(state="all")) == []


def test_a_read_only_token_reads_everything_and_gets_403_on_every_write(
        gh: Running, remote_repo: RemoteRepo) -> None:
    head = push_branch(remote_repo, "feature", {"src/a.py": "a\n"})
    number = repo_as(gh).create_pull(base="main", head="feature", title="t", body="b").number
    gh.fake.token_permissions[BOT_TOKEN] = dict.fromkeys(("contents", "pull_requests", "issues", "statuses"),
                                                         "read")
    repo = repo_as(gh)
    readme = repo.get_contents("README.md", ref="main")
    assert not isinstance(readme, list) and repo.get_pull(number).head.sha == head
    writes = [lambda: repo.get_issue(number).create_comment("hi"),
              lambda: repo.get_commit(head).create_status(state="success", context="c"),
              lambda: repo.update_file("README.md", "edit", "x\n", readme.sha, branch="main"),
              lambda: repo.get_pull(number).edit(title="renamed"),
              lambda: repo.get_git_ref("heads/feature").edit(head, force=True)]
    for write in writes:
        with pytest.raises(GithubException) as caught:
            write()
        assert caught.value.status == 403
    assert gh.fake.comments == {} and gh.fake.statuses == [] and gh.fake.pulls[number].title == "t"


def test_every_answer_carries_rate_limit_headers_and_a_spent_limit_is_a_403_until_the_reset(
        gh: Running) -> None:
    gh.fake.rate_limit = 3
    repo = repo_as(gh)
    repo.get_contents("README.md")
    remaining, reset = repo.requester.rate_limiting
    assert (remaining, gh.fake.rate_limit) == (2, 3) and reset > 0
    repo.get_contents("README.md")
    repo.get_contents("README.md")
    with pytest.raises(GithubException) as spent:
        repo.get_contents("README.md")
    assert spent.value.status == 403 and spent.value.headers["x-ratelimit-remaining"] == "0"
    assert "rate limit exceeded" in spent.value.data["message"]
    # The limit is per token: another token still has its own.
    assert not isinstance(repo_as(gh, ALICE_TOKEN).get_contents("README.md"), list)


def test_a_non_collaborator_is_told_none_on_a_private_repository_and_read_on_a_public_one(
        gh: Running) -> None:
    repo = repo_as(gh)
    assert repo.get_collaborator_permission("stranger") == "none"
    gh.fake.private = False
    assert repo.get_collaborator_permission("stranger") == "read"
    assert repo.get_collaborator_permission(ALICE) == "write"


def test_a_branch_read_follows_every_push_packing_and_deletion_at_once_without_a_git_process_per_read(
        gh: Running, remote_repo: RemoteRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = repo_as(gh)
    first = push_branch(remote_repo, "wave/one", {"a.txt": "1\n"})
    assert repo.get_git_ref("heads/wave/one").object.sha == first
    processes = counted_processes(monkeypatch)
    for _ in range(3):
        assert repo.get_git_ref("heads/wave/one").object.sha == first
    assert [p for p in processes if p[1] == "rev-parse"] == []
    git(remote_repo.clone, "commit", "-q", "--allow-empty", "-m", "more")
    git(remote_repo.clone, "push", "-q", "origin", "HEAD:refs/heads/wave/one")  # not through the server
    second = git(remote_repo.clone, "rev-parse", "HEAD")
    assert repo.get_git_ref("heads/wave/one").object.sha == second
    git(remote_repo.origin, "pack-refs", "--all")
    assert not (remote_repo.origin / "refs" / "heads" / "wave" / "one").exists()
    assert repo.get_git_ref("heads/wave/one").object.sha == second
    git(remote_repo.origin, "symbolic-ref", "refs/heads/alias", "refs/heads/wave/one")
    assert repo.get_git_ref("heads/alias").object.sha == second
    git(remote_repo.origin, "update-ref", "-d", "refs/heads/wave/one")
    for gone in ("wave/one", "wave", "alias", "wave/one.lock"):
        with pytest.raises(GithubException) as missing:
            repo.get_git_ref(f"heads/{gone}").object.sha  # noqa: B018 (lazy: the read asks the server)
        assert missing.value.status == 404, gone


def test_the_same_two_commits_compared_again_start_no_git_process_and_a_moved_branch_is_compared_anew(
        gh: Running, remote_repo: RemoteRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    base = git(remote_repo.clone, "rev-parse", "HEAD")
    push_branch(remote_repo, "feature", {"f.txt": "1\n"})
    repo = repo_as(gh)
    first = repo.compare(base, "feature")
    assert first.ahead_by == 1  # lazy: this reads it
    processes = counted_processes(monkeypatch)
    again = repo.compare(base, "feature")
    seen = (again.ahead_by, [c.sha for c in again.commits], [f.filename for f in again.files])
    assert processes == []
    assert seen == (first.ahead_by, [c.sha for c in first.commits], [f.filename for f in first.files]) == (
        1, [git(remote_repo.clone, "rev-parse", "HEAD")], ["f.txt"])
    (remote_repo.clone / "g.txt").write_text("2\n")
    git(remote_repo.clone, "add", "-A")
    git(remote_repo.clone, "commit", "-q", "-m", "more")
    git(remote_repo.clone, "push", "-q", "origin", "feature")
    moved = repo.compare(base, "feature")
    assert (moved.ahead_by, [f.filename for f in moved.files]) == (2, ["f.txt", "g.txt"])


def test_listed_and_compared_commits_are_git_s_own_and_read_in_one_git_process_each(
        gh: Running, remote_repo: RemoteRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    push_branch(remote_repo, "feature", {"f0.txt": "0\n"})
    base = git(remote_repo.clone, "rev-parse", "HEAD^")
    for n in (1, 2):
        (remote_repo.clone / f"f{n}.txt").write_text(f"{n}\n")
        git(remote_repo.clone, "add", "-A")
        git(remote_repo.clone, "commit", "-q", "-m", f"line one\n\nbody {n}")
    git(remote_repo.clone, "commit", "-q", "--allow-empty", "--allow-empty-message", "-m", "")
    git(remote_repo.clone, "push", "-q", "origin", "HEAD:refs/heads/feature")
    shas = git(remote_repo.origin, "rev-list", "feature").split()  # newest first, main's one last
    expected = [(git(remote_repo.origin, "log", "-1", "--format=%B", s),
                 git(remote_repo.origin, "rev-parse", f"{s}^{{tree}}")) for s in shas]
    repo = repo_as(gh)
    processes = counted_processes(monkeypatch)
    listed = list(repo.get_commits(sha="feature"))
    assert [c.sha for c in listed] == shas
    assert [(c.commit.message, c.commit.tree.sha) for c in listed] == expected
    assert {c.commit.author.name for c in listed} == {"Wave Tester"}
    listing = len(processes)
    compared = repo.compare(base, "feature")
    assert (compared.ahead_by, compared.behind_by, compared.status) == (4, 0, "ahead")
    assert [c.sha for c in compared.commits] == shas[:4][::-1]
    assert [p.sha for p in compared.commits[0].parents] == [base]
    # Listing: the branch read from its ref file, its SHA found a commit, one log; comparing: the base SHA
    # found a commit, the merge base, one count of both sides, one log and the diff. No git process per
    # commit.
    assert [p[1] for p in processes if p[1] in ("log", "show")] == ["log", "log"]
    assert (listing, len(processes) - listing) == (2, 5)


def counted_processes(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Every ``subprocess.run`` from now on (the fake server's git processes), as its argv."""
    processes: list[list[str]] = []
    real_run = subprocess.run

    def counted(argv: list[str], *args: object, **kwargs: object) -> object:
        processes.append(argv)
        return real_run(argv, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(subprocess, "run", counted)
    return processes
