"""Safe display of text that came from a user's file: column names, labels, file names.

Streamlit renders markdown in messages, captions, headings, labels, help and radio options;
``plain`` makes such text show literally there. Widgets that show plain text (the options
of a selectbox or multiselect, a dataframe) take the raw text instead.
"""

from __future__ import annotations

import re

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:=&@^])")

#: Invisible, and it splits what Streamlit rewrites even when escaped: "--" into a dash,
#: "http://…", "www.…" and "a@b" into links, ":material/…:" into an icon.
WORD_JOINER = "\u2060"
_REWRITTEN = re.compile(r"(?<=\\-)(?=\\-)|(?<=\\:)(?=\S)|(?<=\\@)|(?<=www)(?=\\\.)",
                        re.IGNORECASE)


def plain(text: object, *, limit: int = 200) -> str:
    """``text`` escaped so Streamlit's markdown shows it literally, shortened to ``limit`` chars.

    Every markdown character gets a backslash, and an invisible word joiner breaks up the
    patterns Streamlit rewrites despite the backslash (dashes, autolinks, icons).
    """
    s = str(text).replace("\r", " ").replace("\n", " ")
    s = "".join(ch for ch in s if ch.isprintable())
    if len(s) > limit:
        s = s[: limit - 1] + "…"
    return _REWRITTEN.sub(WORD_JOINER, _MARKDOWN_SPECIAL.sub(r"\\\1", s))
