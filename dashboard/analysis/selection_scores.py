"""The candidates' scores of a selection: numbers typed in, a small score file, or a
column's counts (``column_scores``, the cached wrapper the page calls).
"""

from __future__ import annotations

import csv
import io
import math
import re

import numpy as np
import pandas as pd
import streamlit as st
from numpy.typing import NDArray

from dashboard.data import true_answers
from engine.queries import Contribution

MIN_CANDIDATES = 2
MAX_CANDIDATES = 200
MAX_SCORE_FILE_BYTES = 100_000


#: Scores are kept within ±MAX_SCORE: beyond, the spread of the scores and the noise scales
#: that the curves sweep overflow float64 (±1e308 did). Scaling every score and the
#: sensitivity by one factor leaves the selection probabilities unchanged.
MAX_SCORE = 1e15
#: A number with a decimal comma as the uploader reads it: 1,5 · -0,25 · 1.234,5 · 1 234,5.
_DECIMAL_COMMA = re.compile(r"[+-]?(?:\d{1,3}(?:[. \u00a0\u202f']\d{3})+|\d+),\d+")
_COMMA_NO_SPACE = re.compile(r",\S")
_COMMA_SPACE = re.compile(r",\s")


def _read_number(token: str, *, decimal_comma: bool) -> float:
    """One typed number; with ``decimal_comma`` a comma is the decimal mark (1,5 = 1.5)."""
    if decimal_comma and _DECIMAL_COMMA.fullmatch(token):
        token = re.sub(r"[. \u00a0\u202f']", "", token).replace(",", ".")
    return float(token)


def parse_numbers(text: str, *, what: str = "scores", minimum: int = MIN_CANDIDATES,
                  maximum: int = MAX_CANDIDATES,
                  largest: float | None = MAX_SCORE) -> NDArray[np.float64]:
    """Typed numbers → a float array; ValueError says what to fix.

    Numbers are separated by commas (0, 2, 4.5), or by semicolons, and then a comma is a
    decimal comma (1,5; 2,5), as the uploader reads a semicolon-separated file. Commas with
    and without a space after them in one text (1,5, 2,5) are refused: they may be decimal
    commas. ``largest`` bounds the size of each number (None: no bound).
    """
    if not isinstance(text, str):
        raise TypeError(f"{what} must be text, got {type(text).__name__}")
    decimal_comma = ";" in text
    if not decimal_comma and _COMMA_SPACE.search(text) and _COMMA_NO_SPACE.search(text):
        raise ValueError(f"some commas in the {what} have a space after them and some do not, "
                         "so they may be decimal commas: separate the numbers with semicolons "
                         "to use decimal commas (1,5; 2,5; 3,5), or write decimals with a "
                         "point (1.5, 2.5, 3.5)")
    tokens = [t.strip() for t in text.split(";" if decimal_comma else ",")]
    tokens = [t for t in tokens if t]
    values = []
    for position, token in enumerate(tokens, 1):
        try:
            value = _read_number(token, decimal_comma=decimal_comma)
        except ValueError:
            example = "0; 2,5; 4; 6" if decimal_comma else "0, 2.5, 4, 6"
            raise ValueError(f"{token[:30]!r} is not a number: type {what} as numbers "
                             f"separated by commas, e.g. {example}") from None
        if not math.isfinite(value):
            raise ValueError(f"{token[:30]!r} is not a finite number: {what} must be "
                             "ordinary numbers")
        if largest is not None and abs(value) > largest:
            raise ValueError(_too_large(what, f"{token[:30]!r} (number {position})", largest))
        values.append(value)
    given = f"{len(values)} {what if len(values) != 1 else what.removesuffix('s')} given"
    if len(values) < minimum:
        raise ValueError(f"{given}: type at least {minimum}, separated by commas")
    if len(values) > maximum:
        raise ValueError(f"{given}, more than the {maximum} this page handles: keep at most "
                         f"{maximum}")
    return np.array(values, dtype=np.float64)


def _too_large(what: str, which: str, largest: float) -> str:
    return (f"the {what.removesuffix('s')} {which} is too large: keep {what} between "
            f"-{largest:g} and {largest:g}. Divide every score and the sensitivity by the same "
            "number (e.g. 1,000): the chances of each pick do not change")


