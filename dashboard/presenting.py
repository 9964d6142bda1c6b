"""Presentation mode (issue 35): for a projector, larger text and charts and none of the
technical panels; a sidebar toggle, and ``?present=True`` in a URL to open a page that way.

The look is CSS sent with the page (no request leaves the server); pages skip their technical
panels (plan, bounds, audit) when :func:`on` says so.
"""

from __future__ import annotations

import streamlit as st

from dashboard import state

KEY = "present"

#: What presentation mode changes: text and headings larger, captions (the technical notes)
#: and tables hidden. Selectors are Streamlit's test ids.
STYLE = """
<style>
[data-testid="stMain"] [data-testid="stMarkdownContainer"] p,
[data-testid="stMain"] [data-testid="stMarkdownContainer"] li { font-size: 1.45rem; }
[data-testid="stMain"] h1 { font-size: 3.2rem; }
[data-testid="stMain"] [data-testid="stCaptionContainer"] { display: none; }
[data-testid="stMain"] [data-testid="stExpander"] { display: none; }
[data-testid="stMain"] [data-testid="stDataFrame"] { display: none; }
</style>
"""


def _parse(raw: str) -> bool:
    return raw.strip().lower() in ("true", "1", "yes", "on")


def toggle() -> bool:
    """The sidebar's toggle (remembered, mirrored in the URL); sends the style when on."""
    state.remembered(KEY, False, parse=_parse)
    presenting = st.toggle("Presentation mode", key=KEY,
                           help="For a projector: larger text and charts; the technical notes "
                                "and panels are hidden. A link with ?present=True opens a page "
                                "this way.")
    state.remember(KEY)
    if presenting:
        st.html(STYLE)
    return bool(presenting)


def on() -> bool:
    """Whether this session presents (pages leave out their technical panels)."""
    return bool(st.session_state.get(KEY, False))
