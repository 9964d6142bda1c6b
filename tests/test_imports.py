"""The first page loads without the slow modules: scipy.stats (and scipy.optimize) are imported
only by the functions that use them, and OpenDP only by a release, so the Welcome page shows
sooner (issue 20).

Each check runs in a fresh interpreter: this process has long imported everything.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys

from tests.conftest import ROOT

#: Slow to import, and not needed until a page computes something with them.
LAZY = ("scipy.stats", "scipy.optimize")
#: Not imported by the Welcome page's first run either: OpenDP (with polars and scikit-learn,
#: about 2 CPU seconds) is for a release, not for opening the ledger's folder or the saved plans.
FIRST_RUN_LAZY = (*LAZY, "opendp", "polars", "sklearn")


def _loaded_after(code: str, lazy: tuple[str, ...] = LAZY, env: dict | None = None) -> set[str]:
    """Which of ``lazy`` a fresh Python has loaded after running ``code`` in the repository."""
    probe = f"{code}\nimport sys\nprint(*[m for m in {lazy!r} if m in sys.modules])"
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, check=False,
                          env=None if env is None else {**os.environ, **env})
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


def _imports_of(path) -> list[str]:
    """The modules a script imports at module level (``from a import b`` as a.b or a)."""
    names = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.append(node.module)
            names.extend(f"{node.module}.{alias.name}" for alias in node.names
                         if (ROOT / node.module.replace(".", "/") / f"{alias.name}.py").exists())
    return names


def test_dpcore_imports_without_scipy_stats_or_optimize():
    assert _loaded_after("import dpcore") == set()


def test_the_welcome_pages_modules_import_without_scipy_stats_or_optimize():
    modules = _imports_of(ROOT / "app.py") + _imports_of(ROOT / "app_pages" / "home.py")
    assert "dashboard.analysis.welcome" in modules   # the page's own module is among them
    assert _loaded_after("\n".join(f"import {m}" for m in modules)) == set()


def test_the_welcome_pages_first_run_imports_none_of_the_slow_modules(tmp_path):
    """The first script run as a server does it (sidebar, saved plans, the page), not only the
    modules' own imports: a function it calls may import a slow module."""
    code = ("from streamlit.testing.v1 import AppTest\n"
            f"at = AppTest.from_file({str(ROOT / 'app.py')!r}, default_timeout=120)\n"
            "at.run()\n"
            "assert not at.exception, [e.value for e in at.exception]\n"
            "assert 'What an attacker can learn' in ' '.join(m.value for m in at.markdown)")
    env = {"EPSILON_LAB_PLANS": str(tmp_path / "plans.sqlite"),
           "EPSILON_LAB_LEDGER": str(tmp_path / "ledger.sqlite")}
    assert _loaded_after(code, FIRST_RUN_LAZY, env) == set()


def test_the_server_imports_the_first_pages_modules_before_it_listens(tmp_path):
    """``serve.py`` (what ``dev.py run`` starts) imports what a session's first run needs, and
    nothing slow it does not: after its preload the Welcome page's first run imports no module
    of the project, pandas, DuckDB, numpy or scipy, and the slow modules stay unloaded."""
    packages = {"dpcore", "engine", "plan", "release", "dashboard", "pandas", "duckdb",
                "numpy", "scipy"}
    code = ("import serve\nserve.preload()\nimport sys\n"
            f"assert not [m for m in {FIRST_RUN_LAZY!r} if m in sys.modules]\n"
            "from streamlit.testing.v1 import AppTest\n"
            f"at = AppTest.from_file({str(ROOT / 'app.py')!r}, default_timeout=120)\n"
            "before = set(sys.modules)\n"
            "at.run()\n"
            "assert not at.exception, [e.value for e in at.exception]\n"
            f"new = [m for m in set(sys.modules) - before if m.split('.')[0] in {packages!r}]\n"
            "assert not new, sorted(new)")
    env = {"EPSILON_LAB_PLANS": str(tmp_path / "plans.sqlite"),
           "EPSILON_LAB_LEDGER": str(tmp_path / "ledger.sqlite")}
    assert _loaded_after(code, FIRST_RUN_LAZY, env) == set()


def test_the_server_pays_streamlits_own_first_run_costs_before_it_listens(tmp_path):
    """Issue 35 item 5: after ``serve.py``'s preload, the Welcome page's first run neither
    imports the emoji catalogue (``st.set_page_config``'s page icon is checked against it) nor
    maps the loaded modules to their files again for ``inspect.stack()`` (Streamlit's first
    element in a process calls it): each is counted, not timed."""
    code = ("import serve\nserve.preload()\nimport inspect, sys\n"
            "from streamlit.testing.v1 import AppTest\n"
            f"at = AppTest.from_file({str(ROOT / 'app.py')!r}, default_timeout=120)\n"
            "mapped = []\nabsfile = inspect.getabsfile\n"
            "inspect.getabsfile = lambda *a, **k: mapped.append(a) or absfile(*a, **k)\n"
            "before = set(sys.modules)\n"
            "at.run()\n"
            "assert not at.exception, [e.value for e in at.exception]\n"
            "new = set(sys.modules) - before\n"
            "assert 'streamlit.emojis' not in new, 'the emoji catalogue'\n"
            # only the modules the run imports itself (a few hundred at most), not all ~1,500
            "assert len(mapped) <= len(new) + 50, (len(mapped), len(new), len(sys.modules))")
    env = {"EPSILON_LAB_PLANS": str(tmp_path / "plans.sqlite"),
           "EPSILON_LAB_LEDGER": str(tmp_path / "ledger.sqlite")}
    assert _loaded_after(code, FIRST_RUN_LAZY, env) == set()


def test_opendp_is_imported_when_a_release_needs_it():
    """``release.measurements`` reads OpenDP on first use, with its contrib features on."""
    code = ("from release.measurements import alpha_fraction\n"
            "import sys\nassert 'opendp' not in sys.modules\n"
            "num, den = alpha_fraction(0.5)\nassert 2 * num == den > 0")   # contrib is on
    assert "opendp" in _loaded_after(code, ("opendp",))


def test_the_lazy_imports_still_work():
    """A function that needs scipy.stats imports it when called (the audit's bounds)."""
    code = ("import numpy as np\nfrom dpcore.audit import _clopper_pearson\n"
            "low, high = _clopper_pearson(np.array([0, 5, 10]), 10, 0.05)\n"
            "assert low[0] == 0.0 and high[2] == 1.0 and 0 < low[1] < 0.5 < high[1] < 1")
    assert "scipy.stats" in _loaded_after(code)
