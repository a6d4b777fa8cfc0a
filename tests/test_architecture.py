"""The import contract of ARCHITECTURE.md, checked from the source of every module under ``wavegit/``.

The layers, the hot paths' import sets, the hot-path modules and the modules that may use ``subprocess`` are
read from ARCHITECTURE.md's checked tables, so the page and the code cannot drift apart. Each check collects
violations as stable text; ``KNOWN_VIOLATIONS`` lists today's, until issue 9's refactors remove them.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.helpers.hook import ItemSpec, commit, hook_env, publish_tracker
from tests.helpers.repos import REPO_ROOT, RemoteRepo, git, make_remote_repo

PACKAGE = "wavegit"
ARCHITECTURE = REPO_ROOT / "ARCHITECTURE.md"

# Violation -> why it is tolerated for now. Issue 9's refactors remove each; an entry that no longer occurs
# fails the test, so the list only shrinks.
KNOWN_VIOLATIONS: dict[str, str] = {
    "speed rule off the hot paths: wavegit.github.gate defers importing wavegit.model.tracker": "issue 9",
}


# --- the contract, from ARCHITECTURE.md --------------------------------------------------------------------

def _table(text: str, header: str) -> list[list[str]]:
    """The rows (cells) of the Markdown table whose header row starts with ``| header |``."""
    lines = text.splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith(f"| {header} |"))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def _names(cell: str) -> tuple[str, ...]:
    """The backquoted module names of a cell, as full dotted names (``__init__`` is the package itself)."""
    names = re.findall(r"`([^`]+)`", cell)
    return tuple(PACKAGE if name == "__init__" else f"{PACKAGE}.{name}" for name in names)


def _covers(declared: str, module: str) -> bool:
    """``x.*`` covers the package ``x`` and everything in it; other names only themselves."""
    if declared.endswith(".*"):
        package = declared[:-2]
        return module == package or module.startswith(package + ".")
    return module == declared


@dataclass(frozen=True)
class Contract:
    groups: dict[str, tuple[int, tuple[str, ...]]]  # group -> (tier, declared module names)
    hot_imports: dict[str, tuple[str, ...]]  # hot path -> the wavegit modules a warm run imports
    hot_modules: tuple[str, ...]
    subprocess_users: tuple[str, ...]
    git_builders: tuple[str, ...]  # the modules that may call git.run / git.out

    def group_of(self, module: str) -> str | None:
        found = [group for group, (_, declared) in self.groups.items()
                 if any(_covers(name, module) for name in declared)]
        return found[0] if len(found) == 1 else None

    def tier(self, group: str) -> int:
        return self.groups[group][0]

    def on_hot_path(self, module: str) -> bool:
        return any(_covers(name, module) for name in self.hot_modules)


def read_contract(text: str) -> Contract:
    groups = {row[1]: (int(row[0]), _names(row[2])) for row in _table(text, "tier")}
    hot = {row[0].strip("`"): _names(row[1]) for row in _table(text, "hot path")}
    (hot_modules,) = (_names(row[0]) for row in _table(text, "hot-path modules"))
    users = tuple(name for row in _table(text, "module") for name in _names(row[0]))
    builders = tuple(name for row in _table(text, "builds git command lines") for name in _names(row[0]))
    return Contract(groups, hot, hot_modules, users, builders)


CONTRACT = read_contract(ARCHITECTURE.read_text(encoding="utf-8"))


# --- what the source does ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Import:
    target: str  # a wavegit module
    line: int
    deferred: bool  # inside a function: imported when called


@dataclass
class Source:
    """One module's imports and the uses the contract restricts, from its AST."""

    name: str
    imports: list[Import] = field(default_factory=list)
    private_names: list[tuple[str, int]] = field(default_factory=list)  # ("wavegit.m._x", line)
    git_runs: list[int] = field(default_factory=list)  # lines passing a literal "git" as the program
    git_commands: list[int] = field(default_factory=list)  # lines calling wavegit.core.git.run / .out
    imports_subprocess: bool = False
    module_level_packages: set[str] = field(default_factory=set)  # outside wavegit: "yaml", "github", ...
    packages: set[str] = field(default_factory=set)  # outside wavegit, at module level or inside functions
    speed_rules: list[tuple[str, int]] = field(default_factory=list)  # (what, line)


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _is_type_checking(node: ast.If) -> bool:
    return "TYPE_CHECKING" in ast.unparse(node.test)


