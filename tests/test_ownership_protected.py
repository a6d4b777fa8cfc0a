"""Protected paths (wavegit.ownership.protected): no pattern that can reach wavegit's control files is
accepted, however it is spelled; the config adds and (only explicitly) removes them; a pattern owning every
path is the whole repository (wavegit.ownership.patterns.ownable)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers.ownership import small_patterns
from tests.helpers.repos import RemoteRepo, git, wavegit
from tests.helpers.wave import branches, item, make_wave_repo
from wavegit.core.errors import UsageError, ValidationError
from wavegit.model import tracker
from wavegit.model.config import Config, protected_of
from wavegit.ownership.overlap import overlaps
from wavegit.ownership.patterns import PatternError, matches, ownable
from wavegit.ownership.protected import DEFAULT_PROTECTED, guarded, protected_set, reached, through_links

CONTROL_FILES = (".wavegit/config.yaml", ".wavegit/tracker.yaml", ".wavegit/HALT", ".github/workflows/ci.yml",
                 ".github/actions/setup/action.yml", ".gitmodules")


def _tracker(*owns: str) -> str:
    listed = ", ".join(f'"{pattern}"' for pattern in owns)
    return f"version: 1\nitems:\n  - id: A\n    prompt: p\n    owns: [{listed}]\n    test: t\n"


@pytest.mark.parametrize("pattern", ["*", "**/*", "*/**", "?*", "*?", "**/**/*", "***", "**/*/**"])
def test_a_pattern_owning_every_path_is_the_whole_repository_however_spelled(pattern: str) -> None:
    with pytest.raises(PatternError, match="is the whole repository"):
        ownable(pattern)
    with pytest.raises(ValidationError, match="is the whole repository"):
        tracker.loads(_tracker("src/a.py", pattern))


@pytest.mark.parametrize("pattern", ["*.py", "src/*", "?", "*/", "[!.]*", "a/**", "**/x"])
def test_a_pattern_that_misses_some_path_is_not_the_whole_repository(pattern: str) -> None:
    assert ownable(pattern) == pattern


@pytest.mark.parametrize(("pattern", "guard"), [
    ("?*/", ".wavegit/"), (".w*/", ".wavegit/"), (".wavegit/config.yaml", ".wavegit/"),
    (".WaveGit/", ".wavegit/"), ("[.]g*", ".github/workflows/"), (".github/*/x", ".github/workflows/"),
    (".github/", ".github/workflows/"), (".GitHub/Workflows/ci.yml", ".github/workflows/"),
    (".github/actions/**/*.yml", ".github/actions/"), (".gitmodules", ".gitmodules"),
    ("?gitmodule?", ".gitmodules"), (".mcp.json", ".mcp.json"), ("src/CLAUDE.md", "**/CLAUDE.md"),
    ("agents.md", "**/AGENTS.md"), (".cursor/rules/x.mdc", ".cursor/"), ("?gemini/", ".gemini/"),
    (".github/copilot-instructions.md", ".github/copilot-instructions.md"),
    ("src/a/.claude/", "**/*/.claude/"), ("pkg/.Agents/skills/x/SKILL.md", "**/*/.agents/"),
    ("src/.cursor", "**/*/.cursor/"), (".a*/", ".agents/"), (".github/skills/x/SKILL.md", ".github/skills/"),
])
def test_a_pattern_that_can_reach_a_protected_path_is_refused_at_its_line_and_column(pattern: str,
                                                                                   guard: str) -> None:
    with pytest.raises(ValidationError) as caught:
        tracker.loads(_tracker("src/a.py", pattern))
    [problem] = caught.value.problems
    assert (problem.line, problem.item_id) == (5, "A")
    assert problem.col == len('    owns: ["src/a.py", ') + 1
    assert f"can match the protected path '{guard}'" in problem.message


@pytest.mark.parametrize("pattern", ["src/", ".github/CODEOWNERS", ".github/ISSUE_TEMPLATE/", "src/.wavegit/",
                                     "docs/**/*.md", ".gitignore", "[!.cCoO]*", "docs/", "docs/*.md"])
def test_patterns_that_miss_every_protected_path_are_accepted(pattern: str) -> None:
    assert tracker.loads(_tracker(pattern)).items[0].owns == (pattern,)


@given(small_patterns())
@settings(max_examples=300, deadline=None)
def test_the_tracker_refuses_exactly_the_patterns_that_overlap_a_protected_path(pattern: str) -> None:
    try:
        owned = ownable(pattern)
    except PatternError:
        return
    # A guard of every folder (`**/CLAUDE.md`) is reached by a pattern naming such a file, not a glob.
    anywhere = [guard for guard in DEFAULT_PROTECTED if guard.startswith("**/")]
    reaches = any(overlaps(owned, guard) for guard in DEFAULT_PROTECTED if guard not in anywhere) or (
        not any(c in owned for c in "*?[") and guarded(owned, anywhere) is not None)
    try:
        tracker.loads(_tracker(pattern))
    except ValidationError as exc:
        assert reaches and "protected path" in str(exc)
    else:
        assert not reaches
    # No accepted pattern owns a control file (case-sensitively either).
    assert reaches or not any(matches(owned, path) for path in CONTROL_FILES)


@pytest.mark.parametrize("pattern", [
    "src/Claude.MD", "src/claude.md/", "src/CLAUDE.md.", "a/.Claude/x", ".claude", "src/x.env", "src/.env/",
    "lib/SECRETS/a", "lib/secrets", "keys/a", "Keys/", "src/k*", "docs/a.md", "src/agents.md/x", "x/Ä.md",
    "src/qwen.md", "deep/er/.Cursor/rules/a", "src/a.py", "[k]eys/", ".github/prompts/x.md",
])
def test_reached_names_the_first_guard_that_owns_what_the_pattern_can_reach(pattern: str) -> None:
    """The indexed lookup (guards by first name and by literal name) agrees with trying every guard in
    order, user-added guards included: one found in any folder with no literal name, a non-ASCII one, a
    rooted one."""
    protected = protected_set(["**/*.env", "**/Secrets/", "keys/", "**/ä.md"])
    owned = ownable(pattern)
    assert reached(owned, protected) == first_reached_trying_every_guard(owned, protected)


def first_reached_trying_every_guard(owned: str, protected: tuple[str, ...]) -> str | None:
    """``reached`` without its index: every guard in order (a guard of every folder for a literal only)."""
    def reaches(guard: str) -> bool:
        if guard.startswith("**/"):
            return not any(c in owned for c in "*?[") and guarded(owned, [guard]) is not None
        return overlaps(owned, guard)

    return next(filter(reaches, protected), None)


# Names that fold, compose or lose their tail differently (ß, İ, the Kelvin and Ohm signs, long s, ligatures,
# a decomposed Ä, trailing dots and spaces), classes and stars, and the protected names they may spell.
SPELLINGS = ["CLAUDE.md", "Claude.MD.", "claude.md ", "AGENT\u017f.md", "agents.md", ".Claude", ".claude.",
             "[c]laude.md", "c*", "*.md", "**", "\u00df", "SS", "\u1e9e", "\u0130", "i\u0307", "\u212a", "k",
             "\u2126", "\u03c9", "\ufb00", "ff", "A\u0308.md", "\u00e4.md", ".GitHub", "workflows", "Secrets",
             "x.env", "[!x]", "?", "src", "-", "..."]
GUARDS = st.lists(st.sampled_from(SPELLINGS), min_size=1, max_size=3).map("/".join)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(SPELLINGS), min_size=1, max_size=4).map("/".join), st.booleans(),
       st.lists(st.tuples(st.booleans(), GUARDS, st.booleans()), max_size=3))
def test_reached_agrees_with_trying_every_guard_for_tricky_spellings(
        body: str, is_dir: bool, extra: list[tuple[bool, str, bool]]) -> None:
    """Case folding, Unicode composition, dropped trailing dots and spaces, classes and stars, in the owned
    pattern and in guards the config adds (in any folder or rooted, a glob in their first name included):
    the index never lets through what trying every guard refuses."""
    try:
        owned = ownable(body + ("/" if is_dir else ""))
        protected = protected_set([("**/" if anywhere else "") + guard + ("/" if folder else "")
                                   for anywhere, guard, folder in extra])
    except PatternError:
        return
    assert reached(owned, protected) == first_reached_trying_every_guard(owned, protected)


def test_protected_paths_adds_and_only_an_equal_allow_protected_entry_removes() -> None:
    assert protected_of(Config()) is None
    extra = protected_of(Config(protected_paths=("ops/deploy/",)))
    assert extra is not None and "ops/deploy/" in extra and set(DEFAULT_PROTECTED) <= set(extra)
    lifted = protected_of(Config(allow_protected=(".github/workflows/",)))
    assert lifted is not None and ".github/workflows/" not in lifted and ".wavegit/" in lifted
    # A narrower or a misspelt entry lifts nothing: it is refused, naming the protected paths.
    for entry in (".github/workflows/ci.yml", ".wavegit"):
        with pytest.raises(UsageError, match="is not a protected path; the protected paths are"):
            protected_of(Config(allow_protected=(entry,)))
    moved = protected_set(tracker_path="ops/tracker.yaml")
    assert reached("ops/", moved) == "ops/tracker.yaml"
    assert guarded(".WAVEGIT/config.yaml", DEFAULT_PROTECTED) == ".wavegit/"


def test_the_config_keys_flow_into_validation(tmp_path: Path) -> None:
    lifted = protected_of(Config(allow_protected=(".github/workflows/",)))
    assert tracker.loads(_tracker(".github/workflows/ci.yml"), protected=lifted).items[0].owns
    added = protected_of(Config(protected_paths=("ops/",)))
    with pytest.raises(ValidationError, match="can match the protected path 'ops/'"):
        tracker.loads(_tracker("ops/deploy.sh"), protected=added)
    # The parse cache keys the result by the protected paths too.
    text = _tracker("ops/deploy.sh")
    sha = "0" * 40
    assert tracker.load_cached(text, sha, tmp_path).items[0].owns == ("ops/deploy.sh",)
    with pytest.raises(ValidationError):
        tracker.load_cached(text, sha, tmp_path, protected=added)


def test_add_and_validate_refuse_patterns_reaching_control_files_in_one_line(remote_repo: RemoteRepo) -> None:
    clone = remote_repo.clone
    assert wavegit(clone, "init").returncode == 0
    before = git(clone, "rev-parse", "HEAD")
    for pattern in ("*", "?*/", ".w*/", ".github/workflows/ci.yml"):
        result = wavegit(clone, "add", "A-1", "--prompt", "p", "--owns", "src/a.py", pattern,
                         "--test", "true")
        assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert "whole repository" in result.stderr or "protected path" in result.stderr
    assert git(clone, "rev-parse", "HEAD") == before
    (clone / "hand-edited.yaml").write_text(_tracker("src/a.py", "*/**", ".gitmodules"))
    result = wavegit(clone, "validate", "--file", "hand-edited.yaml")
    assert result.returncode == 2
    assert [line.split(": ", 1)[0] for line in result.stderr.strip().splitlines()] == [
        "hand-edited.yaml:5:24", "hand-edited.yaml:5:32"]


def test_run_with_a_committed_protected_pattern_claims_nothing(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write .wavegit/config.yaml x"], ["*"]),
                                       item("B", ["write src/b.txt ok"], ["src/b.txt"])])
    before = git(remote.origin, "rev-parse", "main")
    result = wavegit(remote.clone, "run")
    assert result.returncode == 2 and "is the whole repository" in result.stderr, result.stderr
    assert git(remote.origin, "rev-parse", "main") == before and branches(remote.origin) == []


def _chain(hops: int) -> dict[str, str]:
    """``CLAUDE.md`` -> ``l1`` -> ... -> ``docs/agents.md``: ``hops`` symlinks to follow."""
    names = ["CLAUDE.md", *(f"l{n}" for n in range(1, hops))]
    return dict(zip(names, [*names[1:], "docs/agents.md"], strict=True))


def test_a_protected_link_is_followed_as_far_as_the_kernel_would_and_a_loop_reaches_nothing() -> None:
    # Linux follows 40 symlinks to resolve a path (ELOOP after): a worker's agent could read no further.
    assert "docs/agents.md" in through_links(("CLAUDE.md",), _chain(40))
    assert through_links(("CLAUDE.md",), _chain(41)) == ("CLAUDE.md",)
    assert through_links(("CLAUDE.md",), {"CLAUDE.md": "x", "x": "y/../CLAUDE.md"}) == ("CLAUDE.md",)
