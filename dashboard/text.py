"""Safe display of text that came from a user's file: column names, labels, file names.

Streamlit renders markdown (and some HTML) in labels and messages; these helpers neutralise it.
"""

from __future__ import annotations

import re

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:=&@^])")


def plain(text: object, *, limit: int = 200) -> str:
    """``text`` escaped so Streamlit's markdown shows it literally, shortened to ``limit`` chars."""
    s = str(text).replace("\r", " ").replace("\n", " ")
    s = "".join(ch for ch in s if ch.isprintable())
    if len(s) > limit:
        s = s[: limit - 1] + "…"
    return _MARKDOWN_SPECIAL.sub(r"\\\1", s)
