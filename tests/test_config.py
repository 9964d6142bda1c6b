"""The Streamlit configuration: security settings on, usage statistics off, and an upload
limit that matches the limit the code checks again."""

from __future__ import annotations

import tomllib

from dashboard.datasets import MAX_UPLOAD_MB
from tests.conftest import ROOT

CONFIG = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())


def test_upload_limit_matches_the_code():
    assert CONFIG["server"]["maxUploadSize"] == MAX_UPLOAD_MB


def test_security_settings():
    assert CONFIG["server"]["enableXsrfProtection"] is True
    assert CONFIG["browser"]["gatherUsageStats"] is False
    # users get a short message, never a traceback
    assert CONFIG["client"]["showErrorDetails"] == "none"


def test_no_html_rendering_anywhere():
    """No page renders raw HTML, so nothing from a user's file can become markup."""
    sources = [*ROOT.glob("app.py"), *(ROOT / "app_pages").glob("*.py"),
               *(ROOT / "dashboard").rglob("*.py")]
    assert sources
    for path in sources:
        text = path.read_text()
        assert "unsafe_allow_html=True" not in text, path
        assert "st.html(" not in text, path
