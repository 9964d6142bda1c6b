"""A refused release reads nothing it will not release: the checks on public facts (who may
release, the dataset's budget against the plan's cost) run before any aggregate is computed,
on a CSV's first release too, whose identity digest is computed from the cells its
aggregates read (issue 37: one parse). The digest is a read of the data (the dataset's
budget is kept under it); the aggregates are not computed. A viewer, who may release nothing,
has not even the file parsed."""

from __future__ import annotations

from collections import OrderedDict

import pytest

from engine import FileSource
from engine.duckdb_backend import DuckDBBackend
from engine.service import Engine
from plan import identity
from release import Ledger, access, run
from release.access import OPERATOR, Person, Role
from release.errors import OverBudget
from release.ledger import LedgerDenied
from release.roles import Roles
from tests.release.test_identity_one_read import people_plan, settled, write_messy

__all__ = ["settled"]   # the fixture, imported for the tests below

ISSUER = "https://login.example.org"
ANALYST = Person(ISSUER, "sub-bob", "bob@example.org", "Bob", True)
VIEWER = Person(ISSUER, "sub-cy", "cy@example.org", "Cy", True)


def statements(monkeypatch) -> list[str]:
    """Every statement the engine runs (``DuckDBBackend._execute``: the readings table's
    build, which parses the CSV, and each aggregate's statements, which read that table) and
    every parse of the file by the identity digest outside the engine."""
    seen: list[str] = []
    execute, digest_of = DuckDBBackend._execute, identity._digest_of

    def engine_spy(self, cursor, source, sql, params, **kwargs):
        if not sql.endswith("LIMIT 0"):        # the header's names only
            seen.append(sql)
        return execute(self, cursor, source, sql, params, **kwargs)

    def digest_spy(connection, clause, params, names):
        if "read_csv(" in clause:
            seen.append("digest: " + clause)
        return digest_of(connection, clause, params, names)

    monkeypatch.setattr(DuckDBBackend, "_execute", engine_spy)
    monkeypatch.setattr(identity, "_digest_of", digest_spy)
    return seen


def aggregates(seen: list[str]) -> list[str]:
    """The statements that compute an aggregate: all but the parse of the file into the
    readings table (the one statement that reads the CSV) and the digest's."""
    return [s for s in seen if "read_csv(" not in s]


@pytest.fixture
def signed_in(tmp_path, monkeypatch):
    """Sign-in on, with an analyst (no allotment) and a viewer."""
    monkeypatch.setenv(access.AUTH_ENV, "oidc")
    monkeypatch.setenv("EPSILON_LAB_ROLES", str(tmp_path / "roles.sqlite"))
    with Roles() as store:
        store.add("bob@example.org", Role.ANALYST, by=OPERATOR)
        store.add("cy@example.org", Role.VIEWER, by=OPERATOR)


def test_an_allowed_first_release_computes_its_aggregates(tmp_path, settled) -> None:
    """The control: the spy sees the aggregates of a release that goes ahead."""
    source = write_messy(tmp_path / "messy.csv")
    seen = statements(settled)
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        run(people_plan(), source, ledger=ledger, budget=5.0,
            engine=Engine(DuckDBBackend(threads=1)))
    assert len(seen) - len(aggregates(seen)) == 1        # one parse: the readings table
    assert aggregates(seen)


def test_a_first_release_over_budget_computes_no_aggregate(tmp_path, settled) -> None:
    """The plan spends ε = 0.75 of a budget of 0.5: refused once the file's digest is known
    (it names the dataset whose budget it is), before any aggregate. Before: every
    aggregate of the plan was computed, then the release refused."""
    source = write_messy(tmp_path / "messy.csv")
    seen = statements(settled)
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        with pytest.raises(OverBudget, match="over budget"):
            run(people_plan(), source, ledger=ledger, budget=0.5,
                engine=Engine(DuckDBBackend(threads=1)))
        assert ledger.releases() == []
    assert len(seen) == 1 and "read_csv(" in seen[0]     # the parse, for the digest
    assert aggregates(seen) == []


def test_a_first_release_over_a_budget_already_kept_computes_no_aggregate(
        tmp_path, settled) -> None:
    """The dataset's budget set by an earlier release of the same bytes in another file (its
    digest not remembered for this one): the second release, over what is left, reads the
    file to identify it and computes nothing."""
    first = write_messy(tmp_path / "messy.csv")
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        run(people_plan(), first, ledger=ledger, budget=1.0)   # spends 0.75 of 1
    copy = tmp_path / "copy.csv"
    copy.write_bytes(first.path.read_bytes())
    settled.setattr(identity, "_digest_cache", OrderedDict())
    seen = statements(settled)
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        with pytest.raises(OverBudget, match="over budget"):
            run(people_plan("other"), FileSource(copy, "csv"), ledger=ledger,
                engine=Engine(DuckDBBackend(threads=1)))
        assert len(ledger.releases()) == 1
    assert len(seen) == 1 and "read_csv(" in seen[0]     # the parse, for the digest
    assert aggregates(seen) == []


def test_an_analyst_without_an_allotment_computes_no_aggregate(
        tmp_path, settled, signed_in) -> None:
    """An analyst releases within an allotment of the dataset (known by its digest): with
    none, refused before any aggregate. Before: the plan's aggregates were computed first."""
    source = write_messy(tmp_path / "messy.csv")
    with access.acting_as(OPERATOR), Ledger(tmp_path / "ledger.sqlite") as ledger:
        pass                                    # the ledger made by the operator
    seen = statements(settled)
    with access.acting_as(ANALYST), Ledger(tmp_path / "ledger.sqlite") as ledger:
        with pytest.raises(LedgerDenied, match="allotment"):
            run(people_plan(), source, ledger=ledger,
                engine=Engine(DuckDBBackend(threads=1)))
    assert aggregates(seen) == []


def test_a_viewers_release_reads_nothing(tmp_path, settled, signed_in) -> None:
    """A viewer may release no dataset: refused before the file is parsed at all, for the
    digest or anything else."""
    source = write_messy(tmp_path / "messy.csv")
    with access.acting_as(OPERATOR), Ledger(tmp_path / "ledger.sqlite") as ledger:
        pass
    seen = statements(settled)
    with access.acting_as(VIEWER), Ledger(tmp_path / "ledger.sqlite") as ledger:
        with pytest.raises(LedgerDenied):
            run(people_plan(), source, ledger=ledger,
                engine=Engine(DuckDBBackend(threads=1)))
    assert seen == []
