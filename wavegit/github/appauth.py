"""A GitHub App's installation tokens, minted, refreshed and revoked by wavegit itself.

What is minted when, how pushes carry the current token and what is revoked at exit: docs/action.md, "Token
or App". API calls take the current token on every request; git takes it through the one git layer
(:func:`wavegit.core.git.set_remote_auth`). Nothing is asked of GitHub until the first token is needed;
:func:`credentials_from_env` only reads the environment.
"""

from __future__ import annotations

import atexit
import base64
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from wavegit.core import credentials, git
from wavegit.core.credentials import APP_KEY_FILE_VAR, APP_KEY_VAR
from wavegit.core.errors import UsageError
from wavegit.github.retry import Retrier, RetryPolicy, scrub_logs

if TYPE_CHECKING:
    from github.Auth import AppInstallationAuth

APP_ID_VAR = "WAVEGIT_APP_ID"
INSTALLATION_VAR = "WAVEGIT_APP_INSTALLATION_ID"


@dataclass(frozen=True)
class AppCredentials:
    app_id: str
    private_key: str = field(repr=False)
    installation_id: int | None = None


def credentials_from_env(env: Mapping[str, str]) -> AppCredentials | None:
    """The App's credentials from the environment; None without ``WAVEGIT_APP_ID``; UsageError when
    half of them are set or malformed (one line naming the variable)."""
    app_id = env.get(APP_ID_VAR, "").strip()
    key = env.get(APP_KEY_VAR, "") or credentials.held_secret(APP_KEY_VAR)
    key_file = env.get(APP_KEY_FILE_VAR, "")
    if not app_id:
        if key or key_file:
            raise UsageError(f"{APP_KEY_VAR} is set but {APP_ID_VAR} is not: set the App's id too")
        return None
    if not app_id.isdigit():
        raise UsageError(f"{APP_ID_VAR}={app_id!r} is not a GitHub App id (a number)")
    if not key and key_file:
        try:
            key = Path(key_file).read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"{APP_KEY_FILE_VAR}: cannot read the App's key: {exc.strerror}") from None
    if "PRIVATE KEY-----" not in key or not _usable_key(key):
        raise UsageError(f"{APP_ID_VAR} is set but {APP_KEY_VAR} holds no PEM private key "
                         "(the .pem file GitHub gave for the App)")
    installation = env.get(INSTALLATION_VAR, "").strip()
    if installation and not installation.isdigit():
        raise UsageError(f"{INSTALLATION_VAR}={installation!r} is not an installation id (a number)")
    return AppCredentials(app_id, key, int(installation) if installation else None)


def _usable_key(pem: str) -> bool:
    """Whether ``pem`` is an RSA private key (what signs an App's JWTs, RS256)."""
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        return isinstance(load_pem_private_key(pem.encode(), password=None), RSAPrivateKey)
    except (ValueError, TypeError):
        return False


class AppTokens:
    """The installation tokens of one App on one repository, for the whole process (:func:`for_process`)."""

    def __init__(self, app: AppCredentials, repository: str, api_url: str) -> None:
        self.app = app
        self.repository = repository
        self.api_url = api_url
        self._auth: AppInstallationAuth | None = None
        self.minted: list[str] = []
        """Every token minted, oldest first (revoked at exit)."""

    @property
    def identity(self) -> str:
        """What stays the same across this App's tokens (who they post as)."""
        return f"app:{self.app.app_id}"

    @property
    def auth(self) -> AppInstallationAuth:
        """PyGithub's installation auth: its ``token`` is the current token, minted anew when near expiry."""
        if self._auth is None:
            from github import Auth, GithubIntegration

            app_auth = Auth.AppAuth(int(self.app.app_id), self.app.private_key)
            integration = GithubIntegration(auth=app_auth, base_url=self.api_url, retry=None)
            installation = self.app.installation_id
            if installation is None:
                owner, _, name = self.repository.partition("/")
                installation = Retrier(RetryPolicy(), "").call(
                    f"find the installation of GitHub App {self.app.app_id} on {self.repository}",
                    lambda: int(integration.get_repo_installation(owner, name).id))
            self._auth = app_auth.get_installation_auth(installation, requester=integration.requester)
        return self._auth

    def token(self) -> str:
        """The current installation token (minted or refreshed as needed)."""
        def current() -> str:
            return self.auth.token

        token = Retrier(RetryPolicy(), "").call(f"mint a token of GitHub App {self.app.app_id}", current)
        if token not in self.minted:
            scrub_logs(token)
            self.minted.append(token)
        return token

    def git_auth(self, server_url: str) -> dict[str, str]:
        """The environment that makes git send the current token to ``server_url`` (and nowhere else)."""
        basic = base64.b64encode(f"x-access-token:{self.token()}".encode()).decode()
        return {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": f"http.{server_url.rstrip('/')}/.extraheader",
                "GIT_CONFIG_VALUE_0": f"AUTHORIZATION: basic {basic}"}

    def revoke(self) -> list[str]:
        """Revoke every minted token; the problems met (never raises). One that expired already is
        answered 401, which is what revoking it would have achieved."""
        from github import Auth, Github
        from github.GithubException import GithubException
        from requests.exceptions import RequestException

        problems = []
        while self.minted:
            token = self.minted.pop(0)
            client = Github(auth=Auth.Token(token), base_url=self.api_url, retry=None, timeout=15)
            try:
                client.requester.requestJsonAndCheck("DELETE", "/installation/token")
            except (GithubException, RequestException) as exc:
                status = getattr(exc, "status", None)
                if status != 401:
                    problems.append(f"revoking a token of GitHub App {self.app.app_id} failed: "
                                    f"{status or type(exc).__name__}")
        return problems


_PROCESS: list[AppTokens] = []


def for_process(repository: str, api_url: str, env: Mapping[str, str] | None = None) -> AppTokens | None:
    """The process's App tokens when the App is configured (one per process: every client and git command
    shares its tokens); the first call also routes git's pushes through it and revokes at exit."""
    env = os.environ if env is None else env
    found = next((t for t in _PROCESS if (t.repository, t.api_url) == (repository, api_url)), None)
    if found is not None:
        return found
    app = credentials_from_env(env)
    if app is None:
        return None
    tokens = AppTokens(app, repository, api_url)
    _PROCESS.append(tokens)
    server = (env.get("GITHUB_SERVER_URL") or "https://github.com").rstrip("/")
    git.set_remote_auth(lambda: tokens.git_auth(server))
    atexit.register(_revoke_at_exit, tokens)
    return tokens


def end_process_tokens() -> None:
    """Revoke the process's App tokens and stop sending them with git commands (at exit; in-process users
    that end sooner, such as a test, call it themselves)."""
    while _PROCESS:
        _revoke_at_exit(_PROCESS.pop())
    git.set_remote_auth(None)


def _revoke_at_exit(tokens: AppTokens) -> None:
    import sys

    for problem in tokens.revoke():
        print(f"wavegit: {problem}", file=sys.stderr)
