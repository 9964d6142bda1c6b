"""One scan (issue 37, item 3): ``DuckDBBackend.run_many`` ranks each person's rows once for
every query of a plan under the same unit, and answers each query exactly as ``run`` does
(which ranks again per query); on data where max rows bites for many people, from a frame,
a Parquet file and a CSV read as text."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from engine import (
    Binned,
    BoundedSum,
    CategoryCounts,
    CategoryTable,
    Contribution,
    CountRows,
    FileSource,
    FrameSource,
    GroupedSum,
    JointCells,
)
from engine.duckdb_backend import DuckDBBackend
from engine.queries import CellsAggregate, JointAggregate


@pytest.fixture(scope="module")
def duck() -> DuckDBBackend:
    return DuckDBBackend(threads=2)


def varied(n_people: int = 400, seed: int = 3) -> pd.DataFrame:
    """Rows per person about Poisson(4) (max rows 2 bites for most people), missing values,
    values outside the bounds and text outside the categories."""
    rng = np.random.default_rng(seed)
    people = np.repeat(np.arange(n_people), rng.poisson(4, n_people) + 1)
    n = len(people)
    x = rng.normal(20, 15, n).round(2)
    x[rng.random(n) < 0.1] = np.nan
    return pd.DataFrame({
        "p": people, "x": x, "w": rng.integers(-5, 40, n),
        "c": rng.choice(["a", "b", "c", "z"], n), "d": rng.choice(["u", "v", "w"], n)})


def plan(unit: Contribution) -> list:
    """A query of every kind that reads the kept rows, two of a kind (their categories'
    parameters must not collide), one with max groups, and a count."""
    grouped = Contribution(unit.person, unit.max_rows, seed=unit.seed, max_groups=2)
    return [
        CountRows(unit),
        BoundedSum("x", 0.0, 30.0, unit),
        BoundedSum("w", 0, 25, unit),
        BoundedSum("x", 0.0, 30.0, unit, centre=15.0, squared=True),
        CategoryCounts("c", ("a", "b", "c"), unit),
        CategoryCounts("d", ("u", "v"), unit),
        CategoryTable("c", "d", ("a", "b"), ("u", "v", "w"), unit),
        Binned("x", (0.0, 10.0, 20.0, 30.0), contribution=unit),
        Binned("x", (5.0, 25.0), cells="ranks", contribution=unit),
        JointCells(("c", "x"), (("a", "b", "c"), (0.0, 10.0, 40.0)), (False, True), unit),
        GroupedSum("c", ("a", "b", "c"), "x", 0.0, 30.0, unit),
        GroupedSum("d", ("u", "v", "w"), "w", 0, 25, grouped),
        CategoryCounts("c", ("a", "b", "c"), grouped),
    ]


def fields(aggregate) -> dict:
    """An aggregate's fields; a joint aggregate's cells in the order of their codes (its
    rows come in no order, on either path)."""
    out = dataclasses.asdict(aggregate)
    if isinstance(aggregate, JointAggregate):
        order = np.lexsort(aggregate.codes.T[::-1])
        out["codes"], out["counts"] = aggregate.codes[order], aggregate.counts[order]
    return out


def assert_same(one, many) -> None:
    """Every field equal, a sum's total to the last bit: a sum of decimals is exact and
    rounded once (``engine.cells.fixed_point_sums``), whatever order DuckDB's threads add
    the rows in (its ``fsum`` gave 3601.49 or 3601.4900000000002 for the same grouped sum).
    The bounds-cost panel's per-person sums (``CellsAggregate``: plain float sums, of
    unclamped values too, for no release) to within a few units of their last place."""
    assert type(one) is type(many)
    a, b = fields(many), fields(one)
    assert a.keys() == b.keys()
    for name in a:
        if isinstance(one, CellsAggregate) and np.asarray(b[name]).dtype.kind == "f":
            np.testing.assert_allclose(a[name], b[name], rtol=1e-13, atol=0, err_msg=name)
        else:
            np.testing.assert_equal(a[name], b[name], err_msg=name)


@pytest.mark.parametrize("form", ["frame", "parquet", "csv"])
@pytest.mark.parametrize("seed", [0, 7])
def test_one_ranking_answers_as_each_query_alone(duck, tmp_path, form, seed) -> None:
    frame = varied()
    if form == "frame":
        source = FrameSource(frame)
    else:
        path = tmp_path / f"data.{form}"
        frame.to_parquet(path) if form == "parquet" else frame.to_csv(path, index=False)
        source = FileSource(path, form)
    queries = plan(Contribution("p", 2, seed=seed))
    many = duck.run_many(source, queries)
    assert len(many) == len(queries)
    for query, answer in zip(queries, many, strict=True):
        assert_same(duck.run(source, query), answer)


def test_max_rows_bites_in_this_data(duck) -> None:
    """The plan above is a test of the shared ranking only if people lose rows."""
    source = FrameSource(varied())
    total = duck.run(source, BoundedSum("x", 0.0, 30.0, Contribution("p", 2)))
    assert total.dropped_rows > 300


def test_units_that_differ_rank_apart(duck) -> None:
    """Queries under two units (max rows 1 and 3, two seeds) each read their own unit's
    kept rows."""
    source = FrameSource(varied())
    queries = [BoundedSum("x", 0.0, 30.0, Contribution("p", m, seed=s))
               for m in (1, 3) for s in (0, 1)]
    queries += [CategoryCounts("c", ("a", "b"), q.contribution) for q in queries]
    for query, answer in zip(queries, duck.run_many(source, queries), strict=True):
        assert_same(duck.run(source, query), answer)


def test_a_plan_under_one_unit_ranks_once(duck, monkeypatch) -> None:
    """Every statement that ranks a person's rows (``_kept``'s ``ro``) is counted: the plan
    above ranks once with ``run_many``, once per query reading kept rows with ``run``."""
    statements = spy_statements(monkeypatch)
    source = FrameSource(varied())
    queries = plan(Contribution("p", 2, seed=1))
    duck.run_many(source, queries)
    assert sum("FROM bn WHERE n > $k" in s for s in statements) == 1
    statements.clear()
    for query in queries:
        duck.run(source, query)
    # all but the count and the histogram with max groups (it ranks cells, not rows)
    assert sum("FROM bn WHERE n > $k" in s for s in statements) == len(queries) - 2


def _nodes(node: dict) -> list[dict]:
    return [node] + [n for child in node.get("children", []) for n in _nodes(child)]


def test_the_ranking_carries_only_the_columns_it_reads(duck, tmp_path, monkeypatch) -> None:
    """The shared ranking's rows (``_kept``'s ``b``, through the join and both windows) hold
    the person's key, the columns the content order reads, and the queries' derived
    columns: never every column of the source (``SELECT *`` carried a date the order leaves
    out through the join and the windows, and read it from the file). DuckDB's plan of the
    ranking's statement says what it reads and what ``b`` holds."""
    frame = varied()
    frame["when"] = pd.Timestamp("2020-01-01") + pd.to_timedelta(np.arange(len(frame)), "D")
    path = tmp_path / "data.parquet"
    frame.to_parquet(path)
    nodes, _ = _ranking_plan(duck, monkeypatch, FileSource(path, "parquet"))
    read = [n["extra_info"]["Projections"] for n in nodes if n["name"] == "READ_PARQUET"]
    assert read and all("c5" not in columns for columns in read)   # "when" is c5
    count = next(n for n in nodes if n["name"] == "WINDOW"
                 and "count()" in n["extra_info"]["Projections"])
    b = count["children"][0]           # the CTE b: its projection, what the count carries
    # the integer id "p" (c0) is the person's key itself (``_person_group``): carried once
    assert b["extra_info"]["Projections"] == [
        "pid", "c1", "c2", "c3", "c4", "q0_v", "q0_vm", "q1_idx"]


