"""What a release publishes: nothing in its files is a function of the data except the
released values.

The same plan is released through ``release.run`` on two neighbouring datasets (one person
removed) and on a dataset with one person added, and every published file (release.csv,
release.json, card.json) is compared once the released values themselves (and what names
the release: its time, its ledger entry, the hash of its values) are masked: the rest must
be byte for byte the same. A digest of the data, a default target computed from the true
counts, a count of dropped rows — anything that moves with the data — fails it.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import replace

import pandas as pd
import pytest

from engine import Engine, FrameSource
from engine.duckdb_backend import DuckDBBackend
from plan.build import build_plan
from plan.model import Bounds, Dataset, Noise, Plan, PlanQuery, Sum, Target
from release import Ledger, run
from release.card import card_json
from release.files import release_csv, release_json
from tests.release_fixtures import every_kind_plan, visits

MASK = "<masked>"


@pytest.fixture(scope="module")
def engine() -> Engine:
    return Engine(DuckDBBackend(threads=1))


def _neighbours() -> dict[str, pd.DataFrame]:
    """The data, the data without its first person, and the data with a new person whose
    rows hold a diagnosis and a sex nobody declared."""
    data = visits(1500, seed=3)
    first = data["pid"].iloc[0]
    newcomer = pd.DataFrame({"pid": [10_001] * 4, "age": [17, 95, 40, 40],
                             "cost": [1e9, -5.0, 12.5, 0.0],
                             "dx": ["A", "not declared", "rare", "A"],
                             "sex": ["F", "X", "M", "F"]})
    return {"data": data, "without one person": data[data["pid"] != first],
            "with one more person": pd.concat([data, newcomer], ignore_index=True)}


def _with_data_target(plan: Plan, frame: pd.DataFrame) -> Plan:
    """The plan with the selection's target set as a page sets its default: from the true
    counts (here, the share of the most common diagnosis), marked as read off the data."""
    share = float(frame["dx"].value_counts(normalize=True).iloc[0])
    queries = tuple(replace(q, target=Target("selection", probability=round(share, 6),
                                             origin="data"))
                    if q.id == "top-dx" else q for q in plan.queries)
    return replace(plan, queries=queries)


def _masked_record(text: bytes) -> dict:
    record = json.loads(text)
    for key in ("released_at", "ledger_entry", "values_sha256"):
        record[key] = MASK
    for query in record["queries"]:
        query["values"] = MASK
    return record


def _masked_card(text: bytes) -> dict:
    card = json.loads(text)
    for key in ("released_at", "ledger_entry", "values_sha256"):
        card["product"][key] = MASK
    return card


def _masked_csv(text: bytes) -> list[tuple[str, ...]]:
    rows = list(csv.reader(io.StringIO(text.decode("utf-8-sig"))))
    header, body = rows[0], rows[1:]
    # the values, the groups (partition selection releases which groups it found) and the
    # release tag (time and entry) are the release itself
    return [tuple(header)] + sorted({tuple(row[:3]) for row in body})


def _published(frame: pd.DataFrame, tmp_path, engine: Engine, name: str) -> dict[str, object]:
    plan = _with_data_target(every_kind_plan(), frame)
    with Ledger(tmp_path / f"{name}.sqlite") as ledger:
        release = run(plan, FrameSource(frame), ledger=ledger, engine=engine)
    return {"release.json": _masked_record(release_json(release)),
            "card.json": _masked_card(card_json(release)),
            "release.csv": _masked_csv(release_csv(release))}


@pytest.mark.slow
def test_a_release_publishes_nothing_of_the_data_but_its_values(tmp_path, engine):
    files = {name: _published(frame, tmp_path, engine, f"ledger-{i}")
             for i, (name, frame) in enumerate(_neighbours().items())}
    reference = files.pop("data")
    for name, published in files.items():
        for file_name, content in published.items():
            assert content == reference[file_name], (
                f"{file_name} differs between the data and the data {name}: something in it "
                "is a function of the data")


def test_the_published_plan_has_no_digest_and_no_target_read_off_the_data():
    plan = _with_data_target(every_kind_plan(content_hash="sha256:" + "ab" * 32),
                             visits(300))
    published = plan.published()
    assert published.dataset.content_hash is None
    assert published.query("top-dx").target is None
    # a typed target and every declaration stay (declarations read off the data are
    # flagged by their origin on the card)
    assert published.query("n").target == plan.query("n").target
    assert published.query("dx-cost").query == plan.query("dx-cost").query
    # the steward's own plan is untouched
    assert plan.dataset.content_hash is not None and plan.query("top-dx").target is not None
    assert Plan.from_json(plan.to_json()) == plan


def test_the_selection_pages_default_target_is_read_off_the_data_and_never_published():
    """The Selection page's Add to plan sets a P(correct) target from the true counts (what
    the page shows now): the plan marks it as read off the data, the published plan drops
    it, and an edit elsewhere in the plan's table keeps its origin."""
    from dashboard.analysis import release_plan as rp
    from tests.conftest import open_app

    at = open_app("selection.py")
    at.button(key="sel_add_to_plan").click().run()
    assert not at.exception, [e.value for e in at.exception]
    [entry] = at.session_state["release_plan_by_dataset"][at.session_state["dataset"].key]
    target = entry.query.target
    assert target is not None and target.kind == "selection" and target.origin == "data"
    plan = Plan(Dataset("adult"), (entry.query,))
    assert plan.published().queries[0].target is None
    assert "target" not in json.dumps(plan.published().to_dict())
    # the plan's table: the ε edited, the target untouched → still read off the data
    table = rp.plan_rows(plan, build_plan(plan), {})
    table.loc[entry.query.id, rp.EPS] = 0.5
    [edited], problems = rp.apply_edits(plan, table)
    assert problems == [] and edited.target.origin == "data"