_RUNNERS = {"run", "Popen", "call", "check_call", "check_output"}
_GIT_RUNNER = f"{PACKAGE}.core.git._runner"  # the one module that starts git
_GIT_MODULES = {f"{PACKAGE}.core.git", _GIT_RUNNER}  # the git layer's face, and the runner behind it
_GIT_COMMANDS = {"run", "out"}  # their functions that take a git command line
_PROCESS_STARTERS = re.compile(r"^(exec|spawn|posix_spawn)")


class _Reader(ast.NodeVisitor):
    def __init__(self, source: Source, modules: set[str], is_package: bool) -> None:
        self.source = source
        self.modules = modules
        self.package = source.name if is_package else source.name.rpartition(".")[0]
        self.depth = 0  # function nesting
        self.bound: dict[str, str] = {}  # local name -> the wavegit module it is
        self.subprocess_names: set[str] = set()
        self.git_command_names: set[str] = set()  # local names of wavegit.core.git.run / .out

    def _resolve(self, node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        base = self.package.split(".")[: len(self.package.split(".")) - node.level + 1]
        return ".".join([*base, *([node.module] if node.module else [])])

    def _record(self, target: str, line: int) -> None:
        top = target.split(".")[0]
        if top != PACKAGE:
            self.source.packages.add(top)
            if self.depth == 0:
                self.source.module_level_packages.add(top)
        if target in self.modules:
            self.source.imports.append(Import(target, line, self.depth > 0))
            parent, _, last = target.rpartition(".")
            inside = self.source.name == parent or self.source.name.startswith(parent + ".")
            if _private(last) and not inside:
                self.source.private_names.append((target, line))

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node):
            self.generic_visit(ast.Module(body=node.orelse, type_ignores=[]))
            return
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for decorator in node.decorator_list:
            text = ast.unparse(decorator)
            if re.search(r"\b(lru_cache|cache)\b", text):
                self.source.speed_rules.append((f"{self.source.name}.{node.name} uses {text}", node.lineno))
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        if any(re.search(r"\bNamedTuple\b", ast.unparse(base)) for base in node.bases):
            self.source.speed_rules.append((f"{self.source.name}.{node.name} is a NamedTuple", node.lineno))
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name == "subprocess":
                self.source.imports_subprocess = True
                self.subprocess_names.add(alias.asname or alias.name)
            self._record(alias.name, node.lineno)
            if alias.asname and alias.name in self.modules:
                self.bound[alias.asname] = alias.name

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = self._resolve(node)
        if base == "subprocess":
            self.source.imports_subprocess = True
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            if submodule in self.modules:
                self._record(submodule, node.lineno)
                self.bound[alias.asname or alias.name] = submodule
                continue
            self._record(base, node.lineno)
            if base in self.modules and _private(alias.name):
                self.source.private_names.append((f"{base}.{alias.name}", node.lineno))
            if base == "subprocess" and alias.name in _RUNNERS:
                self.subprocess_names.add(alias.asname or alias.name)
            if base in _GIT_MODULES and alias.name in _GIT_COMMANDS:
                self.git_command_names.add(alias.asname or alias.name)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        owner = ast.unparse(node.value)
        module = self.bound.get(owner, owner if owner in self.modules else None)
        if module is not None and module != self.source.name and _private(node.attr):
            self.source.private_names.append((f"{module}.{node.attr}", node.lineno))
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = ast.unparse(node.func)
        owner, _, called = func.rpartition(".")
        starts_process = ((owner in self.subprocess_names and called in _RUNNERS)
                          or (not owner and func in self.subprocess_names)
                          or (owner == "os" and _PROCESS_STARTERS.match(called) is not None))
        if starts_process and any(_names_git(arg) for arg in node.args[:2]):
            self.source.git_runs.append(node.lineno)
        if ((called in _GIT_COMMANDS and self.bound.get(owner, owner) in _GIT_MODULES)
                or (not owner and func in self.git_command_names)):
            self.source.git_commands.append(node.lineno)
        if func.endswith("gc_paused"):
            self.source.speed_rules.append((f"{self.source.name} calls gc_paused()", node.lineno))
        if func == "os._exit":
            self.source.speed_rules.append((f"{self.source.name} calls os._exit()", node.lineno))
        self.generic_visit(node)


