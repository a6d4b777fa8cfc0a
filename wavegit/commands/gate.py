"""``wavegit gate --pr N | --event``: check a PR's wave report and set the ``wavegit/gate`` status.

Exit 0 when the gate passes (or the PR is no wave's: success "not a wavegit pull request"), 1 when it fails
(the status says why; another PR at a wave branch's tip without a report gets no status), 2 for bad input.
What it believes, ``--verdict`` and ``merge_group`` events: docs/action.md and docs/security.md. The config is
read from the checkout at ``-C`` (in a workflow the base branch, never the PR's code), the tracker through
the API.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from wavegit.attempts import wavebranch
from wavegit.core.errors import EXIT_OK, EXIT_WORK_FAILED, UsageError
from wavegit.core.repo import discover
from wavegit.github import api, gate
from wavegit.github.api import GitHubClient
from wavegit.github.client import connect
from wavegit.github.store import GitHubStore
from wavegit.github.verdict import read_verdict
from wavegit.model.config import Config, load_config

NOT_A_WAVE = "not a wavegit pull request"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--pr", type=int, metavar="N", help="the pull request to check")
    which.add_argument("--event", action="store_true",
                       help="take the PR from the Actions event in $GITHUB_EVENT_PATH "
                            "(pull_request, pull_request_target, issue_comment or merge_group)")
    parser.add_argument("--verdict", type=Path, metavar="FILE",
                        help="the verdict of `wavegit gate-test` on the PR's merged result (a head brought "
                             "up to date with the base needs one)")


def run(args: argparse.Namespace) -> int:
    settings = api.require_settings()
    try:
        root = discover(args.directory).root
    except UsageError:
        # No checkout: the defaults and WAVEGIT_* overrides still make a configuration.
        root = Path(args.directory)
    config = load_config(root)
    tested = read_verdict(args.verdict) if args.verdict is not None else None
    group = gate.event_merge_group(os.environ.get("GITHUB_EVENT_PATH")) if args.event else None
    if group is not None:
        return _merge_group(connect(settings), group, config)
    number = args.pr if args.pr is not None else gate.event_pr_number(os.environ.get("GITHUB_EVENT_PATH"))
    if number < 1:
        raise UsageError(f"--pr {number}: not a pull request number")
    client = connect(settings)
    pr = client.pr_info(number)
    own = (pr.head_ref.startswith(wavebranch.BRANCH_PREFIX) and pr.head_repo == client.repository
           and pr.base_ref == config.base_branch)
    # A PR with a report of its own is judged in full (a renamed wave branch fails its binding there).
    authors = api.trusted_authors(config.report_authors, client)
    if not own and gate.trusted_report(client.list_comments(number), authors) is None:
        tips = client.branch_tips(wavebranch.BRANCH_PREFIX)
        waves = sorted(branch for branch, sha in tips.items() if sha == pr.head_sha)
        if waves:
            # Another PR at a wave branch's tip (a fork's, another branch or base): what its gate set on
            # that commit, the wave's own PR would show.
            print(f"fail: PR #{number}: its head {pr.head_sha[:12]} is the tip of {waves[0]} and it has no "
                  "wavegit report; the commit's status is left to the wave's own pull request")
            return EXIT_WORK_FAILED
        if not pr.head_ref.startswith(wavebranch.BRANCH_PREFIX):
            client.set_status(pr.head_sha, "success", NOT_A_WAVE)
            print(f"pass: PR #{number}: {NOT_A_WAVE} (head {pr.head_ref})")
            return EXIT_OK
    result = gate.run_gate(client, number, config, GitHubStore(client, config), tested)
    print(f"{'pass' if result.passed else 'fail'}: PR #{number}: {result.reason}")
    return EXIT_OK if result.passed else EXIT_WORK_FAILED


def _merge_group(client: GitHubClient, group: gate.MergeGroup, config: Config) -> int:
    """The status of a merge queue's group: judged as the wave PR it adds, or "not a wavegit pull
    request" when that PR's head branch is no ``wavegit/*`` branch."""
    pr = client.pr_info(group.pr)
    if not pr.head_ref.startswith(wavebranch.BRANCH_PREFIX):
        client.set_status(group.head_sha, "success", NOT_A_WAVE)
        print(f"pass: merge group {group.head_ref}: PR #{group.pr}: {NOT_A_WAVE} (head {pr.head_ref})")
        return EXIT_OK
    result = gate.post_status(client, gate.evaluate_merge_group(client, group, config,
                                                                GitHubStore(client, config)))
    print(f"{'pass' if result.passed else 'fail'}: {group.head_ref}: {result.reason}")
    return EXIT_OK if result.passed else EXIT_WORK_FAILED
