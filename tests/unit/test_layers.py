"""The package is a house with floors: every import points down (or along its own floor), and no
import cycle exists. Read from the source with `ast` (nothing is imported), from one layer map.

A function-level import of the package's own modules is allowed in one place only: the modules
pytest loads at start-up (they must stay light, P2), with a `# start-up:` comment saying why.
Heavy third-party libraries (deepeval, vcrpy, aiohttp, opentelemetry, jsonschema, openai, ...) are
imported where they are used, inside functions; that is not an edge of this graph.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "pytest_evalcases"
NAME = "pytest_evalcases"

# The floors, lowest first. A module's floor is that of its longest prefix here; every module
# must have one. An import may point to a lower floor or along its own, never up.
FLOORS: dict[str, tuple[int, str]] = {
    "": (0, "the package root: its version only"),
    "core": (0, "errors, outcomes, stats, schema, modes, hashing, names, repeats"),
    "domain": (1, "suite context, verdicts, scoring, system, users, code, stages, turns"),
    "store": (2, "keys, cassettes, HTTP recordings, redaction"),
    "judges": (3, "services the engine is handed: judges"),
    "http": (3, "services the engine is handed: the HTTP layer (vcrpy)"),
    "telemetry": (3, "services the engine is handed: OpenTelemetry spans"),
    "engine": (4, "replay, record, save, --replay-http, limits, calibration, turns"),
    "report": (4, "pure reports over result dicts"),
    "manifest": (4, "the run manifest: pure"),
    # The pytest layer (pytest_plugin/), on sub-floors of its own: an import along the layer
    # points down a sub-floor too.
    "pytest_plugin": (5, "pytest layer: the package"),
    "pytest_plugin.options": (5, "pytest layer: the flags and ini keys"),
    "pytest_plugin.settings": (5, "pytest layer: Settings, read from the options once per run"),
    "pytest_plugin.hookspecs": (5, "pytest layer: the hooks the plugin offers (hookspecs)"),
    "pytest_plugin.heap": (5, "pytest layer: the garbage collector in a run with eval cases"),
    "pytest_plugin.session": (6, "pytest layer: run state and registries"),
    "pytest_plugin.user_stages": (6, "pytest layer: stage modules and stage packs, imported"),
    "pytest_plugin.system_fixtures": (6, "pytest layer: systems built by pytest fixtures"),
    "pytest_plugin.suite_stages": (7, "pytest layer: checking the stages a suite runs"),
    "pytest_plugin.suite_contexts": (7, "pytest layer: building suite contexts"),
    "pytest_plugin.housekeeping": (7, "pytest layer: orphans, prune"),
    "pytest_plugin.items": (7, "pytest layer: the items of eval cases"),
    "pytest_plugin.case_result": (7, "pytest layer: one case's result dict, from its item"),
    "pytest_plugin.gathering": (7, "pytest layer: the run's results gathered as they arrive"),
    "pytest_plugin.hook_calls": (7, "pytest layer: calling the plugin's own hooks"),
    "pytest_plugin.calibration_items": (8, "pytest layer: calibration nodes"),
    "pytest_plugin.sources": (8, "pytest layer: where each case's recording comes from"),
    "pytest_plugin.live_batch": (8, "pytest layer: live batches"),
    "pytest_plugin.project": (8, "pytest layer: the run manifest's project config"),
    "pytest_plugin.collect": (9, "pytest layer: collection nodes"),
    "pytest_plugin.finish": (9, "pytest layer: the end of a run: reports, gate, terminal summary"),
    "pytest_plugin.hooks": (10, "pytest layer: the hooks pytest loads"),
    "adapters": (11, "tools over the layers: framework adapters"),
    "importers": (11, "tools over the layers: benchmark importers"),
    "cli": (11, "tools over the layers: the command line"),
    "__main__": (11, "tools over the layers: python -m pytest_evalcases"),
    "schema": (11, "public import path (re-exports core.schema, core.suite_schema, core.trace)"),
    "stats": (11, "public import path (re-exports core.stats)"),
    "baseline": (11, "public import path (re-exports report.baseline)"),
}

# Loaded by pytest in every run where the plugin is installed: the only modules where an
# import of the package's own code may wait for first use (keeping start-up within +50 ms).
START_UP_MODULES = {
    "pytest_evalcases.pytest_plugin.hooks",
    "pytest_evalcases.pytest_plugin.options",
    "pytest_evalcases.pytest_plugin.settings",
    "pytest_evalcases.pytest_plugin.session",
    "pytest_evalcases.pytest_plugin.gathering",
}
START_UP_COMMENT = "# start-up:"


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int
    in_function: bool
    typing_only: bool

    def __str__(self) -> str:
        return f"{self.source} -> {self.target} (line {self.line})"


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def floor(module: str) -> int:
    rest = module[len(NAME) + 1 :] if module != NAME else ""
    parts = rest.split(".") if rest else []
    for size in range(len(parts), -1, -1):
        prefix = ".".join(parts[:size])
        if prefix in FLOORS:
            return FLOORS[prefix][0]
    raise AssertionError(f"{module} has no floor: add it (or its package) to FLOORS")


def _targets(known: dict[str, Path], module: str, node: ast.ImportFrom | ast.Import) -> set[str]:
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        if node.level:
            base = module.split(".")
            if known[module].name != "__init__.py":
                base = base[:-1]
            base = base[: len(base) - (node.level - 1)]
            source = ".".join(base + ([node.module] if node.module else []))
        else:
            source = node.module or ""
        subs = [f"{source}.{alias.name}" for alias in node.names]
        names = [sub for sub in subs if sub in known]
        if any(sub not in known for sub in subs):
            names.append(source)
    found = set()
    for name in names:
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name and name.split(".")[0] == NAME and name != module:
            found.add(name)
    return found


def _has_comment(lines: list[str], line: int, comment: str) -> bool:
    """`comment` on the import's line, or on the line above it or above the run of imports it
    belongs to."""
    if comment in lines[line - 1]:
        return True
    above = line - 2
    while above >= 0 and lines[above].strip().startswith(("from ", "import ")):
        above -= 1
    return above >= 0 and comment in lines[above]


def import_edges() -> list[Edge]:
    known = modules()
    edges = []
    for module, path in known.items():
        tree = ast.parse(path.read_text())
        typing_only: set[int] = set()
        in_function: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                typing_only.update(id(child) for child in ast.walk(node))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                in_function.update(id(child) for child in ast.walk(node))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                for target in _targets(known, module, node):
                    edges.append(
                        Edge(
                            module,
                            target,
                            node.lineno,
                            id(node) in in_function,
                            id(node) in typing_only,
                        )
                    )
    return edges


def strongly_connected(nodes: set[str], edges: list[Edge]) -> list[list[str]]:
    """Tarjan's components of size > 1 (the cycles)."""
    graph: dict[str, set[str]] = {node: set() for node in nodes}
    for edge in edges:
        graph[edge.source].add(edge.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


@pytest.fixture(scope="module")
def edges() -> list[Edge]:
    return import_edges()


def test_every_module_has_a_floor() -> None:
    for module in modules():
        floor(module)  # raises, naming the module


def test_imports_point_down(edges: list[Edge]) -> None:
    upward = [
        f"{edge} goes up from floor {floor(edge.source)} to {floor(edge.target)}"
        for edge in edges
        if floor(edge.target) > floor(edge.source)
    ]
    assert upward == []


def test_no_import_cycle(edges: list[Edge]) -> None:
    """Runtime imports and typing-only ones alike: a cycle of either knots the house."""
    assert strongly_connected(set(modules()), edges) == []


def test_own_modules_are_imported_at_the_top(edges: list[Edge]) -> None:
    """A function-level import of our own code is for start-up only, and says so."""
    lazy = []
    for edge in edges:
        if not edge.in_function:
            continue
        lines = modules()[edge.source].read_text().splitlines()
        if edge.source not in START_UP_MODULES:
            lazy.append(f"{edge}: import it at the top of the module")
        elif not _has_comment(lines, edge.line, START_UP_COMMENT):
            lazy.append(
                f"{edge}: say why with a {START_UP_COMMENT!r} comment, or import it at the top"
            )
    assert lazy == []


def test_the_map_catches_an_upward_import(tmp_path: Path) -> None:
    """The check itself can fail: an engine module importing the pytest layer is named."""
    edge = Edge(f"{NAME}.engine.replay", f"{NAME}.pytest_plugin.session", 3, False, False)
    assert floor(edge.target) > floor(edge.source)
    along = Edge(f"{NAME}.pytest_plugin.items", f"{NAME}.pytest_plugin.collect", 3, False, False)
    assert floor(along.target) > floor(along.source)  # up a sub-floor of the pytest layer
    assert strongly_connected(
        {"a", "b"}, [Edge("a", "b", 1, False, False), Edge("b", "a", 1, False, False)]
    ) == [["a", "b"]]
