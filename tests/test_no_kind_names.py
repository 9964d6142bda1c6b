"""No dashboard or page code branches on a mechanism's kind name: it reads the kind's spec.

A string literal in dashboard/ or app_pages/ that is a kind of the catalogue ("gaussian"), or a
piece of one that code tests with ``in`` ("bounded", "clamped"), is a branch on the kind
that the next mechanism would fall through. So is a query kind's name compared with, or held
in a list of kinds (a module-level tuple, set, list or dict's keys, or a table by kind
anywhere): the next kind is missing from it. What is left is named here, with why.
"""

from __future__ import annotations

import ast
import re

from dpcore.mechanisms import CATALOGUE
from tests.conftest import ROOT

#: (file, name): names that are a page's own choices, not catalogue lookups.
ALLOWED = {
    # report noisy max's noise distributions (laplace, exponential, gumbel): selection's own
    # names, which happen to share one with a kind
    ("dashboard/analysis/selection_choices.py", "laplace"),
    ("dashboard/analysis/selection_downloads.py", "laplace"),
    ("dashboard/charts/selection.py", "laplace"),
    ("app_pages/selection.py", "laplace"),
    ("dashboard/analysis/audit.py", "laplace"),  # the Selection audit labels its noises
    # naive Bayes' two noise options (dpcore.learning's own choice of noise)
    ("dashboard/analysis/learning.py", "laplace"),
    ("dashboard/analysis/learning.py", "bounded_laplace"),
    ("app_pages/learning.py", "laplace"),
    # partition selection's noises on the Groups page (dpcore.partition.PARTITION_NOISES)
    ("dashboard/analysis/groups.py", "laplace"),
    ("dashboard/analysis/groups.py", "gaussian"),
}
#: release/ and plan/ read a mechanism's spec (``MechanismSpec.release``: the OpenDP
#: constructor, what it certifies, the PipelineDP noise) and never its kind. What is left:
RELEASE_ALLOWED = {
    # report noisy max's noise (laplace refused by name) and partition selection's noises
    ("release/measurements.py", "laplace"), ("release/measurements.py", "gaussian"),
    ("plan/fields.py", "gaussian"),          # a threshold's Gaussian noise is set by ρ
    # the threshold's L2 sensitivity, and its OpenDP constructor (make_gaussian_threshold)
    ("plan/parts.py", "gaussian"),
    # the exported programs run without the app (no catalogue): they read the plan's noise
    # names to pick OpenDP's or PipelineDP's constructor (release/templates, linted Python)
    ("release/templates/opendp_program.py", "laplace"),
    ("release/templates/opendp_program.py", "gaussian"),
    ("release/templates/spark_program.py", "laplace"),
    # an example plan names its mechanisms: data, not a branch
    ("plan/examples.py", "gaussian"), ("plan/examples.py", "geometric"),
    ("plan/examples.py", "laplace"),
}
#: The data loading code (split by another change) holds no mechanism names to check, but
#: its column names ("capital-gain" ...) are not kinds either way.
SKIPPED = {"dashboard/datasets.py"}


def _pieces() -> set[str]:
    """Every kind and every word of one ("bounded" of "bounded_laplace")."""
    words = {w for kind in CATALOGUE for w in kind.split("_") if len(w) > 3}
    return set(CATALOGUE) | words


def kind_names_in(source: str) -> set[str]:
    """The string constants in ``source`` that are a kind or a word of one (docstrings and
    sentences are longer text and do not count)."""
    pieces = _pieces()
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            value = node.value.strip().lower()
            if value in pieces:
                found.add(value)
    return found


def test_the_checker_finds_a_branch_on_a_kind():
    assert kind_names_in('if choice.mechanism == "gaussian": pass') == {"gaussian"}
    assert kind_names_in('bounded = "bounded" in kind') == {"bounded"}
    assert kind_names_in('x = f"{k}"\n"""Gaussian noise is never pure DP."""') == set()