def _names_git(arg: ast.expr) -> bool:
    """A literal ``"git"`` as the program: the string itself or the first element of an argv literal."""
    if isinstance(arg, ast.Constant):
        return arg.value == "git"
    if isinstance(arg, (ast.List, ast.Tuple)) and arg.elts:
        return _names_git(arg.elts[0])
    return False


def read_sources(files: Mapping[str, tuple[str, bool]]) -> dict[str, Source]:
    """{module: Source} for {module: (its text, whether it is a package's __init__)}."""
    modules = set(files)
    sources = {}
    for name, (text, is_package) in files.items():
        source = Source(name)
        _Reader(source, modules, is_package).visit(ast.parse(text, filename=name))
        source.imports = [i for i in source.imports if i.target != name]
        sources[name] = source
    return sources


def package_files(root: Path = REPO_ROOT) -> dict[str, tuple[str, bool]]:
    return {module_name(path, root): (path.read_text(encoding="utf-8"), path.name == "__init__.py")
            for path in sorted((root / PACKAGE).rglob("*.py"))}


FILES = package_files()
SOURCES = read_sources(FILES)


# --- the checks: each yields (violation, where) ------------------------------------------------------------

Found = Iterator[tuple[str, str]]


def cycles(sources: Mapping[str, Source]) -> Found:
    """One shortest cycle per group of modules that import one another, directly or not."""
    graph = {name: sorted({i.target for i in s.imports}) for name, s in sources.items()}
    reach = {name: _reachable(graph, name) for name in graph}
    seen: set[str] = set()
    for start in sorted(graph):
        if start in seen or start not in reach[start]:
            continue
        group = {other for other in reach[start] if start in reach[other]}
        seen |= group
        yield "cycle: " + " -> ".join(_shortest_loop(graph, start, group)), ", ".join(sorted(group))


def _reachable(graph: Mapping[str, list[str]], start: str) -> set[str]:
    found: set[str] = set()
    todo = list(graph[start])
    while todo:
        node = todo.pop()
        if node not in found:
            found.add(node)
            todo.extend(graph[node])
    return found


def _shortest_loop(graph: Mapping[str, list[str]], start: str, group: set[str]) -> list[str]:
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for nxt in graph[node]:
                if nxt == start:
                    return [*paths[node], start]
                if nxt in group and nxt not in paths:
                    paths[nxt] = [*paths[node], nxt]
                    following.append(nxt)
        frontier = following
    raise AssertionError(f"no loop through {start}")


def layer_breaches(sources: Mapping[str, Source], contract: Contract) -> Found:
    for name, source in sources.items():
        group = contract.group_of(name)
        if group is None:
            yield f"layer: {name} is in no group (or in several) of ARCHITECTURE.md", name
            continue
        for imp in source.imports:
            other = contract.group_of(imp.target)
            if other is None or other == group:
                continue
            higher = contract.tier(other) > contract.tier(group)
            sibling = contract.tier(other) == contract.tier(group)
            if higher or sibling:
                kind = "a higher tier" if higher else "a sibling group"
                yield (f"layer: {name} ({group}) imports {imp.target} ({other}, {kind})",
                       f"{name}:{imp.line}")