def _ranking_plan(duck, monkeypatch, source, queries=None) -> tuple[list[dict], list[str]]:
    """DuckDB's plan of the shared ranking's statement for ``queries`` (a sum and a histogram
    under max rows 2 unless given) over ``source``, and the types of the columns it makes
    (``pid``, ``r``, the derived ones)."""
    plans: list[dict] = []
    types: list[str] = []
    execute = DuckDBBackend._execute

    def spy(self, cursor, source, sql, params, **kwargs):
        if sql.startswith("CREATE TEMP TABLE kept_"):
            body = "WITH" + sql.split(" AS WITH", 1)[1]
            explained = cursor.execute(f"EXPLAIN (FORMAT json) {body}", params).fetchall()
            plans.append(json.loads(explained[0][1])[0])
            types.extend(row[1] for row in cursor.execute(f"DESCRIBE {body}", params).fetchall())
        return execute(self, cursor, source, sql, params, **kwargs)

    monkeypatch.setattr(DuckDBBackend, "_execute", spy)
    unit = Contribution("p", 2, seed=1)
    duck.run_many(source, queries or [BoundedSum("x", 0.0, 30.0, unit),
                                      CategoryCounts("c", ("a", "b"), unit)])
    assert len(plans) == 1
    return _nodes(plans[0]), types


