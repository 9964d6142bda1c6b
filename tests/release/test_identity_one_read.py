"""A first release of a CSV reads the file once (issue 37): the dataset's identity digest is
computed from the table of the file's text cells that the release's aggregates read
(``DuckDBBackend.run_many``'s readings), not from a second parse of the file. The digest is
the same value as before, for the same bytes: the ledger and the plans record it."""

from __future__ import annotations

from collections import OrderedDict

import pytest

from engine import FileSource
from engine.duckdb_backend import DuckDBBackend
from engine.service import Engine
from plan import identity
from plan.identity import content_digest
from plan.model import (
    Bounds,
    Categories,
    Count,
    Dataset,
    Histogram,
    Noise,
    Plan,
    PlanQuery,
    PrivacyUnit,
    Sum,
)
from release import Ledger, run
from release.cli import main
from release.declarations import DeclarationStore
from release.errors import ReleaseRefused
from tests.engine.test_engine_read_once import messy
from tests.plan.test_identity_wide import _reference_digest, mixed_table


@pytest.fixture
def settled(monkeypatch):
    """This process as a new one would be (nothing identified yet), and files old enough to
    remember at once."""
    monkeypatch.setattr(identity, "_digest_cache", OrderedDict())
    monkeypatch.setattr(identity, "RACY_SECONDS", 0.0)
    return monkeypatch


def parses(monkeypatch) -> list[str]:
    """Every statement that parses the CSV's records (``read_csv``): the engine's, the
    engine's typing of the columns (``_csv_types``: every cell, unless known for this file
    version) and the digest's (not the engine's look at its columns, ``LIMIT 0``: the
    header only)."""
    seen: list[str] = []
    execute, digest_of = DuckDBBackend._execute, identity._digest_of
    csv_types = DuckDBBackend._csv_types

    def types_spy(self, source, width):
        if ("types:" + source.identity, source.version) not in self._schemas:  # its cache
            seen.append("types")
        return csv_types(self, source, width)

    def engine_spy(self, cursor, source, sql, params, **kwargs):
        if "read_csv(" in sql and not sql.endswith("LIMIT 0"):
            seen.append("engine")
        return execute(self, cursor, source, sql, params, **kwargs)

    def digest_spy(connection, clause, params, names):
        if "read_csv(" in clause:
            seen.append("digest")
        return digest_of(connection, clause, params, names)

    monkeypatch.setattr(DuckDBBackend, "_execute", engine_spy)
    monkeypatch.setattr(DuckDBBackend, "_csv_types", types_spy)
    monkeypatch.setattr(identity, "_digest_of", digest_spy)
    return seen


def people_plan(name: str = "people") -> Plan:
    laplace = Noise("laplace", "pure", epsilon=0.25)
    return Plan(Dataset(name), (
        PlanQuery("n", "People", Count(), laplace),
        PlanQuery("c", "By c", Histogram("c", Categories(("a", "b", "c"), "public")),
                  Noise("geometric", "pure", epsilon=0.25)),
        PlanQuery("x", "Total x", Sum("x", Bounds(0.0, 30.0, "public")), laplace)),
        privacy_unit=PrivacyUnit("p", 2))


def write_messy(path) -> FileSource:
    """``messy()``'s cells (ids and values with white space, markers, a thousands separator)
    and the records the one reading drops or mends: one holding U+FFFD, a short one, a long
    one, a quoted line break."""
    text = messy(seed=2).to_csv(index=False)
    extra = ["7,\ufffd,3,a,u", "8,2.5", "9,1,2,b,v,extra,fields", '10,"4\n5",1,c,w']
    path.write_text(text + "\n".join(extra) + "\n", encoding="utf-8")
    return FileSource(path, "csv")


def test_a_first_release_of_a_csv_parses_it_once(tmp_path, settled) -> None:
    source = write_messy(tmp_path / "messy.csv")
    seen = parses(settled)
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        release = run(people_plan(), source, ledger=ledger, budget=5.0,
                      engine=Engine(DuckDBBackend(threads=2)))
    # before: the digest's parse, then the engine's; then the columns' types, then the
    # engine's (a release reads every column as text: the types were never used)
    assert seen == ["engine"]
    settled.setattr(identity, "_digest_cache", OrderedDict())
    assert release.dataset.content_hash == content_digest(source)


def test_the_command_lines_first_release_parses_a_csv_once(tmp_path, settled, capsys) -> None:
    """``python -m release`` looked the data's declarations up by its identity before the
    release, parsing the file to digest it, then again for the aggregates (and once more
    for the columns' types): now the names are recorded under the identity the release
    found from the cells it read."""
    source = write_messy(tmp_path / "messy.csv")
    plan = tmp_path / "plan.json"
    plan.write_text(people_plan().to_json(), encoding="utf-8")
    seen = parses(settled)
    assert main(["--plan", str(plan), "--data", str(source.path), "--ledger",
                 str(tmp_path / "ledger.sqlite"), "--out", str(tmp_path / "out"),
                 "--budget", "5"]) == 0
    assert seen == ["engine"]
    settled.setattr(identity, "_digest_cache", OrderedDict())
    dataset = content_digest(source)
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        assert [r.dataset.content_hash for r in ledger.releases()] == [dataset]
    (line,) = [x for x in capsys.readouterr().out.splitlines()
               if x.startswith("declarations:")]
    assert f"({dataset[:19]}…)" in line
    assert DeclarationStore().find("messy.csv") == [dataset] == DeclarationStore().find(
        "people")


