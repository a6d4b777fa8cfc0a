"""The repository, its configuration and its tracker store: what most commands open first, built once.

``plan`` and ``hook`` do not use it: they are hot paths and open only what they need, in their own order.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from wavegit.config import Config, load_config
from wavegit.repo import Repo, discover
from wavegit.store import GitStore


@dataclass(frozen=True)
class Context:
    repo: Repo
    config: Config
    store: GitStore

    @classmethod
    def open(cls, args: argparse.Namespace) -> Context:
        """The repository around ``args.directory``, its config (through the parse cache) and its store."""
        repo = discover(args.directory)
        config = load_config(repo.root, repo.cache_dir)
        return cls(repo, config, GitStore(repo, config))
