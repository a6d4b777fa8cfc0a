"""A hostile teammate's pushes and a hostile tracker against the pre-push hook and the parse caches: real
pushes through the installed hook, real ``plan``/``validate`` runs on temporary repositories."""

from __future__ import annotations

import zlib
from pathlib import Path

from tests.helpers.hook import ItemSpec, commit, install_hook, publish_tracker, push, remote_oid, tracker_yaml
from tests.helpers.repos import RemoteRepo, git, make_remote_repo, wavegit
from tests.helpers.wave import item, make_wave_repo
from wavegit.ownership.protected import protected_set

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


def crc32_suffix(prefix: str, target: int, size: int = 12) -> str:
    """``size`` characters of ``@A-O`` that give ``prefix`` + them + ``/`` the CRC-32 ``target``: CRC-32 is
    affine over GF(2), so four free bits per character and one Gaussian elimination forge any value."""
    def crc(bits: int) -> int:
        pad = "".join(chr(0x40 | (bits >> (4 * i)) & 0xF) for i in range(size))
        return zlib.crc32(f"{prefix}{pad}/".encode())

    base = crc(0)
    rows = [(crc(1 << j) ^ base, 1 << j) for j in range(4 * size)]  # (effect on the CRC, bits chosen)
    want, chosen = target ^ base, 0
    for bit in range(32):
        pivot = next((row for row in rows if row[0] >> bit & 1), None)
        if pivot is None:
            continue
        rows.remove(pivot)
        rows = [(e ^ pivot[0], b ^ pivot[1]) if e >> bit & 1 else (e, b) for e, b in rows]
        if want >> bit & 1:
            want, chosen = want ^ pivot[0], chosen ^ pivot[1]
    assert want == 0 and crc(chosen) == target
    return "".join(chr(0x40 | (chosen >> (4 * i)) & 0xF) for i in range(size))


def test_a_config_forged_to_collide_with_the_defaults_reads_no_cache_of_the_default_protected_paths(
        tmp_path: Path) -> None:
    """The parse and planning caches keyed a tracker blob's validation by a CRC-32 of the protected paths: a
    config that protects one more folder, with a second entry chosen so that the CRC equals the defaults',
    read the columns cached under the defaults, and `plan` selected the item that now owns a protected path
    (`validate` called the tracker valid) in every clone that had planned before."""
    remote = protecting(tmp_path, "report_authors: [me]\n")
    publish_tracker(remote, [ItemSpec("B", ["ops/deploy/run.sh"], status="todo")])
    assert "  B" in wavegit(remote.clone, "plan").stdout.split("skipped")[0]  # cached under the defaults
    defaults = zlib.crc32(TRACKER.encode())
    protected = protected_set(["ops/deploy/"], tracker_path=TRACKER)
    prefix = "\0".join([TRACKER, "protected", *protected, "ops/keys-"])
    forged = f"ops/keys-{crc32_suffix(prefix, defaults)}/"
    publish_tracker(remote, [ItemSpec("B", ["ops/deploy/run.sh"], status="todo")],
                    files={CONFIG: f"protected_paths: [ops/deploy/, {forged}]\n"})
    planned = wavegit(remote.clone, "plan")
    assert "  B   invalid: 'owns': pattern 'ops/deploy/run.sh' can match the protected path 'ops/deploy/'" \
        in planned.stdout, planned.stdout
    assert wavegit(remote.clone, "validate").returncode == 2


def test_a_pushed_config_protecting_a_path_an_item_owns_is_refused_and_a_config_without_a_tracker_passes(
        tmp_path: Path) -> None:
    """A push changing only the config left the tracker beside it invalid under the paths it now protects:
    unchecked, and every later claim refused the whole tracker. Before the first tracker, a config passes."""
    remote = protecting(tmp_path, "report_authors: [me]\n")
    publish_tracker(remote, [ItemSpec("B", ["ops/deploy/run.sh"], status="todo")])
    before = remote_oid(remote, "refs/heads/main")
    commit(remote.clone, {CONFIG: "protected_paths: [ops/deploy/]\n"}, "protect the deploy scripts")
    result = push(remote.clone, "origin", "main")
    assert result.returncode == 1, result.stderr
    assert "item B: 'owns': pattern 'ops/deploy/run.sh' can match the protected path 'ops/deploy/'" \
        in result.stderr
    assert remote_oid(remote, "refs/heads/main") == before

    fresh = make_remote_repo(tmp_path / "fresh", {"README.md": "hello\n"})
    install_hook(fresh.clone)
    commit(fresh.clone, {CONFIG: "protected_paths: [ops/deploy/]\n"}, "config first")
    assert push(fresh.clone, "origin", "main").returncode == 0


