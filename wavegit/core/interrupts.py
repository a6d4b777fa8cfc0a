"""A SIGINT that comes while ``wavegit run`` imports its modules, kept for it to act on.

A shell without job control starts ``wavegit run ... &`` with SIGINT ignored, and the kernel drops a signal
that is ignored: the run's imports take 0.1-0.7 s on a loaded machine, and a ``kill -INT`` sent meanwhile was
lost (the wave then claimed and ran every item). So the CLI catches SIGINT before the imports
(:func:`defer`), and the run raises it as Ctrl-C once its own handling is in place (:func:`take_back`), where
``run --json`` still prints its report.
"""

from __future__ import annotations

import signal
from types import FrameType


class _Deferred:
    """A SIGINT handler that only notes the signal came."""

    def __init__(self) -> None:
        self.caught = False

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        del signum, frame
        self.caught = True


_DEFERRED = _Deferred()


def defer() -> None:
    """Catch SIGINT, even when ignored at start, for :func:`take_back` to raise."""
    signal.signal(signal.SIGINT, _DEFERRED)


def take_back() -> None:
    """SIGINT raises KeyboardInterrupt from now on; raise it now if one came while deferred."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if _DEFERRED.caught:
        _DEFERRED.caught = False
        raise KeyboardInterrupt
