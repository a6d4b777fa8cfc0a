from __future__ import annotations

import threading

import pytest

from wavegit.core.soon import soon


def test_the_work_runs_in_a_thread_of_its_own_and_its_answer_is_waited_for() -> None:
    started = threading.Event()
    release = threading.Event()

    def work() -> str:
        started.set()
        assert release.wait(10)
        return threading.current_thread().name

    answer = soon(work, "wavegit-test-soon")
    assert started.wait(10)  # begun before anyone asked for it
    release.set()
    assert answer() == "wavegit-test-soon"
    assert answer() == "wavegit-test-soon"  # asked again, the same answer


def test_what_the_work_raised_is_raised_to_whoever_waits_for_it() -> None:
    def work() -> None:
        raise KeyboardInterrupt("not a plain exception either")

    with pytest.raises(KeyboardInterrupt, match="not a plain exception"):
        soon(work, "wavegit-test-soon")()
