"""A plain pandas/Python reference for the engine's queries, and random frames to test on.

Written from the documented semantics, not from the engine's code: counts by pandas
group-bys, sums with exact arithmetic (``fractions`` / ``math.fsum``), the contribution bounds
by sorting each person's rows in Python with ``hashlib.md5`` keys.
"""

from __future__ import annotations

import hashlib
import json
import math
from fractions import Fraction

import numpy as np
import pandas as pd

from engine.cells import cell_number  # the one reading's rule (issue 31)

#: Column names a CSV header may legally hold.
ODD = '"; drop table x; --'
QUOTED = 'naïve ☃ "quoted"'
SEMI = "a;b"
DOTTED = "b.c`x`"
PERSON = "Person id"
WHO = "who"
CODE = "code"
SMALL = "small"
LOG = "log-normal"
DECLARED = ("red", "green", "blue", "never used", "also empty")  # the last two: no rows
ROW_CATEGORIES = DECLARED
CODE_CATEGORIES = (0, 1, 2, 3, 4)                   # code 5 is outside


def random_frame(seed: int, rows: int = 300) -> pd.DataFrame:
    """Nulls, NaN, ±inf, huge and negative values, undeclared categories, odd names."""
    rng = np.random.default_rng(seed)
    # Multiples of 1/4 under 2^40: every clamped sum is exact in float64, in any order.
    dyadic = rng.integers(-2**20, 2**20, size=rows) / 4.0
    special = rng.choice([np.nan, np.inf, -np.inf, 1e300, -1e300, -0.0], size=rows)
    dyadic = np.where(rng.random(rows) < 0.15, special, dyadic)
    dyadic[rng.random(rows) < 0.05] = np.nan
    huge_ints = rng.integers(-2**62, 2**62, size=rows, dtype=np.int64)
    colours = rng.choice(["red", "green", "blue", "purple", "Red"], size=rows,
                         p=[0.4, 0.3, 0.2, 0.05, 0.05]).astype(object)
    colours[rng.random(rows) < 0.08] = None
    people = pd.array(rng.integers(0, rows // 4, size=rows), dtype="Int64")
    people[rng.random(rows) < 0.04] = pd.NA
    who = rng.choice(["ann", "bob", "ç\"'; --", "dee", "eve ☃"], size=rows).astype(object)
    who[rng.random(rows) < 0.04] = None
    return pd.DataFrame({
        ODD: dyadic,
        QUOTED: huge_ints,
        SEMI: pd.Categorical(colours, categories=["red", "green", "blue", "purple", "Red"]),
        DOTTED: pd.array(colours, dtype="str"),
        PERSON: people,
        WHO: pd.array(who, dtype="str"),
        CODE: rng.integers(0, 6, size=rows),
        SMALL: rng.integers(-5, 6, size=rows),
        "A": rng.integers(0, 10, size=rows),
        "a": rng.lognormal(3.0, 2.0, size=rows),
        LOG: rng.lognormal(0.0, 3.0, size=rows) * rng.choice([-1, 1], size=rows),
    })


def _missing(series: pd.Series) -> np.ndarray:
    return series.isna().to_numpy()


def _present_values(series: pd.Series) -> list:
    return [v for v, m in zip(series.tolist(), _missing(series), strict=True) if not m]


def clamp(value: float, lower: float, upper: float) -> float:
    return min(max(value, lower), upper)


def exact_sum(values: list, lower: float, upper: float) -> float:
    """The clamped sum rounded once: exact rationals for finite values."""
    return float(sum(Fraction(clamp(v, lower, upper)) for v in values))


def bounded_sum(frame: pd.DataFrame, column: str, lower: float, upper: float) -> dict:
    values = _present_values(frame[column])
    return {"total": exact_sum(values, lower, upper), "rows": len(values),
            "missing": int(_missing(frame[column]).sum()),
            "clamped": sum(1 for v in values if v < lower or v > upper)}


def cell_codes(series: pd.Series, categories: tuple) -> np.ndarray:
    """-1 missing, 0 outside, else the 1-based position (pandas equality, as dpcore)."""
    missing = _missing(series)
    numbers = all(isinstance(c, int | float) and not isinstance(c, bool) for c in categories)
    if numbers and (series.dtype == object or pd.api.types.is_string_dtype(series)):
        # numbers declared for a text column: each row's text as the number it reads as
        series = pd.to_numeric(series.astype("string").str.strip(), errors="coerce")
        categories = tuple(float(c) for c in categories)
    texts = all(isinstance(c, str) for c in categories)
    if texts and pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(
            series):
        # texts declared for a number column (issue 31, rule 6): both as their keys, a
        # whole number as its integer's text (written here with Python's float, not
        # engine.cells)
        def key(value: object) -> object:
            try:
                x = float(str(value).strip())
            except ValueError:
                return str(value).strip()
            return str(int(x)) if math.isfinite(x) and x.is_integer() else str(value).strip()

        series = pd.Series([key(v) for v in series.to_numpy(dtype=object)], dtype=object)
        categories = tuple(key(c) for c in categories)
    booleans = bool(categories) and all(isinstance(c, bool) for c in categories)
    spelled = {"true": True, "false": False}
    if booleans:
        # booleans declared (engine.cells, rule 6), cell by cell whatever the column's dtype:
        # a text that is "true" or "false" in any letter case is that boolean, any other
        # text none; a boolean cell is itself
        series = pd.Series([spelled.get(v.strip().lower()) if isinstance(v, str) else v
                            for v in series.to_numpy(dtype=object)], dtype=object)
    if texts:
        # texts declared (rule 6), cell by cell whatever the column's dtype (an object column
        # of booleans beside None, as a Parquet file without pandas' metadata reads): a
        # boolean cell is the first declared text that is that boolean in any letter case
        # (the first of two equal categories), else none; a text cell stays as written
        first: dict = {}
        for category in categories:
            first.setdefault(spelled.get(category.strip().lower()), category)
        series = pd.Series([first.get(bool(v), ("no text", v)) if isinstance(v, bool | np.bool_)
                            else v for v in series.to_numpy(dtype=object)], dtype=object)
    codes = pd.Index(list(categories)).get_indexer(pd.Series(series.to_numpy(dtype=object)))
    out = codes.astype(np.int64) + 1
    out[missing] = -1
    return out


def histogram(frame: pd.DataFrame, column: str, categories: tuple) -> dict:
    codes = cell_codes(frame[column], categories)
    return {"counts": np.bincount(codes[codes > 0] - 1, minlength=len(categories)),
            "outside": int((codes == 0).sum()), "missing": int((codes < 0).sum())}


def crosstab(frame: pd.DataFrame, row: str, column: str, row_categories: tuple,
             column_categories: tuple) -> dict:
    a = cell_codes(frame[row], row_categories)
    b = cell_codes(frame[column], column_categories)
    both = (a > 0) & (b > 0)
    shape = (len(row_categories), len(column_categories))
    flat = np.bincount((a[both] - 1) * shape[1] + b[both] - 1, minlength=shape[0] * shape[1])
    return {"counts": flat.reshape(shape), "row_outside": int((a == 0).sum()),
            "column_outside": int((b == 0).sum()), "missing": int(((a < 0) | (b < 0)).sum())}


def binned_codes(series: pd.Series, points: tuple, cells: str, outside: str) -> np.ndarray:
    """1-based cells of ``engine.queries.Binned`` (-1 missing): bins from dpcore's own
    ``bin_indices`` (numpy's bins), ranks as #{p < x} + #{p <= x} + 1, counted in Python."""
    from dpcore.quantiles import bin_indices

    values = series.to_numpy(dtype=np.float64, na_value=np.nan)
    if cells == "bins":
        codes = bin_indices(values, np.array(points), outside=outside)
        return np.where(codes < 0, -1, codes + 1)
    out = np.full(values.size, -1, dtype=np.int64)
    for i, x in enumerate(values.tolist()):
        if not math.isnan(x):
            out[i] = sum(p < x for p in points) + sum(p <= x for p in points) + 1
    return out


def binned(frame: pd.DataFrame, column: str, points: tuple, cells: str,
           outside: str = "separate") -> dict:
    codes = binned_codes(frame[column], points, cells, outside)
    size = (2 * len(points) + 1 if cells == "ranks"
            else len(points) + 1 if outside == "separate" else len(points) - 1)
    return {"counts": np.bincount(codes[codes > 0] - 1, minlength=size),
            "outside": 0, "missing": int((codes < 0).sum())}


def grouped_sum(frame: pd.DataFrame, key: str, categories: tuple, column: str, lower: float,
                upper: float) -> dict:
    codes = cell_codes(frame[key], categories)
    values = frame[column].tolist()
    missing = _missing(frame[column])
    totals, rows, clamped = [], [], 0
    for cell in range(1, len(categories) + 1):
        mine = [values[i] for i in range(len(values)) if codes[i] == cell and not missing[i]]
        totals.append(exact_sum(mine, lower, upper))
        rows.append(len(mine))
        clamped += sum(1 for v in mine if v < lower or v > upper)
    return {"totals": np.array(totals), "rows": np.array(rows), "clamped": clamped,
            "outside": int(((codes == 0) & ~missing).sum()),
            "missing_key": int(((codes < 0) & ~missing).sum()), "missing": int(missing.sum())}


def rows_per_person(frame: pd.DataFrame, person: str) -> dict:
    ids = frame[person]
    sizes = ids[~_missing(ids)].value_counts()
    per_size = sizes.value_counts().sort_index()
    return {"rows": per_size.index.to_numpy(dtype=np.int64),
            "people": per_size.to_numpy(dtype=np.int64),
            "missing_person_rows": int(_missing(ids).sum())}


# --------------------------------------------------------------------------------------------
# Contribution bounds, as documented in engine.queries.Contribution


def _key(seed: int, tag: str, person: object, position: object) -> str:
    # A whole double id within 2^53 is hashed as its integer's text (issue 31, rule 5:
    # one key per id, 12.0 is 12); a boolean as the one rule writes it ("true", "false",
    # engine.cells: Python would write "True"); any other id as Python writes it.
    if isinstance(person, bool | np.bool_):
        person = "true" if person else "false"
    elif (isinstance(person, float | np.floating) and float(person).is_integer()
            and abs(float(person)) <= 2**53):
        person = int(person)
    return hashlib.md5(f"{seed}|{tag}|{person}|{position}".encode()).hexdigest()


def key_text(value: object) -> str:
    """A category's canonical text, as ``engine.queries.Contribution`` documents it."""
    if isinstance(value, bool | np.bool_):
        return "bool:true" if value else "bool:false"
    if isinstance(value, str):
        return "text:" + json.dumps(value)
    if isinstance(value, int | np.integer):
        return f"number:{int(value)}"
    x = float(value)
    if x.is_integer() and -2**63 <= x < 2**63:
        return f"number:{int(x)}"
    return f"number:{x!r}"


def texts(categories: tuple) -> list[str]:
    """The canonical text of each cell of a histogram over ``categories`` (cell i at i - 1)."""
    return [key_text(c) for c in categories]


def crosstab_texts(row_categories: tuple, column_categories: tuple) -> list[str]:
    """Cell (i, j) of a crosstab, row-major: ``row text | column text``."""
    return [f"{key_text(r)}|{key_text(c)}" for r in row_categories for c in column_categories]


def rank_texts(points: tuple) -> list[str]:
    """The 2m + 1 cells of rank cells over m points: between two points, equal to a point."""
    ends = ["number:-inf", *(key_text(p) for p in points), "number:inf"]
    out = []
    for j in range(len(points) + 1):
        out.append(f"between:{ends[j]},{ends[j + 1]}")
        if j < len(points):
            out.append(f"equal:{ends[j + 1]}")
    return out


def _people(frame: pd.DataFrame, person: str) -> dict:
    groups: dict = {}
    for i, pid in enumerate(frame[person].tolist()):
        if pid is None or pid is pd.NA or (isinstance(pid, float) and math.isnan(pid)):
            continue
        groups.setdefault(pid, []).append(i)
    return groups


def _slot(value: object) -> tuple:
    """One sort key, missing first (SQL's NULLS FIRST)."""
    return (0,) if value is None else (1, value)


def _cell_number(value: object, kind: str) -> tuple:
    """A cell's value as a number (``engine.queries.Contribution``): a number as itself, a
    text as the number it reads as (``engine.cells.cell_number``); missing or not a number
    first. A boolean is no number (it sorts by its text, :func:`_cell_then`)."""
    if kind == "boolean":
        return ()
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return _slot(None)
    if kind == "text":
        return _slot(cell_number(str(value)))
    return _slot(float(value))


def _cell_then(value: object, kind: str) -> tuple:
    """What sorts rows of equal numbers next: an integer's exact value, a boolean as its
    text ("false" before "true", as a CSV writes it), a text that reads as no number as
    written."""
    if kind not in ("integer", "boolean", "text"):
        return ()
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return _slot(None)
    if kind == "integer":
        return _slot(int(value))
    if kind == "boolean":
        return _slot("true" if value else "false")
    return _slot(str(value) if cell_number(str(value)) is None else None)


def _cell_last(value: object, kind: str) -> tuple:
    """What sorts them last: a text that reads as a number as written ("1.50", "-0.0")."""
    if kind != "text":
        return ()
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return _slot(None)
    return _slot(None if cell_number(str(value)) is None else str(value))


def _column_kind(series: pd.Series) -> str:
    if pd.api.types.is_bool_dtype(series):
        return "boolean"
    if pd.api.types.is_integer_dtype(series):
        return "integer"
    if pd.api.types.is_float_dtype(series):
        return "float"
    return "text"


def row_ranks(frame: pd.DataFrame, person: str, seed: int) -> np.ndarray:
    """Each row's rank among its person's rows (0: no person id), as documented in
    ``engine.queries.Contribution``: the person's rows sorted by their whole content (every
    column as a number, :func:`_cell_number`, then :func:`_cell_then`, then
    :func:`_cell_last`), the positions ranked by
    ``md5(seed | row | person | position)``. Every query under that unit keeps the rows of
    rank <= max rows (one truncation per plan)."""
    columns = [(frame[c].tolist(), _column_kind(frame[c])) for c in frame.columns]
    content = [tuple(part for values, kind in columns for part in _cell_number(values[i], kind))
               + tuple(part for values, kind in columns for part in _cell_then(values[i], kind))
               + tuple(part for values, kind in columns for part in _cell_last(values[i], kind))
               for i in range(len(frame))]
    ranks = np.zeros(len(frame), dtype=np.int64)
    for pid, rows in _people(frame, person).items():
        ordered = sorted(rows, key=lambda i: content[i])
        positions = sorted(range(1, len(ordered) + 1),
                           key=lambda r, pid=pid: (_key(seed, "row", pid, r), r))
        for rank, position in enumerate(positions, start=1):
            ranks[ordered[position - 1]] = rank
    return ranks


def bounded_count(frame: pd.DataFrame, person: str, k: int) -> int:
    return sum(min(len(rows), k) for rows in _people(frame, person).values())


def bounded_sum_per_person(frame: pd.DataFrame, column: str, lower: float, upper: float,
                           person: str, k: int, seed: int) -> dict:
    """The person's kept rows (:func:`row_ranks` <= k), then those with a value."""
    values = frame[column].tolist()  # Python numbers: numpy int64 would overflow in sums
    missing = _missing(frame[column])
    ranks = row_ranks(frame, person, seed)
    kept = [values[i] for i in range(len(frame)) if 0 < ranks[i] <= k and not missing[i]]
    return {"total": exact_sum(kept, lower, upper), "rows": len(kept),
            "clamped": sum(1 for v in kept if v < lower or v > upper)}


def bounded_cells(codes: np.ndarray, frame: pd.DataFrame, person: str, cells: int, k: int,
                  groups: int | None, seed: int, texts: list[str]) -> np.ndarray:
    """Per person: without ``groups``, the kept rows (:func:`row_ranks` <= k) counted in
    their cells; with it, ``groups`` cells kept by the md5 of their text, k rows in each."""
    counts = np.zeros(cells, dtype=np.int64)
    cell_of = {texts[c]: c + 1 for c in range(cells)}
    if groups is None:
        ranks = row_ranks(frame, person, seed)
        kept = (ranks > 0) & (ranks <= k) & (codes > 0)
        return np.bincount(codes[kept] - 1, minlength=cells).astype(np.int64)
    for pid, rows in _people(frame, person).items():
        mine = [int(codes[i]) for i in rows if codes[i] > 0]
        distinct = sorted({texts[c - 1] for c in mine},
                          key=lambda t, pid=pid: (_key(seed, "group", pid, t), t))
        for text in distinct[:groups]:
            counts[cell_of[text] - 1] += min(mine.count(cell_of[text]), k)
    return counts


def bounded_grouped_sum(frame: pd.DataFrame, key: str, categories: tuple, column: str,
                        lower: float, upper: float, person: str, k: int, groups: int | None,
                        seed: int) -> dict:
    """Per person: without ``groups``, the kept rows (:func:`row_ranks` <= k) with a declared
    key and a value; with it, ``groups`` cells (of the rows with a declared key and a value)
    kept by the md5 of their text and in each the k rows of lowest rank."""
    codes = cell_codes(frame[key], categories)
    values = frame[column].tolist()
    missing = _missing(frame[column])
    text = texts(categories)
    ranks = row_ranks(frame, person, seed)
    kept: dict[int, list] = {c: [] for c in range(1, len(categories) + 1)}
    for pid, rows in _people(frame, person).items():
        mine = sorted((ranks[i], int(codes[i]), values[i]) for i in rows
                      if codes[i] > 0 and not missing[i])
        if groups is None:
            for rank, cell, value in mine:
                if rank <= k:
                    kept[cell].append(value)
            continue
        cells = sorted({text[c - 1] for _, c, _ in mine},
                       key=lambda t, pid=pid: (_key(seed, "group", pid, t), t))
        for t in cells[:groups]:
            cell = text.index(t) + 1
            kept[cell] += [v for _, c, v in mine if c == cell][:k]
    totals = [exact_sum(kept[c], lower, upper) for c in sorted(kept)]
    return {"totals": np.array(totals), "rows": np.array([len(kept[c]) for c in sorted(kept)]),
            "clamped": sum(1 for c in kept for v in kept[c] if v < lower or v > upper)}


# --------------------------------------------------------------------------------------------
# The cases every backend is checked on, with their expected aggregates


def cases(frame: pd.DataFrame) -> list[tuple[object, dict]]:
    """(query, expected fields) pairs over a frame from :func:`random_frame`."""
    from engine.queries import (
        BoundedSum,
        CategoryCounts,
        CategoryTable,
        Contribution,
        CountRows,
        RowsPerPerson,
    )

    out: list[tuple[object, dict]] = [(CountRows(), {"rows": len(frame)})]
    for column, lower, upper in ((ODD, -1000.25, 2e6), (QUOTED, -2.0**61, 2.0**61),
                                 (SMALL, -3.0, 3.0), (LOG, -50.0, 50.5), ("a", 0.0, 1e3),
                                 (CODE, 0.5, 3.5)):
        out.append((BoundedSum(column, lower, upper), bounded_sum(frame, column, lower, upper)))
    for column, categories in ((SEMI, DECLARED), (DOTTED, DECLARED), (CODE, CODE_CATEGORIES),
                               (CODE, tuple(float(c) for c in CODE_CATEGORIES)),
                               (CODE, tuple(str(c) for c in CODE_CATEGORIES)),
                               (SEMI, DECLARED + ("purple", "Red"))):
        out.append((CategoryCounts(column, categories), histogram(frame, column, categories)))
    out.append((CategoryTable(SEMI, CODE, DECLARED, CODE_CATEGORIES),
                crosstab(frame, SEMI, CODE, DECLARED, CODE_CATEGORIES)))
    out.append((CategoryTable(DOTTED, WHO, DECLARED, ("ann", "bob", "nobody")),
                crosstab(frame, DOTTED, WHO, DECLARED, ("ann", "bob", "nobody"))))
    for person in (PERSON, WHO):
        out.append((RowsPerPerson(person), rows_per_person(frame, person)))
    # Contribution bounds.
    out.append((CountRows(Contribution(PERSON, 2)), {"rows": bounded_count(frame, PERSON, 2)}))
    for column, lower, upper, person, k, seed in ((ODD, -1000.25, 2e6, PERSON, 2, 7),
                                                   (QUOTED, -2.0**61, 2.0**61, WHO, 3, 1),
                                                   (LOG, -50.0, 50.5, PERSON, 1, 0)):
        out.append((BoundedSum(column, lower, upper, Contribution(person, k, seed=seed)),
                    bounded_sum_per_person(frame, column, lower, upper, person, k, seed)))
    semi = cell_codes(frame[SEMI], DECLARED)
    for person, k, groups, seed in ((PERSON, 1, None, 2), (WHO, 4, 2, 5), (WHO, 3, None, 11)):
        out.append((CategoryCounts(SEMI, DECLARED, Contribution(person, k, groups, seed)),
                    {"counts": bounded_cells(semi, frame, person, len(DECLARED), k, groups,
                                             seed, texts(DECLARED))}))
    a, b = cell_codes(frame[SEMI], DECLARED), cell_codes(frame[CODE], CODE_CATEGORIES)
    both = np.where((a > 0) & (b > 0), (a - 1) * len(CODE_CATEGORIES) + b, 0)
    cells = len(DECLARED) * len(CODE_CATEGORIES)
    out.append((CategoryTable(SEMI, CODE, DECLARED, CODE_CATEGORIES, Contribution(PERSON, 2, 1, 3)),
                {"counts": bounded_cells(both, frame, PERSON, cells, 2, 1, 3,
                                         crosstab_texts(DECLARED, CODE_CATEGORIES)).reshape(
                    len(DECLARED), len(CODE_CATEGORIES))}))
    # Binned counts (bins and quantile ranks) and sums by group.
    from engine.queries import Binned, GroupedSum

    edges = (-1000.0, -2.5, 0.0, 0.25, 1000.0)
    for column, points, cells, outside in ((ODD, edges, "bins", "separate"),
                                           (ODD, edges, "bins", "clamp"),
                                           (SMALL, (-3.0, 0.0, 2.0), "bins", "separate"),
                                           (SMALL, (-3.0, 0.0, 2.0, 4.0), "ranks", "separate"),
                                           (LOG, (-1.0, 0.0, 1.0), "ranks", "separate")):
        out.append((Binned(column, points, cells, outside),
                    binned(frame, column, points, cells, outside)))
    small = binned_codes(frame[SMALL], (-3.0, 0.0, 2.0, 4.0), "ranks", "separate")
    for person, k, groups, seed in ((PERSON, 2, None, 4), (WHO, 1, 2, 9)):
        out.append((Binned(SMALL, (-3.0, 0.0, 2.0, 4.0), "ranks", "separate",
                           Contribution(person, k, groups, seed)),
                    {"counts": bounded_cells(small, frame, person, 9, k, groups, seed,
                                             rank_texts((-3.0, 0.0, 2.0, 4.0)))}))
    for key, categories, column, lower, upper in ((SEMI, DECLARED, ODD, -1000.25, 2e6),
                                                  (WHO, ("ann", "bob", "nobody"), SMALL, -2, 3),
                                                  (CODE, CODE_CATEGORIES, LOG, -50.0, 50.5)):
        out.append((GroupedSum(key, categories, column, lower, upper),
                    grouped_sum(frame, key, categories, column, lower, upper)))
    for person, k, groups, seed in ((PERSON, 2, None, 3), (WHO, 2, 2, 8), (PERSON, 1, 1, 0)):
        out.append((GroupedSum(SEMI, DECLARED, SMALL, -2, 3,
                               Contribution(person, k, groups, seed)),
                    bounded_grouped_sum(frame, SEMI, DECLARED, SMALL, -2, 3, person, k, groups,
                                        seed)))
    return out


def assert_matches(query: object, aggregate: object, expected: dict) -> None:
    """Counts equal; sums equal to 1e-9 relative (exact for the exact and dyadic sums)."""
    for name, want in expected.items():
        got = getattr(aggregate, name)
        if name == "total":
            assert math.isclose(got, want, rel_tol=1e-9, abs_tol=0.0), (query, got, want)
        elif name == "totals":
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=0, err_msg=repr(query))
        elif isinstance(want, np.ndarray):
            np.testing.assert_array_equal(got, want, err_msg=repr(query))
        else:
            assert got == want, (query, name, got, want)


def assert_same(query: object, first: object, second: object) -> None:
    """Two backends' aggregates field by field (sums to 1e-9 relative)."""
    for name in first.__dataclass_fields__:
        x, y = getattr(first, name), getattr(second, name)
        if name == "total":
            assert math.isclose(x, y, rel_tol=1e-9), (query, x, y)
        elif name == "totals":
            np.testing.assert_allclose(x, y, rtol=1e-9, atol=0, err_msg=repr(query))
        elif isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y, err_msg=repr(query))
        else:
            assert x == y, (query, name, x, y)


