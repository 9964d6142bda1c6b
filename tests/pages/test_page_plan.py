"""The Release plan page (issue 13): a plan built from four query pages with "Add to plan",
accounted four ways (PLD checked against dp_accounting built by hand, basic against the sum),
split to meet every target (checked by simulating the real mechanisms at the split), its risk
(checked against closed forms), the budget guard, and the plan file's export and import.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from dp_accounting.pld import common
from dp_accounting.pld import privacy_loss_distribution as pld

from dashboard import plan_store
from dashboard.analysis import release_plan as rp
from dpcore.selection import report_noisy_max
from plan import model
from plan.build import build_plan
from tests.conftest import open_app

STEP = 1e-3
OPTIONS = {"value_discretization_interval": STEP, "pessimistic_estimate": True}
PLANS = "release_plan_by_dataset"


def no_problem(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def metric(at, label: str) -> float:
    value = next(m.value for m in at.metric if m.label == label)
    return float(value.split("=")[1].replace(",", "").rstrip("↑"))


def add_from(at, page: str, key: str, setup=(), *, again: bool = False) -> None:
    """Add the page's query to the plan (``again``: a second copy of one it holds)."""
    at.switch_page(f"app_pages/{page}").run()
    for kind, widget, value in setup:
        getattr(at, kind)(key=widget).set_value(value).run()
    no_problem(at)
    at.button(key=f"{key}_add_to_plan" + ("_second" if again else "")).click().run()
    no_problem(at)


def frame_with(at, column: str):
    """The page's table that has ``column``."""
    return next(d.value for d in at.dataframe if column in d.value.columns)


def entries(at) -> tuple[plan_store.Entry, ...]:
    return at.session_state[PLANS][at.session_state["dataset"].key]


@pytest.fixture(scope="module")
def four_pages():
    """A count (Laplace), a table (geometric), a count by group (Laplace) and the most common
    education (report noisy max, Laplace noise), each at ε = 1 on Adult."""
    at = open_app("statistics.py")
    add_from(at, "statistics.py", "stats", [("selectbox", "stats_query", "count")])
    add_from(at, "tables.py", "tables")
    add_from(at, "groups.py", "groups")
    add_from(at, "selection.py", "sel")
    at.switch_page("app_pages/plan.py").run()
    no_problem(at)
    return at


def test_three_queries_at_one_read_three_and_a_rounded_figure_is_marked_once():
    """Issue 21 item 7: three counts at ε = 1 read 'basic ε = 3.001' beside 'PLD ε = 3'. 3 × 1
    is 3 under every accounting: the plan is pure DP, and each accountant shows what the
    ledger records under it (issue 31 item 7), pure 3-DP, not PLD's 2.99999… at δ. A figure
    rounded up (the split's) is marked ↑, and the page says once what ↑ means."""
    at = open_app("statistics.py")
    for i in range(3):
        add_from(at, "statistics.py", "stats", [("selectbox", "stats_query", "count")],
                 again=i > 0)
    at.switch_page("app_pages/plan.py").run()
    no_problem(at)
    shown = {m.label: m.value for m in at.metric}
    assert set(shown[t] for t in rp.TITLES.values()) == {"ε = 3"}, shown
    texts = [m.value for m in at.markdown]
    assert any("the plan spends ε = 3 under privacy-loss" in t for t in texts), texts
    assert any("Every target is met with ε = 3↑ in all" in t for t in texts), texts
    notes = [c.value for c in at.caption if "marked ↑" in c.value]
    assert len(notes) == 1


def test_four_pages_make_one_plan_accounted_four_ways(four_pages):
    at = four_pages
    kinds = [e.query.query.kind for e in entries(at)]
    assert kinds == ["count", "crosstab", "group_by", "selection"]
    assert [e.query.page for e in entries(at)] == ["statistics", "tables", "groups", "selection"]
    # basic: the four ε add up (each calibrated at ε = 1; the geometric's ε rounds up a hair)
    assert 4.0 <= metric(at, "Basic composition") <= 4.002
    # PLD: dp_accounting built by hand from the four mechanisms
    geometric = build_plan(model.Plan(model.Dataset("x"), (entries(at)[1].query,)))[0]
    scale = geometric.parts[0].mechanism.scale
    hand = pld.from_laplace_mechanism(1.0, sensitivity=1.0, **OPTIONS).self_compose(2)
    hand = hand.compose(pld.from_discrete_laplace_mechanism(
        1 / scale, sensitivity=1, use_connect_dots=True, **OPTIONS))
    hand = hand.compose(pld.from_privacy_parameters(common.DifferentialPrivacyParameters(1.0),
                                                    STEP))
    expected = hand.get_epsilon_for_delta(1e-6)
    shown = metric(at, "Privacy-loss distributions")
    assert shown == pytest.approx(expected, abs=1e-3)   # shown to 4 digits, rounded up
    assert shown >= expected - 1e-9
    assert shown <= metric(at, "Basic composition")
    table = frame_with(at, "Target ±α")
    assert list(table["Query"]) == [e.query.label for e in entries(at)]


