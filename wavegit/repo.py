"""Locating the repository wavegit works on, and wavegit's private state inside its git directory."""

from pathlib import Path
from typing import NamedTuple

from wavegit import git
from wavegit.errors import UsageError


# A NamedTuple, annotations not postponed: see wavegit.git.GitResult.
class Repo(NamedTuple):
    root: Path
    """Top of the work tree."""
    git_dir: Path
    """This work tree's git directory (differs from ``common_dir`` inside a linked worktree)."""
    common_dir: Path
    """The repository's shared git directory: refs, objects, hooks."""

    @property
    def state_dir(self) -> Path:
        """wavegit's private state (parse cache, logs, reports), shared by all worktrees."""
        return self.common_dir / "wavegit"

    def remotes(self) -> list[str]:
        return git.out(["remote"], cwd=self.root).split()

    def has_remote(self, name: str) -> bool:
        return name in self.remotes()

    def show_file(self, ref: str, path: str) -> str | None:
        """``path`` as committed at ``ref``; None when either is not there."""
        shown = git.run(["cat-file", "blob", f"{ref}:{path}"], cwd=self.root, check=False)
        return shown.stdout if shown.returncode == 0 else None

    def branch_ref(self, remote: str, branch: str) -> tuple[str, str]:
        """The ref holding ``branch`` as ``remote`` has it (fetched now), or the local branch when there is no
        such remote; and its display name (``origin/main``)."""
        if not self.has_remote(remote):
            return f"refs/heads/{branch}", branch
        ref = f"refs/remotes/{remote}/{branch}"
        git.run(["fetch", "--quiet", "--no-tags", remote, f"+refs/heads/{branch}:{ref}"], cwd=self.root,
                check=False)
        return ref, f"{remote}/{branch}"


def discover(start: str | Path = ".") -> Repo:
    """The repository containing ``start``; a clear error when there is none."""
    return _rev_parse(start, [])[0]


def discover_resolving(start: str | Path, rev: str) -> tuple[Repo, str | None]:
    """``discover(start)`` and the object name ``rev`` resolves to there (None when it does not), from the
    same ``git rev-parse``: one process fewer for a caller that needs both (the pre-push hook)."""
    found, rest = _rev_parse(start, ["--verify", "--quiet", rev])
    return found, rest[0] if rest else None


def _rev_parse(start: str | Path, extra: list[str]) -> tuple[Repo, list[str]]:
    start_path = Path(start)
    if not start_path.is_dir():
        raise UsageError(f"{start}: no such directory")
    result = git.run(
        ["rev-parse", "--path-format=absolute", "--show-toplevel", "--git-dir", "--git-common-dir", *extra],
        cwd=start_path,
        check=False,
    )
    lines = result.stdout.splitlines()
    # `--verify --quiet` exits 1, printing nothing more, when only ``rev`` does not resolve.
    if result.returncode not in (0, 1 if extra else 0) or len(lines) < 3:
        raise UsageError(f"{start_path.resolve()}: not inside a git work tree (run `git init` first)")
    root, git_dir, common_dir = (Path(line) for line in lines[:3])
    return Repo(root=root, git_dir=git_dir, common_dir=common_dir), lines[3:]
