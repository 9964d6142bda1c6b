"""Property tests of person-level privacy: dpcore.contributions, dpcore.partition and
dpcore.quantiles, judged by the shared oracle (tests/dpcore/properties/oracle.py).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpcore import contributions, partition, quantiles
from tests.dpcore.properties.oracle import (
    EDGE_ELEMENTS,
    HUGE,
    JUNK,
    NICE_ELEMENTS,
    NON_FINITE_ELEMENTS,
    PROPERTY,
    TINY,
    Arg,
    any_arrays,
    array_tag,
    as_real,
    bounded_time,
    choices,
    counts,
    covers,
    finite_real,
    judge,
    numeric_or_none,
    numpy_scalars,
    ok,
    positive,
    probability,
    rngs,
    score_vectors,
    tagged,
    trial_counts,
)
from tests.dpcore.properties.test_mechanisms import points_tag

NAN, INF = math.nan, math.inf

# ============================================================================================
# person-level privacy: dpcore.contributions, dpcore.partition, dpcore.quantiles
# (one block, kept together so that it can move to its own file)
# ============================================================================================


def bound_counts(*, optional: bool = False) -> st.SearchStrategy[Arg]:
    """max_rows, max_groups: whole numbers in [1, 10**9] (None too when ``optional``)."""
    nice = st.one_of(st.integers(1, 12), st.integers(1, 12).map(np.int64))
    if optional:
        nice = st.one_of(nice, st.none())
    bad = [0, -1, 10**9 + 1, 2**63, 10**400, 1.5, 2.0, NAN, True, "3", np.float64(2.0)]
    return tagged(nice, st.sampled_from([10**9, 10**6, np.int64(10**9)]),
                  st.sampled_from(bad + ([] if optional else [None])))


def ordered_bounds(lower: Arg, upper: Arg) -> tuple[Arg, Arg]:
    """Mostly lower < upper; equal or crossed finite bounds are bad (named: upper)."""
    if lower.tag == upper.tag == "nice" and as_real(lower.value) > as_real(upper.value):
        lower, upper = upper, lower
    if lower.tag != "bad" and upper.tag != "bad" and not as_real(lower.value) < as_real(
            upper.value):
        upper = Arg(upper.value, "bad")
    return lower, upper


def person_columns() -> st.SearchStrategy[Arg]:
    """A person-id column name, None (one row is one person), or junk."""
    return tagged(st.sampled_from(["pid", "patient id", "Личность", None]), None,
                  st.sampled_from(["", "   ", 3, b"pid", ["pid"]]))


@covers("contributions.PrivacyUnit", "contributions.PrivacyUnit.per_row",
        "contributions.PrivacyUnit.bounds", "contributions.PrivacyUnit.describe",
        "contributions.PrivacyUnit.to_dict", "contributions.PrivacyUnit.from_dict")
@PROPERTY
@given(person_column=person_columns(), max_rows=bound_counts(),
       max_groups=bound_counts(optional=True), bounds_origin=choices(contributions.UNIT_ORIGINS),
       raw=tagged(None, None, st.sampled_from([None, [], "pid", {"persons": "pid"}])))
def test_privacy_unit(person_column, max_rows, max_groups, bounds_origin, raw):
    if (person_column.tag == "nice" and person_column.value is None and "bad" not in
            (max_rows.tag, max_groups.tag) and (max_rows.value != 1
                                                or max_groups.value not in (None, 1))):
        max_rows = Arg(max_rows.value, "bad")   # one row is one person: bounds of 1
    args = {"person_column": person_column, "max_rows": max_rows, "max_groups": max_groups,
            "bounds_origin": bounds_origin}
    unit = judge(lambda: contributions.PrivacyUnit(person_column.value, max_rows.value,
                                                   max_groups.value, bounds_origin.value), args)
    if unit is not None:
        form = unit.to_dict()
        back = contributions.PrivacyUnit.from_dict(form)
        assert back == unit and back.bounds_origin == unit.bounds_origin
        older = {("person" if k == "person_column" else k): v for k, v in form.items()}
        assert contributions.PrivacyUnit.from_dict(older) == unit   # the older spelling
        assert unit.per_row == (person_column.value is None)
        bounds = unit.bounds()
        assert (bounds.max_rows, bounds.max_groups) == (unit.max_rows, unit.max_groups)
        assert unit.bounds(grouped=False).max_groups is None
        assert unit.per_row or person_column.value in unit.describe()
    judge(lambda: contributions.PrivacyUnit.from_dict(raw.value), {"raw": raw},
          {"raw": ("privacy unit",)})


@covers("contributions.ContributionBounds", "contributions.ContributionBounds.describe",
        "contributions.Sensitivity", "contributions.count_sensitivity",
        "contributions.sum_sensitivity", "contributions.mean_sensitivities")
@PROPERTY
@given(max_rows=bound_counts(), max_groups=bound_counts(optional=True), lower=finite_real(),
       upper=finite_real(), l1=positive(), l2=positive(), linf=positive())
def test_contribution_bounds_and_sensitivities(max_rows, max_groups, lower, upper, l1, l2,
                                               linf):
    sens = ok(lambda: contributions.Sensitivity(l1=l1.value, l2=l2.value, linf=linf.value),
              {"l1": l1, "l2": l2, "linf": linf})
    if sens is not None:
        assert (sens.l1, sens.l2, sens.linf) == tuple(as_real(a.value) for a in (l1, l2, linf))
    assert ok(lambda: contributions.count_sensitivity((3, 2)),
              {"bounds": Arg((3, 2), "bad")}) is None
    bounds = ok(lambda: contributions.ContributionBounds(max_rows.value, max_groups.value),
                {"max_rows": max_rows, "max_groups": max_groups})
    if bounds is None:
        return
    r, k = bounds.max_rows, bounds.max_groups or 1
    assert isinstance(r, int) and f"{r:,} row" in bounds.describe()
    count = ok(lambda: contributions.count_sensitivity(bounds), {})
    assert count.l1 == k * r and count.linf == r
    assert Fraction(count.l2) ** 2 >= k * r * r and count.linf <= count.l2 <= count.l1
    lower, upper = ordered_bounds(lower, upper)
    args = {"lower": lower, "upper": upper}
    total = ok(lambda: contributions.sum_sensitivity(bounds, lower=lower.value,
                                                     upper=upper.value), args)
    parts = ok(lambda: contributions.mean_sensitivities(bounds, lower=lower.value,
                                                        upper=upper.value), args)
    if total is None:
        assert parts is None
        return
    m = Fraction(max(abs(as_real(lower.value)), abs(as_real(upper.value))))
    assert Fraction(total.l1) >= k * r * m and Fraction(total.linf) >= r * m
    assert Fraction(total.l2) ** 2 >= k * (r * m) ** 2
    assert total.l1 <= k * r * float(m) * (1 + 1e-15)  # rounded up by ulps, no more
    assert parts[0] == total and parts[1] == count


@st.composite
def person_tables(draw) -> dict[str, Arg]:
    """Rows as columns: persons, groups, values, lower, upper — valid, extreme or bad."""
    n = draw(st.integers(1, 10))
    ids = st.one_of(st.integers(0, 4), st.sampled_from(["ann", "bo", "cy"]))
    kind = draw(st.sampled_from(["ints", "ints", "text", "missing", "junk", "2d", "empty"]))
    if kind == "ints":
        persons = Arg(np.array(draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))),
                      "nice")
    elif kind == "text":
        persons = Arg(draw(st.lists(ids, min_size=n, max_size=n)), "nice")
    else:
        persons = Arg({"missing": [1, None, 2], "junk": "abc", "2d": np.zeros((2, 2)),
                       "empty": []}[kind], "bad")
    length = len(persons.value) if kind in ("ints", "text") else 3
    group_kind = draw(st.sampled_from(["none", "none", "ints", "text", "short", "missing"]))
    groups = {"none": Arg(None, "nice"),
              "ints": Arg(draw(st.lists(st.integers(0, 3), min_size=length,
                                        max_size=length)), "nice"),
              "text": Arg(draw(st.lists(st.sampled_from(["x", "y"]), min_size=length,
                                        max_size=length)), "nice"),
              "short": Arg([0] * (length + 1), "bad"),
              "missing": Arg([None] * length, "bad")}[group_kind]
    value_kind = draw(st.sampled_from(["none", "nice", "nice", "edge", "nonfinite", "short"]))
    elements = {"nice": NICE_ELEMENTS, "edge": st.one_of(NICE_ELEMENTS, EDGE_ELEMENTS),
                "nonfinite": NON_FINITE_ELEMENTS}
    if value_kind == "none":
        values = Arg(None, "nice")
    elif value_kind == "short":
        values = Arg([1.0] * (length + 2), "bad")
    else:
        arr = np.array(draw(st.lists(elements[value_kind], min_size=length, max_size=length)))
        values = Arg(arr, array_tag(arr, nice_abs=1e3))
    clamp = draw(st.sampled_from(["none", "both", "both", "lower only"]))
    lower, upper = Arg(None, "nice"), Arg(None, "nice")
    if clamp != "none":
        lower, upper = ordered_bounds(draw(finite_real()), draw(finite_real()))
        if clamp == "lower only":
            upper = Arg(None, "bad")
        if value_kind == "none":  # bounds without values
            lower = Arg(lower.value, "bad")
    return {"persons": persons, "groups": groups, "values": values, "lower": lower,
            "upper": upper}


def bound_sweeps() -> st.SearchStrategy[Arg]:
    nice = st.one_of(st.lists(st.integers(1, 8), min_size=1, max_size=5),
                     st.lists(st.integers(1, 8), min_size=1, max_size=5).map(np.array),
                     st.integers(1, 8))
    bad = st.sampled_from([[], [0], [1.5], [[1, 2]], [NAN], "1", True, None, [10**9 + 1],
                           [-3]])
    return tagged(nice, st.sampled_from([[10**9], [1, 10**9]]), bad)


@pytest.mark.slow
@covers("contributions.ContributionCells", "contributions.contribution_cells",
        "contributions.truncation_moments", "contributions.ErrorBreakdown",
        "contributions.error_breakdown", "contributions.MaxRowsSweep",
        "contributions.max_rows_sweep")
@PROPERTY
@given(table=person_tables(), sweep=bound_sweeps(), max_rows=bound_counts(),
       max_groups=bound_counts(optional=True), noise_sd=positive(zero_ok=True),
       unit=positive(zero_ok=True), norm=choices(contributions.NORMS), magnitude=positive())
def test_contribution_cells_truncation_and_errors(table, sweep, max_rows, max_groups, noise_sd,
                                                  unit, norm, magnitude):
    cells = ok(lambda: contributions.contribution_cells(
        table["persons"].value, groups=table["groups"].value, values=table["values"].value,
        lower=table["lower"].value, upper=table["upper"].value), table)
    if cells is None:
        return
    assert isinstance(cells, contributions.ContributionCells)
    # the cells' own consistency checks accept what the builder makes
    again = ok(lambda: contributions.ContributionCells(
        group=cells.group, rows=cells.rows, persons=cells.persons,
        person_rows=cells.person_rows, person_groups=cells.person_groups,
        value_sum=cells.value_sum, value_sum_squares=cells.value_sum_squares,
        value_squares=cells.value_squares, raw_value_sum=cells.raw_value_sum), {})
    np.testing.assert_array_equal(again.value_sum, cells.value_sum)
    assert cells.persons.sum() >= 1 and np.all(cells.rows >= 1)
    clamped = np.bincount(cells.group.astype(int), weights=cells.value_sum)
    moments = ok(lambda: contributions.truncation_moments(
        cells, max_rows=sweep.value, max_groups=max_groups.value),
        {"max_rows": sweep, "max_groups": max_groups, "cells": Arg(cells, "nice")})
    if moments is not None:
        mean, var = moments
        assert mean.shape == var.shape and mean.shape[-1] == clamped.size
        assert np.all(var >= 0)
        if np.ndim(sweep.value) == 1 and np.asarray(sweep.value)[-1] >= 10**9 and (
                max_groups.value is None or int(max_groups.value) >= 10**6):
            np.testing.assert_allclose(mean[-1], clamped, rtol=1e-9, atol=1e-9)  # nothing cut
    result = ok(lambda: contributions.error_breakdown(
        cells, max_rows=max_rows.value, max_groups=max_groups.value, noise_sd=noise_sd.value),
        {"max_rows": max_rows, "max_groups": max_groups, "noise_sd": noise_sd,
         "cells": Arg(cells, "nice")}, aliases={"cells": ("values",)})
    if result is not None:
        assert isinstance(result, contributions.ErrorBreakdown)
        np.testing.assert_allclose(result.bias, result.truncation_bias + result.clamping_bias,
                                   rtol=1e-9, atol=1e-9 * (1 + np.max(np.abs(clamped))))
        assert np.all(result.rmse >= np.abs(result.bias) * (1 - 1e-12))
        assert np.all(result.rmse >= result.noise_sd * (1 - 1e-12))
    swept = ok(lambda: contributions.max_rows_sweep(
        cells, sweep.value, max_groups=max_groups.value, unit_noise_sd=unit.value,
        norm=norm.value, magnitude=magnitude.value),
        {"max_rows": sweep, "max_groups": max_groups, "unit_noise_sd": unit, "norm": norm,
         "magnitude": magnitude, "cells": Arg(cells, "nice")})
    if swept is not None:
        assert isinstance(swept, contributions.MaxRowsSweep)
        assert swept.best_max_rows in swept.max_rows.tolist()
        assert swept.rmse[swept.max_rows.tolist().index(swept.best_max_rows)] == swept.rmse.min()
    assert ok(lambda: contributions.truncation_moments("cells", max_rows=1),
              {"cells": Arg("cells", "bad")}) is None


# -- partition selection -----------------------------------------------------------------------


def scale_tag(scale: float) -> str:
    return "nice" if 1e-6 <= scale <= 1e6 else "extreme"


@pytest.mark.slow
@covers("partition.partition_scale", "partition.partition_threshold",
        "partition.partition_delta", "partition.partition_privacy", "partition.PartitionPrivacy",
        "partition.PartitionPrivacy.to_approx", "partition.keep_probability",
        "partition.release_partitions", "partition.PartitionRelease")
@PROPERTY
@given(noise=choices(partition.PARTITION_NOISES), budget=positive(), max_rows=bound_counts(),
       max_groups=bound_counts(), delta=probability(zero_ok=False),
       delta_noise=probability(zero_ok=True), counts=any_arrays(), threshold=finite_real(),
       trials=trial_counts(), rng=rngs())
def test_partition_selection(noise, budget, max_rows, max_groups, delta, delta_noise, counts,
                             threshold, trials, rng):
    name = "rho" if noise.value == "gaussian" else "epsilon"
    bounds = {"max_rows": max_rows, "max_groups": max_groups}
    kwargs = {"max_rows": max_rows.value, "max_groups": max_groups.value}
    if noise.tag == "bad":
        assert ok(lambda: partition.partition_scale(noise=noise.value, epsilon=1.0),
                  {"noise": noise}) is None
        return
    scale = ok(lambda: partition.partition_scale(noise=noise.value, **{name: budget.value},
                                                 **kwargs), {name: budget, **bounds})
    wrong = "epsilon" if name == "rho" else "rho"
    assert ok(lambda: partition.partition_scale(noise=noise.value, **{wrong: 1.0}),
              {wrong: Arg(1.0, "bad")}) is None
    counts_arg = Arg(counts, array_tag(counts, min_size=0))
    if counts_arg.tag != "bad" and (np.any(numeric_or_none(counts) < 0)
                                    or numeric_or_none(counts).ndim > 1):
        counts_arg = Arg(counts, "bad")
    common = {"noise": noise, "scale": Arg(scale, "nice")}
    if scale is None:  # a scale of our own, to test the rest
        scale = 2.0
        common["scale"] = Arg(scale, "nice")
    else:
        common["scale"] = Arg(scale, scale_tag(scale))
        if common["scale"].tag == "nice":  # the privacy spent is within the budget asked
            loss = partition.partition_privacy(noise=noise.value, scale=scale,
                                               threshold=int(max_rows.value) + 100 * scale,
                                               **kwargs).measure
            assert (loss.rho if name == "rho" else loss.epsilon) <= as_real(budget.value)
    t = ok(lambda: partition.partition_threshold(noise=noise.value, scale=scale,
                                                 delta=delta.value, **kwargs),
           {**common, "delta": delta, **bounds})
    if t is not None:
        spent = ok(lambda: partition.partition_delta(t, noise=noise.value, scale=scale,
                                                     **kwargs), {**common, **bounds})
        if spent is not None:
            assert spent <= as_real(delta.value)
    spent = ok(lambda: partition.partition_delta(threshold.value, noise=noise.value,
                                                 scale=scale, **kwargs),
               {**common, "threshold": threshold, **bounds})
    if spent is not None:
        assert 0 <= spent <= 1
    too_low = threshold
    if spent is not None and spent >= 1:  # a one-person group is almost surely released
        too_low = Arg(threshold.value, "bad")
    privacy = ok(lambda: partition.partition_privacy(noise=noise.value, scale=scale,
                                                     threshold=threshold.value, **kwargs),
                 {**common, "threshold": too_low, **bounds})
    if privacy is not None:
        assert isinstance(privacy, partition.PartitionPrivacy) and privacy.delta == spent
        extra = delta_noise.tag
        if extra != "bad" and ((name == "rho" and as_real(delta_noise.value) == 0)
                               or privacy.delta + as_real(delta_noise.value) >= 1):
            extra = "bad"
        approx = ok(lambda: privacy.to_approx(delta_noise.value),
                    {"delta_noise": Arg(delta_noise.value, extra)})
        if approx is not None:
            assert approx.delta >= privacy.delta
    keep = ok(lambda: partition.keep_probability(counts, threshold=threshold.value,
                                                 noise=noise.value, scale=scale),
              {**common, "counts": counts_arg, "threshold": threshold})
    if keep is not None:
        assert keep.shape == np.shape(counts) and np.all((0 <= keep) & (keep <= 1))
        flat, probs = np.ravel(numeric_or_none(counts)), np.ravel(keep)
        order = np.argsort(flat, kind="stable")
        assert np.all(np.diff(probs[order]) >= -1e-12)  # more rows, more likely kept
    if counts_arg.tag != "bad" and numeric_or_none(counts).ndim == 0:
        counts_arg = Arg(counts, "bad")  # a release needs one count per group
    with bounded_time():
        out = ok(lambda: partition.release_partitions(
            counts, threshold=threshold.value, noise=noise.value, scale=scale,
            trials=trials.value, rng=rng.value),
            {**common, "counts": counts_arg, "threshold": threshold, "trials": trials,
             "rng": rng})
    if out is not None:
        assert isinstance(out, partition.PartitionRelease)
        groups = np.size(counts)
        assert out.kept.shape == ((groups,) if trials.value is None
                                  else (int(trials.value), groups))
        np.testing.assert_array_equal(out.kept, out.noisy_counts >= as_real(threshold.value))


# -- quantiles ---------------------------------------------------------------------------------


def quantile_levels() -> st.SearchStrategy[Arg]:
    return tagged(numpy_scalars(st.one_of(st.floats(0, 1), st.sampled_from([0.0, 0.5, 1.0]))),
                  st.sampled_from([TINY, 1 - 2**-53]),
                  st.sampled_from([-0.1, 1.5, NAN, INF, 10**400, *JUNK]))


def multiplicities(values: object) -> st.SearchStrategy[Arg]:
    """None, whole numbers >= 0 of the values' length, or bad ones."""
    size = np.size(values) if numeric_or_none(values) is not None else 2
    good = st.lists(st.integers(0, 4), min_size=size, max_size=size)
    wrong = max(size, 1)  # an empty list of the right length would be valid
    return tagged(st.one_of(st.none(), good), None,
                  st.sampled_from([[1.5] * wrong, [-1] * wrong, [1] * (size + 1), "a",
                                   [NAN] * wrong]))