def test_use_this_split_meets_every_target_in_simulation(four_pages):
    at = four_pages
    before = metric(at, "Privacy-loss distributions")
    split_text = next(m.value for m in at.markdown if "Every target is met" in m.value)
    announced = float(re.search(r"met with ε \\?= ([\d.]+)", split_text)[1])
    at.button(key="plan_use_split").click().run()
    no_problem(at)
    after = metric(at, "Privacy-loss distributions")
    assert after < before
    # the total the split announced is what the plan spends once it is applied (both are
    # rounded up to 4 digits; the applied ε are rounded up too, by at most one step)
    assert announced <= after <= announced * 1.001
    met = frame_with(at, "Meets target")["Meets target"].tolist()
    assert met == ["yes"] * len(met)
    queries = tuple(e.query for e in entries(at))
    built = build_plan(model.Plan(model.Dataset("x"), queries))
    rng = np.random.default_rng(20261125)
    n = 200_000
    for entry, b in zip(entries(at), built, strict=True):
        q, target = entry.query, entry.query.target
        m = b.parts[0].mechanism
        if target.kind == "error":
            noise = m.sample(np.zeros(1), rng=rng, trials=n)[:, 0]
            miss = float(np.mean(np.abs(noise) > target.alpha))
            se = math.sqrt(target.beta * (1 - target.beta) / n)
            assert miss <= target.beta + 4 * se, (q.label, miss, target.beta)
            if q.mechanism.kind == "laplace":   # the split is the least ε: the target is tight
                assert miss >= target.beta - 4 * se - 0.002, (q.label, miss)
        else:
            scores = np.asarray(entry.context["scores"], float)
            picks = report_noisy_max(scores, scale=m.scale, noise=m.noise, trials=n, rng=rng)
            right = float(np.mean(picks == int(np.argmax(scores))))
            se = math.sqrt(target.probability * (1 - target.probability) / n)
            assert right >= target.probability - 4 * se, (q.label, right)


@pytest.fixture
def ledger(tmp_path, monkeypatch):
    path = tmp_path / "ledger.sqlite"
    monkeypatch.setenv("EPSILON_LAB_LEDGER", str(path))
    return path


def set_budget(at, epsilon: float) -> None:
    at.number_input(key="plan_set_budget_epsilon").set_value(epsilon).run()
    at.checkbox(key="plan_set_budget_confirm").check().run()
    at.button(key="plan_set_budget").click().run()
    assert not at.exception


def recorded_epsilon(at) -> float:
    """What the release section says the ledger will record for this plan (else, for a
    plan that cannot be released as it is, the chosen accountant's figure)."""
    text = next((m.value for m in at.markdown if "The ledger will record" in m.value), None)
    if text is None:
        return metric(at, "Privacy-loss distributions")
    return float(text.replace("\\", "").split("record ε = ")[1].split(" ")[0].rstrip(","))


def test_budget_guard_reads_the_ledger_and_refuses_a_plan_over_what_is_left(four_pages,
                                                                              ledger):
    at = four_pages
    at.run()
    assert any("No total budget is set" in w.value for w in at.warning)
    needs = recorded_epsilon(at)
    set_budget(at, round(needs / 2, 2))
    refusal = " ".join(e.value for e in at.error).replace("\\", "")
    assert "This plan is refused" in refusal and "left" in refusal
    # the plan (public) stays downloadable; its release is what is refused (issue 35)
    assert not at.get("download_button")[0].proto.disabled
    assert at.button(key="plan_release").disabled
    # changing a budget needs a reason (issue 31 item 8)
    at.text_input(key="plan_set_budget_reason").input("raised to release this plan").run()
    set_budget(at, 100.0)
    no_problem(at)
    left = next(m for m in at.metric if m.label == "Left")
    assert float(left.value.split("=")[1]) == 100.0     # nothing released yet
    assert left.delta == "the plan fits this budget"
    assert not at.get("download_button")[0].proto.disabled


