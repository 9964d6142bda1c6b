"""A corpus of hostile names (markdown links and images, raw HTML, LaTeX, emoji and icon
shortcodes, backticks, dashes, backslashes, autolinks, long and right-to-left text) and the
checks that a page shows each one literally: escaped where markdown is rendered, raw where a
widget shows plain text. Used by tests/test_hostile_names.py and the browser test."""

from __future__ import annotations

import json
import re
import string
from pathlib import Path

import numpy as np
import pandas as pd

#: Characters that are not shown as themselves in Streamlit's markdown unless escaped (any
#: ASCII punctuation may be escaped).
ACTIVE = set("\\`*_{}[]()#+-.!|<>~$:@&")
WORD_JOINER = "\u2060"   # invisible; breaks "--", "http://", "www.", ":icon:", "a@b"

CATEGORICAL = (
    "[link](http://evil.example)",
    '=HYPERLINK("http://evil.example")',
    "<b>bold</b><img src=x>",
    "patient_id",
)
NUMERIC = (
    "$x^2$ :smile: :material/home:",
    "`tick` a -- b \\ back",
    "![img](http://evil.example/i.png)",
    "www.evil.example me@evil.example " + "long " * 25 + "end",
    "שם העמודה مرحبا *star*",
)
LABELS = ("www.evil.example", ":red[red] :smile:", "*star* _under_", "# head", "a -- b",
          "שלום", "x\\y", "[a](http://evil.example)")
FILE_NAME = "<b>evil -- $x$ :smile: www.evil.example"   # no [ ] (a file pattern) or /
NUMERIC_FILE = "one_cell -- $x$ :smile:"   # a file with one numeric column only
SCHEMA_SOURCE = "[codebook](http://evil.example) <i>x</i> $y$ :smile:"
NAMES = (*CATEGORICAL, *NUMERIC, *LABELS, FILE_NAME, NUMERIC_FILE, SCHEMA_SOURCE)


def frame(rows: int = 240) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    columns = {name: rng.choice(LABELS, size=rows) for name in CATEGORICAL[:3]}
    columns["patient_id"] = rng.choice([f"p{i}" for i in range(60)], size=rows)
    columns |= {name: np.round(rng.uniform(0, 100, size=rows), 1) for name in NUMERIC}
    return pd.DataFrame(columns)


def write_folder(root: Path) -> tuple[str, str]:
    """Write the hostile datasets (one with a schema) into ``root``; return their choices in
    the sidebar: the full one and the one with a single numeric column."""
    frame()[[NUMERIC[0]]].to_parquet(root / f"{NUMERIC_FILE}.parquet", index=False)
    frame().to_parquet(root / f"{FILE_NAME}.parquet", index=False)
    (root / f"{FILE_NAME}.schema.json").write_text(json.dumps({
        "source": SCHEMA_SOURCE,
        "columns": {CATEGORICAL[0]: {"categories": list(LABELS), "source": SCHEMA_SOURCE}}}))
    return f"file:{FILE_NAME}.parquet", f"file:{NUMERIC_FILE}.parquet"


def _pattern(name: str) -> re.Pattern:
    """``name`` as it may appear in a source: any character may carry backslashes before it
    and a word joiner after it."""
    return re.compile("".join(rf"\\*{re.escape(c)}{WORD_JOINER}?" for c in name))


PATTERNS = {name: _pattern(name) for name in NAMES}


def markdown_problems(source: str) -> list[str]:
    """How each corpus name found in a markdown ``source`` would not be shown literally."""
    problems = []
    for name, pattern in PATTERNS.items():
        for match in pattern.finditer(source):
            shown = match.group()
            visible = re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", shown).replace(WORD_JOINER, "")
            if visible != name:
                problems.append(f"{name!r} shows as {visible!r} in {source!r}")
            raw = _unescaped(shown)
            if raw:
                problems.append(f"{name!r} has unescaped {raw!r} in {source!r}")
            text = re.sub(r"\\(.)", r"\1", shown)
            if re.search(r"--|://|www\.|@[^\u2060]|:[^\s\u2060]", text, flags=re.I):
                problems.append(f"{name!r} is not broken up (dashes, autolink or shortcode) "
                                f"in {source!r}")
    return problems


def _unescaped(shown: str) -> str:
    """The markdown-active characters of ``shown`` that no backslash escapes."""
    raw, i = [], 0
    while i < len(shown):
        if shown[i] == "\\" and i + 1 < len(shown) and shown[i + 1] in string.punctuation:
            i += 2
            continue
        if shown[i] in ACTIVE:
            raw.append(shown[i])
        i += 1
    return "".join(raw)


def plain_text_problems(option: str) -> list[str]:
    """How each corpus name found in a plain-text ``option`` is not its raw self."""
    return [f"{name!r} shown as {m.group()!r} in {option!r}"
            for name, pattern in PATTERNS.items()
            for m in pattern.finditer(option) if m.group() != name]