def test_the_config_a_push_leaves_decides_not_the_checkouts_file(tmp_path: Path) -> None:
    """The hook read the protected paths from the checkout's config file: a pusher who commits a config
    protecting what an item owns, then puts the old file back in the work tree, passed the check."""
    remote = protecting(tmp_path, "report_authors: [me]\n")
    publish_tracker(remote, [ItemSpec("B", ["ops/deploy/run.sh"], status="todo")])
    before = remote_oid(remote, "refs/heads/main")
    commit(remote.clone, {CONFIG: "protected_paths: [ops/deploy/]\n"}, "protect the deploy scripts")
    git(remote.clone, "checkout", "HEAD~1", "--", CONFIG)  # the work tree's file: the old one, uncommitted
    result = push(remote.clone, "origin", "main")
    assert result.returncode == 1, result.stderr
    assert "pattern 'ops/deploy/run.sh' can match the protected path 'ops/deploy/'" in result.stderr
    assert remote_oid(remote, "refs/heads/main") == before

    commit(remote.clone, {CONFIG: "protected_paths: [ops/[deploy/]\n"}, "a config no wavegit can read")
    git(remote.clone, "checkout", "HEAD~2", "--", CONFIG)
    refused = push(remote.clone, "origin", "main")
    assert refused.returncode == 1 and "the config it leaves is invalid" in refused.stderr, refused.stderr


def test_deleting_the_tracker_branch_to_push_it_anew_at_an_older_commit_is_refused(tmp_path: Path) -> None:
    """A force-push rewinding the tracker branch past a claim is refused; deleting the branch, then pushing
    the older commit as a new branch (no rewind to check) undid the claim, and the tracker with it."""
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])],
                            tracker_branch="claims")
    git(remote.clone, "push", "-q", "--no-verify", "origin", "main:refs/heads/claims")
    install_hook(remote.clone)
    claimed = wavegit(remote.new_clone("scheduler"), "claim")
    assert claimed.returncode == 0, claimed.stderr
    git(remote.clone, "fetch", "-q", "origin")
    claim, older = remote_oid(remote, "refs/heads/claims"), git(remote.clone, "rev-parse", "origin/claims~1")
    assert push(remote.clone, "-f", "origin", f"{older}:refs/heads/claims").returncode == 1
    deleted = push(remote.clone, "origin", ":claims")
    assert deleted.returncode == 1 and "Traceback" not in deleted.stderr, deleted.stderr
    assert "wavegit: push refused: it deletes refs/heads/claims, the tracker branch" in deleted.stderr
    assert remote_oid(remote, "refs/heads/claims") == claim
    git(remote.clone, "push", "-q", "--no-verify", "origin", "main:refs/heads/feature")
    assert push(remote.clone, "origin", ":feature").returncode == 0  # any other branch: deleted
    assert remote_oid(remote, "refs/heads/feature") == ""


def test_a_config_pushed_to_the_base_branch_is_checked_against_the_tracker_on_its_own_branch(
        tmp_path: Path) -> None:
    """With the tracker on a branch of its own, the config on the base branch decides its protected paths: a
    push of the config alone protecting what an item owns left every claim refused, unchecked."""
    remote = make_wave_repo(tmp_path, [item("B", ["write ops/deploy/run.sh ok"], ["ops/deploy/run.sh"])],
                            tracker_branch="claims")
    git(remote.clone, "push", "-q", "--no-verify", "origin", "main:refs/heads/claims")
    install_hook(remote.clone)
    git(remote.clone, "fetch", "-q", "origin")
    before = remote_oid(remote, "refs/heads/main")
    config = (remote.clone / CONFIG).read_text() + "protected_paths: [ops/deploy/]\n"
    commit(remote.clone, {CONFIG: config}, "protect the deploy scripts")
    result = push(remote.clone, "origin", "main")
    assert result.returncode == 1, result.stderr
    assert "the tracker it leaves on refs/heads/claims is invalid" in result.stderr
    assert "item B: 'owns': pattern 'ops/deploy/run.sh' can match the protected path 'ops/deploy/'" \
        in result.stderr
    assert remote_oid(remote, "refs/heads/main") == before
