"""Who the action's token is, as git wants it: ``python -m wavegit.github.identity`` prints the name and the
email that wavegit's commits (claims, records, items) carry when the runner has no git identity.

An installation token posts as ``<app>[bot]`` (``github-actions[bot]`` for ``GITHUB_TOKEN``); GitHub links
a commit to that bot by its noreply address, ``<id>+<app>[bot]@users.noreply.github.com``. The login comes
from :meth:`~wavegit.github.client.PyGithubClient.whoami` (``WAVEGIT_GITHUB_LOGIN``, else GitHub), the id
from ``GET /users/<login>``. Exit 1 (nothing printed) when GitHub cannot say: the action then keeps
``github-actions[bot]``.
"""

from __future__ import annotations

import os
import sys

from wavegit.core import credentials
from wavegit.core.errors import EXIT_OK, EXIT_WORK_FAILED, WavegitError
from wavegit.github.api import settings_from_env
from wavegit.github.client import PyGithubClient


def commit_identity(client: PyGithubClient) -> tuple[str, str]:
    """(name, email) of the token's own account."""
    login = client.whoami()
    return login, f"{client.user_id(login)}+{login}@users.noreply.github.com"


def main() -> int:
    credentials.protect(os.environ, restart=False)
    try:
        settings = settings_from_env()
        if settings is None:
            return EXIT_WORK_FAILED
        name, email = commit_identity(PyGithubClient(settings))
    except WavegitError as exc:
        print(f"wavegit: the token's git identity is unknown ({exc})", file=sys.stderr)
        return EXIT_WORK_FAILED
    print(name)
    print(email)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
