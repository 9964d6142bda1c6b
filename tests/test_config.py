"""The Streamlit configuration: security settings on, usage statistics off, and an upload
limit that matches the limit the code checks again."""

from __future__ import annotations

import ast
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


def test_the_start_looks_up_no_address():
    """Without browser.serverAddress, Streamlit's welcome message asks checkip.amazonaws.com
    for the external address (tests/test_offline_start.py starts the server and checks; this
    is its fast-tier guard)."""
    from pathlib import Path

    from streamlit.web import bootstrap

    assert CONFIG["browser"]["serverAddress"] == "localhost"
    assert 'is_manually_set("browser.serverAddress")' in Path(bootstrap.__file__).read_text(), \
        "Streamlit no longer skips the address look-up for a set browser.serverAddress"


#: The raw HTML allowed, and why: presentation mode's style sheet and the script that adds the
#: charts' SVG download button (issue 35), module constants (checked below): nothing from a
#: user's file or a widget reaches them.
HTML_ALLOWED = {"dashboard/presenting.py": {
    "STYLE": "st.html(STYLE)",
    "SVG_BUTTON": "st.html(SVG_BUTTON, unsafe_allow_javascript=True)"}}


def test_no_html_rendering_anywhere():
    """No page renders raw HTML, so nothing from a user's file can become markup."""
    sources = [*ROOT.glob("app.py"), *(ROOT / "app_pages").glob("*.py"),
               *(ROOT / "dashboard").rglob("*.py")]
    assert sources
    for path in sources:
        text = path.read_text()
        assert "unsafe_allow_html=True" not in text, path
        allowed = HTML_ALLOWED.get(path.relative_to(ROOT).as_posix())
        if allowed is None:
            assert "st.html(" not in text, path
            continue
        tree = ast.parse(text)
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
                 and ast.unparse(n.func) == "st.html"]
        assert calls and {ast.unparse(c) for c in calls} <= set(allowed.values()), path
        for name in allowed:
            [constant] = [n for n in tree.body if isinstance(n, ast.Assign)
                          and [ast.unparse(t) for t in n.targets] == [name]]
            assert isinstance(constant.value, ast.Constant) and isinstance(
                constant.value.value, str), path


def test_page_icon_is_not_fetched_from_a_font_host():
    """A ":material/…:" page icon is loaded from fonts.gstatic.com on every page view; an
    emoji or a local file is not (the browser test checks every request)."""
    source = (ROOT / "app.py").read_text()
    call = source[source.index("st.set_page_config("):]
    call = call[: call.index(")\n")]
    assert "page_icon=" in call
    assert ":material/" not in call and "http" not in call, call
