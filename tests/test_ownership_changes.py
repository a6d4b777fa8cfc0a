"""Judging a worker's changed paths (wavegit.ownership.changes): undecodable names refused and shown
escaped, protected paths a violation even when owned, names compared in NFC."""

from __future__ import annotations

import unicodedata

from wavegit.model.lifecycle import one_line
from wavegit.ownership.changes import judge
from wavegit.ownership.protected import DEFAULT_PROTECTED

LATIN1_NAME = b"src/a/latin-\xe9.txt".decode("utf-8", "surrogateescape")


def test_a_name_that_is_not_utf8_refuses_the_attempt_and_is_only_shown_escaped() -> None:
    judged = judge("A", ("src/a/",), None, [LATIN1_NAME, "src/a/ok.txt"], {})
    assert judged.error == "src/a/latin-\\xe9.txt is not a UTF-8 file name; nothing staged"
    assert judged.changed == ["src/a/latin-\\xe9.txt", "src/a/ok.txt"]
    assert all(path.encode("utf-8") for path in judged.changed)
    two = judge("A", ("src/a/",), None, [LATIN1_NAME, b"src/a/\xff".decode("utf-8", "surrogateescape")], {})
    assert two.error == "src/a/latin-\\xe9.txt (and 1 more) is not a UTF-8 file name; nothing staged"


def test_a_protected_path_is_a_violation_even_when_the_items_patterns_own_it() -> None:
    # The tracker refuses such patterns; this is the second line, for a config changed after the claim.
    judged = judge("A", (".wavegit/", "src/"), None, [".wavegit/config.yaml", "src/x.py"], {})
    assert judged.violations == [".wavegit/config.yaml"]
    assert judged.error == ("protected path violation: changed .wavegit/config.yaml, which no item may "
                            "change; changes discarded")
    folded = judge("A", ("src/",), None, [".GitHub/workflows/ci.yml"], {})
    assert folded.violations == [".GitHub/workflows/ci.yml"]


def test_allow_protected_lifts_the_collect_check_too() -> None:
    lifted = tuple(p for p in DEFAULT_PROTECTED if p != ".github/workflows/")
    assert judge("CI", (".github/workflows/",), lifted, [".github/workflows/ci.yml"], {}).error is None


def test_a_changed_path_in_nfd_is_owned_by_its_nfc_pattern() -> None:
    # macOS writes names decomposed; the tracker's patterns are NFC, as the pre-push hook compares them.
    nfd = unicodedata.normalize("NFD", "src/caf\u00e9/menu.txt")
    assert nfd != "src/caf\u00e9/menu.txt"
    judged = judge("A", ("src/caf\u00e9/",), None, [nfd], {})
    assert judged.error is None and judged.violations == []
    outside = judge("A", ("src/caf\u00e9/",), None, [nfd, "src/other.txt"], {})
    assert outside.violations == ["src/other.txt"]
    assert outside.error == "ownership violation: changed src/other.txt, not owned by A; changes discarded"


def test_a_name_windows_reads_as_a_protected_path_is_a_protected_path_violation() -> None:
    # `.wavegit?/` is accepted as a pattern (a glob position is not read as a trailing dot), but what a worker
    # writes under it as `.wavegit./config.yaml` is `.wavegit/config.yaml` on Windows.
    judged = judge("A", (".wavegit?/",), None, [".wavegit./config.yaml", ".wavegit /HALT"], {})
    assert judged.violations == [".wavegit./config.yaml", ".wavegit /HALT"]
    assert (judged.error or "").startswith("protected path violation: ")


def test_a_violation_made_only_of_build_output_says_to_commit_a_gitignore() -> None:
    built = judge("A", ("src/a.py",), None, ["src/a.py", "src/__pycache__/a.cpython-311.pyc",
                                             ".pytest_cache/v/cache/nodeids", "web/node_modules/x/i.js"], {})
    assert built.error == ("ownership violation: changed src/__pycache__/a.cpython-311.pyc, "
                           ".pytest_cache/v/cache/nodeids and 1 more, not owned by A; changes "
                           "discarded; all build output: commit a .gitignore for it")
    mixed = judge("A", ("src/a.py",), None, ["src/__pycache__/a.cpython-311.pyc", "src/b.py"], {})
    assert (mixed.error or "").endswith("not owned by A; changes discarded")
    # A test run's bytecode, file by file: the fix still fits in the tracker's last_error.
    pyc = [f"toolz/{d}__pycache__/m{n}.cpython-311-pytest-9.2.0.pyc" for d in ("", "sub/") for n in range(8)]
    many = judge("PYC-8", ("toolz/curried/operator.py",), None, ["toolz/curried/operator.py", *pyc], {})
    assert one_line(many.error or "").endswith("all build output: commit a .gitignore for it")
    named = judge("A", ("src/a.py",), None, ["src/node_modules", "docs/__pycache__.md"], {})
    assert (named.error or "").endswith("not owned by A; changes discarded")
