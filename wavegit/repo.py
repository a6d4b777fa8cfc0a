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


def discover(start: str | Path = ".") -> Repo:
    """The repository containing ``start``; a clear error when there is none."""
    start_path = Path(start)
    if not start_path.is_dir():
        raise UsageError(f"{start}: no such directory")
    result = git.run(
        ["rev-parse", "--path-format=absolute", "--show-toplevel", "--git-dir", "--git-common-dir"],
        cwd=start_path,
        check=False,
    )
    lines = result.stdout.splitlines()
    if result.returncode != 0 or len(lines) != 3:
        raise UsageError(f"{start_path.resolve()}: not inside a git work tree (run `git init` first)")
    root, git_dir, common_dir = (Path(line) for line in lines)
    return Repo(root=root, git_dir=git_dir, common_dir=common_dir)
