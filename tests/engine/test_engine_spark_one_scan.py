"""One ranking per unit on Spark (issue 37, item 3): ``SparkBackend.run_many`` ranks each
person's rows once for every query of a plan under the same unit, reads a file once for the
plan, and answers each query exactly as ``run`` does (which ranks again per query); on data
where max rows bites for most people, from a Parquet file and a CSV read as text, and against
the pandas reference (``tests/engine_reference.py``) where it has the query."""

from __future__ import annotations

import numpy as np
import pytest

from engine import (
    BoundedSum,
    CategoryCounts,
    Contribution,
    CountRows,
    Engine,
    FileSource,
    TableSource,
    spark_backend,
)
from engine.spark_backend import SparkBackend
from tests import engine_reference as ref
from tests.engine.test_engine_one_scan import assert_same, plan, varied


@pytest.fixture(scope="module")
def spark(shared_spark) -> SparkBackend:
    return SparkBackend(session=shared_spark)


def written(tmp_path, form: str, n_people: int = 120) -> FileSource:
    path = tmp_path / f"data.{form}"
    frame = varied(n_people)
    frame.to_parquet(path) if form == "parquet" else frame.to_csv(path, index=False)
    return FileSource(path, form)


@pytest.mark.parametrize("form", ["parquet", "csv"])
def test_one_ranking_answers_as_each_query_alone(spark, tmp_path, form) -> None:
    """Every kind that reads the kept rows (two of a kind, max groups on two), bit-equal."""
    source = written(tmp_path, form)
    queries = plan(Contribution("p", 2, seed=7))
    many = spark.run_many(source, queries)
    assert len(many) == len(queries)
    for query, answer in zip(queries, many, strict=True):
        assert_same(spark.run(source, query), answer)


def test_one_ranking_answers_as_the_pandas_reference(spark, tmp_path) -> None:
    """The count, two sums (max rows 2 and 3: one ranking, each its own max rows) and a
    histogram through ``run_many``, against the reference's kept rows by hand."""
    source = written(tmp_path, "parquet")
    frame = varied(120)
    seed = 5
    two, three = Contribution("p", 2, seed=seed), Contribution("p", 3, seed=seed)
    count, sum2, sum3, histogram = spark.run_many(source, [
        CountRows(two), BoundedSum("x", 0.0, 30.0, two), BoundedSum("w", 0, 25, three),
        CategoryCounts("c", ("a", "b", "c"), two)])
    assert count.rows == ref.bounded_count(frame, "p", 2)
    for got, (column, lower, upper, k) in ((sum2, ("x", 0.0, 30.0, 2)),
                                           (sum3, ("w", 0, 25, 3))):
        want = ref.bounded_sum_per_person(frame, column, lower, upper, "p", k, seed)
        assert got.total == pytest.approx(want["total"], rel=1e-12, abs=1e-9)
        assert (got.rows, got.clamped) == (want["rows"], want["clamped"])
    codes = ref.cell_codes(frame["c"], ("a", "b", "c"))
    np.testing.assert_array_equal(histogram.counts, ref.bounded_cells(
        codes, frame, "p", 3, 2, None, seed, ref.texts(("a", "b", "c"))))
    assert sum2.dropped_rows > 100          # max rows bites: the ranking matters


def test_units_that_differ_rank_apart(spark, tmp_path) -> None:
    """Two seeds, two person columns: each unit reads its own ranking."""
    source = written(tmp_path, "parquet")
    queries = [BoundedSum("x", 0.0, 30.0, Contribution(p, 1, seed=s))
               for p in ("p", "w") for s in (0, 1)]
    queries += [CategoryCounts("c", ("a", "b"), q.contribution) for q in queries]
    for query, answer in zip(queries, spark.run_many(source, queries), strict=True):
        assert_same(spark.run(source, query), answer)


class Rankings:
    """Counts the rankings built (``_row_key`` of a row's position: one per ranking) and the
    frames left persisted."""

    def __init__(self, monkeypatch) -> None:
        self.built = 0
        row_key = spark_backend._row_key

        def spy(contribution, person, position, tag):
            self.built += tag == "row"
            return row_key(contribution, person, position, tag)

        monkeypatch.setattr(spark_backend, "_row_key", spy)


