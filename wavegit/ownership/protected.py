"""Protected paths: wavegit's own control files, which no item may own and no worker may change.

A worker that could change ``.wavegit/config.yaml`` (``report_authors``, ``worker_github_token``), the
tracker, a workflow or an agent's project settings would steer wavegit or later workers. The defaults are
``DEFAULT_PROTECTED``; the config key ``protected_paths`` adds more, and only an entry of ``allow_protected``
removes one (the entry it equals, both normalised). The tracker file is protected wherever ``tracker_path``
puts it.

Decided with the exact overlap test (``wavegit.ownership.overlap``): a pattern is refused when some path it
can own, compared case-insensitively, is protected, however it is spelled (``*``, ``**/*``, ``?*/``,
``.w*/``, ``.GitHub/workflows/ci.yml``).
"""

from __future__ import annotations

import functools
import posixpath
import re
import unicodedata
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from wavegit.ownership.overlap import overlaps
from wavegit.ownership.patterns import PatternError, fold, literal_head, normalize, owns_folded

AGENT_FILES = (
    # Claude Code: settings (permissions, hooks), MCP servers, instructions (read in every folder), skills
    # (a folder's own `.claude/skills/` too, found when the agent works in that folder).
    ".claude/", "**/*/.claude/", ".mcp.json", "**/CLAUDE.md", "**/CLAUDE.local.md",
    # Codex (its settings, `.codex/config.toml`, and its project skills, `.agents/skills/`, in every folder
    # from the root down to the agent's own), Gemini CLI, and the agents that read AGENTS.md.
    ".codex/", "**/*/.codex/", ".agents/", "**/*/.agents/", "**/AGENTS.md", "**/AGENTS.override.md",
    ".gemini/", "**/GEMINI.md",
    # GitHub Copilot and VS Code (MCP servers, tool auto-approval in settings, skills, custom agents).
    ".github/copilot-instructions.md", ".github/instructions/", ".github/prompts/", ".github/chatmodes/",
    ".github/skills/", ".github/agents/", ".vscode/mcp.json", ".vscode/settings.json",
    # Cursor (rules in any folder's `.cursor/rules/`), Windsurf, Cline, Roo, Continue, Amazon Q, Junie, Kiro,
    # Goose, Aider, OpenCode (JSON or JSONC).
    ".cursor/", "**/*/.cursor/", ".cursorrules", ".windsurf/", ".windsurfrules", ".clinerules", ".roo/",
    ".roomodes", ".continue/", ".amazonq/", ".junie/", ".kiro/", ".goosehints", ".aider.conf.yml",
    ".opencode/", "opencode.json", "opencode.jsonc",
    # Qwen Code (a Gemini CLI: instructions in every folder), Crush, Warp, Amp (`AGENT.md`), Kilo Code, Zed
    # (rules; MCP servers in its settings), Augment, Trae, and OpenHands (microagents, and a setup script
    # it runs by itself).
    "**/QWEN.md", ".qwen/", "**/CRUSH.md", ".crush.json", "crush.json", "**/WARP.md", "**/AGENT.md",
    ".kilocode/", ".rules", ".zed/", ".augment/", ".augment-guidelines", ".trae/", ".openhands/",
)
"""The agents' project settings, MCP servers and instruction files: landed, one would give later agents
what their presets withhold (an unsandboxed Claude: edits only), start a program of the worker's choosing
(an MCP server) or steer them (instructions). ``**/NAME`` entries are read in every folder: they refuse a
pattern naming such a file and any change to one, not a folder that could hold one (see :func:`reached`);
``**/*/NAME/`` is such a folder in every folder but the root, which ``NAME/`` guards on its own (so that an
``allow_protected`` entry ``NAME/`` lifts the root's alone)."""

DEFAULT_PROTECTED = (".wavegit/", ".github/workflows/", ".github/actions/", ".gitmodules", *AGENT_FILES)


def protected_set(extra: Iterable[str] = (), allowed: Iterable[str] = (),
                  tracker_path: str | None = None) -> tuple[str, ...]:
    """The protected patterns: the defaults, the tracker file and ``extra``, less those ``allowed`` names.

    Raises PatternError when an entry of ``allowed`` names no protected pattern (a typo would otherwise leave
    the path protected with no word said).
    """
    candidates = [*DEFAULT_PROTECTED, *([tracker_path] if tracker_path else []), *extra]
    protected = list(dict.fromkeys(normalize(pattern) for pattern in candidates))
    for pattern in allowed:
        text = normalize(pattern)
        if text not in protected:
            raise PatternError(f"allow_protected: {pattern!r} is not a protected path; the protected paths "
                               f"are {', '.join(protected)}")
        protected.remove(text)
    return tuple(protected)