def private_names(sources: Mapping[str, Source]) -> Found:
    for name, source in sources.items():
        for target, line in sorted(set(source.private_names)):
            yield f"private name: {name} imports {target}", f"{name}:{line}"


def git_outside_the_git_layer(sources: Mapping[str, Source], contract: Contract) -> Found:
    for name, source in sources.items():
        if source.imports_subprocess and name not in contract.subprocess_users:
            yield f"subprocess: {name} imports subprocess", name
        if name != _GIT_RUNNER:
            for line in source.git_runs:
                yield f"git: {name} runs git itself", f"{name}:{line}"


def git_command_lines_outside_the_git_layer(sources: Mapping[str, Source], contract: Contract) -> Found:
    for name, source in sources.items():
        if name not in contract.git_builders:
            for line in source.git_commands:
                yield f"git command line: {name} calls git.run/git.out", f"{name}:{line}"


def speed_rules_off_the_hot_paths(sources: Mapping[str, Source], contract: Contract) -> Found:
    for name, source in sources.items():
        if contract.on_hot_path(name):
            continue
        for what, line in source.speed_rules:
            yield f"speed rule off the hot paths: {what}", f"{name}:{line}"
        for target in sorted({i.target for i in source.imports if i.deferred}):
            line = min(i.line for i in source.imports if i.deferred and i.target == target)
            yield f"speed rule off the hot paths: {name} defers importing {target}", f"{name}:{line}"


def static_import_closure(sources: Mapping[str, Source], entry: str) -> dict[str, list[str]]:
    """Every module the module-level imports of ``entry`` load, with the chain that loads it."""
    chains = {entry: [entry]}
    todo = [entry]
    while todo:
        node = todo.pop()
        parts = node.split(".")
        parents = [".".join(parts[:n]) for n in range(1, len(parts))]
        for nxt in [*parents, *(i.target for i in sources[node].imports if not i.deferred)]:
            if nxt in sources and nxt not in chains:
                chains[nxt] = [*chains[node], nxt]
                todo.append(nxt)
    return chains


MAX_LINES = 500


def long_modules(files: Mapping[str, tuple[str, bool]]) -> Found:
    """Modules over ``MAX_LINES`` lines: a longer one is split along a seam of what it does."""
    for name, (text, _) in files.items():
        lines = len(text.splitlines())
        if lines > MAX_LINES:
            yield f"size: {name} is over {MAX_LINES} lines", f"{name}: {lines} lines"


def unexpected(found: Iterable[tuple[str, str]]) -> list[str]:
    """Violations not in KNOWN_VIOLATIONS, with where they are."""
    return [f"{violation}  [{where}]" for violation, where in found if violation not in KNOWN_VIOLATIONS]


def all_violations() -> set[str]:
    checks = [cycles(SOURCES), layer_breaches(SOURCES, CONTRACT), private_names(SOURCES),
              git_outside_the_git_layer(SOURCES, CONTRACT),
              git_command_lines_outside_the_git_layer(SOURCES, CONTRACT),
              speed_rules_off_the_hot_paths(SOURCES, CONTRACT), long_modules(FILES)]
    return {violation for check in checks for violation, _ in check}


# --- the contract holds for the tree -----------------------------------------------------------------------

def test_no_import_cycle_among_wavegit_modules() -> None:
    assert unexpected(cycles(SOURCES)) == []


def test_no_module_is_over_500_lines() -> None:
    assert unexpected(long_modules(FILES)) == []


def test_lower_layers_never_import_higher_ones_nor_sibling_groups() -> None:
    assert unexpected(layer_breaches(SOURCES, CONTRACT)) == []


def test_no_module_imports_another_modules_private_names() -> None:
    assert unexpected(private_names(SOURCES)) == []


def test_only_the_git_module_runs_git() -> None:
    assert unexpected(git_outside_the_git_layer(SOURCES, CONTRACT)) == []


