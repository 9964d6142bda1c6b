"""The engine a dashboard holds: a backend chosen from the environment, and a cache.

An aggregate is cached per (source identity, data version, query): moving ε reruns the
noise, never the scan; a changed file has a new version, so its old aggregates are not used.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from engine.duckdb_backend import DuckDBBackend
from engine.errors import EngineError
from engine.queries import Aggregate, ColumnInfo, Query
from engine.sources import FrameSource, Source
from engine.spark_backend import SparkBackend

__all__ = ["Backend", "Engine", "ENGINE_ENV", "engine_from_env"]

#: The environment variable choosing the backend: "duckdb" (default) or "spark".
ENGINE_ENV = "EPSILON_LAB_ENGINE"


class Backend(Protocol):
    name: str

    def columns(self, source: Source) -> tuple[ColumnInfo, ...]: ...

    def run(self, source: Source, query: Query) -> Aggregate: ...


class Engine:
    """Answers queries through a backend, caching each aggregate by data version.

    Parameters
    ----------
    backend : Backend
        Where files and tables are scanned.
    frames : Backend, optional
        Where in-memory frames (built-ins, uploads) are answered; default ``backend``. With
        Spark, :func:`engine_from_env` keeps frames on the embedded DuckDB so that an upload
        never leaves the server's memory.
    cache_size : int
        How many aggregates to keep (least recently used dropped first).
    """

    def __init__(self, backend: Backend, *, frames: Backend | None = None,
                 cache_size: int = 1024) -> None:
        self.backend = backend
        self.frames = frames or backend
        self.cache_size = cache_size
        self._cache: OrderedDict[str, Aggregate] = OrderedDict()
        self._lock = threading.Lock()
        self.scans = 0  # aggregates computed (cache misses), for tests and benchmarks

    def _backend_for(self, source: Source) -> Backend:
        return self.frames if isinstance(source, FrameSource) else self.backend

    def columns(self, source: Source) -> tuple[ColumnInfo, ...]:
        """The source's columns with their kinds (integer, float, text, boolean, other)."""
        return self._backend_for(source).columns(source)

    def answer(self, source: Source, query: Query) -> Aggregate:
        """The aggregate for ``query`` over ``source``, from the cache when the data is the
        same version.

        Raises
        ------
        EngineError
            The source cannot be read, a column is missing or of the wrong kind, or the
            backend failed; the message says what to do.
        """
        key = source.cache_key(query)
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        result = self._backend_for(source).run(source, query)
        with self._lock:
            self.scans += 1
            self._cache[key] = result
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return result

    def answer_many(self, source: Source, queries: Sequence[Query], *,
                    cells: Callable[[Any, str], None] | None = None) -> list[Aggregate]:
        """``answer`` for each query, those not cached computed together: a backend with
        ``run_many`` (DuckDB, Spark) ranks each person's rows once for all the queries under
        the same unit (issue 37, item 3); any other answers them one by one.

        ``cells``: handed to the backend's ``run_many`` (DuckDB: given a CSV's text cells
        when the queries read the file, so that the dataset's identity digest is computed
        from the same reading); never called when every answer is cached or the backend
        reads no cells for it.

        Raises
        ------
        EngineError
            As ``answer``.
        """
        keys = [source.cache_key(query) for query in queries]
        found: dict[str, Aggregate] = {}
        with self._lock:
            for key in keys:
                if key in self._cache:
                    self._cache.move_to_end(key)
                    found[key] = self._cache[key]
        todo: dict[str, Query] = {}
        for key, query in zip(keys, queries, strict=True):
            if key not in found:
                todo.setdefault(key, query)
        if todo:
            backend = self._backend_for(source)
            run_many = getattr(backend, "run_many", None)
            if run_many is not None and cells is not None:
                computed = run_many(source, list(todo.values()), cells=cells)
            elif run_many is not None and len(todo) > 1:
                computed = run_many(source, list(todo.values()))
            else:
                computed = [backend.run(source, query) for query in todo.values()]
            with self._lock:
                for key, result in zip(todo, computed, strict=True):
                    self.scans += 1
                    self._cache[key] = result
                    found[key] = result
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
        return [found[key] for key in keys]

    def cached(self, source: Source, query: Query) -> bool:
        """Whether ``answer`` would come from the cache (no scan)."""
        key = source.cache_key(query)
        with self._lock:
            return key in self._cache

    def forget(self, source: Source) -> None:
        """Drop every cached aggregate of ``source`` (e.g. when an upload is replaced)."""
        prefix = f"{source.identity}\x1f"
        with self._lock:
            for key in [k for k in self._cache if k.startswith(prefix)]:
                del self._cache[key]


def engine_from_env() -> Engine:
    """The engine ``EPSILON_LAB_ENGINE`` asks for: DuckDB (default) or Spark.

    Files are scanned by DuckDB (spilling to disk beyond its memory limit) or, with
    ``spark``, by ``EPSILON_LAB_SPARK``; in-memory frames always go to a DuckDB of their own
    that never spills, so an upload never reaches the disk. Build it once per server
    process (``st.cache_resource``).
    """
    choice = os.environ.get(ENGINE_ENV, "duckdb").strip().lower() or "duckdb"
    # Frames (built-ins, uploads) on a DuckDB that never spills: an upload stays in memory.
    frames = DuckDBBackend(spill=False)
    if choice == "duckdb":
        return Engine(DuckDBBackend(), frames=frames)
    if choice == "spark":
        return Engine(SparkBackend(), frames=frames)
    raise EngineError(f"{ENGINE_ENV} must be 'duckdb' or 'spark', got {choice!r}.")
