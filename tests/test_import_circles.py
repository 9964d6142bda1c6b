"""No import circle, counting every import a module runs (issue 36, item 3).

The graph is built from each module's source (ast), with every import at any depth: at module
level, inside a function or method (a lazy import is still an arrow, and an import moved into
a function to break a circle leaves the circle there), inside a module-level ``__getattr__``
(a re-export by name), and ``importlib.import_module("a.b")`` with a literal name. Imports
under ``if TYPE_CHECKING:`` are left out: they never run, and annotations are where a layer
may name a type of a layer above it. A strongly connected component of more than one module
is a circle; the one the page adapters remove is allow-listed below, by its modules.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

PACKAGES = ("dpcore", "engine", "plan", "release", "dashboard", "app_pages")

#: Circles known and being removed; each entry says by what. A circle not listed fails, and so
#: does a listed one that is gone (remove its entry). None today: issue 36 item 1 removed the
#: last (groups, plan_entries, stats_parts and stats_query, by the page adapters).
ALLOWED: set[frozenset[str]] = set()


def modules(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    """Every module of ``packages`` under ``root`` by its dotted name (a package by its own)."""
    out = {}
    for package in packages:
        for path in (root / package).rglob("*.py"):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


def _type_checking_only(tree: ast.Module) -> set[int]:
    """The ids of the nodes under an ``if TYPE_CHECKING:`` (never run)."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for statement in node.body:
                skip.update(id(n) for n in ast.walk(statement))
    return skip


def _imported_by_name(node: ast.AST) -> str | None:
    """``importlib.import_module("a.b")`` or ``__import__("a.b")`` with a literal name."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    first = node.args[0]
    if name in ("import_module", "__import__") and isinstance(first, ast.Constant) \
            and isinstance(first.value, str):
        return first.value
    return None


def imported(node: ast.Import | ast.ImportFrom, package: str, known) -> set[str]:
    """The modules one import statement of a module in ``package`` names (``from a import b``
    counts as a.b when that is a module of ``known``, else a); read by the layer test too."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    base = node.module or ""
    if node.level:
        anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
        base = ".".join([*anchor, base] if base else anchor)
    return {full if (full := f"{base}.{alias.name}") in known else base
            for alias in node.names}


def imports_of(path: Path, name: str, known: dict[str, Path]) -> set[str]:
    """The project modules ``name`` imports anywhere in its source (``from a import b`` counts
    as a.b when that is a module, else a), leaving out its own package and itself."""
    tree = ast.parse(path.read_text())
    skip = _type_checking_only(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            found |= imported(node, package, known)
        elif (by_name := _imported_by_name(node)) is not None:
            found.add(by_name)
    # a module running its own package's __init__ is how Python imports it, not a circle
    return {t for t in found if t in known and t != name and not name.startswith(t + ".")}


def import_graph(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES
                 ) -> dict[str, set[str]]:
    known = modules(root, packages)
    return {name: imports_of(path, name, known) for name, path in known.items()}


def circles(edges: dict[str, set[str]]) -> list[frozenset[str]]:
    """Strongly connected components of more than one module (Tarjan's, iterative: the
    graph has a thousand modules and Python's recursion limit is near that)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[frozenset[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(sorted(edges[root])))]
        while work:
            v, targets = work[-1]
            for w in targets:
                if w not in edges:
                    continue
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    component = set()
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.add(w)
                        if w == v:
                            break
                    if len(component) > 1:
                        out.append(frozenset(component))
    return out


def _words(found: list[frozenset[str]], edges: dict[str, set[str]]) -> list[str]:
    """Each circle with its arrows, so a failure says which imports to look at."""
    return [" ; ".join(f"{a} -> {b}" for a in sorted(c) for b in sorted(edges[a] & c))
            for c in found]


def test_no_import_circle_counting_imports_inside_functions():
    edges = import_graph()
    found = circles(edges)
    assert _words([c for c in found if c not in ALLOWED], edges) == []
    assert [sorted(c) for c in ALLOWED if c not in found] == []   # gone: drop its entry


def test_the_graph_holds_the_lazy_and_the_module_level_imports():
    """Two arrows this repository has: a module-level import (plan.build reads the kinds) and
    one inside a function (release.cli imports release.run when it runs)."""
    edges = import_graph()
    assert "plan.kinds" in edges["plan.build"]
    assert "release.run" in edges["release.cli"]


def _package(tmp_path: Path, files: dict[str, str]) -> dict[str, set[str]]:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    for name, source in files.items():
        (tmp_path / "pkg" / f"{name}.py").write_text(source)
    return import_graph(tmp_path, ("pkg",))


def test_a_circle_through_an_import_inside_a_function_is_found(tmp_path):
    edges = _package(tmp_path, {
        "a": "from pkg.b import B\n",
        "b": "B = 1\n\ndef late():\n    from pkg import c\n    return c\n",
        "c": "import pkg.a\n",
        "d": "from pkg import a\n"})
    assert circles(edges) == [frozenset({"pkg.a", "pkg.b", "pkg.c"})]


def test_a_re_export_by_module_getattr_counts_as_an_import(tmp_path):
    edges = _package(tmp_path, {
        "model": ("def __getattr__(name):\n    from pkg.kinds import SPECS\n"
                  "    return SPECS[name]\n"),
        "kinds": "from pkg.model import Base\nSPECS = {}\n",
        "named": "import importlib\n\ndef f():\n    return importlib.import_module('pkg.kinds')\n",
        "kinds2": "from pkg import named\n"})
    assert "pkg.kinds" in edges["pkg.named"]
    assert circles(edges) == [frozenset({"pkg.kinds", "pkg.model"})]


def test_an_import_for_type_checking_only_is_left_out(tmp_path):
    edges = _package(tmp_path, {
        "low": ("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
                "    from pkg.high import High\n"),
        "high": "from pkg.low import x\n"})
    assert edges["pkg.low"] == set()
    assert circles(edges) == []
