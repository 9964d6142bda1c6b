"""Start the dashboard: ``python serve.py run app.py [streamlit options]`` is ``streamlit run
app.py [options]`` with the modules every session's first page needs imported before the
server listens.

Streamlit imports a page's modules in the first script run that needs them, so without this
the first visitor after a start waits for pandas, DuckDB, dpcore and the dashboard (about
2 CPU seconds, issue 20) on top of the page itself; a later session finds them in
``sys.modules``. Imported here, they cost the start instead of the first page. What only some
pages or a release need (OpenDP, scipy.stats, Spark, the learning code) stays lazy: those
pages import it when they run.

Two one-time costs of Streamlit's own are paid here too (issue 35 item 5: together 0.4 to 0.7 s
of the first visitor's first run on a loaded machine, against 0.03 s for the next session):
the emoji catalogue that ``st.set_page_config(page_icon="🔒")`` checks the icon against, and
``inspect``'s map of loaded modules to their files, which Streamlit's first element in a
process builds (``env_util.is_repl`` calls ``inspect.stack()``) for about 1,500 modules.
"""

from __future__ import annotations

import importlib
import inspect
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
              "dashboard.presenting", "dashboard.charts.welcome", "streamlit.emojis")


def preload() -> None:
    for name in FIRST_PAGE:
        importlib.import_module(name)
    # inspect's module-to-file map, made now for every module above; the first run's
    # inspect.stack() then maps only what it imports itself
    inspect.stack()


def main(argv: Sequence[str]) -> int:
    preload()
    from streamlit.web import cli

    return cli.main(args=list(argv), prog_name="streamlit")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