def parse_score_file(data: bytes) -> tuple[tuple[str, ...], NDArray[np.float64]]:
    """A tiny CSV of scores: one number per line, or ``label,score``; an optional header line.
    In a file separated by semicolons or tabs, a comma is a decimal comma (``a;1,5``).

    Returns (labels, scores); labels are ``#1, #2, …`` when the file has none. Raises
    ValueError naming the line that is wrong.
    """
    if len(data) > MAX_SCORE_FILE_BYTES:
        raise ValueError(f"the score file is {len(data):,} bytes; keep it under "
                         f"{MAX_SCORE_FILE_BYTES:,} (one score per line)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError("the score file is not UTF-8 text: save it as a UTF-8 CSV") from None
    sample = text[:2000]
    # On a tie, not the comma: in "a;1,5" the comma is a decimal comma.
    delimiter = max((";", "\t", ","), key=sample.count)
    labels: list[str] = []
    scores: list[float] = []
    rows = [(i, r) for i, r in enumerate(csv.reader(io.StringIO(text), delimiter=delimiter), 1)
            if any(cell.strip() for cell in r)]
    for position, (line, row) in enumerate(rows):
        cells = [c.strip() for c in row]
        if len(cells) > 2:
            raise ValueError(f"line {line} of the score file has {len(cells)} fields: give "
                             "one score per line, or a label and a score")
        try:
            value = _read_number(cells[-1], decimal_comma=delimiter != ",")
        except ValueError:
            if position == 0:
                continue  # a header line
            raise ValueError(f"line {line} of the score file: {cells[-1][:30]!r} is "
                             "not a number") from None
        if not math.isfinite(value):
            raise ValueError(f"line {line} of the score file: the score must be finite")
        if abs(value) > MAX_SCORE:
            raise ValueError(_too_large("scores", f"on line {line} of the score file",
                                        MAX_SCORE))
        scores.append(value)
        labels.append(cells[0] if len(cells) == 2 else "")
    if not MIN_CANDIDATES <= len(scores) <= MAX_CANDIDATES:
        raise ValueError(f"the score file holds {len(scores)} score(s): give between "
                         f"{MIN_CANDIDATES} and {MAX_CANDIDATES}")
    return numbered_labels(len(scores), labels), np.array(scores, dtype=np.float64)


def numbered_labels(count: int, given: list[str] | None = None) -> tuple[str, ...]:
    """Candidate labels: the given ones, with ``#i`` where a label is missing or repeated."""
    given = given or [""] * count
    seen: set[str] = set()
    out = []
    for i, label in enumerate(given, 1):
        label = label if label and label not in seen else f"#{i}"
        seen.add(label)
        out.append(label)
    return tuple(out)


def category_counts(frame: pd.DataFrame, column: str,
                    categories: tuple[str, ...] | None,
                    contribution: Contribution | None = None
                    ) -> tuple[tuple[str, ...], NDArray, int]:
    """(labels, counts, missing rows) of a categorical column, most common first.

    Every declared category is a candidate, empty ones included (dropping them would reveal
    that nobody has that value). Counts change by 1 in one category when a row is added or
    removed, so the score vector has sensitivity 1 and is monotonic.
    """
    answer = true_answers.histogram(frame, column, categories=categories, contribution=contribution)
    counts = np.asarray(answer.true_value, dtype=np.float64)
    order = np.argsort(-counts, kind="stable")
    labels = tuple(answer.labels[i] for i in order)
    return labels, counts[order], answer.missing_rows


@st.cache_data(show_spinner=False, max_entries=32)
def column_scores(_frame: pd.DataFrame, dataset_key: str, column: str,
                  categories: tuple[str, ...] | None,
                  contribution: Contribution | None = None
                  ) -> tuple[tuple[str, ...], tuple, int]:
    """(labels, counts, missing rows) of a categorical column; raises ValueError/TypeError."""
    labels, counts, missing = category_counts(_frame, column, categories, contribution)
    return labels, tuple(float(c) for c in counts), missing
