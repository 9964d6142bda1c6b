"""Shared pytest fixtures: the repository root and an AppTest factory for the app."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

PAGE_FILES = sorted(p.name for p in (ROOT / "app_pages").glob("*.py"))


@pytest.fixture
def app():
    """A fresh AppTest of app.py, run once with defaults; switch pages with ``goto``."""
    from streamlit import config
    from streamlit.testing.v1 import AppTest

    # Tests want the real error text; users get the redacted one from config.toml.
    config.set_option("client.showErrorDetails", "full")

    def make(page: str | None = None, timeout: float = 120):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        if page is not None:
            at.switch_page(f"app_pages/{page}")
            at.run()
        return at

    return make
