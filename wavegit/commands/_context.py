"""The repository, its configuration and its tracker store: what most commands open first, built once.

``plan`` and ``hook`` do not use it: they are hot paths and open only what they need, in their own order.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from wavegit.core.repo import Repo, discover
from wavegit.model.config import CONFIG_PATH, Config, load_config
from wavegit.model.governing import IGNORED_WORKING_COPY, load_governing
from wavegit.trackerbranch.store import GitStore


@dataclass(frozen=True)
class Context:
    repo: Repo
    config: Config
    store: GitStore
    config_source: str = ""
    """Where a wave's config came from (``governing.load_governing``), for its report; empty: the
    checkout's."""

    @classmethod
    def open(cls, args: argparse.Namespace) -> Context:
        """The repository around ``args.directory``, the checkout's config (through the parse cache) and the
        store."""
        repo = discover(args.directory)
        config = load_config(repo.root, repo.cache_dir)
        return cls(repo, config, GitStore(repo, config))

    @classmethod
    def governed(cls, args: argparse.Namespace) -> Context:
        """Like :meth:`open`, with the config a wave obeys: the one committed on the tracker branch."""
        repo = discover(args.directory)
        governing = load_governing(repo, repo.cache_dir)
        config, source = governing.config, governing.source
        if source.endswith(IGNORED_WORKING_COPY) and (repo.root / CONFIG_PATH).is_file():
            # An edited, uncommitted config is the usual first try; the report alone says it was not used.
            # (A checkout without the file, such as a branch without .wavegit/, is no such try.)
            print(f"wavegit: warning: the checkout's {CONFIG_PATH} differs from "
                  f"{source.removesuffix(IGNORED_WORKING_COPY)}, the one this wave obeys: commit and push it "
                  "(or set WAVEGIT_CONFIG_SOURCE=checkout to try it)", file=sys.stderr)
        return cls(repo, config, GitStore(repo, config), source)