# --------------------------------------------------------------------------------------------
# JointCells: the full contingency table of several columns, as documented in its docstring

TEXT_NUMBERS = "numbers as text"
#: Bin edges on ODD (values on each edge are planted) and on SMALL and TEXT_NUMBERS.
ODD_EDGES = (-1000.0, -2.5, 0.0, 0.25, 1000.0)
SMALL_EDGES = (-3.0, 0.0, 2.0, 4.0)


def joint_frame(seed: int, rows: int = 300) -> pd.DataFrame:
    """:func:`random_frame` with values on every edge of ODD_EDGES (and just beside them),
    and a text column of numbers (spaces around, words, empty texts, missing values)."""
    frame = random_frame(seed, rows)
    rng = np.random.default_rng(seed + 1000)
    planted = [-1000.0, -2.5, 0.0, 0.25, 1000.0, -0.0, -1000.25, 999.75, 0.24, 1000.5]
    frame.loc[: len(planted) - 1, ODD] = planted[: min(rows, len(planted))]
    numbers = rng.choice(["-4", "-3", " 0 ", "1.5", "2", " 2.0", "4 ", "9", "1e0", "abc", ""],
                         size=rows).astype(object)
    numbers[rng.random(rows) < 0.05] = None
    return frame.assign(**{TEXT_NUMBERS: pd.array(numbers, dtype="str")})


