"""``wavegit edit ID [--prompt|--owns|--test|--priority]``: checked like add, idempotent, not in flight."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.itemops import last_ops
from tests.helpers.reliability import wavegit_in_process as wavegit_here
from tests.helpers.repos import wavegit
from tests.helpers.sync import claimed, entry, make_tracker_repo, origin_head, origin_item


def test_edit_changes_the_given_fields_in_one_commit_and_the_same_edit_again_writes_nothing(
        tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("A", "failed", attempts=2)])
    args = ["edit", "A", "--prompt", "do it better", "--owns", "src//a.txt", "docs/", "--test", "pytest -q",
            "--priority", "P0"]
    result = wavegit(remote.clone, *args)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("A: edited prompt, owns, test, priority: commit ")
    item = origin_item(remote, "A")
    assert (item.prompt, item.owns, item.test, item.priority) == ("do it better", ("src/a.txt", "docs/"),
                                                                 "pytest -q", "P0")
    assert (item.status, item.attempts) == ("failed", 2)
    assert last_ops(remote)[0] == "edit A"
    head = origin_head(remote)
    again = wavegit(remote.clone, *args)
    assert (again.returncode, again.stdout.strip()) == (0, "A already has these values; nothing written")
    assert origin_head(remote) == head


def test_the_prompt_can_come_from_a_file_or_stdin_as_with_add(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("A")])
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("line one\nline two\n")
    result = wavegit(remote.clone, "edit", "A", "--prompt-file", str(prompt))
    assert result.returncode == 0, result.stderr
    assert origin_item(remote, "A").prompt == "line one\nline two\n"
    piped = wavegit(remote.clone, "edit", "A", "--prompt-file", "-", input="from stdin\n")
    assert piped.returncode == 0, piped.stderr
    assert origin_item(remote, "A").prompt == "from stdin\n"
    head = origin_head(remote)
    both = wavegit_here(remote.clone, "edit", "A", "--prompt", "x", "--prompt-file", str(prompt))
    assert both.returncode == 2 and "not allowed with argument" in both.stderr
    empty = wavegit(remote.clone, "edit", "A", "--prompt-file", "-", input="  \n")
    assert empty.returncode == 2 and "the prompt is empty" in empty.stderr
    assert origin_head(remote) == head


def test_a_bad_option_is_exit_2_naming_it_and_writes_nothing(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("A")])
    head = origin_head(remote)
    owns = wavegit_here(remote.clone, "edit", "A", "--owns", "/etc/passwd")
    assert owns.returncode == 2 and owns.stderr.startswith("wavegit edit: --owns: ")
    test = wavegit_here(remote.clone, "edit", "A", "--test", "sh -c 'unterminated")
    assert test.returncode == 2 and test.stderr.startswith("wavegit edit: --test: cannot be split into words")
    protected = wavegit_here(remote.clone, "edit", "A", "--owns", ".wavegit/")
    # Named as add names it, at no line of an unwritten file, with the way out.
    assert protected.stderr == ("wavegit edit: --owns: pattern '.wavegit/' can match the protected path "
                                "'.wavegit/' (hint: own narrower paths; only allow_protected in "
                                ".wavegit/config.yaml lifts a protected path)\n")
    nothing = wavegit_here(remote.clone, "edit", "A")
    assert nothing.returncode == 2 and "nothing to edit" in nothing.stderr
    assert origin_head(remote) == head


def test_edit_refuses_an_item_in_flight(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [claimed("A", "w-20260101-000001-ab01")])
    head = origin_head(remote)
    result = wavegit_here(remote.clone, "edit", "A", "--priority", "P0")
    assert result.returncode == 2 and "in flight" in result.stderr and "Traceback" not in result.stderr
    assert origin_head(remote) == head


def test_edit_sets_and_clears_the_title_and_the_dependencies(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("A"), entry("B"), entry("C")])
    result = wavegit_here(remote.clone, "edit", "A", "--title", "Rate-limit  logins",
                          "--depends-on", "B", "C")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("A: edited title, depends_on: commit ")
    item = origin_item(remote, "A")
    assert (item.title, item.depends_on) == ("Rate-limit logins", ("B", "C"))
    cleared = wavegit_here(remote.clone, "edit", "A", "--title", "", "--depends-on")
    assert cleared.returncode == 0, cleared.stderr
    item = origin_item(remote, "A")
    assert (item.title, item.depends_on) == ("", ())


def test_edit_sets_an_estimate_zero_included_and_refuses_a_negative_one(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("A")])
    result = wavegit_here(remote.clone, "edit", "A", "--estimate-s", "600")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("A: edited estimate_s: commit ")
    assert origin_item(remote, "A").estimate_s == 600
    assert wavegit_here(remote.clone, "edit", "A", "--estimate-s", "0").returncode == 0
    assert origin_item(remote, "A").estimate_s == 0  # an estimate of no time, not none
    head = origin_head(remote)
    negative = wavegit_here(remote.clone, "edit", "A", "--estimate-s", "-1")
    assert (negative.returncode, negative.stderr) == (2, "wavegit edit: --estimate-s: must be at least 0\n")
    assert origin_head(remote) == head


def test_edit_depends_on_refuses_unknown_ids_itself_and_cycles_naming_the_option(tmp_path: Path) -> None:
    remote = make_tracker_repo(tmp_path, [entry("A"), entry("BILL-7", depends_on=["A"])])
    head = origin_head(remote)
    unknown = "--depends-on: no item bill-7 in .wavegit/tracker.yaml on origin/main; did you mean 'BILL-7'?"
    for deps, message in ((["bill-7"], unknown),
                          (["A"], "--depends-on: A cannot depend on itself"),
                          (["BILL-7"], "--depends-on: ")):
        result = wavegit_here(remote.clone, "edit", "A", "--depends-on", *deps)
        assert result.returncode == 2 and "Traceback" not in result.stderr, result
        assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr, result.stderr
    assert "cycle" in result.stderr
    assert origin_head(remote) == head
