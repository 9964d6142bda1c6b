"""What the page shows is what is released: the permanent guard.

1. Releasable as offered. Every page with "Add to plan" (Noisy statistics, Noisy tables,
   Groups, Quantiles, Selection, Synthetic data) × every mechanism and measure it offers
   (the synthetic table: every algorithm, measure and marginals), the page's defaults
   otherwise: what Add to plan puts in the plan is released for real by ``release.run`` on the
   dataset (a temporary ledger). A choice the page itself marks as not releasable before it
   is added is exempt, but the page must say so and offer an alternative, and that alternative
   must be released.
2. The page's law is the release's. The Quantiles page's exact distribution (exponential
   noise under pure DP, Gumbel under zCDP), the Selection page's exact pick probabilities and
   the Groups page's keep probabilities, against many draws of the release path's own OpenDP
   measurement (``release.prepare``'s certified part) on fixed data: OpenDP's draws are not
   seedable, so a chi-square test at a generous significance (1e-6), with enough draws that
   the planted old law (the quantile score of before) is rejected.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dashboard import datasets, person
from dashboard.analysis.plan_entries import plan_unit
from dashboard.release_panel import source_of
from dpcore.mechanisms import CATALOGUE
from engine import Engine, FrameSource
from engine.duckdb_backend import DuckDBBackend
from engine.queries import Binned
from plan import model
from release import Ledger, Unsupported, prepare, run
from release.measurements import quantile_scores
from tests.conftest import open_app
from tests.pages.test_page_tables import array, figures

ADULT = "Adult (UCI census income)"
PLANS = "release_plan_by_dataset"
LABELS = {spec.label: kind for kind, spec in CATALOGUE.items()}
SIGNIFICANCE = 1e-6


# --------------------------------------------------------------------------------------------
# 1. releasable as offered


def no_problem(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def take_added(at, key: str) -> tuple[model.PlanQuery, str | None]:
    """Add the page's query (or, when the page says it is not releasable, its first
    alternative); return it and the page's reason (None when it was offered as set)."""
    offered = [b for b in at.button if b.key == f"{key}_add_to_plan"]
    reason = None
    if offered:
        offered[0].click().run()
    else:
        said = [w.value for w in at.warning if "Not releasable as set" in w.value]
        assert said, f"{key}: neither Add to plan nor a reason why not"
        alternatives = [b for b in at.button if b.key.startswith(f"{key}_add_alternative")]
        assert alternatives, f"{key}: not releasable, and no alternative offered: {said}"
        alternatives[0].click().run()
        reason = said[0]
    no_problem(at)
    data_key = at.session_state["dataset"].key
    query = at.session_state[PLANS][data_key][-1].query
    at.session_state[PLANS] = {}
    return query, reason


def page_unit(at) -> model.PrivacyUnit:
    """The plan's privacy unit for the unit the page reads (set on the Data page)."""
    units = (at.session_state["privacy_unit_by_dataset"]
             if "privacy_unit_by_dataset" in at.session_state else {})
    return plan_unit(units.get(at.session_state["dataset"].key, person.ONE_ROW))


def released(query: model.PlanQuery, at, ledger: Ledger):
    """``release.run`` of the one-query plan on the page's dataset, under the page's unit."""
    unit = page_unit(at)
    plan = model.Plan(model.Dataset("releasable check"), (query,), unit,
                      model.Accounting("pld", 1e-5))
    loaded = datasets.load_builtin(ADULT)
    return run(plan, source_of(loaded), ledger=ledger, engine=Engine(DuckDBBackend(threads=1)))


def release_every(at, key: str, cases, ledger: Ledger) -> tuple[list[str], list[str]]:
    """For each case (a label and the widget settings), add to plan and release: the problems
    found, and the cases the page marked as not releasable (their alternative released)."""
    problems, exempt = [], []
    for label, settings in cases:
        for kind, widget, value in settings:
            getattr(at, kind)(key=widget).set_value(value).run()
        try:
            no_problem(at)
            query, reason = take_added(at, key)
            released(query, at, ledger)
        except Exception as exc:  # noqa: BLE001 — every case reported, not the first only
            problems.append(f"{label}: {type(exc).__name__}: {exc}")
            continue
        if reason is not None:
            exempt.append(label)
    return problems, exempt


@pytest.fixture
def ledger(tmp_path):
    with Ledger(tmp_path / "ledger.sqlite") as book:
        yield book


