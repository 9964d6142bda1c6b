"""Stability of what a release computes before the noise: one person added or removed moves
the true aggregates by at most the sensitivity the plan claims, for every query kind.

The aggregates are the release path's own (``release.run._plan_aggregates``: the plan's engine
queries with the privacy unit's contribution bounds, and for partition selection the keyed
queries over the keys found), on DuckDB over random person-level data (each person removed in
turn, and a newcomer whose keys sort before every other key added) and on Spark over a few
datasets. The regression test is the case that broke: max-groups truncation ranked a person's
groups by their position in the list of keys found, so one newcomer whose key sorts first
changed the groups every other person kept.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pytest

from dpcore.contributions import ContributionBounds, Sensitivity, mean_sensitivities
from engine import Engine, FileSource, FrameSource
from engine.duckdb_backend import DuckDBBackend
from plan import model
from plan.build import Built, PartitionThreshold, build_plan
from plan.kinds.people import People
from plan.kinds.synthetic import Synthetic, SyntheticColumn
from plan.kinds.variance import Variance
from plan.model import (
    Bounds,
    Categories,
    Count,
    Crosstab,
    Dataset,
    Grid,
    GroupBy,
    Histogram,
    Mean,
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
from release.measurements import certify, quantile_scores
from release.run import _plan_aggregates

PERSON, KEY, COLOUR, VALUE = "pid", "key", "colour", "x"
#: Keys the random people hold; "a-first" and "k00" (a newcomer's) sort before all of them.
KEYS = tuple(f"k{i:02d}" for i in range(3, 15))
DECLARED = KEYS[:8]                        # declared keys: the other four are outside
COLOURS = ("blue", "green", "red")
LOWER, UPPER = 0.0, 10.0
LEVELS = (0.1, 0.5, 0.9)
CANDIDATES = tuple(float(v) for v in range(-2, 15))
TOLERANCE = 1e-9


def _cats(*values: object) -> Categories:
    return Categories(tuple(values), "public", "test declaration")


def every_kind_plan(unit: PrivacyUnit) -> Plan:
    """One query of every kind a plan can hold (group-bys with declared and with found keys;
    the number of people under a person-id unit only)."""
    laplace = Noise("laplace", "pure", epsilon=1.0)
    bounds = Bounds(LOWER, UPPER, "public")
    keys = _cats(*DECLARED)
    threshold = Threshold("discrete_laplace", 1e-7, epsilon=1.0)
    queries = (
        PlanQuery("count", "Rows", Count(), laplace),
        PlanQuery("people", "People", People(), laplace),
        PlanQuery("sum", "Sum", Sum(VALUE, bounds), laplace),
        PlanQuery("mean", "Mean", Mean(VALUE, bounds), laplace),
        PlanQuery("histogram", "Keys", Histogram(KEY, keys), laplace),
        PlanQuery("binned", "Bins", Histogram(VALUE, edges=Grid((0.0, 3.0, 6.0, 10.0),
                                                                 "public")), laplace),
        PlanQuery("clamped-bins", "Bins", Histogram(VALUE, edges=Grid((0.0, 5.0, 10.0),
                                                                       "public"),
                                                    outside="clamp"), laplace),
        PlanQuery("crosstab", "Keys by colour",
                  Crosstab(KEY, COLOUR, keys, _cats(*COLOURS)), laplace),
        PlanQuery("count-by", "Count by key", GroupBy(KEY, keys=keys), laplace),
        PlanQuery("sum-by", "Sum by key", GroupBy(KEY, "sum", VALUE, bounds, keys=keys),
                  laplace),
        PlanQuery("mean-by", "Mean by key", GroupBy(KEY, "mean", VALUE, bounds, keys=keys),
                  laplace),
        PlanQuery("count-found", "Count by key found", GroupBy(KEY), None,
                  threshold=threshold),
        PlanQuery("sum-found", "Sum by key found", GroupBy(KEY, "sum", VALUE, bounds),
                  laplace, threshold=threshold),
        PlanQuery("mean-found", "Mean by key found", GroupBy(KEY, "mean", VALUE, bounds),
                  laplace, threshold=threshold),
        PlanQuery("quantiles", "Quantiles", Quantiles(VALUE, LEVELS,
                                                      Grid(CANDIDATES, "public")),
                  SelectionNoise("exponential", "pure", epsilon=1.0)),
        PlanQuery("selection", "Top keys", Selection(KEY, keys, k=2),
                  SelectionNoise("exponential", "pure", epsilon=1.0)),
        PlanQuery("variance", "Variance", Variance(VALUE, bounds), laplace),
        PlanQuery("synthetic", "Synthetic", Synthetic(
            (SyntheticColumn(KEY, keys), SyntheticColumn(VALUE, edges=Grid((0.0, 5.0, 10.0),
                                                                           "public"))),
            "MST", 100, "pure", epsilon=1.0), None),
    )
    if unit.person_column is None:   # a number of people needs a person-id column
        queries = tuple(q for q in queries if not isinstance(q.query, People))
    return Plan(Dataset("stability"), queries, unit)


#: Kinds that read no data at release (drawn before it): nothing to keep stable.
DRAWN_BEFORE = {"max_rows"}


def test_the_check_holds_a_query_of_every_kind_of_the_registry():
    """A new kind (plan.kinds) joins this check, or the check fails until it does."""
    from plan.kinds import KINDS

    held = {q.query.kind for q in every_kind_plan(PrivacyUnit("pid", 2, 2)).queries}
    assert held == set(KINDS) - DRAWN_BEFORE


def people(seed: int, persons: int = 14) -> pd.DataFrame:
    """Random person-level rows: 1 to 6 rows per person, each person holding 1 to 3 keys."""
    rng = np.random.default_rng(seed)
    rows = []
    for pid in range(persons):
        own = rng.choice(KEYS, size=int(rng.integers(1, 4)), replace=False)
        for _ in range(int(rng.integers(1, 7))):
            rows.append((pid, str(rng.choice(own)), str(rng.choice(COLOURS)),
                         int(rng.integers(-2, 14))))
    return pd.DataFrame(rows, columns=[PERSON, KEY, COLOUR, VALUE])


def newcomer(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` and one new person with many rows, in new keys that sort before every other
    key (and in an existing one), with values outside the bounds."""
    pid = int(frame[PERSON].max()) + 1
    keys = ["a-first", "k00", "a-first", "k00", KEYS[2], "a-first", "k00", KEYS[2]]
    new = pd.DataFrame({PERSON: pid, KEY: keys, COLOUR: "red",
                        VALUE: [20, -5, 3, 11, 7, 14, 0, 9]})
    return pd.concat([frame, new], ignore_index=True)


