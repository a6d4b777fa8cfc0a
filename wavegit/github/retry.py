"""wavegit's retry rules for GitHub API calls, and keeping the token out of every message and log record.

PyGithub's own retries are switched off (they would repeat a POST blindly): ``Retry-After`` and
``X-RateLimit-Reset`` are honoured; 5xx answers back off with jitter; a secondary rate limit without
``Retry-After`` (a 429, or a 403 saying so) waits at least a minute, as GitHub asks, doubling after that; all
bounded by a deadline per call. Conflicts are classified on the status and GitHub's whole message, never on
text of ours (a path or branch that contains "sha"). A create (pull request, comment) whose answer was lost
may still have landed, so before trying it again the caller's ``landed`` looks for it. Like
:mod:`wavegit.github.client`, this imports PyGithub (its exception types) only when a call runs.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from wavegit.core.errors import ruleset_refusal
from wavegit.github.errors import GitHubConflict, GitHubError, GitHubNotFound, GitHubRuleViolation

T = TypeVar("T")


def scrub(text: str, secret: str) -> str:
    """``text`` without ``secret`` (tokens must not leak into messages or logs)."""
    return text.replace(secret, "***") if secret else text


class _ScrubFilter(logging.Filter):
    def __init__(self, secret: str) -> None:
        super().__init__()
        self.secret = secret

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if self.secret in message:
            record.msg, record.args = scrub(message, self.secret), None
        return True


_SCRUBBED_LOGGERS = ("github.Requester", "urllib3.connectionpool")


def scrub_logs(secret: str) -> None:
    """Keep ``secret`` out of the records of PyGithub's and urllib3's loggers."""
    for name in _SCRUBBED_LOGGERS:
        logging.getLogger(name).addFilter(_ScrubFilter(secret))


@dataclass(frozen=True)
class RetryPolicy:
    deadline_s: float = 120.0
    """Total time one call may take, waits included."""
    backoff_s: float = 0.5
    """First backoff after a 5xx; doubles, with jitter."""
    max_backoff_s: float = 30.0
    secondary_wait_s: float = 60.0
    """First wait after a secondary rate limit that names no time ("wait at least one minute"); doubles."""
    timeout_s: int = 30
    """Per HTTP request."""


class Retrier:
    """Runs one API call with wavegit's retry rules (see the module docstring)."""

    def __init__(self, policy: RetryPolicy, token: str | Callable[[], Iterable[str]],
                 sleep: Callable[[float], None] = time.sleep) -> None:
        """``token``: the secret to keep out of messages, or what gives every one (a GitHub App's tokens)."""
        self.policy = policy
        self._secrets = token if callable(token) else (lambda: (token,))
        self.sleep = sleep

    def _scrub(self, text: str) -> str:
        for secret in self._secrets():
            text = scrub(text, secret)
        return text

    def call(self, what: str, fn: Callable[[], T], landed: Callable[[], T | None] | None = None) -> T:
        """``fn()`` with retries. For a create, ``landed`` looks for the object a lost answer may have
        created; it runs before every retry so the create is never repeated once it went through."""
        from github.GithubException import BadAttributeException, GithubException
        from requests.exceptions import RequestException

        deadline = time.monotonic() + self.policy.deadline_s
        attempt = 0
        retried = False
        while True:
            attempt += 1
            try:
                if retried and landed is not None:
                    found = landed()
                    if found is not None:
                        return found
                return fn()
            except GithubException as exc:
                wait = self._wait(exc, attempt)
                error = self._error(what, exc)
            except RequestException as exc:
                wait, error = self._backoff(attempt), GitHubError(
                    self._scrub(f"{what}: cannot reach GitHub: {type(exc).__name__}: {exc}"))
            except BadAttributeException as exc:
                expected = getattr(exc.expected_type, "__name__", str(exc.expected_type))
                raise GitHubError(self._scrub(f"{what}: unexpected answer from GitHub: a field holds "
                                              f"{exc.actual_value!r}, expected {expected}")) from None
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise GitHubError(self._scrub(f"{what}: unexpected answer from GitHub ({type(exc).__name__}: "
                                              f"{exc})")) from None
            if wait is None:
                raise error from None
            if time.monotonic() + wait > deadline:
                raise GitHubError(f"{error} (gave up after {attempt} attempts within the "
                                  f"{self.policy.deadline_s:g}s deadline)", error.status) from None
            self.sleep(wait)
            retried = True

    def _backoff(self, attempt: int) -> float:
        ceiling = min(self.policy.backoff_s * 2 ** (attempt - 1), self.policy.max_backoff_s)
        return random.uniform(ceiling / 2, ceiling)

    def _wait(self, exc: object, attempt: int) -> float | None:
        """Seconds to wait before retrying ``exc``, or None when retrying cannot help."""
        status: int = getattr(exc, "status", 0) or 0
        headers = {str(k).lower(): str(v) for k, v in (getattr(exc, "headers", None) or {}).items()}
        retry_after = headers.get("retry-after", "")
        if retry_after.isdigit():
            return float(retry_after)
        reset = headers.get("x-ratelimit-reset", "")
        if status in (403, 429) and headers.get("x-ratelimit-remaining") == "0" and reset.isdigit():
            # Reset is whole epoch seconds; half a second more avoids waking just before it.
            return max(int(reset) - time.time(), 0.0) + 0.5
        if status == 429 or (status == 403 and "rate limit" in _message(exc).lower()):
            return self.policy.secondary_wait_s * 2.0 ** (attempt - 1)
        if status >= 500:
            return self._backoff(attempt)
        return None

    def _error(self, what: str, exc: object) -> GitHubError:
        status: int = getattr(exc, "status", 0) or 0
        message = _message(exc)
        text = self._scrub(f"{what}: GitHub answered {status}: {message.splitlines()[0] if message else ''}")
        if status == 404:
            return GitHubNotFound(text, status)
        if status in (409, 422) and RULE_VIOLATIONS in message:
            rules = [line.strip().removeprefix("- ") for line in message.splitlines()[1:] if line.strip()]
            return GitHubRuleViolation(self._scrub(ruleset_refusal(what, rules)), status)
        if status == 409 or (status == 422 and any(phrase in message.lower() for phrase in _STALE_WRITE)):
            return GitHubConflict(text, status)
        if status == 401:
            return GitHubError(f"{text} (check GITHUB_TOKEN)", status)
        if status == 403 and NOT_ACCESSIBLE in message:
            return GitHubError(f"{text} ({_missing_permission(exc)})", status)
        return GitHubError(text, status)


