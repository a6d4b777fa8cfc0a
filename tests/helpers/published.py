"""A real wave published through PyGithub to tests/helpers/ghserver.py: its repos, server and report."""

from __future__ import annotations

from dataclasses import dataclass

from tests.helpers.ghserver import Running
from tests.helpers.repos import RemoteRepo, git
from wavegit.model import report


@dataclass
class Published:
    remote: RemoteRepo
    gh: Running
    report: report.WaveReport

    @property
    def branch(self) -> str:
        return f"wavegit/{self.report.wave_id}"

    @property
    def pr(self) -> int:
        assert self.report.pr is not None
        return self.report.pr

    def tip(self) -> str:
        """The wave branch's tip on the origin."""
        return git(self.remote.origin, "rev-parse", self.branch)