@functools.lru_cache(maxsize=65536)
def reached(pattern: str, protected: tuple[str, ...]) -> str | None:
    """The first protected pattern that the ownership ``pattern`` can reach, or None.

    A guard found in any folder (``**/CLAUDE.md``) is reached only by a pattern naming such a file
    (``src/CLAUDE.md``); a folder or a glob that could hold one (``src/``) is not refused, its worker's change
    to one is (:func:`guarded`).
    """
    guards = _guard_index(protected)
    candidates: Iterable[str] = guards.rooted.get(_first_name(pattern), guards.other_names)
    if not _GLOB.search(pattern):
        # A path that a guard found in any folder owns has the guard's literal name (folded) as one of its
        # names: a pattern without it is spared the matchers (every tracker load asks this of every pattern).
        names = fold(pattern if pattern.isascii() else unicodedata.normalize("NFC", pattern)).split("/")
        found = [guard for name in names for guard in guards.anywhere.get(name, ())]
        if found or guards.anywhere_unnamed:
            candidates = sorted({*candidates, *found, *guards.anywhere_unnamed}, key=protected.index)
    for guard in candidates:
        if guard.startswith(_ANYWHERE):
            if _guards(guard, pattern):
                return guard
        elif overlaps(pattern, guard):
            return guard
    return None


_ANYWHERE = "**/"
_GLOB = re.compile(r"[*?\[]")


def _first_name(pattern: str) -> str:
    """The folded first segment of ``pattern`` when it is literal, else ""."""
    return literal_head(pattern).split("/", 1)[0]


class _GuardIndex(NamedTuple):
    rooted: dict[str, tuple[str, ...]]
    """By a pattern's literal first name (folded; "" for a glob), the rooted guards it may reach: one rooted
    at another literal first name owns paths disjoint from the pattern's."""
    other_names: tuple[str, ...]
    """The rooted guards a pattern may reach whose first name no guard starts with."""
    anywhere: dict[str, tuple[str, ...]]
    """The guards found in any folder (``**/...``), by their longest literal name (folded)."""
    anywhere_unnamed: tuple[str, ...]
    """Those with no literal name."""


@functools.lru_cache(maxsize=16)
def _guard_index(protected: tuple[str, ...]) -> _GuardIndex:
    rooted = [(guard, _first_name(guard)) for guard in protected if not guard.startswith(_ANYWHERE)]
    names = {first for _, first in rooted if first} | {""}
    anywhere: dict[str, tuple[str, ...]] = {}
    unnamed: list[str] = []
    for guard in protected:
        if guard.startswith(_ANYWHERE):
            literal = [fold(name) for name in guard.split("/") if name and not _GLOB.search(name)]
            if literal:
                longest = max(literal, key=len)
                anywhere[longest] = (*anywhere.get(longest, ()), guard)
            else:
                unnamed.append(guard)
    by_name = {name: tuple(guard for guard, first in rooted if not name or not first or first == name)
               for name in names}
    unanchored = tuple(guard for guard, first in rooted if not first)
    return _GuardIndex(by_name, unanchored, anywhere, tuple(unnamed))


def guarded(path: str, protected: Iterable[str]) -> str | None:
    """The protected pattern owning the normalised changed ``path`` (case-insensitively), or None."""
    return next((pattern for pattern in protected if _guards(pattern, path)), None)


def _guards(pattern: str, path: str) -> bool:
    """Whether the protected ``pattern`` owns ``path``, or ``path`` names the protected folder itself: a
    symlink ``src/.claude`` to a folder of skills is that folder to the agent that follows it."""
    return owns_folded(pattern, path) or (pattern.endswith("/") and
                                          owns_folded(pattern, f"{path.rstrip('/')}/-"))


def through_links(protected: Iterable[str], links: Mapping[str, str]) -> tuple[str, ...]:
    """``protected`` and what it reaches through the base's symlinks ``links`` (path -> target as written):
    a protected link's target (``CLAUDE.md -> docs/agents.md``, ``.claude/skills -> ../tools/skills``),
    and a protected path below a linked folder (``.github -> ci/github`` protects ``ci/github/workflows/``).
    Without it an item owning the target rewrites what every later agent reads with no protected path
    changed."""
    guards = tuple(protected)
    extra: list[str] = []
    for link in links:
        seen = _resolve(link, links)
        if not seen or seen == link:
            continue
        if guarded(link, guards) is not None:
            extra += [seen, f"{seen}/"]
        extra += [seen + guard[len(link):] for guard in guards if fold(guard).startswith(fold(link) + "/")]
    found = list(guards)
    for pattern in extra:
        try:
            found.append(normalize(pattern))
        except PatternError:
            continue  # a name no pattern can spell is no path a worker's change can name either
    return tuple(dict.fromkeys(found))


_MAX_LINKS = 40
"""Symlinks followed to resolve one path, as the kernel's limit (a loop resolves to nothing)."""


def _resolve(path: str, links: Mapping[str, str]) -> str | None:
    """The repository path that ``path`` names once every symlink of ``links`` on its way is followed; None
    when it leaves the repository (an absolute target, ``..`` past the root) or loops."""
    rest, walked, hops = path.split("/"), [], 0
    while rest:
        walked.append(rest.pop(0))
        here = "/".join(walked)
        target = links.get(here)
        if target is None:
            continue
        hops += 1
        joined = posixpath.normpath(posixpath.join(posixpath.dirname(here), target))
        if hops > _MAX_LINKS or target.startswith("/") or joined == ".." or joined.startswith("../"):
            return None
        rest, walked = ([] if joined == "." else joined.split("/")) + rest, []
    return "/".join(walked)


def refusal(pattern: str, guard: str) -> str:
    """Why ``pattern`` may not be owned: it reaches the protected ``guard``."""
    return f"pattern {pattern!r} can match the protected path {guard!r}"


REFUSAL_HINT = "own narrower paths; only allow_protected in .wavegit/config.yaml lifts a protected path"
