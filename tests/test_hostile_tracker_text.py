"""A hostile teammate's tracker: any text the hook accepts (valid YAML, a valid tracker) pushed to the tracker
branch, crafted so that wavegit's minimal-diff edits (a claim, a record, `add`) land somewhere else than the
item they are meant for, while the result still validates. An alias (``*t``) has no marks of its own in the
composed document (its node is the anchor's, in another item), and a block scalar's end mark lies past the
empty lines after it, which ``|+`` keeps: both put the edit's position elsewhere. Real pushes, real waves."""

from __future__ import annotations

import itertools
import shlex
from dataclasses import replace
from pathlib import Path

import pytest

from tests.helpers.repos import RemoteRepo, git, make_remote_repo, wavegit
from tests.helpers.wave import FILES, check, config_text, origin_item, origin_tracker, write_and_push
from wavegit.model import tracker

# c's title is anchored; b, the last item, ends with an alias to it: b's own text ends at `*t`, while its
# node (the anchor's) ends on c's title line.
ALIASED = """\
version: 1
items:
  - id: c
    prompt: write src/c.txt ok
    owns: [src/c.txt]
    title: &t shared title
    test: {test_c}
    depends_on: [b]
  - id: b
    prompt: write src/b.txt ok
    owns: [src/b.txt]
    test: {test_b}
    title: *t
"""


def teammate_pushes(base: Path, tracker_text: str) -> RemoteRepo:
    """A repository whose main holds ``tracker_text`` and the scripted worker's config, as a teammate pushed
    them (the hook's checks are the validator's: the text is a valid tracker)."""
    remote = make_remote_repo(base, FILES)
    tracker.loads(tracker_text)  # what the hook accepts: a valid tracker
    write_and_push(remote.clone, {".wavegit/tracker.yaml": tracker_text,
                                  ".wavegit/config.yaml": config_text(attempts=1)}, "a teammate's tracker")
    return remote


def test_a_claim_lands_on_the_item_whose_last_value_is_an_alias_not_on_the_anchors(tmp_path: Path) -> None:
    # The claim's fields for b were added after b's last value as its node says it ends: c's title line.
    # Item c became in_progress in the wave (claimed by nobody who runs it) and b stayed todo, free for
    # another scheduler to claim again.
    text = ALIASED.format(test_c=shlex.quote(check("src/c.txt")), test_b=shlex.quote(check("src/b.txt")))
    remote = teammate_pushes(tmp_path, text)
    result = wavegit(remote.clone, "run")
    assert result.returncode == 0, result.stdout + result.stderr
    b, c = origin_item(remote, "b"), origin_item(remote, "c")
    assert (b.status, b.title) == ("review", "shared title") and b.wave, b
    assert (c.status, c.wave, c.title) == ("todo", None, "shared title"), c


NEW = ["--prompt", "the new one", "--owns", "src/new.txt", "--test", "true"]


@pytest.mark.parametrize(("last_item", "kept"), [
    # The last value an alias: the new item went in after the anchor, taking the rest of b's keys.
    ("  - id: b\n    prompt: pb\n    owns: [b/]\n    test: &t 'true'\n    title: *t\n", {"title": "true"}),
    # A kept block scalar (|+): its trailing empty lines are its value; the new item went in before them.
    ("  - id: b\n    owns: [b/]\n    test: 'true'\n    prompt: |+\n      text\n\n\n",
     {"prompt": "text\n\n\n"}),
    ("  - id: b\n    owns: [b/]\n    test: 'true'\n    prompt: >+\n      text\n\n", {"prompt": "text\n\n"}),
    # A line of spaces longer than the scalar's indentation is a line of its value, clipped or not.
    ("  - id: b\n    owns: [b/]\n    test: 'true'\n    prompt: |\n      text\n          \n",
     {"prompt": "text\n    \n"}),
    ("  - id: b\n    owns: [b/]\n    test: 'true'\n    prompt: |2\n       text\n        \n",
     {"prompt": " text\n  \n"}),
], ids=["alias", "literal-keep", "folded-keep", "spaces-line", "explicit-indent"])
def test_add_after_a_crafted_last_item_leaves_its_values_as_they_were(tmp_path: Path, last_item: str,
                                                                      kept: dict[str, str]) -> None:
    text = "version: 1\nitems:\n  - id: a\n    prompt: pa\n    owns: [a/]\n    test: 'true'\n" + last_item
    remote = teammate_pushes(tmp_path, text)
    before = tracker.loads(text).items
    assert {name: getattr(before[-1], name) for name in kept} == kept
    result = wavegit(remote.clone, "add", "NEW", *NEW)
    assert result.returncode == 0, result.stderr
    after = origin_tracker(remote).items
    assert [i.id for i in after] == ["a", "b", "NEW"]
    assert after[:2] == before
    assert (after[2].prompt, after[2].title, after[2].owns) == ("the new one", "", ("src/new.txt",))
    assert git(tmp_path / "origin.git", "show", "main:.wavegit/tracker.yaml").startswith(text.rstrip("\n"))


def test_a_drop_of_an_item_ending_in_an_alias_removes_its_lines_only(tmp_path: Path) -> None:
    # b's lines were taken to end on c's title line (before b starts): the drop wrote c's tail twice.
    text = ALIASED.format(test_c="'true'", test_b="'true'").replace("    depends_on: [b]\n", "")
    remote = teammate_pushes(tmp_path, text)
    result = wavegit(remote.clone, "drop", "b")
    assert result.returncode == 0, result.stderr
    shown = git(tmp_path / "origin.git", "show", "main:.wavegit/tracker.yaml")
    assert shown + "\n" == text.split("  - id: b\n")[0]



