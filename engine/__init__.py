"""True answers for Epsilon Lab: datasets as relations, queries answered by DuckDB or Spark.

A dataset is a :class:`Source` (an in-memory frame, a CSV/CSV.gz/Parquet file or Parquet
folder, a Spark table); a query is a small frozen dataclass (:mod:`engine.queries`); a backend
compiles it once and returns the small aggregate dpcore needs, never rows. The engine never
adds noise, and dpcore never imports it.

Why these dependencies. DuckDB's own Python API with SQL generated here, and PySpark's
DataFrame API, rather than Ibis over both or SQLGlot transpiling one dialect:

- Six queries of a few lines each do not need a portable expression layer; what they need is
  exact control of the semantics that decide the numbers — NaN is missing, ±inf is clamped,
  integer sums are exact (HUGEINT, DECIMAL(38,0)), ``least``/``greatest`` skip nulls in Spark
  — and a layer in between would hide exactly those.
- Injection is impossible by construction, not by escaping alone: relations are renamed
  positionally (``AS t("c0", …)`` in DuckDB, ``toDF("c0", …)`` in Spark), so a column name
  from a user's file (``"; drop table x; --`` is a legal CSV header) never reaches a parser;
  paths, bounds, categories and seeds are bound parameters or literals.
- Two pinned dependencies (duckdb, pyspark) instead of four (plus ibis-framework and
  sqlglot, whose releases move fast and would pin both engines' versions for us).
- The three-way tests (DuckDB, Spark, a pandas reference) hold the two code paths together.

Usage::

    from engine import Engine, FrameSource, CategoryCounts, engine_from_env
    engine = engine_from_env()                   # EPSILON_LAB_ENGINE=duckdb (default) | spark
    source = FrameSource(loaded.frame, name, key=dataset_key)
    agg = engine.answer(source, CategoryCounts("education", categories))   # cached by version
    agg.counts, agg.outside, agg.missing
"""

from engine.errors import DataFolderError, EngineError
from engine.queries import (
    Aggregate,
    Binned,
    BoundedSum,
    CategoryCounts,
    CategoryTable,
    CellsAggregate,
    ColumnInfo,
    Contribution,
    CountAggregate,
    CountRows,
    DistinctAggregate,
    DistinctValues,
    FirstRows,
    GroupedSum,
    GroupedSumAggregate,
    HistogramAggregate,
    JointAggregate,
    JointCells,
    NumericBins,
    PersonCells,
    Profile,
    ProfileAggregate,
    Query,
    RowsPerPerson,
    RowsPerPersonAggregate,
    SumAggregate,
    TableAggregate,
    query_key,
)
from engine.service import ENGINE_ENV, Engine, engine_from_env
from engine.sources import (
    DATA_ENV,
    DataFile,
    FileSource,
    FrameSource,
    Source,
    TableSource,
    data_folder,
    list_data_folder,
    open_data_file,
)

__all__ = [
    "Aggregate", "Binned", "BoundedSum", "CategoryCounts", "CategoryTable", "CellsAggregate",
    "ColumnInfo",
    "Contribution", "CountAggregate", "CountRows", "DATA_ENV", "DataFile", "DataFolderError",
    "DistinctAggregate",
    "DistinctValues", "ENGINE_ENV", "Engine", "EngineError", "FileSource", "FrameSource",
    "FirstRows", "GroupedSum", "GroupedSumAggregate", "HistogramAggregate",
    "JointAggregate", "JointCells",
    "NumericBins", "PersonCells", "Profile", "ProfileAggregate", "Query", "RowsPerPerson",
    "RowsPerPersonAggregate",
    "Source", "SumAggregate", "TableAggregate", "TableSource", "data_folder",
    "engine_from_env", "list_data_folder", "open_data_file", "query_key",
]
