"""Helpers for the tests of the commands that change items by hand: what origin's last commit holds."""

from __future__ import annotations

from tests.helpers.repos import RemoteRepo, git


def last_ops(remote: RemoteRepo) -> list[str]:
    """The ``Wavegit-Op`` trailer values of origin's last commit on main (the op, then the retry id)."""
    fmt = "--format=%(trailers:key=Wavegit-Op,valueonly)"
    return git(remote.origin, "log", "-1", fmt, "main").splitlines()


def changed_files(remote: RemoteRepo) -> str:
    return git(remote.origin, "diff", "--name-only", "main~1", "main")
