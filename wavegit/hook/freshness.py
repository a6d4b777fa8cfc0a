"""How fresh the pre-push hook's copy of the tracker branch is, and refreshing it within a time limit.

The copy is the remote-tracking ref ``refs/remotes/<remote>/<tracker_branch>``. Its age is the time since it
was last known to equal the remote's branch: the later of the modification times of the ref's loose file
(git writes it whenever a fetch or a push moves the ref, and only then) and of the hook's stamp
(``Repo.fetch_stamp``, set to the start of each fetch the hook makes, which leaves an unmoved ref's file as
it was). A ref that is only packed (a fresh clone, after ``git gc``) and never fetched by the hook has no
known age: it counts as stale. The warm hook's check is one ``stat`` (of the loose ref, when it is fresh).
"""

import os
import time
from typing import TYPE_CHECKING

from wavegit.core import git

if TYPE_CHECKING:  # imported by the hook while its `git log` runs (see wavegit.hook.prepush)
    from wavegit.core.repo import Repo


def tracking_ref(remote: str, branch: str) -> str:
    return f"refs/remotes/{remote}/{branch}"


def _mtime(path: str) -> float | None:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None


def _synced_paths(repo: "Repo", ref: str) -> tuple[str, str]:
    return str(repo.common_dir / ref), str(repo.fetch_stamp(ref))


def is_fresh(repo: "Repo", remote: str, branch: str, max_age_s: float) -> bool:
    """Whether the copy of ``branch`` is at most ``max_age_s`` old (0: never, the hook always fetches)."""
    if max_age_s <= 0:
        return False
    oldest_fresh = time.time() - max_age_s
    for path in _synced_paths(repo, tracking_ref(remote, branch)):
        mtime = _mtime(path)
        if mtime is not None and mtime >= oldest_fresh:
            return True
    return False


def age_s(repo: "Repo", remote: str, branch: str) -> float | None:
    """Seconds since the copy of ``branch`` was last known to equal the remote's; None when unknown."""
    times = [t for t in map(_mtime, _synced_paths(repo, tracking_ref(remote, branch))) if t is not None]
    return max(0.0, time.time() - max(times)) if times else None


def describe_age(seconds: float | None) -> str:
    if seconds is None:
        return "of unknown age"
    for unit, size in (("day", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            count = int(seconds // size)
            return f"fetched {count} {unit}{'s' if unit == 'day' and count > 1 else ''} ago"
    return f"fetched {int(seconds)} s ago"


def refresh(repo: "Repo", remote: str, branch: str, timeout_s: float) -> str | None:
    """Fetch ``branch`` from ``remote`` into its tracking ref within ``timeout_s``; None when it was, else
    the warning saying why not and how old the copy the push is checked against is."""
    ref = tracking_ref(remote, branch)
    started = time.time()
    try:
        git.fetch(repo.root, remote, [f"+refs/heads/{branch}:{ref}"], timeout=timeout_s)
    except git.GitError as exc:
        lines = exc.stderr.strip().splitlines()
        detail = lines[-1] if lines else "no output"
        return (f"warning: could not fetch the tracker branch {branch} from {remote} ({detail}); checking "
                f"the push against the copy {describe_age(age_s(repo, remote, branch))}")
    stamp = repo.fetch_stamp(ref)
    try:
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.touch()
        os.utime(stamp, (started, started))
    except OSError:
        pass  # no stamp: the next push fetches again, which is only slower
    return None