def neighbours(frame: pd.DataFrame, persons: list[int] | None = None):
    """(what changed, the neighbouring frame): each person removed, then the newcomer added."""
    for pid in persons if persons is not None else sorted(frame[PERSON].unique()):
        yield f"without person {pid}", frame[frame[PERSON] != pid].reset_index(drop=True)
    yield "with a newcomer", newcomer(frame)


# --------------------------------------------------------------------------------------------
# the statistics a release noises, and the sensitivities the plan claims for them


Vector = dict[Any, float]


@dataclass(frozen=True)
class Claim:
    """A claimed sensitivity in each norm (inf: the norm is not claimed)."""

    l1: float
    l2: float
    linf: float



def _grouped(unit: PrivacyUnit) -> ContributionBounds:
    return ContributionBounds(unit.max_rows, unit.max_groups)


def statistics(built: Built, aggs: tuple, keys: tuple
               ) -> dict[str, tuple[Vector, Claim | Sensitivity]]:
    """What each part of ``built`` is drawn on (cells labelled, so that the keys found on two
    datasets line up), with the sensitivity the plan claims for it."""
    q = built.query.query
    unit = built.unit
    claimed = built.sensitivity
    if isinstance(q, model.Count):
        return {"count": ({(): aggs[0].rows}, claimed)}
    if isinstance(q, People):   # one person is one person id, whatever their rows: 1
        assert claimed == Sensitivity(1.0, 1.0, 1.0)
        return {"people": ({(): aggs[0].total_people}, Claim(1.0, 1.0, 1.0))}
    if isinstance(q, Variance):   # each part on its own input, at its own sensitivity
        values = built.kind.part_values(built, aggs)
        return {part.name: ({(): value}, Sensitivity(part.sensitivity, part.sensitivity,
                                                      part.sensitivity))
                for part, value in zip(built.parts, values, strict=True)}
    if isinstance(q, model.Sum):
        return {"sum": ({(): aggs[0].total}, claimed)}
    if isinstance(q, Synthetic):  # OpenDP's mbi reads the rows at max_rows (symmetric)
        cells = dict(zip(map(tuple, aggs[0].codes.tolist()), aggs[0].counts.tolist(),
                         strict=True))
        return {"cells": (cells, Claim(unit.max_rows, math.inf, unit.max_rows))}
    if isinstance(q, model.Mean):
        both = mean_sensitivities(ContributionBounds(unit.max_rows), lower=q.bounds.lower,
                                  upper=q.bounds.upper)
        assert claimed == both[0]
        return {"sum": ({(): aggs[0].total}, both[0]),
                "count": ({(): aggs[0].rows}, both[1])}
    if isinstance(q, model.Histogram | model.Crosstab):
        counts = np.asarray(aggs[0].counts).reshape(-1)
        return {"counts": (dict(enumerate(counts.tolist())), claimed)}
    if isinstance(q, model.Selection):
        # report noisy max reads the scores at their L∞ distance (monotonic)
        linf = Claim(math.inf, math.inf, claimed.linf)
        return {"scores": (dict(enumerate(aggs[0].counts.tolist())), linf)}
    if isinstance(q, model.Quantiles):
        counts = [int(c) for c in aggs[0].counts]
        cumulative = np.cumsum(counts)
        below = [int(cumulative[2 * j]) for j in range(len(CANDIDATES))]
        equal = [counts[2 * j + 1] for j in range(len(CANDIDATES))]
        out = {}
        for level, part in zip(q.levels, certify(built), strict=True):
            scores = quantile_scores(below, equal, int(cumulative[-1]), level)
            score_sensitivity = Claim(math.inf, math.inf, float(part.d_in))
            out[f"scores q={level:g}"] = (dict(enumerate(scores)), score_sensitivity)
        return out
    assert isinstance(q, model.GroupBy)
    names = list(q.keys.values) if q.keys is not None else list(keys)
    out = {}
    if q.keys is None:
        threshold = built.parts[0].mechanism
        assert isinstance(threshold, PartitionThreshold)
        r, k = threshold.max_rows, threshold.max_groups
        linf_claim = Claim(k * r, math.sqrt(k) * r, r)   # make_*_threshold's (l1, l2, l∞)
        if not names:
            return {"threshold": ({}, linf_claim)}
        # the threshold's input: each key's bounded count, keys with no row kept left out
        kept = {k: c for k, c in zip(names, aggs[0].counts.tolist(), strict=True) if c > 0}
        out["threshold"] = (kept, linf_claim)
        aggs = aggs[1:]
        if q.statistic == "count":
            return out
    if q.statistic == "count":
        return {"counts": (dict(zip(names, aggs[0].counts.tolist(), strict=True)), claimed)}
    out["totals"] = (dict(zip(names, aggs[0].totals.tolist(), strict=True)), claimed)
    if q.statistic == "mean":
        count = mean_sensitivities(_grouped(unit), lower=q.bounds.lower, upper=q.bounds.upper)[1]
        out["rows"] = (dict(zip(names, aggs[0].rows.tolist(), strict=True)), count)
    return out