def test_only_the_git_layer_builds_git_command_lines() -> None:
    assert unexpected(git_command_lines_outside_the_git_layer(SOURCES, CONTRACT)) == []


def test_speed_rules_only_on_the_hot_paths() -> None:
    assert unexpected(speed_rules_off_the_hot_paths(SOURCES, CONTRACT)) == []


def test_every_known_violation_still_occurs_so_the_list_only_shrinks() -> None:
    gone = sorted(set(KNOWN_VIOLATIONS) - all_violations())
    assert gone == [], f"fixed: remove from KNOWN_VIOLATIONS: {gone}"


@pytest.mark.parametrize(("hot_path", "entry"), [("wavegit hook pre-push", "wavegit.commands.hook"),
                                                 ("wavegit plan", "wavegit.commands.plan")])
def test_a_hot_paths_module_level_imports_stay_inside_its_declared_set(hot_path: str, entry: str) -> None:
    declared = set(CONTRACT.hot_imports[hot_path])
    chains = static_import_closure(SOURCES, entry)
    assert {m: " -> ".join(chain) for m, chain in chains.items() if m not in declared} == {}
    # YAML and PyGithub cost tens of milliseconds: a hot path imports them only when it needs them.
    heavy = {m: sorted(SOURCES[m].module_level_packages & {"yaml", "github"}) for m in chains}
    assert {m: found for m, found in heavy.items() if found} == {}
    packages = {PACKAGE, *(f"{PACKAGE}.{name}" for name in ("commands", "hook", "core", "model",
                                                             "trackerbranch"))}
    assert all(CONTRACT.on_hot_path(m) for m in declared if m not in packages)


def test_only_the_client_its_retrier_and_the_apps_tokens_import_pygithub_and_only_when_called() -> None:
    importers = {name for name, source in SOURCES.items() if "github" in source.packages}
    assert importers == {f"{PACKAGE}.github.client", f"{PACKAGE}.github.retry", f"{PACKAGE}.github.appauth"}
    assert {name for name, source in SOURCES.items() if "github" in source.module_level_packages} == set()


# A warm run in-process through cli.main (argv given: no os._exit), then the modules it has loaded.
PROBE = """
import json, sys
from wavegit import cli
code = cli.main(sys.argv[2:])
json.dump({"code": code, "modules": sorted(sys.modules)}, open(sys.argv[1], "w"))
"""


def _run_and_list_modules(clone: Path, out: Path, argv: list[str],
                          stdin: str | None) -> tuple[int, list[str]]:
    subprocess.run([sys.executable, "-c", PROBE, str(out), *argv], cwd=clone, input=stdin, text=True,
                   capture_output=True, env=hook_env(), check=False, timeout=120)
    loaded = json.loads(out.read_text())
    return loaded["code"], loaded["modules"]


@pytest.fixture
def in_flight(tmp_path: Path) -> RemoteRepo:
    remote = make_remote_repo(tmp_path, {"src/a.py": "a = 1\n"})
    publish_tracker(remote, [ItemSpec("A-1", ["src/a.py"], wave="20260101-000000-abcdef"),
                             ItemSpec("B-1", ["src/b.py"], status="todo")])
    return remote