def joint_codes(frame: pd.DataFrame, columns: tuple, domains: tuple,
                binned: tuple) -> np.ndarray:
    """Each row's 0-based code per column: its category's position (pandas equality, text
    read as a number when numbers are declared) or its bin (dpcore's ``bin_indices``, values
    outside clamped); a missing or undeclared value gets the column's last code."""
    from dpcore.quantiles import bin_indices

    out = []
    for column, domain, is_binned in zip(columns, domains, binned, strict=True):
        series = frame[column]
        if not is_binned:
            codes = cell_codes(series, domain)
            out.append(np.where(codes > 0, codes - 1, len(domain)))
            continue
        if series.dtype == object or pd.api.types.is_string_dtype(series):
            series = pd.to_numeric(series.astype("string").str.strip(), errors="coerce")
        values = series.to_numpy(dtype=np.float64, na_value=np.nan)
        codes = bin_indices(values, np.array(domain, dtype=np.float64), outside="clamp")
        out.append(np.where(codes < 0, len(domain) - 1, codes))
    return np.column_stack(out).astype(np.int64).reshape(len(frame), len(columns))


def joint(frame: pd.DataFrame, columns: tuple, domains: tuple, binned: tuple,
          person: str | None = None, k: int = 1, seed: int = 0) -> dict:
    """The dense table of counts (shape: each column's codes), the rows with no person and
    the rows dropped: with a person, the rows of rank <= k (:func:`row_ranks`)."""
    codes = joint_codes(frame, columns, domains, binned)
    shape = tuple(len(d) if b else len(d) + 1 for d, b in zip(domains, binned, strict=True))
    table = np.zeros(shape, dtype=np.int64)
    if person is None:
        np.add.at(table, tuple(codes.T), 1)
        return {"table": table, "missing_person_rows": 0, "dropped_rows": 0}
    ranks = row_ranks(frame, person, seed)
    kept_codes = codes[(ranks > 0) & (ranks <= k)]
    kept = kept_codes
    np.add.at(table, tuple(kept_codes.T), 1)
    missing = int(_missing(frame[person]).sum())
    return {"table": table, "missing_person_rows": missing,
            "dropped_rows": len(frame) - missing - len(kept)}