def mechanism_cases(at, prefix: str) -> list[tuple[str, list]]:
    cases = []
    for measure in ("pure", "approx", "zcdp"):
        at.selectbox(key=f"{prefix}_measure").set_value(measure).run()
        for label in at.selectbox(key=f"{prefix}_mechanism").options:
            kind = LABELS[label]
            cases.append((f"{measure}/{kind}", [("selectbox", f"{prefix}_measure", measure),
                                                ("selectbox", f"{prefix}_mechanism", kind)]))
    at.selectbox(key=f"{prefix}_measure").set_value("pure").run()
    return cases


@pytest.mark.slow
def test_noisy_statistics_every_mechanism_is_released_as_added(ledger):
    at = open_app("statistics.py")
    cases = mechanism_cases(at, "stats")
    assert len(cases) >= 10
    problems, exempt = release_every(at, "stats", cases, ledger)
    assert problems == []
    # no floating-point-safe OpenDP sampler: the page says so, and adds another kind
    assert sorted(exempt) == sorted(label for label, _ in cases
                                    if label.split("/")[1] in ("bounded_laplace", "staircase"))


@pytest.mark.slow
def test_noisy_tables_every_mechanism_is_released_as_added(ledger):
    at = open_app("tables.py")
    cases = mechanism_cases(at, "tables")
    assert len(cases) >= 6
    problems, exempt = release_every(at, "tables", cases, ledger)
    assert problems == []
    assert sorted(exempt) == sorted(label for label, _ in cases
                                    if label.split("/")[1] in ("bounded_laplace", "staircase"))


@pytest.mark.slow
def test_groups_every_noise_public_and_found_privately_is_released_as_added(ledger):
    at = open_app("groups.py")
    cases = [(f"{noise}/{'public' if public else 'private'}",
              [("selectbox", "groups_noise", noise), ("toggle", "groups_public", public)])
             for noise in ("laplace", "gaussian") for public in (True, False)]
    assert release_every(at, "groups", cases, ledger) == ([], [])


@pytest.mark.slow
def test_quantiles_every_measure_and_noise_is_released_as_added(ledger):
    at = open_app("quantiles.py")
    cases = [(f"{measure}/{noise}", [("selectbox", "quantiles_measure", measure),
                                     ("selectbox", "quantiles_noise", noise)])
             for measure in ("pure", "zcdp") for noise in ("exponential", "gumbel")]
    # Gumbel noise under pure DP: no OpenDP certificate (zCDP only), said on the page
    assert release_every(at, "quantiles", cases, ledger) == ([], ["pure/gumbel"])


@pytest.mark.slow
@pytest.mark.parametrize("k", [1, 2])
def test_selection_every_measure_and_noise_is_released_as_added(ledger, k):
    """k = 2 too: the page's default is one pick, and top-2 permute-and-flip under zCDP, whose
    figure differed from OpenDP's, slipped through with k = 1 alone."""
    at = open_app("selection.py")
    at.selectbox(key="sel_k").set_value(k).run()
    cases = [(f"{measure}/{noise}", [("selectbox", "sel_measure", measure),
                                     ("selectbox", "sel_noise", noise)])
             for measure in ("pure", "zcdp") for noise in ("laplace", "exponential", "gumbel")]
    # Laplace noise has no OpenDP measurement; Gumbel under pure DP none either
    assert release_every(at, "sel", cases, ledger) == ([], ["pure/laplace", "pure/gumbel",
                                                           "zcdp/laplace"])


#: Refused by a release whatever the figures (no OpenDP 0.16 measurement), and said so on the
#: page before anything is added (test_the_exempt_choices_say_so_before_they_are_added).
NO_MEASUREMENT = {("laplace", "pure"), ("laplace", "zcdp"), ("gumbel", "pure")}


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("noise", ["laplace", "exponential", "gumbel"])
@pytest.mark.parametrize("measure", ["pure", "zcdp"])
def test_every_selection_offered_is_certified_at_the_figure_planned(measure, noise, k):
    """Every noise × measure × k a selection can be planned with: refused for want of an
    OpenDP measurement (the known three), or certified by OpenDP at the plan's very figure
    (up to the few ulps OpenDP rounds outward). Top-2 permute-and-flip under zCDP was planned
    at ρ = k·ε₁²/2 and refused by OpenDP's (k·ε₁)²/2."""
    budget = {"epsilon": 0.7} if measure == "pure" else {"rho": 0.2}
    query = model.PlanQuery("t", "top", model.Selection(
        "dx", model.Categories(("a", "b", "c", "d"), "public"), k),
        model.SelectionNoise(noise, measure, **budget))
    plan = model.Plan(model.Dataset("figures"), (query,),
                      accounting=model.Accounting("zcdp", 1e-6))
    if (noise, measure) in NO_MEASUREMENT:
        with pytest.raises(Unsupported):
            prepare(plan)
        return
    [part] = prepare(plan).certified[0]
    loss = part.certified
    figure = loss.epsilon if measure == "pure" else (
        loss.rho if loss.rho is not None else loss.epsilon ** 2 / 2)
    assert figure <= next(iter(budget.values()))
    assert figure == pytest.approx(next(iter(budget.values())), rel=1e-12)


