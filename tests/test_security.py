"""Security: nothing from a tracker is shell-evaluated, the GitHub token never reaches a worker nor any
log, report or output, symlinks cannot sneak a change past the ownership check, and only a trusted
author's report can pass the merge gate.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.ghserver import ALICE, BOT, BOT_TOKEN, MALLORY, github_env, running
from tests.helpers.reliability import (
    GATE_WAVE,
    GatePR,
    main_in_process,
    open_gate_pr,
    tracker_history_problems,
)
from tests.helpers.repos import RemoteRepo, git, state_files, wavegit
from tests.helpers.wave import check, item, make_wave_repo, run

ENV_DUMP = Path(__file__).resolve().parent / "workers" / "env_dump.py"


# -- no shell ---------------------------------------------------------------------------------------------

def shell_tricks(marker_dir: Path, tag: str) -> list[str]:
    """Shell syntax that would create ``marker_dir/<tag>-<n>`` if any shell ever evaluated it."""
    mark = f"{marker_dir}/{tag}"
    return [f"$(touch {mark}-1)", f"; touch {mark}-2", f"`touch {mark}-3`", f"&& touch {mark}-4",
            f"| touch {mark}-5", f"\n touch {mark}-6"]


def test_shell_metacharacters_in_prompt_title_test_and_worker_are_never_evaluated(tmp_path: Path) -> None:
    markers = tmp_path / "pwned"
    markers.mkdir()
    prompt = ["write src/a.txt ok", *shell_tricks(markers, "prompt")]
    # `true` ignores its arguments: only a shell would act on them.
    test = "true " + " ".join(shell_tricks(markers, "test")).replace("\n", " ")
    remote = make_wave_repo(tmp_path, [
        item("A", prompt, ["src/a.txt"], test, title=" ".join(shell_tricks(markers, "title"))),
        item("B", ["write src/b.txt ok"], ["src/b.txt"], "echo " + " ".join(shell_tricks(markers, "echo"))),
    ], wave_test="echo $(touch " + str(markers / "wave") + ") ; touch " + str(markers / "wave2"))
    worker = f"{sys.executable} {Path(__file__).parent / 'wave_workers' / 'scripted.py'} ; touch {markers}/w"
    result = wavegit(remote.clone, "run", "--json", env={"WAVEGIT_WORKER": worker})
    assert result.returncode == 0, result.stdout + result.stderr
    assert sorted(p.name for p in markers.iterdir()) == []
    # The text reached the worker and the commit literally.
    rep = json.loads(result.stdout)
    message = git(remote.origin, "log", "-1", "--format=%B", f"wavegit/{rep['wave_id']}~1")
    assert f"$(touch {markers}/title-1)" in message


# -- the GitHub token -------------------------------------------------------------------------------------

def test_github_token_reaches_no_worker_test_log_report_comment_or_output(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    dumps = out / "env.jsonl"
    dump_test = shlex.join([sys.executable, str(ENV_DUMP)])
    remote = make_wave_repo(tmp_path, [
        item("A", [f"env {dumps}", "write src/a.txt ok", "run env"], ["src/a.txt"], dump_test),
        item("B", [f"env {dumps}", "write src/b.txt ok", "say $GITHUB_TOKEN"], ["src/b.txt"]),
    ], wave_test=dump_test, sandbox={"rw_paths": [str(out)]})
    gh_token = "ghp_otherSecret0000000000000000000000"
    with running(remote.origin) as gh:
        env = {**github_env(gh), "GH_TOKEN": gh_token}
        result = wavegit(remote.clone, "run", "--json", env=env)
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["pr"] is not None
        published = [c.body for c in gh.fake.comments.values()] + [p.body for p in gh.fake.pulls.values()]
    workers = [json.loads(line) for line in dumps.read_text().splitlines()]
    assert len(workers) == 2 and all(not {"GITHUB_TOKEN", "GH_TOKEN"} & set(w) for w in workers)
    files = state_files(remote.clone)
    assert any(p.name.endswith(".test.log") for p in files), "the env-dumping tests left no log"
    for secret in (BOT_TOKEN, gh_token):
        assert secret not in result.stdout + result.stderr
        assert [p for p in files if secret.encode() in p.read_bytes()] == []
        assert not any(secret in text for text in published)


# -- symlinks and ownership -------------------------------------------------------------------------------

def test_writing_through_a_symlink_in_an_owned_directory_to_an_unowned_file_is_a_violation(
        tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [
        item("A", ["symlink src/a/link ../keep.txt", "write src/a/link hacked", "write src/a/x.txt ok"],
             ["src/a/"], check("src/a/x.txt"), attempts=1),
    ], attempts=1)
    outcome = run(remote.clone)
    (rep,) = outcome.report.items
    assert not rep.verified and "src/keep.txt" in rep.ownership_violations
    assert git(remote.origin, "show", "main:src/keep.txt") == "keep"
    assert git(remote.origin, "for-each-ref", "refs/heads/wavegit/") == ""


def test_a_symlink_at_an_unowned_path_pointing_outside_the_repo_is_a_violation(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    remote = make_wave_repo(tmp_path, [
        item("A", [f"symlink src/a/x.txt {outside / 'x.txt'}", f"write {outside / 'x.txt'} ok",
                   f"symlink docs/escape {outside}"], ["src/a/x.txt"]),
    ], attempts=1, sandbox={"rw_paths": [str(outside)]})
    outcome = run(remote.clone)
    (rep,) = outcome.report.items
    assert not rep.verified and rep.ownership_violations == ["docs/escape"]


def test_an_owned_symlink_to_outside_commits_the_link_never_the_outside_content(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = "outside-secret-content"
    (outside / "data.txt").write_text(secret)
    remote = make_wave_repo(tmp_path, [
        item("A", [f"symlink src/a/out {outside}", "write src/a/x.txt ok"], ["src/a/"], check("src/a/x.txt")),
    ], attempts=1)
    outcome = run(remote.clone)
    assert outcome.exit_code == 0
    branch = f"wavegit/{outcome.report.wave_id}"
    assert git(remote.origin, "ls-tree", f"{branch}:src/a", "out").startswith("120000 blob ")
    assert git(remote.origin, "show", f"{branch}:src/a/out") == str(outside)
    objects = subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch"], cwd=remote.origin,
                             capture_output=True, check=True).stdout
    assert secret.encode() not in objects
    assert tracker_history_problems(remote.origin) == []


# -- the gate trusts only its report authors --------------------------------------------------------------

@pytest.fixture
def pr(remote_repo: RemoteRepo, monkeypatch: pytest.MonkeyPatch) -> Iterator[GatePR]:
    with running(remote_repo.origin) as gh:
        for name, value in github_env(gh).items():
            monkeypatch.setenv(name, value)
        yield open_gate_pr(remote_repo, gh)


def gate_code(pr: GatePR, checkout: Path | None = None) -> int:
    return main_in_process(["-C", str(checkout or pr.remote.clone), "gate", "--pr", str(pr.number)]).code


def test_a_trusted_authors_report_passes_the_gate(pr: GatePR) -> None:
    """The baseline: the same report by the trusted author passes."""
    pr.post(BOT)
    assert gate_code(pr) == 0


@given(st.sampled_from([ALICE, MALLORY, "github-actions", "github-actions[bot] ", "GITHUB-ACTIONS[BOT]"])
       | st.text(min_size=1, max_size=20).filter(lambda s: s != BOT))
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_report_by_anyone_but_a_trusted_author_never_passes(pr: GatePR, author: str) -> None:
    pr.gh.fake.comments.clear()
    pr.post(author)
    assert gate_code(pr) == 1
    status = pr.gh.fake.latest_status(pr.head, "wavegit/gate")
    assert status is not None and status.state == "failure" and "trusted author" in status.description


def test_a_pr_that_adds_its_author_to_report_authors_still_fails_on_the_base_checkout(pr: GatePR) -> None:
    clone = pr.remote.clone
    (clone / ".wavegit" / "config.yaml").write_text(f"report_authors: ['{MALLORY}']\n")
    git(clone, "add", "-A")
    git(clone, "commit", "-q", "-m", "trust me")
    git(clone, "push", "-q", "origin", f"HEAD:refs/heads/wavegit/{GATE_WAVE}")
    pr.head = git(clone, "rev-parse", "HEAD")
    base = pr.remote.new_clone("base")
    pr.post(MALLORY)
    assert gate_code(pr, base) == 1