@pytest.mark.slow
@covers("quantiles.quantile_sensitivity", "quantiles.rank_errors",
        "quantiles.quantile_probabilities", "quantiles.true_quantile",
        "quantiles.quantile_accuracy", "quantiles.expected_rank_error")
@PROPERTY
@given(values=any_arrays(), candidates=score_vectors(), q=quantile_levels(),
       epsilon=positive(), max_rows=bound_counts(), alpha=any_arrays(), data=st.data())
def test_quantile_distribution(values, candidates, q, epsilon, max_rows, alpha, data):
    counts = data.draw(multiplicities(values))
    sens = ok(lambda: quantiles.quantile_sensitivity(q.value, max_rows=max_rows.value),
              {"q": q, "max_rows": max_rows})
    if sens is not None:
        assert max_rows.value * 0.5 <= sens <= max_rows.value
    args = {"values": Arg(values, array_tag(values, ndim=1)),
            "candidates": Arg(candidates, array_tag(candidates, ndim=1, min_size=1)),
            "q": q, "counts": counts}
    errors = ok(lambda: quantiles.rank_errors(values, candidates, q.value,
                                              counts=counts.value), args)
    full = {**args, "epsilon": epsilon, "max_rows": max_rows}
    kwargs = {"epsilon": epsilon.value, "max_rows": max_rows.value, "counts": counts.value}
    probs = ok(lambda: quantiles.quantile_probabilities(values, candidates, q.value, **kwargs),
               full)
    rank = ok(lambda: quantiles.expected_rank_error(values, candidates, q.value, **kwargs),
              full)
    if errors is None or probs is None:
        assert probs is None and rank is None
        return
    assert np.all(errors >= 0) and probs.shape == errors.shape
    assert np.all(probs >= 0) and probs.sum() == pytest.approx(1.0, abs=1e-9)
    assert probs[np.argmin(errors)] == probs.max()  # the best candidate is the most likely
    assert errors.min() - 1e-9 <= rank <= errors.max() + 1e-9
    present = numeric_or_none(values).size > 0 and (
        counts.value is None or np.sum(counts.value) > 0)
    truth_args = {"values": Arg(values, "nice" if present else "bad"), "q": q,
                  "counts": Arg(counts.value, "nice" if present else "bad")}
    truth = ok(lambda: quantiles.true_quantile(values, q.value, counts=counts.value),
               truth_args)
    if truth is None:
        return
    assert truth in numeric_or_none(values).tolist()
    alpha_tag = points_tag(alpha)
    if alpha_tag != "bad" and (np.any(numeric_or_none(alpha) < 0)
                               or not np.all(np.isfinite(numeric_or_none(alpha)))):
        alpha_tag = "bad"
    accuracy = ok(lambda: quantiles.quantile_accuracy(values, candidates, q.value, alpha,
                                                      **kwargs),
                  {**full, "alpha": Arg(alpha, alpha_tag)})
    if accuracy is not None:
        assert accuracy.shape == np.shape(alpha)
        assert np.all((0 <= accuracy) & (accuracy <= 1))