@pytest.mark.parametrize("columns", [1, 5])
def test_the_digest_from_the_cells_is_the_one_the_first_version_gave(
        tmp_path, settled, columns) -> None:
    """Hostile names, missing markers, numbers written as text, booleans: the release's
    identity is the digest of the first version's SQL over the same file."""
    table = mixed_table(columns, seed=columns)
    table.insert(0, "p", range(len(table)))
    path = tmp_path / "mixed.csv"
    table.to_csv(path, index=False)
    source = FileSource(path, "csv")
    plan = Plan(Dataset("mixed"), (PlanQuery("n", "Rows", Count(),
                                             Noise("laplace", "pure", epsilon=0.5)),),
                privacy_unit=PrivacyUnit("p", 1))
    seen = parses(settled)
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        release = run(plan, source, ledger=ledger, budget=5.0,
                      engine=Engine(DuckDBBackend(threads=2)))
    assert seen == ["engine"]
    assert release.dataset.content_hash == _reference_digest(source, settled)


def test_the_digest_is_remembered_and_charged_to_the_same_dataset(tmp_path, settled) -> None:
    """The digest computed from the cells is remembered beside the ledger: a release in a
    new process reads no digest, and both are charged to one dataset (the same digest the
    file's own identification gives: an upload of it, the command line)."""
    source = write_messy(tmp_path / "messy.csv")
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        first = run(people_plan(), source, ledger=ledger, budget=5.0)
    settled.setattr(identity, "_digest_cache", OrderedDict())   # a new process
    seen = parses(settled)
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        second = run(people_plan("other name"), source, ledger=ledger)
        spent = ledger.status(second.dataset).spent_epsilon
    assert seen == ["engine"]       # no digest, nor the columns' types (issue 37)
    assert second.dataset.content_hash == first.dataset.content_hash
    assert spent == pytest.approx(1.5)


def test_a_refused_release_draws_nothing_though_the_cells_were_read(tmp_path, settled) -> None:
    """A CSV identified for the first time is digested from the cells its aggregates read,
    and the budget checked before any aggregate is computed (``test_refused_reads_nothing``):
    a release over budget is refused with nothing recorded and nothing kept."""
    source = write_messy(tmp_path / "messy.csv")
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        with pytest.raises(ReleaseRefused, match="over budget") as refused:
            run(people_plan(), source, ledger=ledger, budget=0.5)
        assert ledger.releases() == []
    # nor does the refusal's traceback keep the true aggregates read with the digest
    tb = refused.value.__traceback__
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    runs = [f for f in frames if f.f_code.co_name == "run" and "inputs" in f.f_locals]
    assert runs and all(f.f_locals["inputs"] is None for f in runs)
    # nor in the answer cache of the engine run() built for itself (a reviewer found the
    # counts and sums there)
    engines = [v for f in frames for v in f.f_locals.values() if isinstance(v, Engine)]
    assert all(not e._cache for e in engines), [list(e._cache.values()) for e in engines]


def test_a_changed_value_is_other_data(tmp_path, settled) -> None:
    source = write_messy(tmp_path / "a.csv")
    lines = (tmp_path / "a.csv").read_text(encoding="utf-8").split("\n")
    lines[1] += "x"                         # the first record's last value
    (tmp_path / "b.csv").write_text("\n".join(lines), encoding="utf-8")
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        first = run(people_plan(), source, ledger=ledger, budget=5.0)
        second = run(people_plan(), FileSource(tmp_path / "b.csv", "csv"), ledger=ledger,
                     budget=5.0)
    assert first.dataset.content_hash != second.dataset.content_hash
    settled.setattr(identity, "_digest_cache", OrderedDict())
    assert second.dataset.content_hash == content_digest(FileSource(tmp_path / "b.csv", "csv"))


class OneByOne:
    """A backend that answers one query at a time (as Spark's does): no ``run_many``."""

    name = "one by one"

    def __init__(self) -> None:
        self._duck = DuckDBBackend(threads=2)

    def columns(self, source):
        return self._duck.columns(source)

    def run(self, source, query):
        return self._duck.run(source, query)


def test_an_engine_that_reads_no_cells_once_identifies_the_file_first(tmp_path,
                                                                      settled) -> None:
    """With a backend that cannot hand the cells over, the file is identified before its
    aggregates are read, as before: a release over budget reads nothing but the digest."""
    source = write_messy(tmp_path / "messy.csv")
    seen = parses(settled)
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        with pytest.raises(ReleaseRefused, match="over budget"):
            run(people_plan(), source, ledger=ledger, budget=0.5, engine=Engine(OneByOne()))
    assert seen == ["digest"]
    with Ledger(tmp_path / "other.sqlite") as ledger:
        release = run(people_plan(), source, ledger=ledger, engine=Engine(OneByOne()),
                      budget=5.0)
    settled.setattr(identity, "_digest_cache", OrderedDict())
    assert release.dataset.content_hash == content_digest(source)