def test_warm_hot_paths_import_exactly_their_declared_modules_and_no_yaml_nor_pygithub(
        in_flight: RemoteRepo, tmp_path: Path) -> None:
    head = commit(in_flight.clone, {"src/a.py": "a = 2\n"})
    stdin = f"refs/heads/main {head} refs/heads/main {git(in_flight.clone, 'rev-parse', 'origin/main')}\n"
    runs = {"wavegit hook pre-push": (["hook", "pre-push", "origin", str(in_flight.origin)], stdin, 1),
            "wavegit plan": (["plan"], None, 0)}
    loaded = {}
    for hot_path, (argv, given, exit_code) in runs.items():
        out = tmp_path / "modules.json"
        cold_code, cold = _run_and_list_modules(in_flight.clone, out, argv, given)  # fills the parse caches
        code, warm = _run_and_list_modules(in_flight.clone, out, argv, given)
        assert code == cold_code == exit_code, hot_path  # the hook refuses the push: A-1 owns src/a.py
        loaded[hot_path] = (cold, warm)
    cold_hook, _ = loaded["wavegit hook pre-push"]
    assert {"yaml", "wavegit.model.tracker"} <= set(cold_hook)  # the first run parsed the tracker
    for hot_path, (_, warm) in loaded.items():
        assert sorted(m for m in warm if m.split(".")[0] == PACKAGE) == sorted(CONTRACT.hot_imports[hot_path])
        assert not {m.split(".")[0] for m in warm} & {"yaml", "_yaml", "github"}, hot_path


# A warm run in-process, listing what the builtin compile() was given as text from before wavegit is imported
# (module sources come as bytes, when no bytecode is cached).
COMPILE_PROBE = """
import builtins, json, sys
calls = []
real_compile = builtins.compile
def counting(source, *args, **kwargs):
    if isinstance(source, str):
        calls.append(source[:60])
    return real_compile(source, *args, **kwargs)
builtins.compile = counting
from wavegit import cli
code = cli.main(sys.argv[2:])
json.dump({"code": code, "compiled": calls}, open(sys.argv[1], "w"))
"""


def test_warm_hot_paths_compile_no_source_at_run_time(in_flight: RemoteRepo, tmp_path: Path) -> None:
    # A NamedTuple field annotated with a string makes typing compile() it at import, and the first compile()
    # of a process builds Python's AST types (~3 ms): the hot paths' records name their types at run time.
    head = commit(in_flight.clone, {"src/a.py": "a = 2\n"})
    stdin = f"refs/heads/main {head} refs/heads/main {git(in_flight.clone, 'rev-parse', 'origin/main')}\n"
    out = tmp_path / "compiled.json"
    for argv, given in ((["hook", "pre-push", "origin", str(in_flight.origin)], stdin), (["plan"], None)):
        for _ in range(2):  # the first run fills the parse caches (and may compile bytecode)
            subprocess.run([sys.executable, "-c", COMPILE_PROBE, str(out), *argv], cwd=in_flight.clone,
                           input=given, text=True, capture_output=True, env=hook_env(), check=False,
                           timeout=120)
        assert json.loads(out.read_text())["compiled"] == [], argv


# As git starts the hook: the process's own argv (``cli.main()``), so the start-up path runs too; the
# fast exit is where the loaded modules are written down.
STARTED_PROBE = """
import json, os, sys
from wavegit import cli
out, sys.argv = sys.argv[1], ["wavegit", *sys.argv[2:]]
real_exit = os._exit
def exit_listing(code):
    json.dump({"code": code, "modules": sorted(sys.modules)}, open(out, "w"))
    real_exit(code)
os._exit = exit_listing
cli.main()
"""


def test_a_hot_path_started_as_a_process_loads_no_credentials(in_flight: RemoteRepo, tmp_path: Path) -> None:
    out = tmp_path / "modules.json"
    done = subprocess.run([sys.executable, "-c", STARTED_PROBE, str(out), "plan", "--json"],
                          cwd=in_flight.clone, capture_output=True, text=True,
                          env={**hook_env(), "GITHUB_TOKEN": "t0ken"}, check=False, timeout=120)
    loaded = json.loads(out.read_text())
    assert loaded["code"] == 0, done.stderr
    assert "wavegit.commands.plan" in loaded["modules"]
    assert "wavegit.core.credentials" not in loaded["modules"]