def count_vectors() -> st.SearchStrategy[Arg]:
    """Counts below a candidate: whole numbers >= 0, one per candidate."""
    nice = st.lists(st.integers(0, 50), min_size=1, max_size=5)
    return tagged(nice, st.sampled_from([[2**53], [0, 2**52]]),
                  st.sampled_from([[1.5], [-1], [NAN], [INF], "a", [[1, 2]], [2**60]]))


@pytest.mark.slow
@covers("quantiles.quantile_fraction", "quantiles.quantile_scores",
        "quantiles.candidate_counts", "quantiles.quantile_scale", "quantiles.quantile_law",
        "quantiles.probability_within")
@PROPERTY
@given(values=any_arrays(), candidates=score_vectors(), q=quantile_levels(),
       below=count_vectors(), epsilon=positive(), rho=positive(),
       noise=choices(("gumbel", "exponential", "laplace")), max_rows=bound_counts(),
       data=st.data())
def test_quantile_scores(values, candidates, q, below, epsilon, rho, noise, max_rows, data):
    fraction = ok(lambda: quantiles.quantile_fraction(q.value), {"q": q})
    if fraction is not None:
        num, den = fraction
        assert 0 <= num <= den <= quantiles.ALPHA_DENOMINATOR
        assert abs(Fraction(num, den) - Fraction(as_real(q.value))) < Fraction(1, 10**4)
    counts = data.draw(multiplicities(values))
    args = {"values": Arg(values, array_tag(values, ndim=1)),
            "candidates": Arg(candidates, array_tag(candidates, ndim=1, min_size=1)),
            "counts": counts}
    counted = ok(lambda: quantiles.candidate_counts(values, candidates, counts=counts.value),
                 args)
    if counted is not None and fraction is not None:
        lt, eq, total = counted
        scores = quantiles.quantile_scores(lt, eq, int(total), q.value)
        errors = quantiles.rank_errors(values, candidates, q.value, counts=counts.value)
        np.testing.assert_allclose(scores / den, errors, rtol=1e-12)
    # scores from counts: total must cover below + equal at every candidate
    size = np.size(below.value) if below.tag != "bad" else 1
    equal = data.draw(st.lists(st.integers(0, 5), min_size=size, max_size=size))
    need = int(max(np.add(below.value, equal))) if below.tag != "bad" else 0
    total = data.draw(tagged(st.integers(need, need + 10), None,
                             st.sampled_from([-1, 1.5, NAN, "9", None]
                                             + ([need - 1] if need >= 1 else []))))
    got = ok(lambda: quantiles.quantile_scores(below.value, equal, total.value, q.value),
             {"below": below, "total": total, "q": q})
    if got is not None:
        assert got.dtype == np.uint64 and got.shape == (size,)
    budget = data.draw(st.sampled_from(["epsilon", "rho"]))
    level = epsilon if budget == "epsilon" else rho
    scale = ok(lambda: quantiles.quantile_scale(q.value, **{budget: level.value},
                                                noise=noise.value, max_rows=max_rows.value),
               {"q": q, budget: level, "noise": noise, "max_rows": max_rows})
    if scale is not None:
        assert 0 < scale < math.inf
    if got is not None:
        law = ok(lambda: quantiles.quantile_law(below.value, equal, total.value, q.value,
                                                **{budget: level.value}, noise=noise.value,
                                                max_rows=max_rows.value),
                 {"q": q, budget: level, "noise": noise, "max_rows": max_rows})
        if law is not None:
            assert law.shape == (size,) and law.sum() == pytest.approx(1.0, abs=1e-9)
            center = data.draw(finite_real())
            alpha = data.draw(positive(zero_ok=True))
            grid = np.arange(float(size))
            within = ok(lambda: quantiles.probability_within(grid, law, center.value,
                                                             alpha.value),
                        {"center": center, "alpha": alpha})
            if within is not None:
                assert 0 <= float(within) <= 1