@pytest.mark.slow   # ten synthetic tables certified, run on a public table and released
def test_synthetic_data_every_algorithm_measure_and_marginals_is_released_as_added(ledger):
    """Issue 34: every algorithm × measure × marginals the Synthetic data page offers (the
    page's defaults otherwise, three small columns of Adult, 200 rows) is released as added:
    no fit fails for a choice a user can make (AIM under pure DP did on small tables)."""
    at = open_app("synthetic.py")
    at.multiselect(key="synthetic_columns").set_value(["sex", "race", "income"])
    at.number_input(key="synthetic_rows").set_value(200).run()
    cases = []
    for measure in ("epsilon", "rho"):
        for algorithm, options in (("MST", ("auto", "one-way")),
                                   ("AIM", ("auto", "one-way", "pairs"))):
            at.radio(key="synthetic_algorithm").set_value(algorithm).run()
            assert tuple(at.radio(key="synthetic_marginals").options) == tuple(
                {"auto": "the algorithm's own selection", "one-way": "all 1-way marginals",
                 "pairs": "chosen 2-way marginals (AIM)"}[o] for o in options)
            cases += [(f"{measure}/{algorithm}/{marginals}",
                       [("radio", "synthetic_measure", measure),
                        ("radio", "synthetic_algorithm", algorithm),
                        ("radio", "synthetic_marginals", marginals)])
                      for marginals in options]
    assert len(cases) == 10
    assert release_every(at, "synthetic", cases, ledger) == ([], [])


def test_the_exempt_choices_say_so_before_they_are_added():
    """The exemptions are the page's own: a choice without Add to plan says why, on the page,
    before anything is added (checked here for one of each kind of refusal)."""
    at = open_app("selection.py")
    at.selectbox(key="sel_noise").set_value("laplace").run()
    said = [w.value.replace("\\", "") for w in at.warning]
    assert any("no OpenDP 0.16 measurement" in w for w in said), said
    at.switch_page("app_pages/statistics.py").run()
    at.selectbox(key="stats_mechanism").set_value("staircase").run()
    said = [w.value.replace("\\", "") for w in at.warning]
    assert any("Not releasable as set" in w and "staircase" in w for w in said), said
    assert not at.session_state[PLANS] or not any(at.session_state[PLANS].values())


def test_the_alternatives_are_releasable_and_keep_the_law_where_they_can():
    """dashboard.analysis.releasable on plan queries: a releasable query passes as is; Gumbel
    noise under pure DP gets Gumbel under zCDP at the same noise scale (ρ = ε²/8 per level:
    the very law shown) and exponential noise at the same ε; Laplace noise for a selection
    gets exponential noise; the staircase gets Laplace at the same ε."""
    from dashboard.analysis.releasable import releasability
    from plan.build import build

    unit = model.PrivacyUnit()
    grid = model.Grid((0.0, 1.0, 2.0, 3.0), "public")
    quartiles = model.PlanQuery("q", "quartiles", model.Quantiles("x", (0.25, 0.5), grid),
                                model.SelectionNoise("gumbel", "pure", epsilon=1.0))
    check = releasability(quartiles, unit)
    assert not check.releasable and "zCDP" in check.reason
    same, other = check.alternatives
    assert same.mechanism.noise == "gumbel" and same.mechanism.measure == "zcdp"
    assert same.mechanism.rho == pytest.approx(2 * 0.5**2 / 8, rel=1e-12)
    for before, after in zip(build(quartiles, unit).parts, build(same, unit).parts,
                             strict=True):
        assert after.scale == pytest.approx(before.scale, rel=1e-12)
    assert other.mechanism == model.SelectionNoise("exponential", "pure", epsilon=1.0)
    for query in (same, other):
        assert releasability(query, unit).releasable
    top = model.PlanQuery("t", "top", model.Selection(
        "dx", model.Categories(("a", "b"), "public")),
        model.SelectionNoise("laplace", "pure", epsilon=1.0))
    check = releasability(top, unit)
    assert "Laplace noise has no OpenDP" in check.reason
    assert [q.mechanism.noise for q in check.alternatives] == ["exponential"]
    stair = model.PlanQuery("c", "count", model.Count(),
                            model.Noise("staircase", "pure", epsilon=0.5))
    check = releasability(stair, unit)
    assert "staircase" in check.reason
    assert check.alternatives[0].mechanism == model.Noise(CATALOGUE_FIRST, "pure", epsilon=0.5)
    assert releasability(check.alternatives[0], unit).releasable