def test_no_dashboard_or_page_code_names_a_kind():
    found = set()
    for folder in ("dashboard", "app_pages"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            if name in SKIPPED:
                continue
            found |= {(name, kind) for kind in kind_names_in(path.read_text())}
    assert found <= ALLOWED, sorted(found - ALLOWED)
    assert all(re.fullmatch(r"[a-z_]+", kind) for _, kind in ALLOWED)


def test_no_release_or_plan_code_names_a_kind():
    """An unknown kind is refused by its missing recipe, never drawn as another: the code
    asks the spec how to release it (tests/release/test_release_measurements.py plants one)."""
    found = set()
    for folder in ("release", "plan"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            found |= {(name, kind) for kind in kind_names_in(path.read_text())}
    assert found <= RELEASE_ALLOWED, sorted(found - RELEASE_ALLOWED)


# --------------------------------------------------------------------------------------------
# Query kinds (plan.kinds): what a page decides by a query's kind is the kind's attribute.

#: (file, name): comparisons with a query kind's name still in the page layer, each with why.
#: Issue 20 moves them onto the kinds (plan/kinds/base.py); do not add to this list.
QUERY_ALLOWED = {
    # Choose epsilon's "Query" radio: the Selection page as a source (a page, not a kind)
    ("app_pages/choose_epsilon.py", "selection"),
    ("dashboard/analysis/epsilon_use.py", "selection"),
}


def query_kind_comparisons(source: str) -> set[str]:
    """The query kinds' names (``plan.kinds.KINDS``) that ``source`` compares with (``==``,
    ``!=``, ``in`` a literal tuple, list or set): a branch on a query's kind."""
    from plan.kinds import KINDS

    found = set()
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        for side in (node.left, *node.comparators):
            items = side.elts if isinstance(side, ast.Tuple | ast.List | ast.Set) else [side]
            found |= {item.value for item in items if isinstance(item, ast.Constant)
                      and isinstance(item.value, str) and item.value in KINDS}
    return found


def test_the_checker_finds_a_branch_on_a_query_kind():
    assert query_kind_comparisons('x = q.kind in ("sum", "mean", "other")') == {"sum", "mean"}
    assert query_kind_comparisons('if query != "histogram": pass') == {"histogram"}
    assert query_kind_comparisons('"crosstab" == k or k in {"group_by"}') == {"crosstab",
                                                                               "group_by"}
    # a kind's name as data or words is no branch
    assert query_kind_comparisons('w = {"sum": "sum of x"}; f(query="mean")') == set()


def test_no_dashboard_or_page_code_branches_on_a_query_kind():
    """Choose epsilon and the other pages ask the kind (``QueryKind.per_cell``,
    ``made_of_parts``, ``relative_error``) instead of comparing its name."""
    found = set()
    for folder in ("dashboard", "app_pages"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            found |= {(name, kind) for kind in query_kind_comparisons(path.read_text())}
    assert found <= QUERY_ALLOWED, sorted(found - QUERY_ALLOWED)


# --------------------------------------------------------------------------------------------
# Lists of query kinds: a module-level tuple, set, list or dict keyed by kinds (``BOUNDED_QUERIES
# = ("sum", "mean", "variance")``), or a table of two or more kinds anywhere (the noun dict in
# ``describe()``), is a kind name the next kind must be added to.

#: (file, holder, kind): names that are not query kinds, though they are spelled as one.
HELD_ALLOWED = {
    # pages, by their URL path or source, two of which share a kind's name
    ("dashboard/analysis/release_plan.py", "PAGES", "quantiles"),
    ("dashboard/analysis/release_plan.py", "PAGES", "selection"),
    ("dashboard/analysis/release_plan.py", "PAGES", "synthetic"),
    # Choose epsilon's "Query" radio and the pages "use this ε" opens (the Selection page)
    ("dashboard/analysis/epsilon_question.py", "SOURCES", "selection"),
    ("dashboard/analysis/epsilon_use.py", "QUERY_PAGES", "selection"),
    ("dashboard/teaching.py", "DEFAULTS", "selection"),
    ("dashboard/teaching.py", "LOOK_AT", "selection"),
    # the sign-in's People page (who holds which role), which shares the name of the kind
    # "people" (the number of people)
    ("dashboard/signin.py", "PAGE_NEEDS", "people"),
    ("dashboard/signin.py", "SIGNED_IN_ONLY", "people"),
}


def _held(node: ast.AST, kinds: set[str]) -> set[str]:
    """The kinds held as elements of a tuple, set or list, or as a dict's keys, in ``node``."""
    found = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Tuple | ast.Set | ast.List):
            items = sub.elts
        elif isinstance(sub, ast.Dict):
            items = [key for key in sub.keys if key is not None]
        else:
            continue
        found |= {item.value for item in items if isinstance(item, ast.Constant)
                  and isinstance(item.value, str) and item.value in kinds}
    return found


def query_kinds_held(source: str) -> set[tuple[str, str]]:
    """(holder, kind) for each query kind (``plan.kinds.KINDS``) that ``source`` holds in a
    module-level tuple, set, list or dict's keys (holder: the name assigned; ``__all__`` and
    unpacking ``A, B = "a", "b"`` are not lists), or in a literal holding two or more kinds
    anywhere else (holder: the enclosing function, ``Class.method()``)."""
    from plan.kinds import KINDS

    kinds = set(KINDS)
    found: set[tuple[str, str]] = set()
    tree = ast.parse(source)
    for statement in tree.body:
        if isinstance(statement, ast.Assign | ast.AnnAssign) and statement.value is not None:
            targets = (statement.targets if isinstance(statement, ast.Assign)
                       else [statement.target])
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            if names and "__all__" not in names:
                found |= {(names[0], kind) for kind in _held(statement.value, kinds)}

    def visit(node: ast.AST, scope: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                visit(child, f"{scope}{child.name}()")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{scope}{child.name}.")
            elif scope and isinstance(child, ast.Tuple | ast.Set | ast.List | ast.Dict):
                held = _held(child, kinds)
                if len(held) >= 2:
                    found.update((scope, kind) for kind in held)
                else:
                    visit(child, scope)
            else:
                visit(child, scope)

    visit(tree, "")
    return found


def test_the_checker_finds_a_list_of_query_kinds():
    assert query_kinds_held('BOUNDED = ("sum", "mean")') == {("BOUNDED", "sum"),
                                                             ("BOUNDED", "mean")}
    assert query_kinds_held('PARTS = {"variance"}') == {("PARTS", "variance")}
    assert query_kinds_held('LABELS: dict = {"count": "Count of rows", "x": 1}') == {
        ("LABELS", "count")}
    assert query_kinds_held('NESTED = {("selection", 1): "look"}') == {("NESTED",
                                                                        "selection")}
    planted = ("class Spec:\n"
               "    def describe(self):\n"
               "        return {'sum': 'sum', 'histogram': 'counts'}[self.query]\n"
               "def offered():\n"
               "    return ['count'] + ['mean', 'quantiles']\n")
    assert query_kinds_held(planted) == {("Spec.describe()", "sum"),
                                         ("Spec.describe()", "histogram"),
                                         ("offered()", "mean"), ("offered()", "quantiles")}
    # not lists of kinds: names exported, values unpacked, a kind's name as a value, one
    # kind's name in a function (a column called "count"), other words
    assert query_kinds_held('__all__ = ["count", "histogram"]') == set()
    assert query_kinds_held('RATIO, SPREAD = "mean", "variance"') == set()
    assert query_kinds_held('WORDS = {"a": "sum", "b": "mean"}') == set()
    assert query_kinds_held('def f():\n    return ["count", "other"]') == set()
    assert query_kinds_held('OPTIONS = ("median", "total")') == set()


def test_no_dashboard_or_page_code_holds_a_list_of_query_kinds():
    """A new list of kinds on the page side fails here; the page asks the kind instead."""
    found = set()
    for folder in ("dashboard", "app_pages"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            found |= {(name, holder, kind)
                      for holder, kind in query_kinds_held(path.read_text())}
    allowed = HELD_ALLOWED
    assert found <= allowed, sorted(found - allowed)


def test_no_program_template_branches_on_a_query_kind():
    """The exported programs' templates ask a query's kind for its snippet (``snippet_of``,
    a kind's own function registered under its name) and read what its record declares;
    they never compare a kind's name, so a new kind is its own snippet in each template."""
    found = set()
    for path in sorted((ROOT / "release" / "templates").glob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        found |= {(name, kind) for kind in query_kind_comparisons(path.read_text())}
    assert found == set(), sorted(found)