@pytest.mark.slow
@covers("quantiles.sample_quantile", "quantiles.split_quantile_budget",
        "quantiles.private_quantiles")
@PROPERTY
@given(values=any_arrays(), candidates=score_vectors(), q=quantile_levels(),
       qs=any_arrays(max_side=3), epsilon=positive(), n_quantiles=counts(1, 5),
       trials=trial_counts(), rng=rngs())
def test_quantile_sampling(values, candidates, q, qs, epsilon, n_quantiles, trials, rng):
    share = ok(lambda: quantiles.split_quantile_budget(epsilon.value, n_quantiles.value),
               {"epsilon": epsilon, "n_quantiles": n_quantiles})
    if share is not None:
        assert 0 < share and math.fsum([share] * int(n_quantiles.value)) <= as_real(
            epsilon.value)
    args = {"values": Arg(values, array_tag(values, ndim=1)),
            "candidates": Arg(candidates, array_tag(candidates, ndim=1, min_size=1)),
            "epsilon": epsilon, "trials": trials, "rng": rng}
    with bounded_time():
        out = ok(lambda: quantiles.sample_quantile(values, candidates, q.value,
                                                   epsilon=epsilon.value, trials=trials.value,
                                                   rng=rng.value), {**args, "q": q})
    grid = set(np.ravel(numeric_or_none(candidates)).tolist()) if out is not None else set()
    if out is not None:
        assert set(np.ravel(out).tolist()) <= grid
        assert np.shape(out) == (() if trials.value is None else (int(trials.value),))
    levels = numeric_or_none(qs)
    qs_tag = array_tag(qs, ndim=1, min_size=1)
    if qs_tag != "bad" and (np.any(levels < 0) or np.any(levels > 1)):
        qs_tag = "bad"
    with bounded_time():
        many = ok(lambda: quantiles.private_quantiles(values, candidates, qs,
                                                      epsilon=epsilon.value,
                                                      trials=trials.value, rng=rng.value),
                  {**args, "qs": Arg(qs, qs_tag)})
    if many is not None:
        m = levels.size
        assert many.shape == ((m,) if trials.value is None else (int(trials.value), m))