def release_statistics(plan: Plan, engine: Engine, frame: pd.DataFrame,
                       read: Callable[[pd.DataFrame], Any] = FrameSource) -> dict:
    """Every query's statistics as the release computes them on ``frame`` (``read``: the
    engine source the frame is read through)."""
    source = read(frame)
    out = {}
    plan_built = build_plan(plan)
    # the plan's queries answered together, as a release does (one ranking per unit)
    for built, (aggs, keys) in zip(plan_built, _plan_aggregates(plan_built, engine, source),
                                   strict=True):
        out[built.query.id] = statistics(built, aggs, keys)
    return out


def moves(before: dict, after: dict) -> list[str]:
    """Every statistic that moved by more than its claimed sensitivity (L1, L2, L∞, and for
    partition selection the number of keys changed), as readable lines."""
    found = []
    for query_id, parts in before.items():
        for name, (first, sensitivity) in parts.items():
            second = after[query_id][name][0]
            labels = sorted(set(first) | set(second), key=repr)
            change = np.array([float(first.get(c, 0)) - float(second.get(c, 0))
                               for c in labels])
            norms = {"L1": float(np.sum(np.abs(change))),
                     "L2": float(np.sqrt(np.sum(change**2))),
                     "Linf": float(np.max(np.abs(change), initial=0.0))}
            claims = {"L1": sensitivity.l1, "L2": sensitivity.l2, "Linf": sensitivity.linf}
            if name == "threshold":  # make_*_threshold's l0: at most max_groups keys change
                norms["L0"] = float(np.count_nonzero(change))
                claims["L0"] = sensitivity.l1 / sensitivity.linf
            for norm, value in norms.items():
                if not value <= claims[norm] * (1 + TOLERANCE) + TOLERANCE:
                    found.append(f"{query_id} {name}: {norm} change {value:g} > claimed "
                                 f"{claims[norm]:g}")
    return found


