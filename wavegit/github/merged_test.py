"""The tests of a wave PR's merged result: what ``wavegit gate-test`` runs in the gate workflow's job that
holds no write token, for the gate to read (:mod:`wavegit.github.verdict`).

Only a head brought up to date with the base ("Update branch", :mod:`wavegit.github.uptodate`) of a wave
PR with a trusted report is tested; any other head gets a verdict that says there was nothing to test. The
tests are the reported items' ``test`` commands as the tracker on the tracker branch has them, then
``wave_test`` from the configuration of the checkout at ``-C`` (the base branch, never the PR's), each run
on a fresh checkout of the PR's head in the sandbox a wave's tests run in, without GitHub credentials.
"""

from __future__ import annotations

import os

from wavegit.attempts import sandbox
from wavegit.core import git
from wavegit.core.errors import UsageError
from wavegit.core.repo import Repo
from wavegit.engine.attempt import Confiner
from wavegit.engine.wave import test_commit
from wavegit.github import gate
from wavegit.github.api import GateClient
from wavegit.github.verdict import TestRun, Verdict
from wavegit.model import tracker
from wavegit.model.config import Config
from wavegit.trackerbranch.store import TrackerStore

WAVE_TEST = "wave_test"


def merged_test(client: GateClient, number: int, config: Config, store: TrackerStore, tree: Repo) -> Verdict:
    """Run the tests on PR ``number``'s head, checked out in ``tree``, when it needs them."""
    pr = client.pr_info(number)
    try:
        wave = gate.bound_report(client, pr, config)
        merges = gate.merges_since_report(client, pr, wave)
    except gate.Unbound as exc:
        return Verdict(number, pr.head_sha, tested=False, passed=False, reason=f"nothing to test: {exc}")
    if not merges:
        return Verdict(number, pr.head_sha, tested=False, passed=False,
                       reason="nothing to test: the report describes the PR's head")
    checked_out = git.resolve_commit(tree.root, "HEAD")
    if checked_out != pr.head_sha:
        raise UsageError(f"--tree {tree.root}: it is at {(checked_out or 'no commit')[:12]}, the head of PR "
                         f"#{number} is {pr.head_sha[:12]}: check the PR's head out there")
    commands = _item_tests(store, [item.id for item in wave.items])
    if config.wave_test.strip():
        commands.append((WAVE_TEST, config.wave_test))
    confiner = Confiner(tree, config, wave.wave_id, sandbox.decide(config.sandbox, os.environ))
    runs = []
    for name, command in commands:
        result = test_commit(tree, config, pr.head_sha, command, f"_merged-{name}", confiner)
        runs.append(TestRun(name, command, result.exit_code, result.error))
    failed = [f"{run.name} ({run.error or f'exit {run.exit_code}'})" for run in runs if run.exit_code != 0]
    if failed:
        reason = f"failed on {pr.head_sha[:12]}: {', '.join(failed)}"
    else:
        reason = f"{len(runs)} test(s) passed on {pr.head_sha[:12]}"
    return Verdict(number, pr.head_sha, tested=True, passed=not failed, reason=reason, tests=runs)


def _item_tests(store: TrackerStore, item_ids: list[str]) -> list[tuple[str, str]]:
    """(item id, its test) of the reported items, from the tracker on the tracker branch."""
    snapshot = store.read()
    loaded = tracker.loads(snapshot.text or "", strict=False)
    found = [loaded.get(item_id) for item_id in item_ids]
    return [(item.id, item.test) for item in found if item is not None]
