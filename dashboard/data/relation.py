"""The engine relation behind a dataset: where its true answers and column facts come from.

Every dataset a page uses — a built-in, an upload (a frame in the session's memory), a file of
the server's data folder (scanned out of core) — is a :class:`Relation`: an engine source and
the key the dashboard's caches use. The engine is built once per server process from
``EPSILON_LAB_ENGINE`` / ``EPSILON_LAB_SPARK`` and caches each aggregate by data version, so a
rerun that only moves ε never scans the data again.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

import streamlit as st

from engine import CountRows, Engine, EngineError, FrameSource, Source, engine_from_env
from engine.queries import Aggregate, ColumnInfo, Query
from engine.service import ENGINE_ENV
from engine.spark_backend import SPARK_ENV

__all__ = ["Relation", "engine", "EngineError"]


@st.cache_resource(show_spinner=False)
def _engine(choice: str, spark: str) -> Engine:
    # One engine (and one DuckDB connection, one Spark session) per server process and
    # setting: its aggregate cache is shared, keyed by source identity and data version.
    return engine_from_env()


def engine() -> Engine:
    """The engine the environment asks for (built once per process and setting)."""
    return _engine(os.environ.get(ENGINE_ENV, ""), os.environ.get(SPARK_ENV, ""))


def _what(query: Query) -> str:
    name = type(query).__name__
    column = getattr(query, "column", None)
    return {"Count": "counting rows", "Profile": "profiling every column",
            "FirstRows": "reading the first rows"}.get(
        name, f"reading {column}" if column else "scanning")


@dataclass(frozen=True, eq=False)
class Relation:
    """A dataset as the engine sees it.

    It answers what the pages ask of a table's shape — ``len``, ``shape``, ``columns`` — from
    engine aggregates, so analysis code written for a pandas frame's shape works unchanged,
    and :meth:`answer` runs any engine query (cached by data version).
    """

    source: Source
    key: str = field(default_factory=lambda: f"memory:{uuid.uuid4().hex}")

    @classmethod
    def of_frame(cls, frame, name: str = "data", key: str | None = None,
                 cells=None) -> Relation:
        """An in-memory frame (a built-in or an upload): DuckDB scans it in place.
        ``cells``: an upload's cells as text, which its true answers read
        (``engine.sources.FrameSource``)."""
        key = key or f"memory:{uuid.uuid4().hex}"
        return cls(FrameSource(frame, name, key=key, cells=cells), key)

    @property
    def in_memory(self) -> bool:
        return isinstance(self.source, FrameSource)

    def answer(self, query: Query) -> Aggregate:
        """The aggregate for ``query``; the first scan of a file shows what is being read.

        Raises
        ------
        EngineError
            The data cannot be read (changed, removed, corrupt) or the cluster is down.
        """
        eng = engine()
        if self.in_memory or eng.cached(self.source, query):
            return eng.answer(self.source, query)
        with st.spinner(f"Scanning {self.source.describe()} ({_what(query)})…"):
            return eng.answer(self.source, query)

    def answer_many(self, queries: Sequence[Query]) -> list[Aggregate]:
        """The aggregates for ``queries``, read together (``Engine.answer_many``: one ranking
        of each person's rows for the queries under the same unit), as a release reads a
        plan's.

        Raises
        ------
        EngineError
            As :meth:`answer`.
        """
        eng = engine()
        if self.in_memory or all(eng.cached(self.source, q) for q in queries):
            return eng.answer_many(self.source, queries)
        with st.spinner(f"Scanning {self.source.describe()} ({_what(queries[0])})…"):
            return eng.answer_many(self.source, queries)

    def column_info(self) -> tuple[ColumnInfo, ...]:
        return engine().columns(self.source)

    @property
    def columns(self) -> list[str]:
        return [c.name for c in self.column_info()]

    def __len__(self) -> int:
        return int(self.answer(CountRows()).rows)

    @property
    def shape(self) -> tuple[int, int]:
        return len(self), len(self.column_info())

    def describe(self) -> str:
        return self.source.describe()

