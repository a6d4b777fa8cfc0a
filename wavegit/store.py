"""Compare-and-swap writes of the tracker (and wavegit's few other files) as git commits.

INTERFACE (owned by the store helper).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class Snapshot:
    """The tracker as read from the tracker branch's head."""

    text: str | None
    """None when the tracker file does not exist at ``commit``."""
    blob_sha: str | None
    commit: str | None
    """None when the tracker branch does not exist yet."""


@dataclass(frozen=True)
class Change:
    tracker_text: str | None
    """The new tracker text; None leaves the tracker as it is."""
    files: Mapping[str, str | None] = field(default_factory=dict)
    """Other repo paths to write (text) or delete (None) in the same commit, e.g. .wavegit/HALT."""


class TrackerStore(Protocol):
    def read(self) -> Snapshot: ...

    def read_file(self, snapshot: Snapshot, path: str) -> str | None: ...

    def write(self, expected: Snapshot, change: Change, message: str) -> str:
        """Commit ``change`` only if the tracker blob is still ``expected.blob_sha``; the new commit."""
        ...


@dataclass(frozen=True)
class MutationResult:
    commit: str | None
    """The commit that landed; None when ``apply`` decided there was nothing to do."""
    snapshot: Snapshot
    """The snapshot ``apply`` last ran against."""


def mutate(
    store: TrackerStore,
    apply: Callable[[Snapshot], Change | None],
    *,
    message: str,
    deadline_s: float = 120.0,
) -> MutationResult:
    """Read, apply, validate, write; on a lost race replay or re-apply with jittered backoff."""
    raise NotImplementedError