def test_the_ranking_counts_in_a_window_and_sorts_keys_computed_once(duck, tmp_path,
                                                                      monkeypatch) -> None:
    """The shared ranking's statement (issue 37): a person's row count is a window over the
    person (no GROUP BY joined back to every row: the GROUP BY, the join and the scans of the
    CTEs they materialised took a third of the ranking's profiled time at 10^7 rows), the
    content order sorts keys computed once per row before its window (its ORDER BY cast each
    text three times: 39 % of that time), and an integer id partitions as the integer (not
    as its text). Three windows in all: the count, the content order, the md5 order."""
    path = tmp_path / "data.parquet"
    varied().to_parquet(path)
    nodes, types = _ranking_plan(duck, monkeypatch, FileSource(path, "parquet"))
    names = [n["name"] for n in nodes]
    assert "HASH_GROUP_BY" not in names and "PERFECT_HASH_GROUP_BY" not in names
    # no join at all: the missing markers' test was an IN list DuckDB planned as a MARK join
    # (its key computed for every row); it is list_contains now (issue 37)
    assert not [n for n in nodes if "JOIN" in n["name"]]
    windows = [n["extra_info"]["Projections"] for n in nodes if n["name"] == "WINDOW"]
    assert len(windows) == 3
    assert sum(w == "count() OVER (PARTITION BY pid)" for w in windows) == 1
    content = [w for w in windows if "ORDER BY o0" in w]
    assert len(content) == 1
    assert not any(f in content[0] for f in ("TRY_CAST", "trim", "contains", "isnan"))
    assert types[0] == "BIGINT"        # pid: the integer id "p" itself


def test_a_ranking_of_numbers_only_counts_in_a_window_too(duck, tmp_path, monkeypatch) -> None:
    """With no text column (no missing markers tested, so no mark join on main either),
    DuckDB's window_self_join optimizer turned the count's window into a GROUP BY joined
    back to every row, reading the file a second time; the backend turns it off, so every
    ranking counts a person's rows in one window (fails on main: HASH_JOIN, two scans)."""
    path = tmp_path / "numbers.parquet"
    varied()[["p", "x", "w"]].to_parquet(path)
    unit = Contribution("p", 2, seed=1)
    nodes, _ = _ranking_plan(duck, monkeypatch, FileSource(path, "parquet"),
                             [BoundedSum("x", 0.0, 30.0, unit), BoundedSum("w", 0, 25, unit)])
    names = [n["name"] for n in nodes]
    assert not [name for name in names if "JOIN" in name or "GROUP_BY" in name]
    assert names.count("READ_PARQUET") == 1
    windows = [n["extra_info"]["Projections"] for n in nodes if n["name"] == "WINDOW"]
    assert sum(w == "count() OVER (PARTITION BY pid)" for w in windows) == 1


def test_a_text_id_still_partitions_by_its_key(duck, tmp_path, monkeypatch) -> None:
    """A text id is grouped by its canonical key (``"12"`` and ``" 012"`` are one person):
    only an integer id partitions as itself."""
    frame = varied()
    frame["p"] = frame["p"].map(lambda v: f" {v:03d}" if v % 2 else str(v))
    path = tmp_path / "data.parquet"
    frame.to_parquet(path)
    _, types = _ranking_plan(duck, monkeypatch, FileSource(path, "parquet"))
    assert types[0] == "VARCHAR"


def spy_statements(monkeypatch) -> list[str]:
    """Every SQL statement the DuckDB backend runs from now on (``_execute`` spied), in order."""
    statements: list[str] = []
    execute = DuckDBBackend._execute

    def spy(self, cursor, source, sql, params, **kwargs):
        statements.append(sql)
        return execute(self, cursor, source, sql, params, **kwargs)

    monkeypatch.setattr(DuckDBBackend, "_execute", spy)
    return statements