@pytest.mark.slow
def test_the_dual_split_fits_the_budget_and_beats_the_even_split(four_pages, ledger):
    at = four_pages
    set_budget(at, 2.0)
    at.selectbox(key="plan_split_mode").select("budget").run()
    assert not at.exception
    sentence = next(m.value for m in at.markdown if "Within the budget" in m.value)
    table = frame_with(at, "target ratio")
    shown = [float(r) for r in table["target ratio"].dropna() if not str(r).startswith(">")]
    assert shown and min(shown) > 0
    plan = model.Plan(model.Dataset("x"), tuple(e.query for e in entries(at)),
                      accounting=model.Accounting("pld", 1e-6))
    result = rp.split(plan, build_plan(plan), {e.query.id: e.context for e in entries(at)},
                      budget=2.0)
    assert result.total <= 2.0
    assert result.worst >= result.even_worst
    assert "Within the budget" in sentence
    at.selectbox(key="plan_split_mode").select("least").run()


def test_export_then_import_gives_the_same_plan_and_a_bad_file_changes_nothing(four_pages,
                                                                                downloads):
    at = four_pages
    at.run()   # draw the download buttons again, now kept by the fixture
    plan = model.Plan.from_json(downloads["release-plan.json"])
    assert [q.label for q in plan.queries] == [e.query.label for e in entries(at)]
    assert [q.mechanism for q in plan.queries] == [e.query.mechanism for e in entries(at)]
    assert plan.accounting == model.Accounting("pld", 1e-6)
    at.file_uploader(key="plan_import").set_value(("bad.json", b'{"format": "nope"}',
                                                    "application/json")).run()
    assert not at.exception
    assert any("bad.json was not loaded" in e.value.replace("\\", "") for e in at.error)
    assert len(entries(at)) == 4
    smaller = json.loads(plan.to_json())
    smaller["queries"] = smaller["queries"][:2]
    smaller["accounting"] = {"method": "basic", "delta": 1e-6}
    at.file_uploader(key="plan_import").set_value(("plan.json", json.dumps(smaller).encode(),
                                                    "application/json")).run()
    no_problem(at)
    assert [e.query.label for e in entries(at)] == [q.label for q in plan.queries[:2]]
    assert at.selectbox(key="plan_method").value == "basic"


@pytest.mark.parametrize(("count", "posterior"), [(1, "73.2%"), (2, "88.1%")])
def test_the_risk_of_pure_counts_matches_the_closed_form(count, posterior):
    """k Laplace counts at ε = 1: the belief from 50 % is at most e^k / (1 + e^k), with no
    failure probability (73.106 % and 88.080 %, rounded up to three digits)."""
    at = open_app("statistics.py")
    for i in range(count):
        add_from(at, "statistics.py", "stats", [("selectbox", "stats_query", "count")],
                 again=i > 0)
    at.switch_page("app_pages/plan.py").run()
    no_problem(at)
    table = frame_with(at, "Prior belief")
    row = table[table["Prior belief"] == "50%"].iloc[0]
    assert row["Highest belief after the plan"] == posterior
    assert row["Except with probability"] == "0"
    exact = math.exp(count) / (1 + math.exp(count))
    assert math.ceil(exact * 1000) / 10 == float(posterior.rstrip("%"))


def test_the_plan_follows_the_person_level_unit_of_the_visits_data():
    """On the clinic visits (patient id, at most 5 rows each) a count's sensitivity is 5: the
    accuracy the plan shows is 5 × the row-level one."""
    from dashboard import datasets

    at = open_app("statistics.py", dataset=datasets.BUILTIN_DATASETS[3])
    add_from(at, "statistics.py", "stats", [("selectbox", "stats_query", "count")])
    at.switch_page("app_pages/plan.py").run()
    no_problem(at)
    [entry] = entries(at)
    built = build_plan(model.Plan(model.Dataset("x"), (entry.query,),
                                  model.PrivacyUnit("patient_id", 5)))[0]
    assert built.parts[0].sensitivity == 5
    assert entry.query.target.alpha == pytest.approx(5 * math.log(20), rel=1e-3)
    assert "patient_id" in " ".join(c.value for c in at.caption).replace("\\", "")