def test_a_claim_of_an_item_whose_status_is_an_alias_edits_the_alias_not_its_anchor(tmp_path: Path) -> None:
    # b's status was edited where its node is written: c's title (the anchor), which lost its anchor.
    text = ("version: 1\nitems:\n"
            "  - id: c\n    prompt: write src/c.txt ok\n    owns: [src/c.txt]\n    test: {test_c}\n"
            "    title: &s todo\n    depends_on: [b]\n"
            "  - id: b\n    prompt: write src/b.txt ok\n    owns: [src/b.txt]\n    test: {test_b}\n"
            "    status: *s\n").format(test_c=shlex.quote(check("src/c.txt")),
                                       test_b=shlex.quote(check("src/b.txt")))
    remote = teammate_pushes(tmp_path, text)
    result = wavegit(remote.clone, "run")
    assert result.returncode == 0, result.stdout + result.stderr
    b, c = origin_item(remote, "b"), origin_item(remote, "c")
    assert (b.status, c.status, c.title) == ("review", "todo", "todo")


def test_a_claim_that_would_change_a_value_an_alias_repeats_is_refused_at_its_line(tmp_path: Path) -> None:
    # Changing c's anchored status took the anchor from b's alias: the claim failed on a text nobody wrote,
    # "not valid YAML" at a line of it.
    text = ("version: 1\nitems:\n"
            "  - id: c\n    prompt: pc\n    owns: [src/c.txt]\n    test: 'true'\n    status: &s todo\n"
            "  - id: b\n    prompt: pb\n    owns: [src/b.txt]\n    test: 'true'\n    title: *s\n"
            "    depends_on: [c]\n")
    remote = teammate_pushes(tmp_path, text)
    before = git(remote.origin, "rev-parse", "main")
    result = wavegit(remote.clone, "run")
    assert result.returncode == 2
    assert result.stderr.strip().endswith(
        "cannot change 'status' (line 7): its value is the anchor &s, which an alias *s repeats elsewhere; "
        "write the value out at both places"), result.stderr
    assert git(remote.origin, "rev-parse", "main") == before


# The last values an item may end with, as a teammate may write them, and what may follow them.
LAST_VALUES = {
    "plain": "    prompt: pb\n", "quoted-lines": '    prompt: "pb\n      more"\n',
    "plain-lines": "    prompt: pb\n      more\n",
    "literal": "    prompt: |\n      text\n", "strip": "    prompt: |-\n      text\n",
    "keep": "    prompt: |+\n      text\n", "folded": "    prompt: >\n      text\n      more\n",
    "indicator": "    prompt: |2\n       text\n", "spaces-line": "    prompt: |\n      text\n        \n",
    "hash-line": "    prompt: |\n      text\n      # not a comment\n",
    "empty-first": "    prompt: |\n\n      text after empty\n",
    "alias": "    prompt: &p pb\n    title: *p\n",
    "block-list": "    prompt: pb\n    depends_on:\n      - a\n",
    "flow-lines": "    prompt: pb\n    depends_on: [\n      a]\n", "empty": "    prompt: pb\n    title:\n",
    "tagged": "    prompt: pb\n    title: !!str x\n", "comment": "    prompt: pb # comment\n",
}
AFTER_VALUE = ["", "\n", "\n\n", "  # c\n", "# c\n", "      # deep\n", "        \n", "\n# c\n\n"]
ITEM_A = "version: 1\nitems:\n  - id: a\n    prompt: pa\n    owns: [a/]\n    test: 'true'\n"
ITEM_B = "  - id: b\n    owns: [b/]\n    test: 'true'\n"
ITEM_C = "  - id: c\n    prompt: pc\n    owns: [c/]\n    test: 'true'\n"
APPENDED = tracker.Item(id="zz", prompt="line one\n  two\n", owns=("new/",), test="true", title="t: x")


@pytest.mark.parametrize("last", list(LAST_VALUES.values()), ids=list(LAST_VALUES))
def test_edits_after_any_last_value_change_only_what_they_change(last: str) -> None:
    # A claim's fields for b, and an item appended after b, with b's last value written every way YAML
    # allows, then blank, comment or space-only lines: every other value loads back as it was (120 of
    # these edits changed another value before: a kept or spaced block scalar's lines, an alias's anchor).
    claim = {"status": "in_progress", "wave": "w-1", "attempts": 2}
    for after, newline, following in itertools.product(AFTER_VALUE, ["\n", "\r\n"], ["", ITEM_C]):
        text = (ITEM_A + ITEM_B + last + after + following).replace("\n", newline)
        before = tracker.loads(text)
        for parse in (before, None):  # the cached parse's lines, and the whole text's
            claimed = tracker.loads(tracker.set_items_fields(text, {"b": claim}, parse)).items
            assert claimed == tuple(replace(i, **claim) if i.id == "b" else i for i in before.items), text
            if not following:
                assert tracker.loads(tracker.append_items(text, [APPENDED], parse)).items == (
                    *before.items, APPENDED), text


def test_an_anchor_right_after_the_byte_order_mark_is_one_too() -> None:
    # `\ufeff&v version: 1` anchors the key `version`; the anchor was not recognised after the BOM, and the
    # append went in after line 1, where the alias's node is.
    text = "\ufeff&v version: 1\nitems:\n" + ITEM_B.replace("  - id: b\n", "  - id: b\n    prompt: pb\n") + \
        "    title: *v\n"
    before = tracker.loads(text)
    assert before.items[-1].title == "version"
    assert tracker.loads(tracker.append_items(text, [APPENDED], before)).items == (*before.items, APPENDED)
