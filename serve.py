"""Start the dashboard: ``python serve.py run app.py [streamlit options]`` is ``streamlit run
app.py [options]`` with the modules every session's first page needs imported before the
server listens.

Streamlit imports a page's modules in the first script run that needs them, so without this
the first visitor after a start waits for pandas, DuckDB, dpcore and the dashboard (about
2 CPU seconds, issue 20) on top of the page itself; a later session finds them in
``sys.modules``. Imported here, they cost the start instead of the first page. What only some
pages or a release need (OpenDP, scipy.stats, Spark, the learning code) stays lazy: those
pages import it when they run.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

#: What app.py (its sidebar) and the Welcome page import on a session's first run.
#: tests/test_imports.py checks that the first run imports none of these packages' modules.
FIRST_PAGE = ("pandas", "pyarrow.pandas_compat", "duckdb", "engine", "engine.duckdb_backend",
              "engine.spark_backend", "dashboard.datasets", "dashboard.person",
              "dashboard.plan_store", "dashboard.plan_conflict", "dashboard.signin",
              "dashboard.state", "dashboard.data.folder", "dashboard.data.relation",
              "dashboard.text", "dashboard.analysis.welcome", "release.ledger",
              "dashboard.declared", "dashboard.workspace", "dashboard.teaching",
              "dashboard.presenting", "dashboard.charts.welcome")


def preload() -> None:
    for name in FIRST_PAGE:
        importlib.import_module(name)


def main(argv: Sequence[str]) -> int:
    preload()
    from streamlit.web import cli

    return cli.main(args=list(argv), prog_name="streamlit")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
