"""One dataset, one budget: the ledger knows data by its content, the same on every path.

The same table uploaded in the app (parsed by the upload reader), listed in the data folder,
given to ``python -m release``, renamed, re-compressed, with its columns or rows reordered,
has one content digest and spends one budget; changing one value makes other data. A
ledger written before the content digest still finds its datasets (the old byte hash is an
alias). A budget caps δ too.
"""

from __future__ import annotations

import gzip
import os
import sqlite3
import subprocess
import sys

import pandas as pd
import pytest

from dashboard.data.upload import load_upload
from engine import Engine, FileSource, FrameSource
from engine.duckdb_backend import DuckDBBackend
from plan.identity import DatasetIdentity, content_digest, file_hash
from plan.model import Count, Dataset, Noise, Plan, PlanQuery
from release import Ledger, OverBudget, run
from tests.conftest import ROOT
from tests.release_fixtures import visits


@pytest.fixture(scope="module")
def engine() -> Engine:
    return Engine(DuckDBBackend(threads=1))


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    frame = visits(600, seed=11)
    frame.loc[frame.index[::37], "cost"] = float("nan")   # missing values, written as ""
    return frame


@pytest.fixture(scope="module")
def copies(tmp_path_factory, table) -> dict[str, object]:
    """The same table by every path a release can read it."""
    folder = tmp_path_factory.mktemp("data")
    text = table.to_csv(index=False).encode("utf-8")
    (folder / "visits.csv").write_bytes(text)
    (folder / "renamed copy.csv").write_bytes(text)
    (folder / "visits.csv.gz").write_bytes(gzip.compress(text))
    table[table.columns[::-1]].to_csv(folder / "columns reordered.csv", index=False)
    table.sample(frac=1.0, random_state=1).to_csv(folder / "rows reordered.csv", index=False)
    table.to_parquet(folder / "visits.parquet")
    return {
        "upload (parsed in the app)": load_upload(text, "visits.csv").frame,
        "data-folder file": FileSource(folder / "visits.csv", "csv"),
        "renamed": FileSource(folder / "renamed copy.csv", "csv"),
        "re-compressed": FileSource(folder / "visits.csv.gz", "csv"),
        "columns reordered": FileSource(folder / "columns reordered.csv", "csv"),
        "rows reordered": FileSource(folder / "rows reordered.csv", "csv"),
        "the frame itself": table,
        "Parquet": FileSource(folder / "visits.parquet", "parquet"),
        "path": folder / "visits.csv",
    }


def test_the_same_table_has_one_digest_by_every_path(copies, table):
    digests = {name: content_digest(data) for name, data in copies.items()}
    assert len(set(digests.values())) == 1, digests
    # the older byte hashes told them apart
    assert file_hash(copies["renamed"].path) == file_hash(copies["data-folder file"].path)
    assert file_hash(copies["re-compressed"].path) != file_hash(
        copies["data-folder file"].path)


def test_one_changed_value_or_name_is_other_data(table):
    base = content_digest(table)
    edited = table.copy()
    edited.loc[edited.index[5], "age"] += 1
    renamed = table.rename(columns={"age": "years"})
    dropped = table.iloc[1:]
    assert len({base, content_digest(edited), content_digest(renamed),
                content_digest(dropped)}) == 4


def _plan(name: str) -> Plan:
    return Plan(Dataset(name), (PlanQuery("n", "Rows", Count(),
                                          Noise("laplace", "pure", epsilon=1.0)),))


def test_releases_by_every_path_spend_one_budget(tmp_path, copies, engine):
    """ε = 1 each against a budget of 4: the upload, the data-folder file and a renamed,
    re-compressed copy under other names spend it; the fifth is refused and says which
    dataset it is the same data as."""
    ledger_path = tmp_path / "ledger.sqlite"
    first = FrameSource(copies["upload (parsed in the app)"])
    with Ledger(ledger_path) as ledger:
        run(_plan("visits (upload)"), first, ledger=ledger, budget=4.0, engine=engine)
        run(_plan("visits"), copies["data-folder file"], ledger=ledger, engine=engine)
        run(_plan("my copy"), copies["renamed"], ledger=ledger, engine=engine)
        run(_plan("visits.csv.gz"), copies["re-compressed"], ledger=ledger, engine=engine)
        with pytest.raises(OverBudget, match=r"the same data as 'visits \(upload\)'"):
            run(_plan("columns"), copies["columns reordered"], ledger=ledger, engine=engine)
        [status] = ledger.datasets()
        assert status.releases == 4 and status.spent_epsilon == 4.0
        assert status.names == ("visits (upload)",)
        assert {r.dataset.name for r in ledger.releases()} == {
            "visits (upload)", "visits", "my copy", "visits.csv.gz"}
        assert ledger.verify() == []


@pytest.mark.slow
def test_the_command_line_and_the_app_spend_one_budget(tmp_path, copies, engine):
    """A budget set by the app's release of the upload holds for python -m release on the
    data-folder file under another name."""
    ledger_path = tmp_path / "ledger.sqlite"
    with Ledger(ledger_path) as ledger:
        run(_plan("upload"), FrameSource(copies["upload (parsed in the app)"]), ledger=ledger,
            budget=1.5, engine=engine)
    (tmp_path / "plan.json").write_text(_plan("from the CLI").to_json())
    cli = subprocess.run(
        [sys.executable, "-m", "release", "--plan", str(tmp_path / "plan.json"), "--data",
         str(copies["path"]), "--ledger", str(ledger_path), "--out", str(tmp_path / "out")],
        cwd=ROOT, capture_output=True, text=True, env=dict(os.environ), timeout=300)
    assert cli.returncode == 1 and "over budget" in cli.stderr, cli.stderr
    assert "the same data as 'upload'" in cli.stderr


def test_a_budget_caps_delta_too(tmp_path, copies, engine):
    gaussian = Plan(Dataset("visits"), (PlanQuery(
        "n", "Rows", Count(), Noise("gaussian", "approx", epsilon=1.0, delta=1e-6)),))
    source = copies["data-folder file"]
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        identity = DatasetIdentity("visits", content_digest(source))
        ledger.set_budget(identity, 100.0, delta=1.5e-6)
        run(gaussian, source, ledger=ledger, engine=engine)
        scans = engine.scans
        with pytest.raises(OverBudget, match="δ"):
            run(gaussian, source, ledger=ledger, engine=engine)
        assert engine.scans == scans   # refused before the data is read
        assert ledger.status(identity).releases == 1


def test_a_ledger_from_before_the_content_digest_finds_its_datasets(tmp_path, copies, engine):
    """A ledger that knows the file by its byte hash (as releases recorded it before): the
    new release finds it through that alias and spends from its budget."""
    ledger_path = tmp_path / "old.sqlite"
    source = copies["data-folder file"]
    with Ledger(ledger_path) as ledger:
        ledger.set_budget(DatasetIdentity("visits", file_hash(source.path)), 1.5)
    with sqlite3.connect(ledger_path) as con:   # as the older layout wrote it: no identity
        con.execute("DROP TRIGGER ledger_meta_no_delete")
        con.execute("DELETE FROM ledger_meta WHERE key = 'identity'")
    with Ledger(ledger_path) as ledger:
        assert ledger.knows_legacy_identities()
        run(_plan("visits"), source, ledger=ledger, engine=engine)
        with pytest.raises(OverBudget):
            run(_plan("visits"), source, ledger=ledger, engine=engine)
        [status] = ledger.datasets()
        assert status.releases == 1
