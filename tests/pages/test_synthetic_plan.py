"""A synthetic table in the release plan from the dashboard (issue 23): "Add to plan" on the
Synthetic data page adds the page's choices as the query a release draws (its certified loss the
page's budget); the Release plan page lists it with OpenDP's certified figure, composes it into
the total the ledger records, says that it is not simulated (importing a plan file holding
one: tests/pages/test_page_plan.py), and a release from the page offers its rows as a CSV."""

from __future__ import annotations

import csv
import io

import pytest

from dashboard import plan_store
from dashboard.analysis import release_plan as rp
from plan import model
from plan.build import build_plan
from plan.kinds.synthetic import OTHER, Synthetic, SyntheticColumn
from release import Ledger, prepare
from tests.conftest import open_app

ADULT = "Adult (UCI census income)"
PLANS = "release_plan_by_dataset"
SEXES = ("Female", "Male")                       # Adult's declared categories (adult.names)
AGE_BANDS = (17.0, 25.0, 35.0, 45.0, 55.0, 65.0, 90.0)   # and its declared age bins
ROWS = 30


def no_problem(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def entries(at) -> tuple[plan_store.Entry, ...]:
    return at.session_state[PLANS][at.session_state["dataset"].key]


def synthetic(epsilon: float = 0.5) -> model.PlanQuery:
    """A small synthetic table of Adult's sex and race (few mirror-descent iterations)."""
    spec = Synthetic((SyntheticColumn("sex", model.Categories(SEXES, "public")),
                      SyntheticColumn("race", model.Categories(("White", "Black"), "public"))),
                     "MST", ROWS, "pure", epsilon=epsilon, marginals="one-way", iters=20)
    return model.PlanQuery("syn", "Synthetic sex and race", spec, None, "synthetic")


def plan_with_count_and_synthetic():
    """The plan page of Adult with a Laplace count (ε = 1, from its page) and a synthetic
    table (ε = 0.5), accounted by basic composition."""
    at = open_app("statistics.py")
    at.selectbox(key="stats_query").select("count").run()
    at.button(key="stats_add_to_plan").click().run()
    key = at.session_state["dataset"].key
    at.session_state[PLANS] = {key: (*at.session_state[PLANS][key],
                                     plan_store.Entry(synthetic()))}
    at.switch_page("app_pages/plan.py").run()
    at.selectbox(key="plan_method").select("basic").run()
    no_problem(at)
    return at


def recorded_epsilon(at) -> float:
    """What the release section says the ledger will record."""
    text = next(m.value for m in at.markdown if "The ledger will record" in m.value)
    return float(text.replace("\\", "").split("record ε = ")[1].split(" ")[0].rstrip(","))


def basic_total(at) -> float:
    value = next(m.value for m in at.metric if m.label == "Basic composition")
    return float(value.split("=")[1].rstrip("↑"))


def test_add_to_plan_adds_the_pages_choices_and_certifies_the_pages_budget():
    at = open_app("synthetic.py", dataset=ADULT)
    at.multiselect(key="synthetic_columns").set_value(["sex", "age"])
    at.radio(key="synthetic_measure").set_value("rho")
    at.number_input(key="synthetic_budget").set_value(0.25)
    at.radio(key="synthetic_algorithm").set_value("MST")
    at.radio(key="synthetic_marginals").set_value("one-way")
    at.number_input(key="synthetic_rows").set_value(200)
    at.run()
    no_problem(at)
    adds = next(c.value for c in at.caption if c.value.startswith("Adds")).replace("\\", "")
    assert "OpenDP's MST (all 1-way marginals), 200 synthetic rows, ρ = 0.25" in adds
    at.button(key="synthetic_add_to_plan").click().run()
    no_problem(at)
    [entry] = entries(at)
    query = entry.query
    spec = query.query
    assert query.page == "synthetic" and query.mechanism is None
    assert spec.names == ("sex", "age")
    assert spec.columns[0].categories.values == SEXES
    assert spec.columns[0].categories.origin == "public"
    assert spec.columns[1].edges.values == AGE_BANDS
    assert (spec.algorithm, spec.marginals, spec.rows, spec.measure, spec.rho,
            spec.epsilon) == ("MST", "one-way", 200, "zcdp", 0.25, None)
    # the release's own certification of that very query: OpenDP's map, one row per person
    prepared = prepare(model.Plan(model.Dataset("adult"), (query,), model.PrivacyUnit(),
                                  model.Accounting("zcdp", 1e-6)))
    (certified,) = prepared.certified[0]
    assert float(certified.measurement.map(1)) == 0.25
    assert certified.certified.rho == 0.25 and prepared.spent.rho == 0.25


@pytest.mark.slow   # OpenDP certifies AIM's map on the click: seconds
def test_chosen_pairs_enter_the_plan_by_name():
    at = open_app("synthetic.py", dataset=ADULT)
    at.multiselect(key="synthetic_columns").set_value(["sex", "race", "income"])
    at.radio(key="synthetic_algorithm").set_value("AIM").run()   # MST is the default
    at.radio(key="synthetic_marginals").set_value("pairs")
    at.run()
    at.multiselect(key="synthetic_pairs").set_value(["sex × income", "race × income"]).run()
    no_problem(at)
    at.button(key="synthetic_add_to_plan").click().run()
    no_problem(at)
    [entry] = entries(at)
    spec = entry.query.query
    assert (spec.algorithm, spec.marginals) == ("AIM", "pairs")
    assert spec.pairs == (("sex", "income"), ("race", "income"))


def test_the_plan_page_lists_it_certified_and_composes_it_as_the_ledger_will():
    at = plan_with_count_and_synthetic()
    frame = next(d.value for d in at.dataframe if "Accuracy now" in d.value.columns)
    row = frame.loc["syn"]
    assert row["ε"] == 0.5
    assert "MST" in row["Mechanism"] and "OpenDP's map certifies ε = 0.5" in row["Mechanism"]
    assert row["Accuracy now"] == rp.NOT_SIMULATED
    # a Laplace count at ε = 1 and the table's certified ε = 0.5 add up under basic
    # composition, on the page and in what the ledger will record
    assert basic_total(at) == 1.5 == recorded_epsilon(at)
    captions = " ".join(c.value for c in at.caption).replace("\\", "")
    assert "A synthetic table is not simulated here" in captions
    assert "OpenDP program (Python): not available" in captions
    assert "simulation report: not available" in captions
    assert "plan_simulation_package" not in [b.key for b in at.get("download_button")]


def count_and_synthetic_rows():
    """A count and the small synthetic table, and the plan page's table of them to edit."""
    queries = (model.PlanQuery("n", "N", model.Count(), model.Noise("laplace", "pure", 1.0)),
               synthetic())
    plan = model.Plan(model.Dataset("adult"), queries)
    return plan, rp.plan_rows(plan, build_plan(plan), {}).copy()


def test_its_budget_is_edited_in_the_table():
    plan, edited = count_and_synthetic_rows()
    queries = plan.queries
    edited.loc["syn", rp.EPS] = 0.25
    out, problems = rp.apply_edits(plan, edited)
    assert problems == []
    assert out[0] == queries[0] and out[1].query.epsilon == 0.25


@pytest.mark.slow   # a real OpenDP fit on Adult's 48,842 rows
def test_a_release_from_the_page_records_the_total_and_offers_the_rows(tmp_path, monkeypatch):
    from dashboard.release_panel import LAST

    path = tmp_path / "ledger.sqlite"
    monkeypatch.setenv("EPSILON_LAB_LEDGER", str(path))
    at = plan_with_count_and_synthetic()
    shown = basic_total(at)
    at.checkbox(key="plan_release_confirm").check().run()
    at.button(key="plan_release").click().run()
    no_problem(at)
    with Ledger(path) as ledger:
        [record] = ledger.releases()
    assert record.epsilon == shown == 1.5 and record.delta == 0.0
    released = next(d.value for d in at.dataframe if "Released value" in d.value.columns)
    rows = released[released["Query"] == "Synthetic sex and race"]
    assert rows["Released value"].sum() == ROWS   # each distinct row with its count
    button = at.download_button(key="plan_release_rows-syn.csv")
    assert button.label == "Synthetic rows of Synthetic sex and race (CSV)"
    [outcome] = at.session_state[LAST].values()
    table = list(csv.reader(io.StringIO(outcome["files"]["rows-syn.csv"].decode("utf-8-sig"))))
    assert table[0] == ["sex", "race"] and len(table) == 1 + ROWS
    assert {r[0] for r in table[1:]} <= {*SEXES, OTHER}
    assert {r[1] for r in table[1:]} <= {"White", "Black", OTHER}
    assert sorted(map(tuple, table[1:])) == sorted(
        tuple(g.split(" × ")) for g, n in zip(rows["Group"], rows["Released value"],
                                              strict=True) for _ in range(int(n)))


def test_the_panel_certifies_on_the_click_not_on_every_run(monkeypatch):
    """OpenDP's map of a synthetic table takes seconds: the page's runs do not compute it;
    the click does, and a refusal there adds nothing and says why."""
    from dashboard import plan_panel
    from dashboard.analysis.releasable import Releasability

    calls = []

    def refusing(query, unit):
        calls.append(query.label)
        return Releasability("OpenDP's map exceeds the plan's figure")

    monkeypatch.setattr(plan_panel, "releasability", refusing)
    at = open_app("synthetic.py", dataset=ADULT)
    at.multiselect(key="synthetic_columns").set_value(["sex", "race"]).run()
    at.number_input(key="synthetic_budget").set_value(0.5).run()
    no_problem(at)
    assert calls == []
    assert any("OpenDP certifies it when you click" in c.value for c in at.caption)
    at.button(key="synthetic_add_to_plan").click().run()
    assert calls == ["Synthetic table of sex, race"]
    assert not at.session_state[PLANS].get(at.session_state["dataset"].key)
    assert any("Not added: a release would refuse it" in w.value
               and "exceeds the plan" in w.value for w in at.warning)


def test_a_figure_of_the_other_measure_typed_in_the_table_is_refused_not_ignored():
    """A ρ typed beside a pure-DP table (or an ε beside a zCDP one) is refused with a reason,
    as for any other query; it was dropped without a word."""
    plan, edited = count_and_synthetic_rows()
    queries = plan.queries
    edited.loc["syn", rp.RHO] = 0.3
    out, problems = rp.apply_edits(plan, edited)
    assert out == queries
    assert len(problems) == 1 and "set by epsilon alone" in problems[0]
