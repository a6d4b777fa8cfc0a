"""A hostile teammate's pushes and a hostile tracker against the pre-push hook and the parse caches: real
pushes through the installed hook, real ``plan``/``validate`` runs on temporary repositories."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.hook import ItemSpec, commit, install_hook, publish_tracker, push, remote_oid, tracker_yaml
from tests.helpers.repos import RemoteRepo, make_remote_repo

TRACKER = ".wavegit/tracker.yaml"
CONFIG = ".wavegit/config.yaml"


def protecting(tmp_path: Path, config: str) -> RemoteRepo:
    """An origin whose committed config is ``config``, a tracker with one item, and a clone with the hook."""
    remote = make_remote_repo(tmp_path, {"README.md": "hello\n", "ops/deploy/run.sh": "deploy\n"})
    publish_tracker(remote, [ItemSpec("A", ["src/"], status="todo")], files={CONFIG: config})
    install_hook(remote.clone)
    return remote


def test_a_pushed_tracker_item_owning_a_path_the_config_protects_is_refused(tmp_path: Path) -> None:
    """The hook checked a pushed tracker against the default protected paths only: an item owning one that
    `protected_paths` adds went through, and every later claim refused the whole tracker (`run` exit 2)."""
    remote = protecting(tmp_path, "protected_paths: [ops/deploy/]\n")
    before = remote_oid(remote, "refs/heads/main")
    items = [ItemSpec("A", ["src/"], status="todo"), ItemSpec("B", ["ops/deploy/run.sh"], status="todo")]
    commit(remote.clone, {TRACKER: tracker_yaml(items)}, "an item for the deploy script")
    result = push(remote.clone, "origin", "main")
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert "wavegit: push refused: the tracker it leaves on refs/heads/main is invalid:" in result.stderr
    assert "item B: 'owns': pattern 'ops/deploy/run.sh' can match the protected path 'ops/deploy/'" \
        in result.stderr
    assert remote_oid(remote, "refs/heads/main") == before
