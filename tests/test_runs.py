"""wavegit.engine.runs: what a failed process's error quotes of its output."""

from __future__ import annotations

from wavegit.engine.runs import last_words


def test_last_words_name_pytests_first_failing_test_and_its_counts() -> None:
    # The count alone ("2 failed, 1 passed") told the next wave's worker, given only last_error, nothing.
    text = ("F.F\n=== FAILURES ===\n    assert 1 == 2\n=== short test summary info ===\n"
            "FAILED t/test_a.py::test_x - assert 1 == 2\nFAILED t/test_a.py::test_y - KeyError: 'k'\n"
            "========= 2 failed, 1 passed in 0.10s =========\n\n")
    assert last_words(text) == "FAILED t/test_a.py::test_x - assert 1 == 2 (2 failed, 1 passed in 0.10s)"


def test_last_words_name_unittests_first_failing_test() -> None:
    text = ("F\n=====\nFAIL: test_vat (tests.test_tax.T.test_vat)\n-----\nTraceback ...\n"
            "AssertionError: 11.0 != 12.1\n\nRan 1 test in 0.001s\n\nFAILED (failures=1)\n")
    assert last_words(text) == "FAIL: test_vat (tests.test_tax.T.test_vat) (FAILED (failures=1))"


def test_last_words_without_a_failing_test_are_the_last_line_escaped_or_nothing() -> None:
    assert last_words("Traceback (most recent call last):\nKeyError: 'x'\n\n") == "KeyError: 'x'"
    assert last_words("FAILED (failures=1)\n") == "FAILED (failures=1)"
    assert last_words("boom \x1b[31mred\n") == "boom \\x1b[31mred"
    assert last_words("\n \n") == ""