def row_histograms() -> st.SearchStrategy[Arg]:
    nice = st.lists(st.integers(1, 40), min_size=1, max_size=6)
    bad = st.sampled_from([[], [0], [1.5], [-2], [NAN], "1", None, [[1, 2]]])
    return tagged(nice, st.sampled_from([[10**6, 1], [10**12]]), bad)


@pytest.mark.slow
@covers("quantiles.rows_quantile_probabilities", "quantiles.sample_max_rows")
@PROPERTY
@given(rows=row_histograms(), q=quantile_levels(), epsilon=positive(),
       largest=tagged(st.integers(1, 60), st.sampled_from([quantiles.MAX_ROWS_CANDIDATE]),
                      st.sampled_from([0, -1, quantiles.MAX_ROWS_CANDIDATE + 1, 1.5, None,
                                       True])),
       trials=trial_counts(), rng=rngs(), data=st.data())
def test_rows_quantile(rows, q, epsilon, largest, trials, rng, data):
    persons = data.draw(multiplicities(rows.value if rows.tag != "bad" else [1]))
    if rows.tag == "bad" or (persons.tag == "nice" and persons.value is not None
                             and len(persons.value) != len(rows.value)):
        persons = Arg(persons.value, "nice" if rows.tag == "bad" else "bad")
    args = {"rows": rows, "persons": persons, "q": q, "epsilon": epsilon, "largest": largest}
    probs = ok(lambda: quantiles.rows_quantile_probabilities(
        rows.value, persons.value, q.value, epsilon=epsilon.value, largest=largest.value),
        args)
    if probs is not None:
        assert probs.shape == (int(largest.value),) and probs.sum() == pytest.approx(1.0)
    with bounded_time():
        drawn = ok(lambda: quantiles.sample_max_rows(
            rows.value, persons.value, q.value, epsilon=epsilon.value, largest=largest.value,
            trials=trials.value, rng=rng.value), {**args, "trials": trials, "rng": rng})
    if drawn is not None:
        assert np.all((1 <= np.asarray(drawn)) & (np.asarray(drawn) <= int(largest.value)))


