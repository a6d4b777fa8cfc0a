"""The items of a tracker naming a worker profile the config does not have, located in its text."""

from collections.abc import Callable, Sequence

from wavegit.core.errors import Problem
from wavegit.model.config import Config


def unknown_profiles(read_text: Callable[[], str], path: str, config: Config,
                     workers: Sequence[tuple[str, str | None]]) -> list[Problem]:
    """One ``path:line:col`` problem per item (its id and ``worker``) naming no profile of ``config``; the
    text is read, and the worker machinery imported (tens of milliseconds), only when one does."""
    known = {profile.name for profile in config.workers}
    if all(worker is None or worker in known for _, worker in workers):
        return []
    from wavegit.attempts import agents

    return agents.unknown_profiles(read_text(), path, config, workers)
