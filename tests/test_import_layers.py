"""The package's import graph: no cycles, and no import running back up the layers.

Every ``import`` statement of ``finops_cli`` counts, at module level or inside a function (a lazy import is still
a dependency). The layers, top to bottom; a module may import its own layer and those below::

    cli → api (api, demo, engines, spark) → ingest, estate → planner, report, sim, store, alerts → catalog, core,
    adapters → schema → the package's utilities (errors, atomic, files, uri, text,
processes)

Known exceptions that branches in flight remove are listed with the reason; a listed exception that no longer
occurs fails the test, so the list only shrinks.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "finops_cli"

#: top to bottom; a module belongs to the first entry that is its name or a package above it
LAYERS: list[tuple[str, ...]] = [
    ("finops_cli.cli",),
    ("finops_cli.api", "finops_cli.demo", "finops_cli.engines", "finops_cli.spark"),
    ("finops_cli.ingest", "finops_cli.estate"),
    ("finops_cli.planner", "finops_cli.report", "finops_cli.sim", "finops_cli.store", "finops_cli.alerts"),
    ("finops_cli.catalog", "finops_cli.core", "finops_cli.adapters"),
    ("finops_cli.schema",),
    ("finops_cli.errors", "finops_cli.atomic", "finops_cli.files", "finops_cli.uri",
     "finops_cli.text", "finops_cli.processes", "finops_cli"),
]  # fmt: skip

#: (importer, imported) pairs that run back up the layers today, and why they are still here
KNOWN_UPWARD: dict[tuple[str, str], str] = {}

#: import cycles (as sorted module sets) still here, and why
KNOWN_CYCLES: dict[frozenset[str], str] = {}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, name: str) -> Iterator[str]:
    """The ``finops_cli`` modules ``path`` imports (``from a import b``: ``a.b`` where that is a module, else ``a``)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], base]).rstrip(".")
            for alias in node.names:
                yield f"{base}.{alias.name}" if f"{base}.{alias.name}" in _MODULES else base


_MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for name, path in _MODULES.items():
        graph[name] = {m for m in _imports(path, name) if m in _MODULES and m != name}
    return graph


def _layer(module: str) -> int:
    for i, prefixes in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes if p != "finops_cli"):
            return i
    return len(LAYERS) - 1


def _cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_layer_table_names_every_module() -> None:
    assert _MODULES and all(_layer(m) < len(LAYERS) for m in _MODULES)


def test_no_import_runs_back_up_the_layers() -> None:
    graph = _graph()
    upward = {(a, b) for a, targets in graph.items() for b in targets if _layer(b) < _layer(a)}
    assert sorted(upward - KNOWN_UPWARD.keys()) == []
    assert sorted(KNOWN_UPWARD.keys() - upward) == [], "gone: remove it from KNOWN_UPWARD"


def test_no_import_cycles() -> None:
    cycles = set(_cycles(_graph()))
    assert sorted(map(sorted, cycles - KNOWN_CYCLES.keys())) == []
    assert sorted(map(sorted, KNOWN_CYCLES.keys() - cycles)) == [], "gone: remove it from KNOWN_CYCLES"


@pytest.mark.parametrize("module", ["finops_cli.store.engine", "finops_cli.store.store", "finops_cli.store.remote"])
def test_the_store_never_imports_spark(module: str) -> None:
    assert not any(m.startswith("finops_cli.spark") for m in _graph()[module])
