"""Programs to take away (release.programs): the OpenDP program and the PipelineDP Spark
program, generated from a plan, run on Adult in a subprocess.

Checked: each program's privacy accounting equals the plan's (release.accounting's figure
of what OpenDP certifies; PipelineDP's accountants' budgets added up, equal to the plan's
planned figure); its noise has the planned scale (OpenDP: Kolmogorov–Smirnov against the
Laplace and Gaussian of the plan's scale over repeated in-process releases of a 20-row
frame, and a planted wrong scale rejected; Spark: the standard deviation PipelineDP reports
and the variance of hundreds of pure-noise cells in one run); a variance query released by
both programs (OpenDP: the app's law by two-sample KS, Spark: PipelineDP's budgets and noise
per part); the templates are Python files ruff checks and tests import, and a program is its
template with the plan's literals; and a column named to inject code stays a string.
"""

from __future__ import annotations

import ast
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from plan.examples import ADULT_PATH, EDUCATION, OCCUPATION, adult_plan
from plan.kinds.variance import PART_NAMES, Variance
from plan.model import (
    Accounting,
    Bounds,
    Count,
    Dataset,
    GroupBy,
    Histogram,
    Mean,
    Noise,
    Plan,
    PlanQuery,
    PrivacyUnit,
    Selection,
    SelectionNoise,
    Sum,
)
from release import programs
from release.accounting import privacy_spent
from release.programs import ProgramUnsupported, opendp_program, plan_sha256, spark_program
from release.run import prepare
from tests.release_fixtures import cats, every_kind_plan, load_program, visits

REPO = Path(__file__).resolve().parents[2]
RUFF = Path(sys.executable).with_name("ruff")
INJECTION = "\"; import os; os.system('touch INJECTED') #"
#: Fixed significance of the distribution tests (each test's false-alarm rate).
ALPHA = 1e-3