def _loaded(domains: dict, key: str = "upload:mine"):
    from dashboard.data.model import LoadedDataset

    frame = pd.DataFrame({"income": [12.0, 430.0, 88.5, 1500.0], "dx": ["A", "B", "A", "C"]})
    return LoadedDataset("mine.csv", frame, domains, [], "test", key=key)


def test_bounds_and_categories_carry_the_origin_they_were_set_with():
    """The card said "typed" for bounds the page suggested from the data's own extremes,
    and "public" for bounds and categories the user typed in the schema: each now carries
    where it was set, and what was read off the data is flagged on the card."""
    from dashboard.analysis import plan_entries as pe
    from dashboard.analysis.stats_query import default_bounds
    from dashboard.data.model import ColumnDomain
    from dashboard.data.schema import with_origin
    from release.card import not_covered

    bare = _loaded({})
    suggested = default_bounds(bare, "income")
    assert pe.bounds_of(bare, "income", suggested.lower, suggested.upper).origin == "data"
    assert pe.bounds_of(bare, "income", 0.0, 999.0).origin == "typed"
    typed = _loaded({
        "income": with_origin(ColumnDomain("numeric", lower=0.0, upper=2000.0), "typed", "x"),
        "dx": with_origin(ColumnDomain("categorical", categories=("A", "B", "C")), "typed")})
    assert pe.bounds_of(typed, "income", 0.0, 2000.0).origin == "typed"
    assert pe.categories_of(typed, "dx", None).origin == "typed"
    public = _loaded({"income": with_origin(ColumnDomain("numeric", lower=0.0, upper=2000.0),
                                            "public", "tariff")})
    assert pe.bounds_of(public, "income", 0.0, 2000.0).origin == "public"
    # the card lists the suggestion read off the data as not covered by the guarantee
    bounds = pe.bounds_of(bare, "income", suggested.lower, suggested.upper)
    plan = Plan(Dataset("mine"), (PlanQuery("s", "Sum", Sum("income", bounds),
                                            Noise("laplace", "pure", epsilon=1.0)),))
    assert [item["what"] for item in not_covered(plan)] == ["bounds of 'income'"]


def test_an_answer_range_from_an_uploads_size_is_flagged():
    """Bounded Laplace needs a public range for the answer; the page's default is a round
    number above the row count, which for an upload is read off the data."""
    from dashboard.analysis import plan_entries as pe
    from dashboard.analysis.stats_query import QuerySpec, default_answer_range
    from dashboard.choices import PrivacyChoice
    from dashboard.person import PrivacyUnit as PageUnit
    from release.card import not_covered

    loaded = _loaded({})
    choice = PrivacyChoice("pure", "bounded_laplace", epsilon=1.0)
    default = default_answer_range(QuerySpec("count"), len(loaded.relation))
    query = pe.statistics_query(loaded, PageUnit(), query="count", column=None, lower=None,
                                upper=None, categories=None, choice=choice,
                                answer_range=default)
    assert query.mechanism.range_origin == "data"
    plan = Plan(Dataset("mine"), (query,))
    assert [item["what"] for item in not_covered(plan)] == [
        "answer range of the bounded_laplace mechanism"]
    typed = pe.statistics_query(loaded, PageUnit(), query="count", column=None, lower=None,
                                upper=None, categories=None, choice=choice,
                                answer_range=(0.0, 100.0))
    assert typed.mechanism.range_origin == "typed"
    assert Plan.from_json(plan.to_json()) == plan


def test_the_budget_history_on_the_card_is_the_stewards_and_the_same_on_neighbours(tmp_path,
                                                                                  engine):
    """Issue 31 item 8: the card lists the dataset's budget settings before the release. They
    are the steward's decisions (and earlier releases' ε): on neighbouring datasets with the
    same decisions the card's budget section is the same once the times are masked."""
    cost = Sum("cost", Bounds(0, 500, "typed", "tariff"))
    plan = Plan(Dataset("visits"), (PlanQuery("cost", "Cost", cost,
                                              Noise("laplace", "pure", epsilon=1.0)),))
    sections = []
    for i, frame in enumerate(_neighbours().values()):
        with Ledger(tmp_path / f"budget-{i}.sqlite") as ledger:
            first = run(plan, FrameSource(frame), ledger=ledger, engine=engine, budget=1.0,
                        budget_delta=1e-6)
            ledger.set_budget(first.dataset, 2.5, reason="raised for a second release")
            second = run(plan, FrameSource(frame), ledger=ledger, engine=engine)
        section = json.loads(card_json(second))["dataset_budget"]
        assert all(h.pop("time") < second.record.time for h in section["history"])
        section["in_force"].pop("time")
        sections.append(section)
    assert [(h["change"], h["epsilon"], h["delta"], h["spent_epsilon_before"])
            for h in sections[0]["history"]] == [("set (with a δ cap)", 1.0, 1e-6, 0.0),
                                                 ("ε raised, δ cap removed", 2.5, None, 1.0)]
    # ledger entries number the same way in each fresh ledger
    assert sections[1:] == sections[:1] * 2
