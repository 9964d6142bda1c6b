"""Tests of engine/: true answers from DuckDB and Spark."""