def check_every_neighbour(plan: Plan, engine: Engine, frame: pd.DataFrame,
                          persons: list[int] | None = None,
                          also: Callable[[dict, pd.DataFrame], None] | None = None,
                          read: Callable[[pd.DataFrame], Any] = FrameSource) -> None:
    base = release_statistics(plan, engine, frame, read)
    failures = []
    for what, other in neighbours(frame, persons):
        stats = release_statistics(plan, engine, other, read)
        failures += [f"{what}: {line}" for line in moves(base, stats)]
        if also is not None:
            also(stats, other)
    assert failures == [], "\n".join(failures)


UNITS = [PrivacyUnit(PERSON, 1, 1), PrivacyUnit(PERSON, 2, 2), PrivacyUnit(PERSON, 3, 1)]


@pytest.fixture(scope="module")
def duck() -> Engine:
    return Engine(DuckDBBackend(threads=1))


# --------------------------------------------------------------------------------------------
# THE STABILITY CHECK


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("unit", UNITS, ids=lambda u: f"r{u.max_rows}-k{u.max_groups}")
def test_no_neighbour_moves_a_release_more_than_its_sensitivity(duck, unit, seed) -> None:
    """Every query kind on DuckDB: each person removed in turn and a newcomer added."""
    check_every_neighbour(every_kind_plan(unit), duck, people(seed))


@pytest.mark.slow
def test_the_check_catches_a_sensitivity_too_small(duck) -> None:
    """The check can fail: statistics bounded at 3 rows per person, checked against the
    claims of a plan at 1 row per person (a planted bug), exceed them for some neighbour."""
    frame = people(0)
    strict = release_statistics(every_kind_plan(PrivacyUnit(PERSON, 1, 1)), duck, frame)
    loose = every_kind_plan(PrivacyUnit(PERSON, 3, 1))

    def with_strict_claims(stats: dict) -> dict:
        return {query_id: {name: (values, strict[query_id][name][1])
                           for name, (values, _) in parts.items()}
                for query_id, parts in stats.items()}

    base = with_strict_claims(release_statistics(loose, duck, frame))
    failures = []
    for _, other in neighbours(frame):
        failures += moves(base, with_strict_claims(release_statistics(loose, duck, other)))
    assert any(line.startswith("count count: L1") for line in failures)
    assert any(line.startswith("count-found threshold") for line in failures)


# --------------------------------------------------------------------------------------------
# the regression: 300 people in 3 of 20 keys, one newcomer whose key sorts first


def three_of_twenty(seed: int = 0) -> pd.DataFrame:
    """300 people, each with one row in each of two or three of the keys g05, g06, g07 (of
    twenty possible keys g00 … g19)."""
    rng = np.random.default_rng(seed)
    rows = []
    for pid in range(300):
        for key in rng.choice(["g05", "g06", "g07"], size=int(rng.integers(2, 4)),
                              replace=False):
            rows.append((pid, str(key)))
    return pd.DataFrame(rows, columns=[PERSON, KEY])


