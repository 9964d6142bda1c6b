"""The Synthetic data page's query for the release plan (``synthetic.plan_query``): the page's
choices with each column's declared cells and where they come from, read from the declared
schema alone; the person-id column refused by name; a short label whatever the names."""

from __future__ import annotations

import pandas as pd
import pytest

from dashboard.analysis import synthetic as sy
from dashboard.data.model import ColumnDomain, LoadedDataset
from dpcore.contributions import PrivacyUnit
from plan.model import PlanError

LONG = ["a" * 70, "b" * 70]
ONE_ROW = PrivacyUnit()


def loaded(names: list[str]) -> LoadedDataset:
    frame = pd.DataFrame({names[0]: ["x", "y"], names[1]: [1.0, 9.0], "pid": [1, 2]})
    domains = {names[0]: ColumnDomain("categorical", categories=("x", "y"),
                                      source="typed on the Data page"),
               names[1]: ColumnDomain("numeric", lower=0, upper=10, bins=(0.0, 5.0, 10.0),
                                      from_data=True)}
    return LoadedDataset("t", frame, domains, [], "test", key="test:plan-query")


def query(names: list[str], unit: PrivacyUnit = ONE_ROW, **choices):
    settings = {"measure": "epsilon", "budget": 0.7, "algorithm": "MST",
                "marginals": "auto", "pairs": [], "rows": 123} | choices
    return sy.plan_query(loaded(names), unit, names=names, **settings)


def test_the_columns_carry_their_declared_cells_and_where_each_came_from():
    spec = query(["colour", "size"]).query
    assert spec.columns[0].categories.values == ("x", "y")
    assert spec.columns[1].edges.values == (0.0, 5.0, 10.0)
    assert spec.columns[1].edges.origin == "data"   # flagged wherever it is used
    assert (spec.algorithm, spec.rows, spec.measure, spec.epsilon) == ("MST", 123, "pure", 0.7)


def test_pairs_are_named_and_rho_is_zcdp():
    spec = query(["colour", "size"], measure="rho", algorithm="AIM", marginals="pairs",
                 pairs=[(1, 0)]).query
    assert spec.pairs == (("size", "colour"),)
    assert (spec.measure, spec.rho, spec.epsilon) == ("zcdp", 0.7, None)


def test_the_person_id_column_is_refused_by_name():
    with pytest.raises(PlanError, match="person-id column"):
        query(["colour", "pid"], PrivacyUnit("pid", 2))


def test_long_names_keep_the_label_short():
    assert query(LONG).label == "Synthetic table of 2 columns"
    assert query(["colour", "size"]).label == "Synthetic table of colour, size"
