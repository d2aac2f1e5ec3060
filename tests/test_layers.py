"""The import graph of kitlib read from the text of every module, as someone carrying the code on
reads it: every ``import`` and ``from ... import`` statement, at module level, inside functions and
under ``if TYPE_CHECKING:`` alike (import-linter, run by ``make check``, leaves the last out).
No module takes part in an import circle, no import points up the layers declared in
pyproject.toml (the registry reaches the modules above it through importlib, which is not an
import statement), and no module grows past the length where it holds several ideas."""

from __future__ import annotations

import ast
import functools
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KIT = ROOT / "kitlib"
MAX_LINES = 700


@functools.cache
def _modules() -> dict[str, tuple[Path, bool]]:
    """Module name -> (file, is a package); a compiled module by its stub (``_scan.pyi``)."""
    out = {}
    stubs = [p for p in KIT.rglob("*.pyi") if not p.with_suffix(".py").exists()]
    for p in sorted([*KIT.rglob("*.py"), *stubs]):
        parts = list(p.relative_to(ROOT).with_suffix("").parts)
        package = parts[-1] == "__init__"
        out[".".join(parts[:-1] if package else parts)] = (p, package)
    return out


@functools.cache
def _graph() -> dict[str, dict[str, str]]:
    return _imports(_modules())


def _imports(modules: dict[str, tuple[Path, bool]]) -> dict[str, dict[str, str]]:
    """Module -> {kitlib module it imports: where (file:line)}. ``from a import b`` imports ``a.b``
    when that is a module, else ``a``; a name below a module (``a.b.C``) is its module. A module
    importing the package it lies in counts like any other import: that is a circle as soon as
    the package imports the module."""
    graph: dict[str, dict[str, str]] = {}
    for name, (path, package) in modules.items():
        here = name if package else name.rpartition(".")[0]
        edges: dict[str, str] = {}
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = here.split(".")[: len(here.split(".")) - node.level + 1]
                    base = ".".join([*up, *([node.module] if node.module else [])])
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            else:
                continue
            for t in targets:
                while t and t not in modules:
                    t = t.rpartition(".")[0]
                if t.startswith("kitlib"):
                    edges.setdefault(t, f"{path.relative_to(ROOT)}:{node.lineno}")
        graph[name] = edges
    return graph


def _circles(graph: dict[str, dict[str, str]]) -> list[list[str]]:
    """The strongly connected components of more than one module, or of one importing itself
    (Tarjan's algorithm, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(graph[w])))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1 or v in graph[v]:
                    found.append(sorted(comp))
    return found


def test_no_module_of_the_kit_is_in_an_import_circle():
    graph = _graph()
    assert sum(len(e) for e in graph.values()) > 500  # the whole kit was read
    circles = _circles(graph)
    said = [
        [f"{where}: {m} -> {t}" for m in comp for t, where in sorted(graph[m].items()) if t in comp] for comp in circles
    ]
    assert circles == [], "\n\n".join("\n".join(c) for c in said)


def test_the_circle_finder_finds_a_circle_through_a_function_level_import():
    graph = {"a": {"b": "a.py:1"}, "b": {"c": "b.py:3"}, "c": {"a": "c.py:9"}, "d": {"a": "d.py:1"}, "e": {"e": ""}}
    assert _circles(graph) == [["a", "b", "c"], ["e"]]
    # this file's reading of an import inside a function, and under TYPE_CHECKING
    graph = _graph()
    assert "kitlib.bundle" in graph["kitlib.findings"]  # imported inside triage()
    assert "kitlib.lab.scenario" in graph["kitlib.lab.provenance"]  # under TYPE_CHECKING


def test_no_import_points_up_the_layers():
    layers = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"][0]["layers"]
    rank = {m.strip(): i for i, names in enumerate(layers) for m in names.split("|")}

    def layer(module: str) -> tuple[int, str] | None:
        for top, i in rank.items():
            if module == top or module.startswith(top + "."):
                return i, top
        return None

    up = []
    for m, edges in _graph().items():
        for t, where in edges.items():
            a, b = layer(m), layer(t)
            if a and b and a[1] != b[1] and b[0] < a[0]:
                up.append(f"{where}: {m} -> {t}")
    assert len(rank) > 15 and up == []


def test_no_module_of_the_kit_is_longer_than_the_limit():
    lengths = {p.relative_to(ROOT).as_posix(): len(p.read_text().splitlines()) for p in KIT.rglob("*.py")}
    over = {p: n for p, n in lengths.items() if n > MAX_LINES}
    assert not over, over
