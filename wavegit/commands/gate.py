"""``wavegit gate --pr N | --event``: check a PR's wave report and set the ``wavegit/gate`` status.

Exit 0 when the gate passes, 1 when it fails (the status says why), 2 for bad input (no GitHub settings, no
such PR, an event that is not about a PR). A pull request whose head is not a ``wavegit/*`` branch is no
wave's: the gate sets ``success`` "not a wavegit pull request" on it and exits 0, so that a required
``wavegit/gate`` check does not block every ordinary pull request. A status belongs to a commit, not to
a PR: a PR whose head commit is a wave's (a ``Wavegit-Wave`` trailer) is judged as a wave whatever its
branch, and when it has no wave report (another branch or base at a wave's head, a fork's PR, a rename)
no status is set and the exit is 1, so that the wave's own PR shows only its own verdict. The
configuration (``report_authors``, ``tracker_branch``) is read from the checkout at ``-C``, which in a
workflow must be the base branch, never the PR's code; the tracker is read from the tracker branch
through the API.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from wavegit import worktree
from wavegit.config import load_config
from wavegit.errors import EXIT_OK, EXIT_WORK_FAILED, UsageError
from wavegit.github import api, gate
from wavegit.github.client import connect
from wavegit.github.store import GitHubStore
from wavegit.repo import discover

NOT_A_WAVE = "not a wavegit pull request"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--pr", type=int, metavar="N", help="the pull request to check")
    which.add_argument("--event", action="store_true",
                       help="take the PR from the Actions event in $GITHUB_EVENT_PATH "
                            "(pull_request, pull_request_target or issue_comment)")


def run(args: argparse.Namespace) -> int:
    settings = api.require_settings()
    try:
        root = discover(args.directory).root
    except UsageError:
        # No checkout: the defaults and WAVEGIT_* overrides still make a configuration.
        root = Path(args.directory)
    config = load_config(root)
    number = args.pr if args.pr is not None else gate.event_pr_number(os.environ.get("GITHUB_EVENT_PATH"))
    if number < 1:
        raise UsageError(f"--pr {number}: not a pull request number")
    client = connect(settings)
    pr = client.pr_info(number)
    wave_id = next(map(gate.wave_of_commit, client.commit_messages(pr.head_sha, None, limit=1)), None)
    reported = wave_id is not None and gate.trusted_report(client.list_comments(number),
                                                           config.report_authors) is not None
    if wave_id is not None and not reported:
        # Another PR at a wave's commit (another branch or base, a fork's, a renamed wave branch): what
        # its gate sets on that commit, the wave's own PR would show.
        print(f"fail: PR #{number}: its head {pr.head_sha[:12]} is a commit of wave {wave_id} and it has no "
              "wavegit report; the commit's status is left to the wave's own pull request")
        return EXIT_WORK_FAILED
    if wave_id is None and not pr.head_ref.startswith(worktree.BRANCH_PREFIX):
        client.set_status(pr.head_sha, "success", NOT_A_WAVE)
        print(f"pass: PR #{number}: {NOT_A_WAVE} (head {pr.head_ref})")
        return EXIT_OK
    result = gate.run_gate(client, number, config, GitHubStore(client, config))
    print(f"{'pass' if result.passed else 'fail'}: PR #{number}: {result.reason}")
    return EXIT_OK if result.passed else EXIT_WORK_FAILED
