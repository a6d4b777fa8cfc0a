"""Whether a PR comment is a review command wavegit will obey, asked before any job with secrets starts.

``wavegit review --check --event`` runs in a job that holds no secret and no write permission (the
``check`` job of ``review.yml``): it reads the ``issue_comment`` event, and says *obey* only for a
``/wavegit`` command on a wave PR of this repository (``wavegit/<wave>``, not a fork's) by someone whose
permission, asked through the API (``GET /repos/{owner}/{repo}/collaborators/{user}/permission``), is write,
maintain or admin. ``author_association`` cannot say that: a member whose organisation membership is private
appears there as ``CONTRIBUTOR`` or ``NONE``. The review job asks again before it acts.
"""

from __future__ import annotations

from dataclasses import dataclass

from wavegit.attempts import wavebranch
from wavegit.github.api import WRITERS, PullRequests


@dataclass(frozen=True)
class Verdict:
    obey: bool
    reason: str


def has_command(body: str) -> bool:
    """Whether a line of ``body`` starts with ``/wavegit`` (a malformed command too: it gets a reply)."""
    return any(line.split()[:1] == ["/wavegit"] for line in body.splitlines())


def check(client: PullRequests, number: int, author: str, body: str) -> Verdict:
    """Whether the comment ``body`` of ``author`` on PR ``number`` is a command to obey."""
    if not has_command(body):
        return Verdict(False, f"the comment on PR #{number} holds no /wavegit command")
    if author == client.whoami():
        return Verdict(False, f"the comment on PR #{number} is wavegit's own")
    pr = client.pr_info(number)
    if wavebranch.parse_wave_branch(pr.head_ref) is None or pr.head_repo != client.repository:
        return Verdict(False, f"PR #{number} is not a wave of {client.repository} "
                              f"(its head is {pr.head_repo or 'a deleted fork'}:{pr.head_ref})")
    permission = client.permission(author)
    if permission not in WRITERS:
        return Verdict(False, f"{author} may not run wavegit commands (permission {permission}; write, "
                              "maintain or admin may)")
    return Verdict(True, f"{author} has {permission} permission: the command on PR #{number} is obeyed")