def with_first_key(frame: pd.DataFrame) -> pd.DataFrame:
    return pd.concat([frame, pd.DataFrame({PERSON: [1000], KEY: ["g00"]})], ignore_index=True)


def counts_found_plan() -> Plan:
    return Plan(Dataset("groups"), (
        PlanQuery("found", "Count by key", GroupBy(KEY), None,
                  threshold=Threshold("discrete_laplace", 1e-7, epsilon=1.0)),),
        PrivacyUnit(PERSON, 1, 1))


def _l1(first: dict, second: dict) -> float:
    return float(sum(abs(first.get(k, 0) - second.get(k, 0)) for k in set(first) | set(second)))


def test_a_newcomer_whose_key_sorts_first_moves_the_counts_by_one(duck) -> None:
    """Max rows 1, max groups 1: the newcomer adds one row to one key and nothing else moves
    (it moved the counts by L1 = 55 when groups were ranked by their position)."""
    frame = three_of_twenty()
    plan = counts_found_plan()
    before = release_statistics(plan, duck, frame)["found"]["threshold"][0]
    after = release_statistics(plan, duck, with_first_key(frame))["found"]["threshold"][0]
    assert sum(before.values()) == 300
    assert _l1(before, after) <= 1
    assert after == before | {"g00": 1}


def test_a_newcomer_moves_a_real_release_by_one(tmp_path, monkeypatch, duck) -> None:
    """End to end through ``release.run`` (a temporary ledger): the counts the partition
    selection is drawn on move by at most the claimed L1 = 1."""
    from release import Ledger, run
    from release.measurements import Certified

    drawn: list[Any] = []

    def record(self, value):  # the true input of every draw, returned without noise
        drawn.append(value)
        return value

    monkeypatch.setattr(Certified, "draw", record)
    frame = three_of_twenty()
    plan = counts_found_plan()
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        first = run(plan, FrameSource(frame), ledger=ledger, engine=duck)
        second = run(plan, FrameSource(with_first_key(frame)), ledger=ledger, engine=duck)
        assert len(ledger.releases()) == 2
    assert len(drawn) == 2
    assert _l1(drawn[0], drawn[1]) <= 1
    assert dict(first.queries[0].rows)[("g05",)] == drawn[0]["g05"]
    assert {g[0] for g, _ in second.queries[0].rows} == {"g00", "g05", "g06", "g07"}


# --------------------------------------------------------------------------------------------
# Spark: the same checks on a few datasets (a small local session, about a minute)


@pytest.fixture(scope="module")
def spark_engine(shared_spark):
    from engine.spark_backend import SparkBackend

    return Engine(SparkBackend(session=shared_spark))


def test_spark_regression_and_duckdb_agree(spark_engine, duck) -> None:
    frame = three_of_twenty()
    plan = counts_found_plan()
    before = release_statistics(plan, spark_engine, frame)["found"]["threshold"][0]
    after = release_statistics(plan, spark_engine, with_first_key(frame))["found"]
    assert _l1(before, after["threshold"][0]) <= 1
    assert after == release_statistics(plan, duck, with_first_key(frame))["found"]


def test_spark_no_neighbour_moves_a_release_more_than_its_sensitivity(spark_engine,
                                                                      duck) -> None:
    """Every query kind on Spark, max rows 2 and max groups 1: the people with the most keys
    removed, and the newcomer added; each neighbour's statistics are DuckDB's too (a
    synthetic table's joint cells included)."""
    frame = people(7, persons=10)
    plan = every_kind_plan(PrivacyUnit(PERSON, 2, 1))
    busiest = frame.groupby(PERSON)[KEY].nunique().sort_values().index[-2:].tolist()

    def same_as_duckdb(stats: dict, other: pd.DataFrame) -> None:
        assert stats == release_statistics(plan, duck, other)

    check_every_neighbour(plan, spark_engine, frame, busiest, also=same_as_duckdb)


