"""The errors of GitHub API calls (re-exported by :mod:`wavegit.github.api`; :mod:`wavegit.github.retry` makes
them from PyGithub's)."""

from __future__ import annotations

from wavegit.core.errors import EXIT_BAD_INPUT, EXIT_WORK_FAILED, WavegitError


class GitHubError(WavegitError):
    """A GitHub API call failed (after retries, where retrying made sense)."""

    exit_code = EXIT_WORK_FAILED

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class GitHubNotFound(GitHubError):
    """The pull request, file or branch does not exist (bad input, exit 2)."""

    exit_code = EXIT_BAD_INPUT


class GitHubRuleViolation(GitHubError):
    """A write the repository's rules (a ruleset) refused, 409/422 "Repository rule violations found":
    bad configuration (exit 2), never a lost race."""

    exit_code = EXIT_BAD_INPUT


class GitHubConflict(GitHubError):
    """A compare-and-swap write lost: stale Contents ``sha`` (409/422) or a non-fast-forward ref update."""
