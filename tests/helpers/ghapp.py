"""The GitHub App side of the test server (tests/helpers/ghserver.py), as strict as GitHub: a JWT signed RS256
with the App's key (``iss`` the App id, ``exp`` at most ten minutes after ``iat``) is the only credential of
``GET /repos/{owner}/{repo}/installation`` and ``POST /app/installations/{id}/access_tokens``; the tokens it
mints expire (:attr:`FakeApp.token_ttl_s`, an hour on GitHub), after which GitHub answers them 401 "Bad
credentials"; ``DELETE /installation/token`` revokes the token it is sent with. And git's smart HTTP on
``/{owner}/{repo}.git`` (``git http-backend`` on the bare repository), which takes a token only as GitHub
does, Basic ``x-access-token:<token>``, so that a test proves a push carries a token still valid then.
"""

from __future__ import annotations

import base64
import os
import secrets
import subprocess
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any

JSON = Any
MAX_JWT_LIFETIME_S = 600


@lru_cache(maxsize=1)
def app_key_pair() -> tuple[str, str]:
    """(private key PEM, public key PEM) of a test App, made once per test process."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


@dataclass
class FakeApp:
    """One GitHub App installed on the fake's repository."""

    app_id: int
    login: str
    """Its bot's login, ``<slug>[bot]``: who its installation tokens post as."""
    public_key: str
    installation_id: int = 4711
    token_ttl_s: float = 3600.0
    minted: dict[str, float] = field(default_factory=dict)
    """token -> when it expires (epoch seconds)."""
    revoked: list[str] = field(default_factory=list)
    jwts: int = 0
    """How many JWTs were accepted."""

    def check_jwt(self, token: str) -> None:
        """GitHub's checks of an App's JWT; AppError 401 with GitHub's message when one fails."""
        import jwt

        try:
            claims = jwt.decode(token, self.public_key, algorithms=["RS256"],
                                options={"require": ["iat", "exp", "iss"], "verify_iat": False}, leeway=60)
        except jwt.ExpiredSignatureError:
            raise AppError(401, "'Expiration time' claim ('exp') must be a numeric value representing the "
                                "future time at which the assertion expires") from None
        except jwt.PyJWTError as exc:
            raise AppError(401, f"A JSON web token could not be decoded ({type(exc).__name__})") from None
        if str(claims["iss"]) != str(self.app_id):
            raise AppError(401, "Integration not found")
        if int(claims["exp"]) - int(claims["iat"]) > MAX_JWT_LIFETIME_S:
            raise AppError(401, "'Expiration time' claim ('exp') is too far in the future")
        self.jwts += 1

    def mint(self) -> tuple[str, float]:
        token = f"ghs_{secrets.token_hex(18)}"
        expires = time.time() + self.token_ttl_s
        self.minted[token] = expires
        return token, expires

    def expired(self, token: str) -> bool:
        return token in self.minted and time.time() >= self.minted[token]

    def installation_json(self, base_url: str, owner: str) -> JSON:
        slug = self.login.removesuffix("[bot]")
        return {"id": self.installation_id, "app_id": self.app_id, "app_slug": slug,
                "target_type": "Organization", "target_id": 1,
                "account": {"login": owner, "id": 1, "type": "Organization"},
                "access_tokens_url": f"{base_url}/app/installations/{self.installation_id}/access_tokens",
                "repositories_url": f"{base_url}/installation/repositories",
                "permissions": {"contents": "write", "pull_requests": "write", "issues": "write",
                                "statuses": "write", "actions": "write"},
                "repository_selection": "selected", "events": []}

    def token_json(self, token: str, expires: float) -> JSON:
        when = datetime.fromtimestamp(expires, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        return {"token": token, "expires_at": when, "permissions": {"contents": "write"},
                "repository_selection": "selected"}


class AppError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def basic_token(authorization: str) -> str | None:
    """The token of ``Authorization: Basic base64(x-access-token:<token>)`` (how git sends one)."""
    scheme, _, encoded = authorization.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        user, _, password = base64.b64decode(encoded.strip()).decode().partition(":")
    except ValueError:
        return None
    return password if user == "x-access-token" and password else None


@dataclass(frozen=True)
class CgiAnswer:
    status: int
    headers: dict[str, str]
    body: bytes


def git_http_backend(bare: Path, rest: str, method: str, query: str, headers: dict[str, str], body: bytes,
                     user: str) -> CgiAnswer:
    """``git http-backend`` serving ``bare`` for the smart HTTP request ``rest`` (``/info/refs``, ...)."""
    env = {"PATH": os.environ.get("PATH", ""), "GIT_PROJECT_ROOT": str(bare.parent),
           "GIT_HTTP_EXPORT_ALL": "1",
           "PATH_INFO": f"/{bare.name}{rest}", "REQUEST_METHOD": method, "QUERY_STRING": query,
           "CONTENT_TYPE": headers.get("content-type", ""), "CONTENT_LENGTH": str(len(body)),
           "REMOTE_USER": user, "REMOTE_ADDR": "127.0.0.1", "GIT_PROTOCOL": headers.get("git-protocol", ""),
           "HTTP_CONTENT_ENCODING": headers.get("content-encoding", "")}
    proc = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True, check=False)
    head, _, payload = proc.stdout.partition(b"\r\n\r\n")
    status, answer = 200, {}
    for line in head.decode("latin-1").split("\r\n"):
        name, _, value = line.partition(":")
        if name.lower() == "status":
            status = int(value.split()[0])
        elif name:
            answer[name] = value.strip()
    return CgiAnswer(status, answer, payload)