def edge_lists() -> st.SearchStrategy[Arg]:
    nice = st.lists(st.floats(-1e3, 1e3), min_size=2, max_size=6, unique=True).map(sorted)
    extreme = st.sampled_from([[-HUGE, 0.0, HUGE], [0.0, TINY], [-1e300, 1e300]])
    bad = st.sampled_from([[1.0], [], [2.0, 1.0], [0.0, 0.0], [0.0, NAN], [[0.0, 1.0]], "a",
                           None, [0.0, INF]])
    return tagged(nice, extreme, bad)


@covers("quantiles.bin_indices", "quantiles.bin_labels", "quantiles.binned_counts")
@PROPERTY
@given(values=any_arrays(), edges=edge_lists(), outside=choices(quantiles.OUTSIDE))
def test_binned_histograms(values, edges, outside):
    values_tag = "bad" if numeric_or_none(values) is None else "nice"
    args = {"values": Arg(values, values_tag), "edges": edges, "outside": outside}
    cells = ok(lambda: quantiles.bin_indices(values, edges.value, outside=outside.value), args)
    labels = ok(lambda: quantiles.bin_labels(edges.value, outside=outside.value),
                {"edges": edges, "outside": outside})
    totals = ok(lambda: quantiles.binned_counts(values, edges.value, outside=outside.value),
                args)
    if cells is None:
        return
    x = numeric_or_none(values)
    size = len(edges.value) - 1 + (2 if outside.value == "separate" else 0)
    assert cells.shape == np.shape(values) and len(labels) == size
    assert np.all((cells >= -1) & (cells < size))
    np.testing.assert_array_equal(cells == -1, np.isnan(x))
    assert totals.shape == (size,) and totals.sum() == np.count_nonzero(~np.isnan(x))


