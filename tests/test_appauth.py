"""wavegit mints a GitHub App's installation tokens itself from the App id and private key (issue 20,
point 4), renews them before they expire for API calls and git pushes alike, and revokes them at the end,
all through real PyGithub and real git against the strict test server (tests/helpers/ghapp.py): JWTs
checked against the App's public key, tokens that expire, git's smart HTTP taking only a valid token."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.ghapp import FakeApp, app_key_pair
from tests.helpers.ghserver import ALICE, APP, Running, running
from tests.helpers.repos import RemoteRepo, git, wavegit
from tests.helpers.wave import item, make_wave_repo, origin_item
from wavegit.github import api, appauth
from wavegit.github.api import GitHubError, Settings
from wavegit.github.client import PyGithubClient
from wavegit.model import report

# A whole-flow suite (real waves, the test GitHub server): `.ci/run` runs it after the README's command.
pytestmark = pytest.mark.slow

APP_ID = 31337


@pytest.fixture(autouse=True)
def the_process_forgets_the_app() -> Iterator[None]:
    """The App's tokens are the process's: a test that made them in-process ends them, so that no later test
    of this process sends a token of a server that is gone with its git commands."""
    yield
    appauth.end_process_tokens()


def app_env(gh: Running, **extra: str) -> dict[str, str]:
    """The environment of an App-configured wavegit: no GITHUB_TOKEN, the App's id and key."""
    return {"GITHUB_REPOSITORY": gh.fake.repo, "GITHUB_API_URL": gh.url, "GITHUB_SERVER_URL": gh.url,
            "WAVEGIT_APP_ID": str(APP_ID), "WAVEGIT_APP_PRIVATE_KEY": app_key_pair()[0], "GITHUB_TOKEN": "",
            **extra}


def installed(ttl_s: float = 3600.0) -> FakeApp:
    return FakeApp(APP_ID, APP, app_key_pair()[1], token_ttl_s=ttl_s)


@pytest.fixture
def wave_repo(tmp_path: Path) -> RemoteRepo:
    return make_wave_repo(tmp_path, [item("IT-0", ["sleep 2", "write src/f0.txt ok"], ["src/f0.txt"])],
                          sandbox="none")


@pytest.fixture
def gh(wave_repo: RemoteRepo) -> Iterator[Running]:
    with running(wave_repo.origin, app=installed()) as server:
        yield server


def test_api_calls_mint_a_token_from_the_app_id_and_key_and_a_new_one_before_it_expires(gh: Running) -> None:
    assert gh.fake.app is not None
    gh.fake.app.token_ttl_s = 21.0  # PyGithub renews a token 20 s before it expires
    settings = api.settings_from_env(app_env(gh, GITHUB_TOKEN="ghs_ignoredWhenTheAppIsConfigured"))
    assert settings is not None and settings.app is not None and settings.token == ""
    client = PyGithubClient(settings)
    assert client.permission(ALICE) == "write" and client.whoami() == APP
    time.sleep(1.2)
    assert client.permission(ALICE) == "write"
    assert len(gh.fake.app.minted) == 2 and gh.fake.count("GET", "/installation") == 1
    # Another client of the process shares the App's tokens and the identity it learned.
    PyGithubClient(api.settings_from_env(app_env(gh)) or settings).permission(ALICE)
    assert gh.fake.count("POST", "/graphql") == 1 and gh.fake.count("GET", "/installation") == 1


def test_the_server_refuses_an_expired_token_and_a_jwt_not_signed_by_the_apps_key(gh: Running) -> None:
    assert gh.fake.app is not None
    token, _ = gh.fake.app.mint()
    gh.fake.tokens[token] = APP
    fixed = PyGithubClient(Settings(token, gh.fake.repo, gh.url))
    assert fixed.permission(ALICE) == "write"
    gh.fake.app.minted[token] = time.time() - 1  # its hour is over
    with pytest.raises(GitHubError, match="401"):
        fixed.permission(ALICE)
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    other = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption()).decode()
    settings = api.settings_from_env(app_env(gh, WAVEGIT_APP_PRIVATE_KEY=other))
    assert settings is not None
    with pytest.raises(GitHubError, match="401: A JSON web token could not be decoded"):
        PyGithubClient(settings).permission(ALICE)


