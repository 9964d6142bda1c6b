"""A release on Spark (issue 37, item 3): the plan's queries under its unit read one ranking
of each person's rows (``SparkBackend.run_many``, through ``Engine.answer_many`` as the
release asks), and a CSV released for the first time is still identified before any
aggregate is computed (Spark hands no cells to the digest, unlike DuckDB): a release over
budget computes nothing, and the identity is the file's digest."""

from __future__ import annotations

from collections import OrderedDict

import pytest

from engine.service import Engine
from plan import identity
from plan.identity import content_digest
from release import Ledger, run
from release.errors import ReleaseRefused
from tests.engine.test_engine_spark_one_scan import Rankings
from tests.release.test_identity_one_read import people_plan, settled, write_messy

__all__ = ["settled"]   # the fixture, imported for this module's tests


@pytest.fixture
def spark_backend(shared_spark):
    from engine.spark_backend import SparkBackend

    return SparkBackend(session=shared_spark)


def test_a_first_release_of_a_csv_on_spark_ranks_once_after_its_identity(
        tmp_path, settled, spark_backend, monkeypatch) -> None:
    source = write_messy(tmp_path / "messy.csv")
    engine = Engine(spark_backend)
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        with pytest.raises(ReleaseRefused, match="over budget"):
            run(people_plan(), source, ledger=ledger, budget=0.5, engine=engine)
    assert engine.scans == 0                  # refused on its identity, nothing read
    rankings = Rankings(monkeypatch)
    with Ledger(tmp_path / "other.sqlite") as ledger:
        release = run(people_plan(), source, ledger=ledger, engine=engine, budget=5.0)
    assert engine.scans == 3                  # the count, the histogram, the sum
    assert rankings.built == 1                # the histogram and the sum: one ranking
    settled.setattr(identity, "_digest_cache", OrderedDict())
    assert release.dataset.content_hash == content_digest(source)