@covers("quantiles.max_rows_scores")
@PROPERTY
@given(rows=st.lists(st.integers(1, 12), min_size=0, max_size=40), extra=st.integers(1, 12),
       largest=st.integers(1, 15), q=st.sampled_from([0.0, 0.5, 0.9, 0.99, 1.0]))
def test_max_rows_scores(rows, extra, largest, q):
    """The tilted scores are OpenDP's quantile scores plus (c − 1)·max(num, den − num), in
    exact integers; adding one person moves each score by at most that one person's worth
    (the sensitivity the draw is certified for)."""
    num, den = quantiles.quantile_fraction(q)
    worth = max(num, den - num)

    def scores(people):
        counts = np.bincount(np.asarray(people, dtype=int), minlength=largest + 2)
        below = np.cumsum(counts)[:largest]          # #{rows < c}, c = 1..largest
        equal = counts[1:largest + 1]
        return quantiles.max_rows_scores(below, equal, len(people), q)

    got = scores(rows)
    assert got.dtype == np.uint64 and got.shape == (largest,)
    for c in range(1, largest + 1):                  # an independent closed form, exact
        lt = sum(r < c for r in rows)
        gt = sum(r > c for r in rows)
        assert int(got[c - 1]) == abs((den - num) * lt - num * gt) + (c - 1) * worth
    moved = np.abs(scores([*rows, extra]).astype(object) - got.astype(object))
    assert max(moved) <= worth