def ruff_clean(text: str) -> None:
    """compile() and ruff (errors, pyflakes, warnings, bugbear; long data lines allowed)."""
    compile(text, "program.py", "exec")
    done = subprocess.run([str(RUFF), "check", "--isolated", "--select", "E,F,W,B",
                           "--ignore", "E501", "--stdin-filename", "program.py", "-"],
                          input=text, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def spent_of(parts: list[dict], plan: Plan):
    """release.accounting's total of the losses a program's OpenDP maps certified."""
    from plan.build import Loss

    losses = []
    for p in parts:
        read_at = p["certified"].get("rho_read_at_delta")
        value = p["opendp_map"]
        losses.append(Loss(epsilon=value.get("epsilon"), rho=value.get("rho"),
                           delta=p["certified"]["delta"], read_at=read_at))
    return privacy_spent(losses, plan.accounting)


# --------------------------------------------------------------------------------------------
# the OpenDP program


@pytest.mark.slow
def test_opendp_program_releases_adult_with_the_plans_accounting(tmp_path):
    plan = adult_plan()
    text = opendp_program(plan)
    ruff_clean(text)
    imports = {a.name.split(".")[0] for node in ast.walk(ast.parse(text))
               if isinstance(node, ast.Import | ast.ImportFrom)
               for a in (node.names if isinstance(node, ast.Import)
                         else [ast.alias(node.module or "")])}
    # pyarrow: read for a Parquet file only (as pandas' read_parquet needed it), so that a
    # 64-bit integer column with a missing cell keeps its integers exact
    assert imports <= {"__future__", "argparse", "csv", "decimal", "gzip", "hashlib", "io",
                       "itertools", "json", "math", "os", "re", "sys", "numpy", "opendp",
                       "pandas", "pyarrow"}
    (tmp_path / "program.py").write_text(text, encoding="utf-8")
    done = subprocess.run([sys.executable, "program.py", "--data", str(ADULT_PATH), "--out",
                           "out.json"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert out == json.loads(done.stdout)
    assert out["plan_sha256"] == plan_sha256(plan)
    # (1) the total it states is release.accounting's for the plan (what the ledger records:
    # never above the maps OpenDP read inside the program composed, part by part, each within
    # the plan's figure; the Gaussian's own law can be tighter than its ρ)
    expected = prepare(plan).spent
    assert out["privacy_spent"] == {"epsilon": expected.epsilon, "delta": expected.delta}
    from_maps = spent_of(out["parts"], plan)
    certificates = privacy_spent([c.certified for cs in prepare(plan).certified for c in cs],
                                 plan.accounting)
    assert (from_maps.epsilon, from_maps.delta) == (certificates.epsilon, certificates.delta)
    assert expected.epsilon <= from_maps.epsilon and expected.delta == from_maps.delta
    assert len(out["parts"]) == 6
    for p in out["parts"]:
        (value,) = p["opendp_map"].values()
        assert value <= p["plan_figure"] * (1 + 1e-12)
    # pure parts: 0.5 + 0.5 + 0.25 + 0.25 + 0.5; the Gaussian adds its ρ read at δ = 1e-6
    assert expected.epsilon > 2.0 and expected.delta == 1e-6
    rows = {q["id"]: q["rows"] for q in out["queries"]}
    assert abs(rows["people"][0][1] - 48842) < 60  # geometric, scale 2: P(|Z| ≥ 60) ≈ 1e-13
    assert [r[0][0] for r in rows["education"]] == list(EDUCATION)
    assert 17 <= rows["mean-age"][0][1] <= 90
    assert rows["top-occupation"][0][1] in OCCUPATION


def test_opendp_program_runs_every_exportable_kind_on_a_person_level_table(tmp_path):
    full = every_kind_plan()
    plan = Plan(full.dataset, tuple(q for q in full.queries if q.threshold is None),
                full.privacy_unit, full.accounting)
    program = load_program(opendp_program(plan), "every_kind", tmp_path)
    out = program.release(visits(600, seed=1))
    assert out["privacy_spent"]["epsilon"] == prepare(plan).spent.epsilon
    # the program's maps composed are OpenDP's certificates composed; what is recorded is
    # never above them (the noises' own laws can be tighter: issue 31 item 7)
    certificates = privacy_spent([c.certified for cs in prepare(plan).certified for c in cs],
                                 plan.accounting)
    assert spent_of(out["parts"], plan).epsilon == certificates.epsilon
    assert certificates.epsilon >= prepare(plan).spent.epsilon
    rows = {q["id"]: q["rows"] for q in out["queries"]}
    assert [r[0] for r in rows["ages"]] == [["< 18"], ["[18, 40)"], ["[40, 65)"],
                                            ["[65, 90]"], ["> 90"]]
    assert 0 <= rows["cost"][0][1] <= 1e7  # clamped Laplace stays in its answer range
    assert len(rows["dx-sex"]) == 12 and len(rows["top-dx"]) == 2
    assert [r[0] for r in rows["age-q"]] == [["q=0.25"], ["q=0.5"], ["q=0.75"]]
    with pytest.raises(ProgramUnsupported, match="dx-found"):
        opendp_program(full)


def test_contribution_bounds_keep_at_most_max_rows_in_at_most_max_groups(tmp_path):
    plan = Plan(Dataset("v"), (PlanQuery("dx", "dx", Histogram("dx", cats(*"ABCDEF")),
                                         Noise("laplace", "pure", epsilon=1.0)),),
                PrivacyUnit("pid", 3, 2))
    program = load_program(opendp_program(plan), "bounds", tmp_path)
    rng = np.random.default_rng(7)
    frame = pd.DataFrame({"pid": rng.integers(0, 20, 2000),
                          "dx": rng.choice(list("ABCDEFZ"), 2000)})
    codes, _ = program.cell_codes(frame, program.QUERIES[0])
    kept = program.bounded(frame, codes, rng=rng)
    assert (kept["__cell__"] >= 0).all()  # "Z" is not declared: dropped
    assert kept.groupby(["pid", "__cell__"]).size().max() == 3
    assert kept.groupby("pid")["__cell__"].nunique().max() == 2
    scalar = program.bounded(frame, rng=rng)
    assert scalar.groupby("pid").size().max() == 3 and len(scalar) == 60


def test_every_query_of_the_program_reads_the_same_kept_rows(tmp_path):
    """One truncation per release (issue 37): person 1 has four rows, one with a cost in
    cell "a", three without one in cell "b"; max rows 1. In each run the sum adds 10 exactly
    when the histogram counts person 1 in "a" (the same kept row), and over 40 runs both
    rows are kept (a sum no longer keeps only rows with a value). Before, each query drew
    its own ranking (and the variance ranked only rows with a value): the sum and the
    histogram disagreed in about 3 runs of 8."""
    from tests.release.test_program_stability import recorders

    laplace = Noise("laplace", "pure", epsilon=1.0)
    plan = Plan(Dataset("v"), (
        PlanQuery("total", "Cost", Sum("cost", Bounds(0.0, 100.0, "public")), laplace),
        PlanQuery("cells", "Cells", Histogram("c", cats("a", "b")), laplace),
        PlanQuery("n", "Count", Count(), laplace)), PrivacyUnit("pid", 1))
    program = load_program(opendp_program(plan), "one_truncation", tmp_path)
    frame = pd.DataFrame({"pid": ["1", "1", "1", "1", "2"],
                          "cost": ["10", "", "", "", "1"], "c": ["a", "b", "b", "b", "a"]})
    seen = set()
    for seed in range(40):
        drawn: dict = {}
        program.release(frame, recorders(program, drawn), rng=np.random.default_rng(seed))
        kept_cost = drawn[("total", 0)] == 11.0
        assert drawn[("total", 0)] in (1.0, 11.0)
        assert list(drawn[("cells", 0)]) == ([2, 0] if kept_cost else [1, 1]), seed
        assert drawn[("n", 0)] == 2
        seen.add(kept_cost)
    assert seen == {True, False}


@pytest.mark.slow
def test_every_query_of_the_spark_program_reads_the_same_kept_rows(shared_spark, tmp_path):
    """The Spark program's one truncation (``ranked_rdd``, one secret per release): the sum
    has a record of person 1 (its cost of 10; a kept row without a cost is no row of a sum)
    exactly when the histogram's record puts person 1 in "a" (the same kept row), and over 8
    releases both rows are kept."""
    laplace = Noise("laplace", "pure", epsilon=1.0)
    plan = Plan(Dataset("v"), (
        PlanQuery("total", "Cost", Sum("cost", Bounds(0.0, 100.0, "public")), laplace),
        PlanQuery("cells", "Cells", Histogram("c", cats("a", "b")), laplace)),
        PrivacyUnit("pid", 1))
    program = load_program(spark_program(plan), "spark_one_truncation", tmp_path)
    rows = [("1", "10", "a"), ("1", "", "b"), ("1", "", "b"), ("1", "", "b"), ("2", "1", "a")]
    rdd = shared_spark.sparkContext.parallelize(rows, 2)
    seen = set()
    for seed in range(8):
        kept = program.ranked_rdd(rdd, seed=seed)
        total, cells = (dict((pid, (c, v)) for pid, c, v in
                             program.spark_rows(kept, q, ranked=True).collect())
                        for q in program.QUERIES)
        assert total["2"] == (0, 1.0) and cells["2"][0] == 0
        kept_cost = "1" in total
        assert total.get("1", (0, 10.0)) == (0, 10.0)
        assert cells["1"][0] == (0 if kept_cost else 1), seed
        seen.add(kept_cost)
    assert seen == {True, False}


def test_a_means_count_in_the_program_is_the_values_summed(tmp_path):
    """Found in review: the program's mean (and mean by group) counted every kept row, where
    the app and the release count the kept rows that have a value (SumAggregate.rows,
    GroupedSumAggregate.rows), so its means were pulled towards 0 on data with missing
    values. Person 1's two rows (max rows 5: both kept), one without a value; person 3 has
    none: the sum is 20 over 2 values, in group "a" 10 over 1 and in "b" 10 over 1."""
    from tests.release.test_program_stability import recorders

    laplace = Noise("laplace", "pure", epsilon=1.0)
    bounds = Bounds(0.0, 100.0, "public")
    plan = Plan(Dataset("v"), (
        PlanQuery("m", "Mean", Mean("x", bounds), laplace),
        PlanQuery("g", "Mean by group", GroupBy("c", "mean", "x", bounds, cats("a", "b")),
                  laplace)), PrivacyUnit("p", 5))
    program = load_program(opendp_program(plan), "mean_count", tmp_path)
    frame = pd.DataFrame({"p": ["1", "1", "2", "3"], "x": ["10", "", "10", ""],
                          "c": ["a", "b", "b", "a"]})
    drawn: dict = {}
    program.release(frame, recorders(program, drawn), rng=np.random.default_rng(0))
    assert drawn[("m", 0)] == 20.0 and drawn[("m", 1)] == 2
    assert list(drawn[("g", 0)]) == [10.0, 10.0] and list(drawn[("g", 1)]) == [1, 1]


def test_a_persons_kept_groups_are_uniform_whatever_their_sizes(tmp_path):
    """Each person keeps max_groups of their groups uniformly at random, not the groups
    whose rows come first after a shuffle (which favours large groups), and rows uniformly
    within a kept group. 600 people with 9 rows in A and 1 in B, max rows 3, max groups 1:
    A is kept by Binomial(600, 1/2) people (a choice by first row after a shuffle keeps A
    with probability 9/10: rejected with certainty), and each of A's 9 rows is kept
    equally often (chi-square)."""
    plan = Plan(Dataset("v"), (PlanQuery("dx", "dx", Histogram("dx", cats("A", "B")),
                                         Noise("laplace", "pure", epsilon=1.0)),),
                PrivacyUnit("pid", 3, 1))
    program = load_program(opendp_program(plan), "uniform", tmp_path)
    people = 600
    frame = pd.DataFrame({"pid": np.repeat(np.arange(people), 10),
                          "dx": np.tile(["A"] * 9 + ["B"], people),
                          "row": np.tile(np.arange(10), people)})
    codes, _ = program.cell_codes(frame, program.QUERIES[0])
    kept = program.bounded(frame, codes, rng=np.random.default_rng(11))
    groups = kept.groupby("pid")["dx"].agg(["nunique", "first", "size"])
    assert (groups["nunique"] == 1).all() and len(groups) == people
    kept_a = int((groups["first"] == "A").sum())
    assert stats.binomtest(kept_a, people, 0.5).pvalue > ALPHA, kept_a
    assert (groups.loc[groups["first"] == "A", "size"] == 3).all()
    rows = kept.loc[kept["dx"] == "A", "row"].value_counts().reindex(range(9), fill_value=0)
    assert stats.chisquare(rows.to_numpy()).pvalue > ALPHA, rows.tolist()


def noise_plan() -> Plan:
    """Count (Laplace ε = 0.5: b = 2), ten-cell histogram (Laplace ε = 1: b = 1) and ten
    group sums (Gaussian ρ = 0.02 on values in [0, 10]: σ = 10/√0.04 = 50)."""
    ten = cats(*"abcdefghij")
    return Plan(Dataset("tiny"), (
        PlanQuery("n", "n", Count(), Noise("laplace", "pure", epsilon=0.5)),
        PlanQuery("h", "h", Histogram("g", ten), Noise("laplace", "pure", epsilon=1.0)),
        PlanQuery("s", "s", GroupBy("g", "sum", "x", Bounds(0, 10, "public"), keys=ten),
                  Noise("gaussian", "zcdp", rho=0.02)),
    ), PrivacyUnit(), Accounting("zcdp", 1e-6))


@pytest.mark.slow
def test_opendp_noise_has_the_planned_scale_by_distribution(tmp_path):
    plan = noise_plan()
    program = load_program(opendp_program(plan), "noise", tmp_path)
    frame = pd.DataFrame({"g": list("abcdefghij") * 2, "x": np.arange(20) % 7})
    measurements, report = program.checked_measurements()
    # closed forms (OpenDP may need the scale a few ulps up for its map to meet the plan)
    assert [p["scale"] for p in report] == pytest.approx([2.0, 1.0, 50.0], rel=1e-13)
    runs = [program.release(frame, measurements) for _ in range(300)]
    count = np.array([r["queries"][0]["rows"][0][1] for r in runs]) - 20
    cells = np.array([[v for _, v in r["queries"][1]["rows"]] for r in runs]).ravel() - 2
    true_sums = frame.groupby("g")["x"].sum().reindex(list("abcdefghij")).to_numpy()
    sums = (np.array([[v for _, v in r["queries"][2]["rows"]] for r in runs])
            - true_sums).ravel()
    for sample, dist in ((count, stats.laplace(scale=2.0)), (cells, stats.laplace(scale=1.0)),
                         (sums, stats.norm(scale=50.0))):
        assert stats.kstest(sample, dist.cdf).pvalue > ALPHA
    # the same samples reject a scale 25% off (the test has the power to see a wrong scale)
    assert stats.kstest(cells, stats.laplace(scale=1.25).cdf).pvalue < ALPHA
    assert stats.kstest(sums, stats.norm(scale=62.5).cdf).pvalue < ALPHA
    out = program.release(frame)
    assert out["privacy_spent"]["epsilon"] == prepare(plan).spent.epsilon


# --------------------------------------------------------------------------------------------
# the Spark program (one local[1] session, in one subprocess)

ABSENT = tuple(f"absent-{i}" for i in range(400))


def spark_plan() -> Plan:
    """Adult's count, education (with 400 declared levels no row holds: pure noise), mean
    age, the hours sum (Gaussian) under a column named to inject code, and hours by
    occupation (with the same 400 absent keys)."""
    public = "public"
    return Plan(Dataset("adult-slice"), (
        PlanQuery("people", "Number of people", Count(), Noise("geometric", "pure",
                                                               epsilon=0.5)),
        PlanQuery("education", "By education", Histogram("education",
                                                         cats(*EDUCATION, *ABSENT)),
                  Noise("laplace", "pure", epsilon=0.5)),
        PlanQuery("mean-age", "Mean age", Mean("age", Bounds(17, 90, public)),
                  Noise("laplace", "pure", epsilon=0.5)),
        PlanQuery("hours", "Hours", Sum(INJECTION, Bounds(1, 99, public)),
                  Noise("gaussian", "approx", epsilon=0.5, delta=1e-6)),
        PlanQuery("hours-by-job", "Hours by occupation",
                  GroupBy("occupation", "sum", "hours_per_week", Bounds(0, 10, public),
                          keys=cats(*OCCUPATION, *ABSENT)),
                  Noise("gaussian", "approx", epsilon=1.0, delta=1e-6)),
    ), PrivacyUnit(), Accounting("basic"))


@pytest.fixture(scope="module")
def spark_release(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("spark")
    frame = pd.read_csv(ADULT_PATH, nrows=1500)
    frame[INJECTION] = frame["hours_per_week"]
    frame.to_csv(tmp / "adult-slice.csv", index=False)
    plan = spark_plan()
    text = spark_program(plan)
    (tmp / "program.py").write_text(text, encoding="utf-8")
    done = subprocess.run([sys.executable, "program.py", "--data", "adult-slice.csv",
                           "--master", "local[1]", "--out", "out.json"], cwd=tmp,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads((tmp / "out.json").read_text(encoding="utf-8"))
    return plan, text, out, frame, tmp


def test_spark_program_accounting_equals_the_plans(spark_release):
    plan, text, out, _, tmp = spark_release
    ruff_clean(text)
    assert not (tmp / "INJECTED").exists()
    planned = prepare(plan).planned
    assert math.isclose(out["privacy_spent"]["epsilon"], planned.epsilon, rel_tol=1e-12)
    assert out["privacy_spent"]["delta"] == pytest.approx(planned.delta, rel=1e-12)
    by_part = {(p["query"], p["query_part"]): p for p in out["parts"]}
    built = {b.query.id: b for b in prepare(plan).built}
    assert set(by_part) == {(q, part.name) for q, b in built.items() for part in b.parts}
    for (query, name), p in by_part.items():
        part = next(x for x in built[query].parts if x.name == name)
        (spec,) = p["spent"]  # one mechanism per accountant, given the part's whole budget
        assert spec["epsilon"] == part.loss.epsilon
        assert spec["delta"] == part.loss.delta
        (std,) = p["noise_std"]
        if p["noise"] == "laplace":  # b = Δ/ε exactly as planned; std = b√2
            assert std == pytest.approx(part.scale * math.sqrt(2), rel=1e-12)
        else:  # PyDP's σ search stops a little above the exact analytic σ the plan uses
            assert part.scale <= std <= part.scale * 1.001


def test_the_spark_program_refuses_noise_below_the_plans():
    """PipelineDP 0.3's Gaussian σ search collapses at a large ε (a reviewer's program at
    ε = 1000 reported σ = 2.2e-308 against the plan's 0.1016, and published): the program
    compares the σ it drew with the plan's before it writes anything."""
    import pipeline_dp

    from release.templates import common, spark_program

    collapsed = pipeline_dp.dp_computations.compute_sigma(1000.0, 1e-3, 1.0)
    assert collapsed < 1e-300   # PipelineDP's own figure (what made the program publish)
    part = {"part": "sum", "noise": "gaussian", "plan_scale": 0.1016}
    with pytest.raises(common.Refused, match="below the plan's"):
        spark_program.check_noise(part, {collapsed})
    spark_program.check_noise(part, {0.1016 * 1.0005})   # σ's search stops a hair above
    laplace = {"part": "count", "noise": "laplace", "plan_scale": 2.0}
    spark_program.check_noise(laplace, {2.0 * math.sqrt(2)})
    with pytest.raises(common.Refused):
        spark_program.check_noise(laplace, {2.0})   # b itself: a Laplace std of b/√2 less


def test_spark_program_noise_has_the_planned_variance(spark_release):
    plan, _, out, frame, _ = spark_release
    rows = {q["id"]: dict((tuple(g), v) for g, v in q["rows"]) for q in out["queries"]}
    built = {b.query.id: b for b in prepare(plan).built}
    laplace = np.array([rows["education"][(a,)] for a in ABSENT])  # true counts 0
    gauss = np.array([rows["hours-by-job"][(a,)] for a in ABSENT])  # true sums 0
    b = built["education"].parts[0].scale
    sigma = built["hours-by-job"].parts[0].scale
    # 400 draws: the sample variance's relative standard error is √((κ−1)/n), κ = 6 for
    # Laplace (11%) and 3 for the Gaussian (7%); the tolerances are about 3.5 of them
    assert np.mean(laplace**2) == pytest.approx(2 * b * b, rel=0.4)
    assert np.mean(gauss**2) == pytest.approx(sigma * sigma, rel=0.25)
    # the declared levels that do occur are released beside them, noised
    true = frame["education"].value_counts()
    assert abs(rows["education"][("HS-grad",)] - true["HS-grad"]) < 40 * b
    assert rows["hours"][()] == pytest.approx(frame[INJECTION].clip(1, 99).sum(),
                                              abs=12 * built["hours"].parts[0].scale)


# --------------------------------------------------------------------------------------------
# the variance in both programs

AGES = Bounds(10, 90, "public")


def variance_plan(*noises: Noise) -> Plan:
    """A variance of age in [10, 90] (h = 40) per noise, at most 3 rows per person."""
    return Plan(Dataset("people"), tuple(
        PlanQuery(f"v{i}", "Variance of age", Variance("age", AGES), noise)
        for i, noise in enumerate(noises)), PrivacyUnit("pid", 3), Accounting("basic"))


def people(seed: int) -> pd.DataFrame:
    """300 people with 2 rows each (under the 3 kept: the truth is exact), every 40th age
    missing."""
    rng = np.random.default_rng(seed)
    age = rng.normal(45, 18, 600)
    age[::40] = np.nan
    return pd.DataFrame({"pid": np.repeat(np.arange(300), 2), "age": age})


def true_variance(frame: pd.DataFrame) -> float:
    """The population variance of the present ages clamped to the bounds."""
    return float(np.var(np.clip(frame["age"].dropna().to_numpy(), 10, 90)))


def app_law(plan: Plan, frame: pd.DataFrame, trials: int, seed: int) -> np.ndarray:
    """The app's law of the released variance: dpcore's samplers on the parts the plan
    builds, at the true values DuckDB reads, combined by the kind (the simulator's draw)."""
    from engine import Engine, FrameSource
    from engine.duckdb_backend import DuckDBBackend

    engine = Engine(DuckDBBackend(threads=1))
    built = prepare(plan).built[0]
    aggs = tuple(engine.answer(FrameSource(frame), q) for q in built.engine_queries)
    values = built.kind.part_values(built, aggs)
    rng = np.random.default_rng(seed)
    noisy = tuple(part.mechanism.sample(value, trials=trials, rng=rng)
                  for part, value in zip(built.parts, values, strict=True))
    return built.kind.combine(built, noisy)


@pytest.mark.slow
def test_opendp_program_releases_a_variance_with_the_apps_law(tmp_path):
    """The three parts at the plan's scales (closed forms: r/(ε/3), r·h/(ε/3), r·h²/(ε/3)
    with r = 3, h = 40, ε = 1); 500 releases against 20,000 draws of the app's law
    (two-sample KS), which rejects the law at half the ε (twice the scales); at ε = 10⁵ the
    release is the true variance of the clamped present values."""
    plan = variance_plan(Noise("laplace", "pure", epsilon=1.0))
    program = load_program(opendp_program(plan), "variance", tmp_path)
    measurements, report = program.checked_measurements()
    parts = prepare(plan).built[0].parts
    assert [p["part"] for p in report] == list(PART_NAMES)
    assert [p["scale"] for p in report] == pytest.approx([p.scale for p in parts], rel=1e-13)
    assert [p.scale for p in parts] == pytest.approx([9.0, 360.0, 14400.0], rel=1e-12)
    assert spent_of(report, plan).epsilon == prepare(plan).spent.epsilon <= 1.0
    frame = people(5)
    released = np.array([program.release(frame, measurements)["queries"][0]["rows"][0][1]
                         for _ in range(500)])
    assert stats.ks_2samp(released, app_law(plan, frame, 20_000, seed=3)).pvalue > ALPHA
    halved = variance_plan(Noise("laplace", "pure", epsilon=0.5))
    assert stats.ks_2samp(released, app_law(halved, frame, 20_000, seed=4)).pvalue < ALPHA
    precise = variance_plan(Noise("laplace", "pure", epsilon=1e5))
    out = load_program(opendp_program(precise), "precise", tmp_path).release(frame)
    assert out["queries"][0]["rows"] == [[[], pytest.approx(true_variance(frame), rel=1e-4)]]


def test_the_programs_post_process_a_variance_as_the_kind_does():
    """The programs' variance_of (release/templates/common.py) against the kind's
    (plan.kinds.variance), on the cases its rules name: the count floored at 1, the value
    clamped to [0, h²]."""
    from plan.kinds.variance import variance_of
    from release.templates import common

    cases = np.array([(0.0, 5.0, 1e9), (100.0, 0.0, -5.0), (4.0, 4.0, 8.0), (4.0, 0.0, 8.0),
                      (0.5, 1.0, 3.0), (-7.0, -2.0, 30.0), (600.0, 30.0, 1.5e5)])
    programs = [common.variance_of(*case, 10.0, 90.0) for case in cases.tolist()]
    np.testing.assert_allclose(programs, variance_of(*cases.T, 40.0), rtol=1e-15)
    assert programs[:5] == [1600.0, 0.0, 1.0, 2.0, 2.0]


@pytest.mark.spark
def test_spark_program_releases_a_variance_with_the_plans_parts(tmp_path):
    """A variance under approximate DP (Gaussian parts) and one at ε = 10⁵ (Laplace), one
    local[1] run: each part is one PipelineDP aggregation given the part's own budget, with
    the plan's noise (Laplace: std = b√2 exactly; Gaussian: PyDP's σ at most 0.1% above the
    plan's), the totals are the plan's, and the precise one is the true variance."""
    frame = people(6)
    frame.to_csv(tmp_path / "people.csv", index=False)
    plan = Plan(Dataset("people"), (
        PlanQuery("v", "Variance", Variance("age", AGES),
                  Noise("gaussian", "approx", epsilon=1.0, delta=1e-6)),
        PlanQuery("precise", "Variance", Variance("age", AGES),
                  Noise("laplace", "pure", epsilon=1e5)),
    ), PrivacyUnit("pid", 3), Accounting("basic"))
    (tmp_path / "program.py").write_text(spark_program(plan), encoding="utf-8")
    done = subprocess.run([sys.executable, "program.py", "--data", "people.csv",
                           "--master", "local[1]", "--out", "out.json"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    planned = prepare(plan).planned
    assert math.isclose(out["privacy_spent"]["epsilon"], planned.epsilon, rel_tol=1e-12)
    assert out["privacy_spent"]["delta"] == pytest.approx(planned.delta, rel=1e-12)
    built = {b.query.id: b for b in prepare(plan).built}
    assert [(p["query"], p["query_part"]) for p in out["parts"]] == [
        (q, name) for q in ("v", "precise") for name in PART_NAMES]
    for p in out["parts"]:
        part = next(x for x in built[p["query"]].parts if x.name == p["query_part"])
        assert p["spent"] == [{"epsilon": part.loss.epsilon, "delta": part.loss.delta}]
        (std,) = p["noise_std"]
        if p["noise"] == "laplace":
            assert std == pytest.approx(part.scale * math.sqrt(2), rel=1e-12)
        else:
            assert part.scale <= std <= part.scale * 1.001
    rows = {q["id"]: q["rows"] for q in out["queries"]}
    assert rows["precise"] == [[[], pytest.approx(true_variance(frame), rel=1e-4)]]
    assert 0.0 <= rows["v"][0][1] <= 40.0**2


# --------------------------------------------------------------------------------------------
# the templates: real Python files


TEMPLATES = ("common", "opendp_program", "spark_program")


def _definitions(tree: ast.Module) -> dict[str, str]:
    return {node.name: ast.dump(node) for node in tree.body
            if isinstance(node, ast.FunctionDef | ast.ClassDef)}


def _assignments(tree: ast.Module) -> list[str]:
    return [t.id for node in tree.body if isinstance(node, ast.Assign | ast.AnnAssign)
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target])]


def test_the_templates_are_python_files_that_tests_import_and_ruff_checks():
    import importlib

    for name in TEMPLATES:
        module = importlib.import_module(f"release.templates.{name}")
        assert module.QUERIES == []  # the placeholders: importing released nothing
    assert callable(module.main) and module.PLAN_SHA256 == "sha256:"
    listed = subprocess.run([str(RUFF), "check", "--show-files", "."], cwd=REPO,
                            capture_output=True, text=True, timeout=60).stdout
    for name in TEMPLATES:
        assert str(REPO / "release" / "templates" / f"{name}.py") in listed
    done = subprocess.run([str(RUFF), "check", "release/templates"], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout


def _assigned(tree: ast.Module) -> dict[str, str]:
    return {t.id: ast.dump(node.value) for node in tree.body
            if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target])}


def _plan_names(template: str) -> list[str]:
    """The names of a template's PLAN block (the plan's literals in a program)."""
    return programs._assigned(programs._blocks(programs._template(template), "PLAN")[1])


@pytest.mark.parametrize(("make", "template"), [(opendp_program, "opendp_program"),
                                                (spark_program, "spark_program")])
def test_a_program_is_its_template_with_the_plans_literals(make, template):
    """Every function and class of the template, of the shared code and of engine/cells.py
    (the one reading of a cell) is in the program as written there, their other constants
    too, and the plan's names hold literals only."""
    plan = noise_plan() if make is opendp_program else spark_plan()
    program = ast.parse(make(plan))
    source = {name: ast.parse((REPO / "release" / "templates" / f"{name}.py").read_text(
        encoding="utf-8")) for name in ("common", template)}
    source["cells"] = ast.parse((REPO / "engine" / "cells.py").read_text(encoding="utf-8"))
    expected = (_definitions(source["cells"]) | _definitions(source["common"])
                | _definitions(source[template]))
    assert _definitions(program) == expected
    plan_names = _plan_names(template)
    # the same names: the plan's, the reading's and the shared code's constants, the
    # template's own
    shared = [n for n in _assignments(source["common"]) if n not in _plan_names("common")]
    assert _assignments(program) == [*plan_names, *_assignments(source["cells"]), *shared, *[
        n for n in _assignments(source[template]) if n not in plan_names]]
    constants = (_assigned(source["cells"]) | _assigned(source["common"])
                 | _assigned(source[template]))
    for node in program.body:
        if isinstance(node, ast.Assign) and node.targets[0].id in plan_names:
            ast.literal_eval(node.value)          # … the plan's names hold literals only
        elif isinstance(node, ast.Assign):         # … the others are as written there
            assert ast.dump(node.value) == constants[node.targets[0].id]


# --------------------------------------------------------------------------------------------
# injection and refusals


@pytest.mark.slow
def test_a_column_named_to_inject_code_stays_a_string(tmp_path):
    evil = Plan(Dataset("x\n'''\"\"\"\\"), (
        PlanQuery("s", "label'\n\"\"\"; os.system('x')", Sum(INJECTION, Bounds(0, 1, "typed",
                                                                            INJECTION)),
                  Noise("laplace", "pure", epsilon=1.0)),
        # (a CSV header's name is read without the white space around it: "x" ends it)
        PlanQuery("h", INJECTION, Histogram("g\n# x", cats(INJECTION, "')\nimport os#")),
                  Noise("laplace", "pure", epsilon=1.0)),
    ))
    benign = Plan(Dataset("x"), (
        PlanQuery("s", "label", Sum("a", Bounds(0, 1, "typed", "b")),
                  Noise("laplace", "pure", epsilon=1.0)),
        PlanQuery("h", "c", Histogram("d", cats("e", "f")),
                  Noise("laplace", "pure", epsilon=1.0)),
    ))
    for make in (opendp_program, spark_program):
        text = make(evil)
        ruff_clean(text)
        # the programs differ only in constants: the same code, the plan's text inert
        assert _code_shape(text) == _code_shape(make(benign))
    program = tmp_path / "program.py"
    program.write_text(opendp_program(evil), encoding="utf-8")
    pd.DataFrame({INJECTION: [0.5] * 10, "g\n# x": [INJECTION] * 10}).to_csv(
        tmp_path / "data.csv", index=False)
    done = subprocess.run([sys.executable, "program.py", "--data", "data.csv"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "INJECTED").exists()
    out = json.loads(done.stdout)
    assert [r[0] for r in out["queries"][1]["rows"]] == [[INJECTION], ["')\nimport os#"]]


def _code_shape(text: str) -> str:
    class Blank(ast.NodeTransformer):
        def visit_Constant(self, node):
            return ast.Constant(value=None)

    return ast.dump(Blank().visit(ast.parse(text)))


def test_what_a_program_cannot_release_as_planned_is_refused_by_name():
    plan = adult_plan(pin=False)
    with pytest.raises(ProgramUnsupported, match="top-occupation"):
        spark_program(plan)
    zcdp = Plan(plan.dataset, plan.queries[:1], accounting=Accounting("zcdp", 1e-6))
    with pytest.raises(ProgramUnsupported, match="accounting.method"):
        spark_program(zcdp)
    discrete = Plan(plan.dataset, (PlanQuery("n", "n", Count(), Noise(
        "discrete_gaussian", "zcdp", rho=0.1, delta=1e-6)),))
    with pytest.raises(ProgramUnsupported, match="discrete_gaussian"):
        spark_program(discrete)
    selection = Plan(plan.dataset, (PlanQuery("t", "t", Selection("occupation", cats(
        *OCCUPATION)), SelectionNoise("exponential", "pure", epsilon=1.0)),))
    assert "make_noisy_max" in opendp_program(selection)
