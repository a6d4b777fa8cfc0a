"""wavegit's configuration: ``.wavegit/config.yaml`` with a default for every key, overridden by
``WAVEGIT_<KEY>`` environment variables (nested keys joined with ``_``: ``WAVEGIT_BUDGET_WAVE_USD``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

CONFIG_PATH = ".wavegit/config.yaml"
TRACKER_PATH = ".wavegit/tracker.yaml"
HALT_PATH = ".wavegit/HALT"


@dataclass(frozen=True)
class Budget:
    wave_usd: float = 0.0
    """Ceiling per wave in USD; 0 = none."""
    day_usd: float = 0.0
    """Ceiling per UTC day in USD; 0 = none."""


@dataclass(frozen=True)
class HookConfig:
    strict: bool = False
    """Refuse the push (instead of warning) when the tracker cannot be read."""


@dataclass(frozen=True)
class Config:
    worker: str = "claude"
    concurrency: int = 4
    max_items: int = 8
    timeout_s: float = 1800.0
    idle_timeout_s: float = 600.0
    attempts: int = 2
    """Tries per item per wave."""
    max_attempts: int = 4
    """Tries per item across all waves; an item reaching it becomes `failed` instead of `todo`."""
    wave_test: str = ""
    lease_ttl_s: float = 7200.0
    budget: Budget = field(default_factory=Budget)
    base_branch: str = "main"
    tracker_branch: str = "main"
    tracker_path: str = TRACKER_PATH
    remote: str = "origin"
    report_authors: tuple[str, ...] = ("github-actions[bot]",)
    worker_github_token: bool = False
    """Pass GITHUB_TOKEN to workers; off unless the config says so."""
    hook: HookConfig = field(default_factory=HookConfig)


def load_config(repo_root: Path) -> Config:
    """The configuration of the repository at ``repo_root`` (defaults when the file is absent)."""
    raise NotImplementedError
