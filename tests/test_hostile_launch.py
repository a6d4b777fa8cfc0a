"""Hostile workers against how their processes start (the keyring filter, dying with the scheduler, the
attempt's limits), each a real ``wavegit run`` on a temporary repository with a bare origin, the worker
``tests/hostile_workers/env_limits.py``."""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

import pytest

from tests.test_hostile_limits import by_id, limits_repo, run_json

pytestmark = pytest.mark.slow


@pytest.mark.xfail(strict=True, reason=(
    "an unsandboxed worker writes the scheduler's .git/config, and wavegit's own git (fetch, push: "
    "unfiltered, after the attempt) runs the transport programs it names; the hole of a remote.origin.url "
    "of the worker's choosing (docs/security.md)"))
def test_an_unsandboxed_worker_cannot_reach_the_keyring_through_the_schedulers_git(tmp_path: Path) -> None:
    """docs/security.md: under `none` the keyring filter holds. A worker that cannot call keyctl itself plants
    `remote.origin.uploadpack`/`receivepack` in the scheduler's repository: the wave's own push runs them."""
    libc = ctypes.CDLL(None, use_errno=True)
    add_key, keyctl = {"x86_64": (248, 250), "aarch64": (217, 219)}[os.uname().machine]
    description, secret = f"wavegit-atk-{os.getpid()}-{tmp_path.name}", b"keyring-secret-through-git"
    serial = libc.syscall(add_key, b"user", description.encode(), secret, len(secret), -4)  # @u
    assert serial > 0, os.strerror(ctypes.get_errno())
    loot = tmp_path / "loot.txt"
    try:
        remote = limits_repo(tmp_path, "none", ("A", [f"keyring {description}",
                                                      f"plant-git-config {description} {loot}"], None))
        code, rep, err = run_json(remote)
        assert code == 0 and by_id(rep)["A"]["status"] == "review", (rep, err)
        read = loot.read_text() if loot.exists() else ""
        assert secret.decode() not in read, read
    finally:
        libc.syscall(keyctl, 3, serial)  # KEYCTL_REVOKE