def test_a_release_plan_ranks_once_through_the_engine(spark, tmp_path, monkeypatch) -> None:
    """The engine a release uses (``Engine.answer_many``) hands a plan of three bounded
    queries to ``run_many``: one ranking (three before, one per query), the file scanned
    once (the plan's jobs read the persisted frame), nothing left persisted."""
    source = written(tmp_path, "parquet")
    unit = Contribution("p", 2, seed=1)
    queries = [BoundedSum("x", 0.0, 30.0, unit), CategoryCounts("c", ("a", "b", "c"), unit),
               BoundedSum("w", 0, 25, unit)]
    rankings = Rankings(monkeypatch)
    records = RecordsRead(spark)
    answers = Engine(spark).answer_many(source, queries)
    assert rankings.built == 1
    rows = len(varied(120))
    assert rows <= records.count() < 2 * rows   # one scan (three or more before)
    for query, answer in zip(queries, answers, strict=True):
        assert_same(spark.run(source, query), answer)
    assert rankings.built == 1 + len(queries)        # run: one ranking per query
    storage = spark.session.sparkContext._jsc.sc().getRDDStorageInfo()
    assert len(storage) == 0                         # everything unpersisted


class RecordsRead:
    """The records Spark's stages read since made (the status store's input records: a
    file's rows for each scan of it, a persisted frame's cached batches, a few, for each read
    of it): about the file's rows when it is scanned once."""

    def __init__(self, spark: SparkBackend) -> None:
        self._context = spark.session.sparkContext
        self._start = self._total()

    def _total(self) -> int:
        sc = self._context._jsc.sc()
        sc.listenerBus().waitUntilEmpty()      # the store is written by Spark's listener
        every = self._context._jvm.java.util.ArrayList()
        no_quantiles = self._context._gateway.new_array(self._context._jvm.double, 0)
        stages = sc.statusStore().stageList(every, False, False, no_quantiles, every)
        return sum(stages.apply(i).inputRecords() for i in range(stages.length()))

    def count(self) -> int:
        return self._total() - self._start


def test_a_table_someone_cached_stays_cached(spark) -> None:
    """A table a steward cached on the shared session (``CACHE TABLE``) is theirs: ``run_many``
    reads it, shares its ranking, and leaves it cached (review of issue 37's Spark change: it
    persisted and then unpersisted the same plan, which dropped the steward's cache, because
    ``is_cached`` is a flag of the Python object and Spark's own cache said otherwise)."""
    session = spark.session
    session.createDataFrame(varied(50)).createOrReplaceTempView("one_scan_cached")
    session.sql("CACHE TABLE one_scan_cached")
    try:
        assert session.catalog.isCached("one_scan_cached")
        unit = Contribution("p", 2, seed=1)
        queries = [BoundedSum("x", 0.0, 30.0, unit), CategoryCounts("c", ("a", "b"), unit)]
        answers = Engine(spark).answer_many(TableSource("one_scan_cached"), queries)
        assert session.catalog.isCached("one_scan_cached")
        for query, answer in zip(queries, answers, strict=True):
            assert_same(spark.run(TableSource("one_scan_cached"), query), answer)
    finally:
        session.sql("UNCACHE TABLE IF EXISTS one_scan_cached")
        session.catalog.dropTempView("one_scan_cached")


def test_what_a_plan_shares_is_persisted_on_disk_only(spark, tmp_path, monkeypatch) -> None:
    """The ranked rows and a frame several queries read are persisted on local disk only
    (``spark_backend._persist_level``), never in memory too: ``MEMORY_AND_DISK`` reads a
    spilled block back into the heap whole, and the measured plan at 5*10^7 Parquet rows on
    local[2] (Spark's default 1 GB driver) failed with ``OutOfMemoryError: Java heap space``
    in ``BlockManager.maybeCacheDiskBytesInMemory`` (bench/bench_release.py --measured 5e7
    --methods spark); too slow to run here, so this pins the level. Fails before: both were
    ``MEMORY_AND_DISK``."""
    frame_type = type(spark.session.range(1))   # PySpark 4's classic DataFrame
    levels = []
    persist = frame_type.persist

    def spy(self, level=None, *args, **kwargs):
        levels.append(level)
        return persist(self, level, *args, **kwargs)

    monkeypatch.setattr(frame_type, "persist", spy)
    source = written(tmp_path, "csv")        # read as text by two queries: one frame shared
    unit = Contribution("p", 2, seed=3)
    queries = [BoundedSum("x", 0.0, 30.0, unit), CategoryCounts("c", ("a", "b", "c"), unit),
               CountRows(unit)]
    answers = spark.run_many(source, queries)
    assert len(levels) >= 2                  # the ranking and the shared frame
    assert all(level.useDisk and not level.useMemory for level in levels), levels
    for query, answer in zip(queries, answers, strict=True):
        assert_same(spark.run(source, query), answer)