def test_a_newcomer_moves_a_csv_release_by_one(tmp_path, monkeypatch, duck) -> None:
    """End to end through ``release.run`` on a CSV file: categories declared as texts on a
    column of codes. A reader that guessed the column's type from all its values matched none
    of them while the codes looked like numbers and all of them once the newcomer's "x" made
    the column text (every cell moved); each cell is now read as its own row's text."""
    from release import Ledger, run
    from release.measurements import Certified

    drawn: list[Any] = []

    def record(self, value):  # the true input of every draw, returned without noise
        drawn.append(value)
        return value

    monkeypatch.setattr(Certified, "draw", record)
    codes = np.random.default_rng(8).integers(1, 3, 300)
    lines = [f"p{i},{c}" for i, c in enumerate(codes)]
    first, second = tmp_path / "codes.csv", tmp_path / "codes-plus-x.csv"
    first.write_text("\n".join(["pid,code", *lines]) + "\n")
    second.write_text("\n".join(["pid,code", *lines, "newcomer,x"]) + "\n")
    plan = Plan(Dataset("codes"), (
        PlanQuery("codes", "Codes", Histogram("code", _cats("1", "2", "x")),
                  Noise("laplace", "pure", epsilon=1.0)),), PrivacyUnit("pid", 1))
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        for path in (first, second):
            run(plan, FileSource(path, "csv"), ledger=ledger, engine=duck)
    before, after = (np.asarray(d, dtype=float) for d in drawn)
    assert before.tolist() == [float(np.sum(codes == 1)), float(np.sum(codes == 2)), 0.0]
    assert np.abs(after - before).sum() <= 1


# --------------------------------------------------------------------------------------------
# AN UPLOAD, END TO END: the cells a release reads do not depend on the column's guessed type


def _upload_sums(monkeypatch, tmp_path, duck, files: list[bytes], name: str,
                 query: Any = None, unit: PrivacyUnit | None = None) -> list[float]:
    """The true clamped sum of ``amount`` (or ``query``'s input) each upload's release draws
    (no noise), through the app's own path: ``load_upload``, ``release_panel.source_of`` and
    ``release.run``."""
    from dashboard.data.upload import load_upload
    from dashboard.release_panel import content_hash_of, source_of
    from release import Ledger, run
    from release.measurements import Certified

    drawn: list[Any] = []

    def record(self, value):
        drawn.append(value)
        return value

    monkeypatch.setattr(Certified, "draw", record)
    plan = Plan(Dataset("upload"), (
        PlanQuery("amount", "Amount",
                  query or Sum("amount", Bounds(0.0, 2000.0, "public")),
                  Noise("laplace", "pure", epsilon=1.0)),), unit or PrivacyUnit("pid", 1))
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        for data in files:
            loaded = load_upload(data, name)
            run(plan, source_of(loaded), ledger=ledger, engine=duck,
                content_hash=content_hash_of(loaded))
    return [float(np.asarray(d, dtype=float).sum()) for d in drawn]


def test_a_newcomer_cannot_flip_an_uploads_number_style(tmp_path, monkeypatch, duck) -> None:
    """A tab-separated upload of "1,500" amounts: the parser chose between thousands
    separators and a decimal comma by which reading parsed more of the column's cells, so a
    newcomer's "2,5" turned every other row's 1500 into 1.5. Each cell is now read on its own
    by the one rule of every path (issue 31, rule 4: DuckDB's cast; no thousands separator or
    decimal comma is a number for a query, as on the command line), so neither is a number."""
    rows = [f"p{i}\t1,500" for i in range(40)]
    first = "\n".join(["pid\tamount", *rows]).encode() + b"\n"
    second = "\n".join(["pid\tamount", *rows, "newcomer\t2,5"]).encode() + b"\n"
    before, after = _upload_sums(monkeypatch, tmp_path, duck, [first, second], "amounts.tsv")
    assert before == after == 0.0


def test_a_newcomer_cannot_move_an_uploads_numbers_by_turning_the_column_to_text(
        tmp_path, monkeypatch, duck) -> None:
    """20 amounts written "1,500" and one "x": 95 % numbers, so the upload's column is
    numeric; a newcomer's "y" takes it below 95 % and the column became text, which the
    release read row by row as plain numbers: "1,500" is none, and the sum fell from 30000
    to 0. A release now reads the upload's cells, each as its own number (issue 31, rule 4:
    "1,500" is no number on any path, so the sum is 0 whatever the newcomer writes)."""
    rows = [f'p{i},"1,500"' for i in range(20)] + ["px,x"]
    first = "\n".join(["pid,amount", *rows]).encode() + b"\n"
    second = "\n".join(["pid,amount", *rows, "newcomer,y"]).encode() + b"\n"
    before, after = _upload_sums(monkeypatch, tmp_path, duck, [first, second], "amounts.csv")
    assert before == after == 0.0


