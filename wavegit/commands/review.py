"""``wavegit review --event | --pr N --comment-id C``: act on a ``/wavegit retry|drop <id>`` PR comment.

``--check --event`` only decides, in a job without secrets, whether the review job should run (prints
``obey: ...`` or ``ignore: ...``, writes ``obey=true|false`` to ``$GITHUB_OUTPUT``, exit 0; docs/action.md).
``--event`` reads an ``issue_comment`` event (others are ignored, exit 0); the comment itself is read back
through the API. Exit 0 when carried out (or not a command, or not a writer's), 1 when a retried item was
not verified, 2 when the command is refused (a reply says why). Runs in a checkout (``-C``): its config,
worker and remote.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from wavegit.commands._context import Context
from wavegit.core.errors import EXIT_OK, UsageError
from wavegit.github import api, review_check
from wavegit.github.action import write_outputs
from wavegit.github.client import connect
from wavegit.github.review import Reviewer


def add_arguments(parser: argparse.ArgumentParser) -> None:
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--event", action="store_true",
                       help="take the PR and comment from the issue_comment event in $GITHUB_EVENT_PATH")
    which.add_argument("--pr", type=int, metavar="N", help="the pull request (with --comment-id)")
    parser.add_argument("--comment-id", type=int, metavar="C", help="the comment holding the command")
    parser.add_argument("--check", action="store_true",
                        help="with --event: only say whether to obey the comment (obey=true|false in "
                             "$GITHUB_OUTPUT), by the commenter's permission asked through the API")


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


def event_comment(event_path: str | None) -> tuple[int, str, str] | None:
    """(PR number, author, body) of a created ``issue_comment`` on a PR; None for anything else."""
    if event_target(event_path) is None:
        return None
    event = api.read_event(event_path)
    assert isinstance(event, dict)
    comment, issue = event["comment"], event["issue"]
    user = comment.get("user")
    author, body = user.get("login") if isinstance(user, dict) else None, comment.get("body")
    if not isinstance(author, str) or not isinstance(body, str):
        raise UsageError(f"{event_path}: the issue_comment event has no comment author or body")
    return int(issue["number"]), author, body


def check(event_path: str | None) -> int:
    """``--check --event``: obey=true|false, decided without a checkout or secrets."""
    found = event_comment(event_path)
    verdict = (review_check.check(connect(api.require_settings()), *found) if found is not None
               else review_check.Verdict(False, "not a new comment on a pull request"))
    print(f"{'obey' if verdict.obey else 'ignore'}: {verdict.reason}")
    if os.environ.get("GITHUB_OUTPUT"):
        write_outputs(Path(os.environ["GITHUB_OUTPUT"]), {"obey": "true" if verdict.obey else "false"})
    return EXIT_OK


def run(args: argparse.Namespace) -> int:
    if args.check:
        if not args.event:
            raise UsageError("--check goes with --event")
        return check(os.environ.get("GITHUB_EVENT_PATH"))
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
