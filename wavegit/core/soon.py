"""A function's answer worked out in a thread of its own while the caller goes on: :func:`soon`."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

_T = TypeVar("_T")


def soon(work: Callable[[], _T], name: str) -> Callable[[], _T]:
    """``work`` begun now in a daemon thread named ``name``; the function returned waits for it, then
    returns its answer or raises what it raised."""
    done: Future[_T] = Future()

    def working() -> None:
        try:
            done.set_result(work())
        except BaseException as exc:  # raised again by whoever waits for it
            done.set_exception(exc)

    threading.Thread(target=working, name=name, daemon=True).start()
    return done.result