RULE_VIOLATIONS = "Repository rule violations"
"""How GitHub begins its 409/422 to a write a ruleset refused (the rules follow, one per line)."""

NOT_ACCESSIBLE = "Resource not accessible by integration"
"""GitHub's 403 to an installation token (``GITHUB_TOKEN``, a GitHub App's) that lacks a permission."""


def _missing_permission(exc: object) -> str:
    """What to grant, from GitHub's ``X-Accepted-GitHub-Permissions`` (``pull_requests=write``, ...)."""
    headers = {str(k).lower(): str(v) for k, v in (getattr(exc, "headers", None) or {}).items()}
    accepted = headers.get("x-accepted-github-permissions", "")
    wanted = " or ".join(f"{name.replace('_', '-')}: {level}" for name, _, level in
                         (choice.strip().partition("=") for choice in accepted.split(","))
                         if name and level)
    grant = f"give the job `permissions:` {wanted}" if wanted else "give the job the `permissions:` it needs"
    return f"the token lacks a permission: {grant} (docs/action.md), or the App that permission"


def _message(exc: object) -> str:
    """GitHub's whole message, with the messages of its ``errors`` list."""
    data = getattr(exc, "data", None)
    if not isinstance(data, dict):
        return str(data) if data is not None else str(exc)
    parts = [str(data["message"])] if isinstance(data.get("message"), str) else []
    errors = data.get("errors")
    for error in errors if isinstance(errors, list) else []:
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            parts.append(str(error["message"]))
        elif isinstance(error, str):
            parts.append(error)
    return "\n".join(parts)


# What GitHub says when a write lost a race: a ref moved ("Update is not a fast forward"), or a file was
# created since we read it absent (a create without "sha": '"sha" wasn't supplied'). 409 is always one.
_STALE_WRITE = ("not a fast forward", '"sha" wasn\'t supplied', "does not match")
