"""Each part as its OpenDP measurement: maps checked against the plan (a planted excess is
refused before anything is drawn), what OpenDP cannot sample safely is refused with an
alternative, and quantile scores from the engine equal OpenDP's own."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import opendp.prelude as dp
import pandas as pd
import pytest

from dpcore.mechanisms.laplace import Laplace
from engine import Engine, FrameSource
from engine.duckdb_backend import DuckDBBackend
from engine.queries import Binned
from plan.build import Part, build
from plan.model import (
    Accounting,
    Bounds,
    Categories,
    Count,
    Dataset,
    Grid,
    GroupBy,
    Histogram,
    Noise,
    Plan,
    PlanQuery,
    PrivacyUnit,
    Quantiles,
    Selection,
    SelectionNoise,
    Sum,
    Threshold,
)
from release import Ledger, MapCheckFailed, Unsupported, run
from release.accounting import privacy_spent
from release.measurements import certify, quantile_scores
from tests.release_fixtures import cats, visits

dp.enable_features("contrib")   # for OpenDP's own scorers below (release imports it lazily)


def _count(noise: Noise) -> PlanQuery:
    return PlanQuery("c", "count", Count(), noise)


def test_a_map_above_the_plans_figure_is_refused():
    """Planted: the noise calibrated for sensitivity 1 while the query's is 2 — OpenDP's map at
    2 gives ε = 2, above the ε = 1 the mechanism claims."""
    built = build(_count(Noise("laplace", "pure", epsilon=1.0)), PrivacyUnit())
    honest = certify(built)[0]
    assert honest.certified.epsilon == 1.0
    wrong = Part("value", Laplace(sensitivity=1.0, epsilon=1.0), 2.0, built.parts[0].loss)
    planted = dataclasses.replace(built, parts=(wrong,))
    with pytest.raises(MapCheckFailed, match=r"ε = 2\.0, above the plan's 1\.0"):
        certify(planted)


@pytest.mark.parametrize("noise, budget", [("laplace", {"epsilon": 1.0}),
                                           ("gaussian", {"rho": 0.5})])
def test_partition_selection_with_float_noise_is_released_at_the_default_delta(
        tmp_path, noise, budget):
    """OpenDP's threshold on floats read δ = 1.0000000000287557e-06 above the plan's 1e-6 (the
    threshold met δ with a 2^-48 margin, inside OpenDP's outward rounding): refused. The
    threshold now has a margin OpenDP's map accepts, and the release goes through."""
    query = PlanQuery("g", "groups", GroupBy("dx"), None,
                      threshold=Threshold(noise, 1e-6, **budget))
    plan = Plan(Dataset("visits"), (query,),
                accounting=Accounting("basic" if noise == "laplace" else "zcdp", 1e-6))
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        released = run(plan, FrameSource(visits(200)), ledger=ledger,
                       engine=Engine(DuckDBBackend(threads=1)))
    [part] = released.queries[0].parts
    assert part["certified"]["delta"] <= 1e-6


def test_a_refused_plan_is_refused_before_the_data_is_read(tmp_path):
    """The exponential mechanism (Gumbel noise) under pure DP has no OpenDP certificate:
    refused, nothing scanned, nothing recorded."""
    query = PlanQuery("t", "top", Selection("dx", cats("A", "B")),
                      SelectionNoise("gumbel", "pure", epsilon=1.0))
    plan = Plan(Dataset("visits"), (query,))
    engine = Engine(DuckDBBackend(threads=1))
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        with pytest.raises(Unsupported, match="zCDP"):
            run(plan, FrameSource(visits(200)), ledger=ledger, engine=engine)
        assert ledger.releases() == []
    assert engine.scans == 0


@pytest.mark.parametrize("mechanism, words", [
    (Noise("bounded_laplace", "pure", epsilon=1.0, lower=0.0, upper=1e5), "clamped Laplace"),
    (Noise("staircase", "pure", epsilon=1.0), "Laplace"),
])
def test_mechanisms_without_a_safe_sampler_are_refused(mechanism, words):
    built = build(PlanQuery("s", "sum", Sum("x", Bounds(0, 10)), mechanism), PrivacyUnit())
    with pytest.raises(Unsupported, match=words) as info:
        certify(built)
    assert "floating-point" in str(info.value)


@pytest.mark.parametrize("noise, measure, words", [
    ("laplace", "pure", "exponential noise"),
    ("gumbel", "pure", "zCDP"),
])
def test_selections_opendp_cannot_certify_are_refused(noise, measure, words):
    query = PlanQuery("t", "top", Selection("dx", cats("A", "B")),
                      SelectionNoise(noise, measure, epsilon=1.0))
    with pytest.raises(Unsupported, match=words):
        certify(build(query, PrivacyUnit()))


def test_gumbel_under_zcdp_is_certified_as_rho():
    query = PlanQuery("t", "top", Selection("dx", cats("A", "B", "C")),
                      SelectionNoise("gumbel", "zcdp", rho=0.125))
    certified = certify(build(query, PrivacyUnit()))[0]
    assert certified.certified.rho <= 0.125
    assert certified.certified.rho == pytest.approx(0.125, rel=1e-12)


def test_every_planned_mechanism_passes_its_map_check():
    """Random budgets, bounds and units: OpenDP's map at the part's sensitivity is never
    above the plan's figure, and within 1e-9 of it (the same scale)."""
    rng = np.random.default_rng(3)
    checked = 0
    for _ in range(60):
        eps = float(10 ** rng.uniform(-2, 1))
        upper = float(rng.integers(1, 10**4))
        r, k = int(rng.integers(1, 5)), int(rng.integers(1, 4))
        unit = PrivacyUnit("pid", r, k)
        candidates = Categories(("a", "b", "c"), "public")
        queries = [
            PlanQuery("c", "c", Count(), Noise("laplace", "pure", epsilon=eps)),
            PlanQuery("g", "g", Count(), Noise("geometric", "pure", epsilon=eps)),
            PlanQuery("s", "s", Sum("x", Bounds(0, upper)),
                      Noise("gaussian", "zcdp", rho=eps, delta=1e-6)),
            PlanQuery("h", "h", Histogram("x", candidates),
                      Noise("gaussian", "approx", epsilon=eps, delta=1e-6)),
            PlanQuery("d", "d", Sum("x", Bounds(0, upper)),
                      Noise("discrete_gaussian", "zcdp", rho=eps, delta=1e-6)),
            PlanQuery("t", "t", Selection("x", candidates, k=2),
                      SelectionNoise("exponential", "pure", epsilon=eps)),
            PlanQuery("q", "q", Quantiles("x", (0.1, 0.5, 0.9), Grid((0.0, 1.0, 2.0))),
                      SelectionNoise("exponential", "pure", epsilon=eps)),
            PlanQuery("z", "z", Quantiles("x", (0.3,), Grid((0.0, 1.0, 2.0))),
                      SelectionNoise("gumbel", "zcdp", rho=eps)),
        ]
        for query in queries:
            for part in certify(build(query, unit)):
                planned = part.planned
                got = part.certified
                if got.epsilon is not None and planned.epsilon is not None:
                    assert got.epsilon <= planned.epsilon
                    assert got.epsilon == pytest.approx(planned.epsilon, rel=1e-9)
                elif got.rho is not None:
                    rho = part.part.mechanism.zcdp.rho if hasattr(
                        part.part.mechanism, "zcdp") else planned.rho
                    assert got.rho <= rho
                    assert got.rho == pytest.approx(rho, rel=1e-9)
                checked += 1
    assert checked > 500


def test_a_gaussian_planned_in_epsilon_delta_is_accounted_at_what_opendp_certifies():
    """The analytic calibration gives σ for (ε = 1, δ = 1e-6); OpenDP certifies that σ as
    ρ = Δ²/(2σ²), whose (ε, δ) conversion is larger: the release is accounted at it."""
    query = PlanQuery("s", "sum", Sum("x", Bounds(0, 1)),
                      Noise("gaussian", "approx", epsilon=1.0, delta=1e-6))
    part = certify(build(query, PrivacyUnit()))[0]
    sigma = part.part.scale
    assert part.certified.rho == pytest.approx(1 / (2 * sigma**2), rel=1e-12)
    assert part.certified.read_at == 1e-6
    assert "OpenDP certifies ρ" in part.note
    spent = privacy_spent([part.certified], Accounting("basic"))
    planned = privacy_spent([part.planned], Accounting("basic"))
    # (dpcore.accounting raises a total by a few ulps: it never reads below the exact one)
    assert 1.0 <= planned.epsilon <= 1.0 + 1e-14 and spent.delta == 1e-6
    # CKS 2020: ε = ρ + 2√(ρ ln(1/δ)) bounds the optimum from above; the exact one is below
    rho = part.certified.rho
    assert 1.0 < spent.epsilon <= rho + 2 * math.sqrt(rho * math.log(1e6))


def test_quantile_scores_from_the_engine_equal_opendps_on_the_rows():
    """Ties at candidates included: OpenDP's make_quantile_score_candidates on the raw values
    and quantile_scores on the engine's rank cells agree exactly."""
    rng = np.random.default_rng(11)
    values = rng.integers(0, 20, 500).astype(float)
    candidates = (-1.0, 0.0, 2.5, 5.0, 7.0, 12.0, 19.0, 25.0)
    engine = Engine(DuckDBBackend(threads=1))
    agg = engine.answer(FrameSource(pd.DataFrame({"x": values})),
                        Binned("x", candidates, "ranks"))
    cells = np.asarray(agg.counts)
    below = np.cumsum(cells)[0::2][:len(candidates)]
    equal = cells[1::2]
    for q in (0.0, 0.1, 0.25, 0.5, 0.9, 1.0, 1 / 3):
        scorer = dp.t.make_quantile_score_candidates(
            dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance(),
            list(candidates), alpha=q)
        assert quantile_scores(below, equal, int(cells.sum()), q) == scorer(values.tolist())


@pytest.mark.parametrize("q", [0.12345, 0.98765, 0.3, 1 / 3])
@pytest.mark.parametrize("noise, measure", [("exponential", "pure"), ("gumbel", "zcdp")])
def test_a_quantile_opendp_reads_as_ten_thousandths_is_certified(q, noise, measure):
    """OpenDP reads q = 0.12345 as 1234/10000, whose scores have sensitivity 0.8766 > max(q,
    1 − q): a plan calibrated to max(q, 1 − q) was refused (ε read 1.00006 above 1). The
    plan's sensitivity is OpenDP's stability map now: certified within 1e-9 of the plan."""
    budget = {"epsilon": 1.0} if measure == "pure" else {"rho": 0.125}
    query = PlanQuery("q", "quantile", Quantiles("x", (q,), Grid((0.0, 1.0, 2.0), "public")),
                      SelectionNoise(noise, measure, **budget))
    for unit in (PrivacyUnit(), PrivacyUnit("pid", 3)):
        [part] = certify(build(query, unit))
        planned = part.planned.epsilon if measure == "pure" else part.planned.rho
        got = part.certified.epsilon if measure == "pure" else part.certified.rho
        assert got <= planned and got == pytest.approx(planned, rel=1e-9)


def test_a_kind_is_released_by_its_spec_and_an_unknown_one_is_refused(monkeypatch):
    """A new catalogue kind with a recipe is drawn as its recipe says (no kind name in
    release/); one without a recipe, or a mechanism the catalogue does not know, is refused
    with the reason — never treated as another kind (it used to fall into the Gaussian
    branch)."""
    from dataclasses import replace
    from types import MappingProxyType

    from dpcore.mechanisms import catalogue
    from dpcore.mechanisms.laplace import Laplace
    from plan.parts import Loss

    class MyLaplace(Laplace):
        """A new kind: Laplace noise under another name."""

    class Unknown(Laplace):
        """Not in the catalogue at all."""

    base = catalogue.CATALOGUE["laplace"]
    mine = replace(base, kind="my_laplace", label="My Laplace", mechanism=MyLaplace)
    blocked = replace(base, kind="blocked", label="Blocked", mechanism=Unknown, release=None,
                      unreleasable="this kind has no safe sampler: use Laplace")
    patched = MappingProxyType({**catalogue.CATALOGUE, "my_laplace": mine})
    monkeypatch.setattr(catalogue, "CATALOGUE", patched)
    part = Part("value", MyLaplace(sensitivity=1.0, epsilon=0.5), 1.0, Loss(epsilon=0.5))
    built = replace(build(PlanQuery("c", "c", Count(), Noise("laplace", "pure", epsilon=0.5)),
                          PrivacyUnit()), parts=(part,))
    [certified] = certify(built)
    assert certified.certified.epsilon == pytest.approx(0.5)
    assert "MaxDivergence" in str(certified.measurement)   # OpenDP's Laplace: pure DP
    unknown = replace(built, parts=(Part("value", Unknown(sensitivity=1.0, epsilon=0.5), 1.0,
                                         Loss(epsilon=0.5)),))
    with pytest.raises(TypeError, match="catalogue's mechanisms"):
        certify(unknown)
    monkeypatch.setattr(catalogue, "CATALOGUE",
                        MappingProxyType({**catalogue.CATALOGUE, "blocked": blocked}))
    with pytest.raises(Unsupported, match="no safe sampler"):
        certify(unknown)