def test_fast_commands_import_no_other_command_module_and_no_pygithub() -> None:
    for command in ("plan", "hook", "ls"):
        probe = ("import sys; from wavegit import cli\n"
                 f"try:\n    cli.main([{command!r}, '--help'])\nexcept SystemExit:\n    pass\n"
                 "print(' '.join(sorted(sys.modules)))")
        loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO_ROOT,
                                check=True).stdout.split()
        commands = {m for m in loaded if m.startswith("wavegit.commands.")
                    and not m.startswith("wavegit.commands._")}
        assert commands == {f"wavegit.commands.{command}"}
        assert "github" not in {m.split(".")[0] for m in loaded}


# --- the checks themselves catch what they are for ---------------------------------------------------------

def _fake(**modules: str) -> dict[str, Source]:
    return read_sources({f"wavegit.{name}": (text, False) for name, text in modules.items()})


def test_a_cycle_is_reported_with_its_path_also_through_a_deferred_import() -> None:
    sources = _fake(a="from wavegit import b\n", b="def f():\n    from wavegit import c\n",
                    c="import wavegit.a\n", d="from wavegit import a\n")
    assert [v for v, _ in cycles(sources)] == ["cycle: wavegit.a -> wavegit.b -> wavegit.c -> wavegit.a"]
    typed = _fake(a="from wavegit import b\n", b="from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                               "    from wavegit import a\n")
    assert list(cycles(typed)) == []


def test_a_module_over_500_lines_is_caught_and_one_of_500_is_not() -> None:
    files = {"wavegit.long": ("x = 1\n" * 501, False), "wavegit.full": ("x = 1\n" * 500, False)}
    assert list(long_modules(files)) == [("size: wavegit.long is over 500 lines", "wavegit.long: 501 lines")]


def test_an_import_upwards_or_sideways_breaks_the_layers() -> None:
    sources = _fake(hook="from wavegit import github\n", github="",
                    **{"core.errors": "from wavegit.commands import plan\n",
                       "model.select": "from wavegit.model import tracker\nfrom wavegit.core import errors\n",
                       "model.tracker": "", "commands.plan": "", "newcomer": ""})
    assert sorted(v for v, _ in layer_breaches(sources, CONTRACT)) == [
        "layer: wavegit.core.errors (core) imports wavegit.commands.plan (commands, a higher tier)",
        "layer: wavegit.hook (hook) imports wavegit.github (github, a sibling group)",
        "layer: wavegit.newcomer is in no group (or in several) of ARCHITECTURE.md",
    ]


def test_private_names_are_caught_by_import_and_by_attribute() -> None:
    sources = _fake(a="_own = 1\ndef f():\n    return _own\n", b="from wavegit.a import _own\n",
                    c="from wavegit import a as alias\nx = alias._own\ny = alias.__name__\n",
                    **{"commands._write": "", "commands.add": "from wavegit.commands import _write\n",
                       "d": "from wavegit.commands._write import x\n"})
    assert sorted(v for v, _ in private_names(sources)) == [
        "private name: wavegit.b imports wavegit.a._own", "private name: wavegit.c imports wavegit.a._own",
        "private name: wavegit.d imports wavegit.commands._write"]


def test_the_git_layer_has_one_face_its_modules_are_private_to_it() -> None:
    sources = read_sources({
        "wavegit.core.git": ("from wavegit.core.git._ops import fetch\nfrom . import _runner\n", True),
        "wavegit.core.git._runner": ("", False), "wavegit.core.git._ops": ("from . import _runner\n", False),
        "wavegit.engine.claim": ("from wavegit.core import git\ngit.fetch\n", False),
        "wavegit.engine.wave": ("from wavegit.core.git._ops import fetch\n", False),
        "wavegit.sync.merged": ("from wavegit.core.git import _runner\n", False)})
    assert sorted(v for v, _ in private_names(sources)) == [
        "private name: wavegit.engine.wave imports wavegit.core.git._ops",
        "private name: wavegit.sync.merged imports wavegit.core.git._runner"]


def test_a_literal_git_program_or_a_new_subprocess_user_is_caught() -> None:
    sources = _fake(**{"trackerbranch.store": "import subprocess\nsubprocess.run(['git', 'status'])\n",
                       "trackerbranch.halt": "from subprocess import run as go\ngo(('git', 'log'))\n",
                       "trackerbranch.budget": "import os\nos.execvp('git', ['git'])\n",
                       "attempts.runner": "import subprocess\nsubprocess.run(['sh', '-c', 'git status'])\n",
                       "core.git._runner": "import subprocess\nsubprocess.run(['git', 'status'])\n"})
    assert sorted(v for v, _ in git_outside_the_git_layer(sources, CONTRACT)) == [
        "git: wavegit.trackerbranch.budget runs git itself",
        "git: wavegit.trackerbranch.halt runs git itself",
        "git: wavegit.trackerbranch.store runs git itself",
        "subprocess: wavegit.trackerbranch.halt imports subprocess",
        "subprocess: wavegit.trackerbranch.store imports subprocess"]


def test_a_git_command_line_outside_the_git_layer_is_caught_however_git_is_imported() -> None:
    sources = _fake(**{"trackerbranch.store": "from wavegit.core import git\ngit.run(['status'], cwd='.')\n",
                       "trackerbranch.halt": "import wavegit.core.git as g\ng.out(['var'], cwd='.')\n",
                       "trackerbranch.budget": "from wavegit.core.git import out as o\no(['log'], cwd='.')\n",
                       "sync.reconcile": "from wavegit.core import git\ngit.GitError(['log'], 1, '')\n"
                                         "git.clean_env()\n",
                       "core.git._ops": "from wavegit.core.git import _runner\n"
                                        "_runner.run(['fetch'], cwd='.')\n",
                       "core.git._runner": "", "core.git": ""})
    assert sorted(v for v, _ in git_command_lines_outside_the_git_layer(sources, CONTRACT)) == [
        "git command line: wavegit.trackerbranch.budget calls git.run/git.out",
        "git command line: wavegit.trackerbranch.halt calls git.run/git.out",
        "git command line: wavegit.trackerbranch.store calls git.run/git.out"]


def test_speed_rules_are_caught_off_the_hot_paths_and_allowed_on_them() -> None:
    rules = ("import functools, os\nfrom typing import NamedTuple\nclass R(NamedTuple):\n    x: int\n"
             "@functools.lru_cache(maxsize=8)\ndef f() -> None:\n    from wavegit.core import errors\n"
             "    with gc_paused():\n        os._exit(0)\n")
    sources = _fake(**{"sync.reconcile": rules, "model.tracker": rules, "core.errors": ""})
    assert sorted(v for v, _ in speed_rules_off_the_hot_paths(sources, CONTRACT)) == [
        "speed rule off the hot paths: wavegit.sync.reconcile calls gc_paused()",
        "speed rule off the hot paths: wavegit.sync.reconcile calls os._exit()",
        "speed rule off the hot paths: wavegit.sync.reconcile defers importing wavegit.core.errors",
        "speed rule off the hot paths: wavegit.sync.reconcile.R is a NamedTuple",
        "speed rule off the hot paths: wavegit.sync.reconcile.f uses functools.lru_cache(maxsize=8)"]


def test_the_contract_tables_are_read_from_architecture_md() -> None:
    assert CONTRACT.tier("core") < CONTRACT.tier("model") < CONTRACT.tier("engine") < CONTRACT.tier("cli")
    assert CONTRACT.group_of("wavegit") == "core" and CONTRACT.group_of("wavegit.hook.prepush") == "hook"
    assert set(CONTRACT.hot_imports) == {"wavegit hook pre-push", "wavegit plan"}
    assert "wavegit.core.git._runner" in CONTRACT.subprocess_users
    assert CONTRACT.on_hot_path("wavegit.hook.prepush")
    assert {"wavegit.core.git._runner", "wavegit.core.git._ops"} <= set(CONTRACT.git_builders)
    assert "wavegit.trackerbranch.store" not in CONTRACT.git_builders
    assert not CONTRACT.on_hot_path("wavegit.sync.reconcile")
