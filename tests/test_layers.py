"""The import graph: layers import only downwards.

DESIGN.md's layers — dpcore (pure numpy), engine (true answers, knows no DP), plan, release,
dashboard — with their arrows checked on the modules' own import statements (those at module
level, and those for type checking), and lazy imports inside functions never going up a
layer. No import circle between modules, counting the imports inside functions:
``tests/test_import_circles.py``.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from tests.conftest import ROOT
from tests.test_import_circles import imported

PACKAGES = ("dpcore", "engine", "plan", "release", "dashboard")
#: What each layer must never import (at module level).
FORBIDDEN = {
    "dpcore": {"engine", "plan", "release", "dashboard", "streamlit", "plotly", "duckdb",
               "pyspark", "opendp"},
    "engine": {"dpcore", "plan", "release", "dashboard", "streamlit", "plotly", "opendp"},
    "plan": {"release", "dashboard", "streamlit", "plotly", "opendp"},
    "release": {"dashboard", "streamlit", "plotly"},
}


def _modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


@functools.cache
def _tree(path: Path) -> ast.Module:
    """The parsed source of ``path``, parsed once for every check here (read-only)."""
    return ast.parse(path.read_text())


def _top_level_imports(path: Path, name: str, modules: dict[str, Path]) -> set[str]:
    """The project modules ``name`` imports at module level (``from a import b`` counts as
    a.b when that is a module, else a)."""
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    body = list(_tree(path).body)
    for node in list(body):   # imports for type checking are dependencies too
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            body.extend(node.body)
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            found |= imported(node, package, modules)
    return found


def graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _top_level_imports(path, name, modules) for name, path in modules.items()}


def test_each_layer_imports_only_what_it_may():
    wrong = []
    for name, imports in graph().items():
        layer = name.split(".")[0]
        for target in imports:
            if target.split(".")[0] in FORBIDDEN.get(layer, set()):
                wrong.append(f"{name} imports {target}")
    assert wrong == []


def test_no_two_classes_share_a_name():
    """A class name means one thing across the layers (the engine's CountRows is not the
    plan's Count; one PrivacyUnit, one Loss): re-exports and aliases are fine, a second
    ``class`` statement is not."""
    where: dict[str, list[str]] = {}
    for name, path in _modules().items():
        for node in _tree(path).body:
            if isinstance(node, ast.ClassDef):
                where.setdefault(node.name, []).append(name)
    assert {c: m for c, m in where.items() if len(m) > 1} == {}


def _every_import(path: Path) -> set[str]:
    """The top packages a module imports anywhere: at module level or lazily in a function."""
    found: set[str] = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_no_lazy_import_goes_up_a_layer():
    """A lazy import cannot make a cycle, but it is still an arrow: release/package.py read
    the attacker sentence from the dashboard inside a function (DESIGN: the dashboard uses the
    release, never the other way)."""
    wrong = sorted(f"{name} imports {target} (inside a function)"
                   for name, path in _modules().items()
                   for target in _every_import(path) & FORBIDDEN.get(name.split(".")[0], set()))
    assert wrong == []
