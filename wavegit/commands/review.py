"""``wavegit review --event | --pr N --comment-id C``: act on a ``/wavegit retry|drop <id>`` PR comment.

``--event`` takes the PR and the comment from an ``issue_comment`` event in ``$GITHUB_EVENT_PATH``; other
events, other actions than ``created`` and comments on plain issues are ignored (exit 0). The comment itself
is always read back through the API. Exit 0 when the command was carried out, or was not a command, or
came from someone without write access (who gets a polite reply); 1 when a retried item was not verified;
2 for a malformed command, an unknown item or one not under review in the PR's wave (a reply says which).
Runs in a checkout of the repository (``-C``), which provides the configuration, the worker and the remote.
"""

from __future__ import annotations

import argparse
import os
import sys

from wavegit.commands._context import Context
from wavegit.core.errors import EXIT_OK, UsageError
from wavegit.github import api
from wavegit.github.client import connect
from wavegit.github.review import Reviewer


def add_arguments(parser: argparse.ArgumentParser) -> None:
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--event", action="store_true",
                       help="take the PR and comment from the issue_comment event in $GITHUB_EVENT_PATH")
    which.add_argument("--pr", type=int, metavar="N", help="the pull request (with --comment-id)")
    parser.add_argument("--comment-id", type=int, metavar="C", help="the comment holding the command")


def event_target(event_path: str | None) -> tuple[int, int] | None:
    """(PR number, comment id) of a created ``issue_comment`` on a PR; None for anything else."""
    event = api.read_event(event_path)
    if not isinstance(event, dict) or event.get("action") != "created":
        return None
    issue, comment = event.get("issue"), event.get("comment")
    if not isinstance(issue, dict) or not isinstance(comment, dict) or "pull_request" not in issue:
        return None
    number, comment_id = issue.get("number"), comment.get("id")
    if not isinstance(number, int) or not isinstance(comment_id, int):
        raise UsageError(f"{event_path}: the issue_comment event has no issue number or comment id")
    return number, comment_id


def run(args: argparse.Namespace) -> int:
    if args.event and args.comment_id is not None:
        raise UsageError("--comment-id goes with --pr, not with --event")
    if args.pr is not None and (args.comment_id is None or args.pr < 1):
        raise UsageError("--pr N needs a positive N and --comment-id C")
    settings = api.require_settings()
    target = event_target(os.environ.get("GITHUB_EVENT_PATH")) if args.event else (args.pr, args.comment_id)
    if target is None:
        print("not a new comment on a pull request: nothing to do")
        return EXIT_OK
    number, comment_id = target
    context = Context.governed(args)
    client = connect(settings)
    comment = next((c for c in client.list_comments(number) if c.id == comment_id), None)
    if comment is None:
        raise UsageError(f"PR #{number} has no comment {comment_id}")
    outcome = Reviewer(context.repo, context.config, context.store, client).handle(number, comment)
    print(outcome.reply or f"comment {comment_id} holds no /wavegit command: nothing to do",
          file=sys.stdout if outcome.exit_code == EXIT_OK else sys.stderr)
    return outcome.exit_code