def joint_cases(frame: pd.DataFrame) -> list[tuple[object, dict]]:
    """(JointCells, expected) over a frame from :func:`joint_frame`: categories (undeclared
    and missing values, numbers declared on a text column), bins (values on the edges and
    outside them, text read as numbers), a person id with max rows 1 and 3."""
    from engine.queries import Contribution, JointCells

    specs = [
        ((SEMI, ODD), (DECLARED, ODD_EDGES), (False, True), None),
        ((DOTTED, CODE, SMALL), (DECLARED + ("purple",), CODE_CATEGORIES, SMALL_EDGES),
         (False, False, True), None),
        ((TEXT_NUMBERS, WHO), (SMALL_EDGES, ("ann", "bob", "nobody")), (True, False), None),
        ((TEXT_NUMBERS, CODE), ((0, 1.5, 2, -3, 9), tuple(float(c) for c in CODE_CATEGORIES)),
         (False, False), None),
        ((SEMI, SMALL), (DECLARED, SMALL_EDGES), (False, True), (PERSON, 1, 2)),
        ((SEMI, CODE, ODD), (DECLARED, CODE_CATEGORIES, ODD_EDGES), (False, False, True),
         (WHO, 3, 11)),
        ((TEXT_NUMBERS, DOTTED), (SMALL_EDGES, DECLARED), (True, False), (PERSON, 3, 0)),
    ]
    out: list[tuple[object, dict]] = []
    for columns, domains, binned, unit in specs:
        contribution = None if unit is None else Contribution(unit[0], unit[1], seed=unit[2])
        query = JointCells(columns, domains, binned, contribution)
        expected = (joint(frame, columns, domains, binned) if unit is None
                    else joint(frame, columns, domains, binned, *unit))
        out.append((query, expected))
    return out


def assert_joint(query: object, aggregate: object, expected: dict) -> None:
    """A JointAggregate: each non-empty cell once, its count; the other fields."""
    codes, counts = aggregate.codes, aggregate.counts
    table = np.zeros(expected["table"].shape, dtype=np.int64)
    np.add.at(table, tuple(codes.T), counts)
    np.testing.assert_array_equal(table, expected["table"], err_msg=repr(query))
    assert (counts > 0).all(), query
    assert len(np.unique(codes, axis=0)) == len(codes), query
    assert aggregate.missing_person_rows == expected["missing_person_rows"], query
    assert aggregate.dropped_rows == expected["dropped_rows"], query