def test_a_wave_with_app_credentials_only_pushes_and_publishes_with_tokens_fresh_at_each_use(
        wave_repo: RemoteRepo, gh: Running) -> None:
    """Tokens live 21 s here (GitHub: an hour; a wave may run four), so PyGithub renews one once it is a
    second old: the pushes after the worker's sleep must carry a token minted after the first push's, never
    one fixed at the start (the server refuses an expired token, as GitHub does)."""
    assert gh.fake.app is not None
    gh.fake.app.token_ttl_s = 21.0
    # The clone reaches its origin as it would reach GitHub: over HTTP, with a token or not at all.
    git(wave_repo.clone, "remote", "set-url", "origin", f"{gh.url}/{gh.fake.repo}.git")
    result = wavegit(wave_repo.clone, "run", "--json", env=app_env(gh))
    assert result.returncode == 0, result.stdout + result.stderr
    rep = report.WaveReport.from_json(result.stdout)
    pr = gh.fake.pulls[rep.pr or 0]
    assert pr.user == APP and origin_item(wave_repo, "IT-0").status == "review"
    status = gh.fake.latest_status(rep.head_sha or "", api.STATUS_CONTEXT)
    assert status is not None and (status.state, status.user) == ("success", APP)
    pushes = [r for r in gh.fake.requests if r.path.endswith("/git-receive-pack")]
    assert len(pushes) >= 3 and all(r.user == APP for r in pushes)  # claim, wave branch, record
    assert not any(r.status == 401 and r.path.endswith("/git-receive-pack") for r in gh.fake.requests)
    minted = list(gh.fake.app.minted)
    assert minted.index(pushes[-1].token) > minted.index(pushes[0].token), "the last push reused a token"
    leaked = [t for t in minted if t in result.stdout + result.stderr]
    assert leaked == [] and app_key_pair()[0].splitlines()[1] not in result.stdout + result.stderr


def test_every_token_wavegit_minted_is_revoked_when_it_ends(wave_repo: RemoteRepo, gh: Running) -> None:
    git(wave_repo.clone, "remote", "set-url", "origin", f"{gh.url}/{gh.fake.repo}.git")
    result = wavegit(wave_repo.clone, "run", "--json", env=app_env(gh))
    assert result.returncode == 0, result.stdout + result.stderr
    assert gh.fake.app is not None and gh.fake.app.minted
    assert sorted(gh.fake.app.revoked) == sorted(gh.fake.app.minted)
    assert gh.fake.count("DELETE", "/installation/token") == len(gh.fake.app.minted)


@pytest.mark.parametrize(("env", "says"), [
    ({"WAVEGIT_APP_ID": ""}, "WAVEGIT_APP_PRIVATE_KEY is set but WAVEGIT_APP_ID is not"),
    ({"WAVEGIT_APP_ID": "my-app"}, "WAVEGIT_APP_ID='my-app' is not a GitHub App id"),
    ({"WAVEGIT_APP_PRIVATE_KEY": "not a key"}, "holds no PEM private key"),
    ({"WAVEGIT_APP_PRIVATE_KEY": "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----\n"},
     "holds no PEM private key"),
])
def test_half_an_app_configuration_is_exit_2_in_one_line(wave_repo: RemoteRepo, gh: Running,
                                                          env: dict[str, str], says: str) -> None:
    result = wavegit(wave_repo.clone, "run", env=app_env(gh, **env))
    assert result.returncode == 2 and says in result.stderr and len(result.stderr.splitlines()) == 1, result