CATALOGUE_FIRST = next(iter(CATALOGUE))


# --------------------------------------------------------------------------------------------
# 2. the page's law is the release's


def chi_square_p(counts: np.ndarray, probabilities: np.ndarray) -> float:
    """p-value of the draws ``counts`` under ``probabilities`` (cells expected below 5
    pooled)."""
    expected = probabilities * counts.sum()
    big = expected >= 5
    observed, pooled = counts[big], expected[big]
    if not np.all(big):
        observed = np.r_[observed, counts[~big].sum()]
        pooled = np.r_[pooled, expected[~big].sum()]
    pooled = pooled * observed.sum() / pooled.sum()
    return float(stats.chisquare(observed, pooled).pvalue)


def certified(query: model.PlanQuery) -> tuple:
    """The release's own OpenDP measurements of the query's parts (``release.prepare``)."""
    plan = model.Plan(model.Dataset("law"), (query,), accounting=model.Accounting("pld", 1e-5))
    return prepare(plan).certified[0]


TINY = [1.0, 2.0, 2.0, 3.0, 5.0, 8.0, 13.0, 2.0, 5.0, 8.0, 8.0, np.nan]
GRID = [0.0, 2.0, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0, 14.0]


@pytest.fixture
def tiny_folder(tmp_path, monkeypatch):
    pd.DataFrame({"x": TINY}).to_parquet(tmp_path / "tiny.parquet", index=False)
    monkeypatch.setenv("EPSILON_LAB_DATA", str(tmp_path))
    return tmp_path


def old_law(values, grid, q, epsilon):
    """The planted bug: the Quantiles page's law of before, P(c) ∝ exp(−ε|#{x < c} − q·n|/2Δ)
    (ties at a candidate counted above it)."""
    present = np.asarray([v for v in values if v == v])
    below = np.array([(present < c).sum() for c in grid])
    logits = -epsilon * np.abs(below - q * present.size) / (2 * max(q, 1 - q))
    w = np.exp(logits - logits.max())
    return w / w.sum()


@pytest.mark.slow
@pytest.mark.parametrize("measure, noise", [("pure", "exponential"), ("zcdp", "gumbel")])
def test_the_quantiles_law_is_the_law_of_the_release(tiny_folder, measure, noise):
    """Ties at the candidates (2, 5, 8): the page's distribution against 4,000 draws of the
    release's own OpenDP measurement (``make_noisy_max`` on OpenDP's scores from the engine's
    rank cells, as ``release.run`` reads them). The planted old law is rejected by the same
    draws (its chi-square p-value below 1e-6: the test has the power to see it)."""
    at = open_app("quantiles.py", dataset="file:tiny.parquet")
    at.selectbox(key="quantiles_grid").select("typed").run()
    next(w for w in at.text_input if w.key == "quantiles_typed").set_value(
        ", ".join(f"{g:g}" for g in GRID))
    at.selectbox(key="quantiles_measure").set_value(measure).run()
    at.selectbox(key="quantiles_noise").set_value(noise).run()
    no_problem(at)
    fig = figures(at)[0]
    x, shown = array(fig["data"][0]["x"]), array(fig["data"][0]["y"])
    np.testing.assert_array_equal(x, GRID)
    query, reason = take_added(at, "quantiles")
    assert reason is None and query.mechanism == model.SelectionNoise(
        noise, measure, **({"epsilon": 1.0} if measure == "pure" else {"rho": 0.125}))
    [part] = certified(query)
    # the engine's rank cells, read into OpenDP's scores as release.run reads them
    frame = pd.DataFrame({"x": TINY})
    cells = Engine(DuckDBBackend(threads=1)).answer(
        FrameSource(frame), Binned("x", tuple(GRID), "ranks", "separate", None)).counts
    cumulative = np.cumsum(cells)
    scores = quantile_scores([int(cumulative[2 * j]) for j in range(len(GRID))],
                             [int(cells[2 * j + 1]) for j in range(len(GRID))],
                             int(cumulative[-1]), 0.5)
    draws = 4000
    picks = np.bincount([int(part.draw(scores)) for _ in range(draws)], minlength=len(GRID))
    assert chi_square_p(picks, shown) > SIGNIFICANCE
    epsilon = 1.0 if measure == "pure" else math.sqrt(8 * 0.125)
    assert chi_square_p(picks, old_law(TINY, GRID, 0.5, epsilon)) < SIGNIFICANCE