def test_a_query_the_current_unit_cannot_build_is_shown_with_a_remove_button():
    at = open_app("statistics.py")
    add_from(at, "statistics.py", "stats", [("selectbox", "stats_query", "count")])
    key = at.session_state["dataset"].key
    bad = model.PlanQuery("bad", "Sum of age", model.Sum("age", model.Bounds(0, 100)),
                          model.Noise("geometric", "pure", epsilon=1e-320))
    at.session_state[PLANS] = {key: (*at.session_state[PLANS][key], plan_store.Entry(bad))}
    at.switch_page("app_pages/plan.py").run()
    assert not at.exception
    assert any("cannot be built" in e.value for e in at.error)
    at.button(key="plan_remove_bad").click().run()
    no_problem(at)
    assert [e.query.label for e in entries(at)] == ["Number of rows"]


def test_edits_apply_refuse_and_remove():
    queries = (model.PlanQuery("a", "A", model.Count(), model.Noise("laplace", "pure", 1.0),
                               target=model.Target("error", alpha=3.0, beta=0.05)),
               model.PlanQuery("b", "B", model.Count(), model.Noise("laplace", "pure", 1.0)))
    plan = model.Plan(model.Dataset("x"), queries)
    frame = rp.plan_rows(plan, build_plan(plan), {})
    edited = frame.copy()
    edited.loc["a", rp.EPS] = 0.5
    edited.loc["a", rp.ALPHA] = 9.0
    edited.loc["b", rp.REMOVE] = True
    out, problems = rp.apply_edits(plan, edited)
    assert problems == []
    assert [q.id for q in out] == ["a"]
    assert out[0].mechanism.epsilon == 0.5 and out[0].target.alpha == 9.0
    edited = frame.copy()
    edited.loc["a", rp.EPS] = -1.0
    out, problems = rp.apply_edits(plan, edited)
    assert out == queries and len(problems) == 1 and "epsilon" in problems[0]


def test_an_imported_plan_brings_its_privacy_unit():
    """A plan for the visits with at most 3 visits per patient: imported, the unit of the
    dataset becomes its own (the accuracy follows: sensitivity 3), and the page says so."""
    from dashboard import datasets, person

    at = open_app("plan.py", dataset=datasets.BUILTIN_DATASETS[3])
    key = at.session_state["dataset"].key
    assert at.session_state["privacy_unit_by_dataset"][key].max_rows == 5
    plan = model.Plan(model.Dataset("visits"), (model.PlanQuery(
        "n", "Visits", model.Count(), model.Noise("laplace", "pure", epsilon=1.0)),),
        model.PrivacyUnit("patient_id", 3), model.Accounting("pld", 1e-6))
    at.file_uploader(key="plan_import").set_value(("plan.json", plan.to_json().encode(),
                                                    "application/json")).run()
    no_problem(at)
    assert at.session_state["privacy_unit_by_dataset"][key] == person.PrivacyUnit(
        "patient_id", 3, None)
    assert any("privacy unit is now this dataset's" in i.value.replace("\\", "")
               for i in at.info)
    frame = frame_with(at, "Accuracy now")
    # P(|Lap(3)| > α) = 0.05 at α = 3 ln 20 = 8.9872…, shown rounded up to 4 digits
    alpha = math.ceil(3 * math.log(20) * 1000) / 1000
    assert frame["Accuracy now"].iloc[0] == f"±{alpha:g} at 0.95"


