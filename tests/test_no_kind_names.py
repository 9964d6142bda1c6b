"""No dashboard or page code branches on a mechanism's kind name: it reads the kind's spec.

A string literal in dashboard/ or app_pages/ that is a kind of the catalogue ("gaussian"), or a
piece of one that code tests with ``in`` ("bounded", "clamped"), is a branch on the kind
that the next mechanism would fall through. What is left is named here, with why.
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
    ("release/run.py", "gaussian"),          # partition selection: make_gaussian_threshold
    ("plan/model.py", "gaussian"),           # a threshold's Gaussian noise is set by ρ
    ("plan/parts.py", "gaussian"),           # the threshold's L2 sensitivity
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