@pytest.mark.slow
def test_the_selection_law_is_the_law_of_the_release():
    """Adult's education counts at ε = 0.00027 (the best picked about 3 times in 4): the
    page's exact pick probabilities against 4,000 draws of the release's measurement."""
    at = open_app("selection.py")
    at.select_slider(key="sel_pure_level").set_value(0.00027).run()
    no_problem(at)
    chart = next(e for e in at.get("plotly_chart") if e.proto.id.endswith("-sel_chart"))
    fig = json.loads(chart.proto.spec)
    exact = next(t for t in fig["data"] if t.get("name", "").startswith("Exact"))
    labels, shown = list(exact["x"]), array(exact["y"])
    query, reason = take_added(at, "sel")
    assert reason is None and query.mechanism.noise == "exponential"
    [part] = certified(query)
    frame = datasets.load_builtin(ADULT).frame
    counts = frame["education"].value_counts()
    candidates = [str(c) for c in query.query.candidates.values]
    scores = [int(counts.get(c, 0)) for c in candidates]
    picks = np.bincount([int(part.draw(scores)) for _ in range(4000)],
                        minlength=len(candidates))
    order = [candidates.index(label) for label in labels]
    assert chi_square_p(picks[order], shown) > SIGNIFICANCE
    assert 0.5 < shown.max() < 0.95


@pytest.mark.slow
@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_the_keep_probability_is_the_law_of_the_release(noise):
    """The Groups page's exact P(kept) for groups of n rows, n around the threshold, against
    the release's own threshold measurement applied to 3,000 groups of each size."""
    at = open_app("groups.py")
    at.selectbox(key="groups_noise").set_value(noise).run()
    at.toggle(key="groups_public").set_value(False).run()
    no_problem(at)
    curve = next(e for e in at.get("plotly_chart") if e.proto.id.endswith("-groups_keep_curve"))
    trace = json.loads(curve.proto.spec)["data"][0]
    sizes, chance = array(trace["x"]), array(trace["y"])
    query, reason = take_added(at, "groups")
    assert reason is None and query.threshold is not None
    [part] = certified(query)
    near = (chance > 0.02) & (chance < 0.98)
    assert near.sum() >= 3
    per_size = 3000
    groups = {f"{int(n)}-{i}": float(n) for n in sizes[near] for i in range(per_size)}
    kept = part.draw(groups)
    observed = np.array([sum(1 for k in kept if k.startswith(f"{int(n)}-"))
                         for n in sizes[near]])
    p = chance[near]
    statistic = float(np.sum((observed - per_size * p) ** 2 / (per_size * p * (1 - p))))
    assert stats.chi2.sf(statistic, df=near.sum()) > SIGNIFICANCE


def test_one_name_per_noise_on_the_pages_and_in_the_release(tmp_path):
    """The Selection and Quantiles pages name each noise as a release describes the part it
    drew ("report noisy max, exponential noise (permute-and-flip)")."""
    from dashboard.analysis import quantiles as qa
    from dashboard.analysis.selection_choices import NOISES

    frame = pd.DataFrame({"dx": ["a", "b", "b", "c"] * 50})
    for noise, measure, budget in (("exponential", "pure", {"epsilon": 1.0}),
                                   ("gumbel", "zcdp", {"rho": 0.5})):
        query = model.PlanQuery("t", "top", model.Selection(
            "dx", model.Categories(("a", "b", "c"), "public")),
            model.SelectionNoise(noise, measure, **budget))
        plan = model.Plan(model.Dataset("names"), (query,),
                          accounting=model.Accounting("zcdp", 1e-6))
        with Ledger(tmp_path / f"{noise}.sqlite") as book:
            out = run(plan, FrameSource(frame), ledger=book,
                      engine=Engine(DuckDBBackend(threads=1)))
        described = out.queries[0].parts[0]["mechanism"]
        assert NOISES[noise].lower() in described.lower(), described
        assert qa.NOISES[noise] == NOISES[noise]