def test_a_query_on_the_person_id_column_is_shown_and_removable_not_fatal():
    """A plan query that names the unit's person-id column (releasing statistics of it is not
    private): the plan refuses it by name, the rest of the plan still works."""
    from dashboard import datasets

    at = open_app("statistics.py", dataset=datasets.BUILTIN_DATASETS[3])
    add_from(at, "statistics.py", "stats", [("selectbox", "stats_query", "count")])
    key = at.session_state["dataset"].key
    bad = model.PlanQuery("ids", "Patients", model.Histogram(
        "patient_id", model.Categories((1, 2, 3), "typed")),
        model.Noise("laplace", "pure", epsilon=1.0))
    at.session_state[PLANS] = {key: (*at.session_state[PLANS][key], plan_store.Entry(bad))}
    at.switch_page("app_pages/plan.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("person-id column" in e.value.replace("\\", "") for e in at.error)
    assert "The plan: 1 query" in [h.value for h in at.subheader]
    at.button(key="plan_remove_ids").click().run()
    no_problem(at)


def test_quantiles_enter_the_plan_as_the_page_sets_them():
    """The Quantiles page's column, levels, grid and ε become the plan query (report noisy
    min with exponential noise under pure DP, as the page shows it); its grid's ends read off
    the data are flagged as such."""
    at = open_app("quantiles.py")
    at.text_input(key="quantiles_levels").set_value("0.25, 0.5").run()
    add_from(at, "quantiles.py", "quantiles")
    [entry] = entries(at)
    q = entry.query
    assert q.query.kind == "quantiles" and q.query.levels == (0.25, 0.5)
    assert q.query.column == at.selectbox(key="quantiles_column").value
    assert len(q.query.candidates.values) == at.number_input(key="quantiles_points").value
    # pure DP: exponential noise (permute-and-flip), which OpenDP certifies (Gumbel: zCDP only)
    assert q.mechanism == model.SelectionNoise("exponential", "pure", epsilon=1.0)
    at.switch_page("app_pages/plan.py").run()
    no_problem(at)
    assert frame_with(at, "Accuracy now")["Accuracy now"].tolist() == ["—"]   # no closed form
    assert any("no query has a target the split can judge" in i.value for i in at.info)


def test_a_plan_file_with_a_synthetic_table_is_imported():
    """A synthetic table is a query of the plan page like any other (issue 23): the file
    replaces the plan, the table lists it, and its accuracy is not simulated here."""
    from plan.kinds.synthetic import Synthetic, SyntheticColumn

    at = open_app("statistics.py")
    add_from(at, "statistics.py", "stats", [("selectbox", "stats_query", "count")])
    at.switch_page("app_pages/plan.py").run()
    spec = Synthetic((SyntheticColumn("sex", model.Categories(("Female", "Male"), "public")),
                      SyntheticColumn("race", model.Categories(("White", "Black"), "public"))),
                     "MST", 100, "pure", epsilon=1.0)
    query = model.PlanQuery("syn", "Synthetic", spec, None)
    plan = model.Plan(model.Dataset("adult"), (query,))
    at.file_uploader(key="plan_import").set_value(("syn.json", plan.to_json().encode(),
                                                    "application/json")).run()
    no_problem(at)
    assert [e.query for e in entries(at)] == [query]
    frame = frame_with(at, "Accuracy now")
    assert frame["Query"].tolist() == ["Synthetic"]
    assert frame["Accuracy now"].tolist() == [rp.NOT_SIMULATED]


def test_the_page_promises_the_figure_the_ledger_records_and_the_guard_reads_it(ledger):
    """Issue 31 item 7: three Gaussian counts (ε = 1, δ = 1e-6 each) under PLD at δ = 1e-5.
    The page showed PLD's 1.5981 while the ledger would record 1.7413 (OpenDP's ρ converted),
    so a dataset budget of ε = 1.65 refused a plan the page said spends 1.5981. Now the
    page's PLD figure is the ledger's (within 1 % of the closed form: three Gaussians of
    scale σ are one of scale σ/√3, Balle & Wang), and the plan fits that budget."""
    from release import prepare
    from tests.dpcore.test_accounting import gaussian_epsilon

    at = open_app("plan.py")
    plan = model.Plan(model.Dataset("x"), tuple(
        model.PlanQuery(f"n{i}", f"Rows {i}", model.Count(),
                        model.Noise("gaussian", "approx", epsilon=1.0, delta=1e-6))
        for i in range(3)), accounting=model.Accounting("pld", 1e-5))
    at.file_uploader(key="plan_import").set_value(("plan.json", plan.to_json().encode(),
                                                    "application/json")).run()
    no_problem(at)
    sigma = prepare(plan).certified[0][0].opendp_scale
    closed = gaussian_epsilon(math.sqrt(3) / sigma, 1e-5)
    shown, recorded = metric(at, "Privacy-loss distributions"), recorded_epsilon(at)
    assert closed <= recorded <= 1.01 * closed
    assert recorded <= shown <= recorded * (1 + 1e-3)   # the same figure, 4 digits, up
    set_budget(at, 1.65)
    no_problem(at)
    assert next(m for m in at.metric if m.label == "Left").delta == "the plan fits this budget"
    assert not any("This plan is refused" in e.value for e in at.error)
    assert not at.get("download_button")[0].proto.disabled
