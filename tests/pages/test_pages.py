"""AppTest smoke tests: every page runs with defaults and shows no exception."""

from __future__ import annotations

import pytest

from tests.conftest import PAGE_FILES


def test_all_pages_are_in_navigation():
    from tests.conftest import ROOT

    app_source = (ROOT / "app.py").read_text()
    for name in PAGE_FILES:
        assert f'"app_pages/{name}"' in app_source, f"{name} is not in st.navigation"


@pytest.mark.parametrize("page", PAGE_FILES)
def test_page_runs_with_defaults(app, page):
    at = app(page)
    assert not at.exception, [e.value for e in at.exception]
    assert at.title, f"{page} shows no title"


def test_sidebar_reminds_of_privacy_unit(app):
    at = app()
    captions = " ".join(c.value for c in at.sidebar.caption).replace("\\", "")  # as rendered
    assert "one row = one person" in captions