def test_a_newcomer_cannot_make_other_uploaded_rows_appear(tmp_path, monkeypatch, duck) -> None:
    """One row per person; rows whose only value is "zzz" in a column of numbers were
    missing in the typed frame while the column was numeric, so each counted as empty and
    was dropped; one more such row took the column below 95 % numbers, it became text, and
    all 53 rows appeared. A row is now empty only when its own cells are (found by the
    privacy review)."""
    rows = [f"{i % 7}," for i in range(1000)] + ["zzz,"] * 52
    first = "\n".join(["x,y", *rows]).encode() + b"\n"
    second = "\n".join(["x,y", *rows, "zzz,"]).encode() + b"\n"
    before, after = _upload_sums(monkeypatch, tmp_path, duck, [first, second], "rows.csv",
                                 query=Count(), unit=PrivacyUnit())
    assert before == 1052.0
    assert after - before == 1.0


# --------------------------------------------------------------------------------------------
# AN UPLOAD ON THE PAGES: the true answers a page shows and simulates read the upload as its
# release does (the review's "trust" item), so its neighbours are the release's


def _uploaded(frame: pd.DataFrame) -> Any:
    """The page's source of ``frame`` written as a CSV and uploaded through the page's own
    reader (``load_upload`` → ``LoadedDataset.relation``)."""
    from dashboard.data.upload import load_upload

    return load_upload(frame.to_csv(index=False).encode(), "people.csv").relation.source


def odd_people(seed: int) -> pd.DataFrame:
    """``people(seed)`` with odd cells, each held by one person: values that are no number
    ("1,5", "unknown"), an infinite one, padded and re-spelled keys and colours."""
    frame = people(seed).astype(object)
    odd = {VALUE: ["1,5", "unknown", "inf", " 3 ", "1e1", "N/A"],
           KEY: [" k03", "k04 ", "N/A", "k05", "", "k06"],
           COLOUR: [" red", "blue ", "NA", "red", "green", ""]}
    for column, cells in odd.items():
        frame.loc[: len(cells) - 1, column] = cells
    return frame


@pytest.mark.slow
@pytest.mark.parametrize("unit", UNITS[1:2], ids=lambda u: f"r{u.max_rows}-k{u.max_groups}")
def test_no_neighbour_moves_an_uploads_page_answers_more_than_its_sensitivity(duck,
                                                                             unit) -> None:
    """Every query kind, through the page's reading of an upload (each neighbour written as
    a CSV and uploaded again): each person removed in turn and a newcomer added."""
    check_every_neighbour(every_kind_plan(unit), duck, odd_people(0), read=_uploaded)


def test_a_newcomer_cannot_move_an_uploads_page_sum_by_turning_the_column_to_text() -> None:
    """The page's side of the case above: 20 amounts written "1,500" and one "x" were 95 %
    numbers by the upload's own reading, so the page summed 20 × 1500 (clamped to [0, 2000]:
    30000); a newcomer's "y" turned the column to text and the page's sum fell to 0, though
    the newcomer's own row adds nothing. The page now reads the cells as the release does:
    "1,500" is no number (rule 4), so the sum is 0 with or without the newcomer."""
    from dashboard.data import true_answers
    from dashboard.data.upload import load_upload

    rows = [f'p{i},"1,500"' for i in range(20)] + ["px,x"]
    first = "\n".join(["pid,amount", *rows]).encode() + b"\n"
    second = "\n".join(["pid,amount", *rows, "newcomer,y"]).encode() + b"\n"
    sums = [float(true_answers.bounded_sum(load_upload(data, "amounts.csv").relation, "amount",
                                           lower=0.0, upper=2000.0).true_value)
            for data in (first, second)]
    assert sums == [0.0, 0.0]
