"""Property tests of dpcore.selection: report noisy max, top-k, exponential mechanism, their maps.

Random valid and invalid input, judged by the shared oracle (tests/dpcore/properties/oracle.py);
then each bug these properties found, pinned by one example.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpcore import selection
from dpcore.measures import ZCDP, ApproxDP, PureDP
from tests.dpcore.properties.oracle import (
    HUGE,
    PROPERTY,
    TINY,
    Arg,
    as_real,
    bounded_time,
    choices,
    counts,
    covers,
    finite,
    flags,
    k_arg,
    ok,
    positive,
    refused,
    rngs,
    run_regression,
    score_vectors,
    scores_arg,
    tagged,
    trial_counts,
)


def check_indices(out: object, d: int, trials: object) -> None:
    if trials is None:
        assert isinstance(out, int) and 0 <= out < d
    else:
        assert out.shape == (int(trials),) and out.dtype == np.int64
        assert np.all((0 <= out) & (out < d))



@pytest.mark.slow
@covers("selection.report_noisy_max", "selection.noisy_top_k")
@PROPERTY
@given(scores=score_vectors(), k=counts(1, 7), scale=positive(), noise=choices(
    selection.NOISE_TYPES), negate=flags(), trials=trial_counts(), rng=rngs())
def test_report_noisy_max_and_top_k(scores, k, scale, noise, negate, trials, rng):
    common = {"scale": scale, "noise": noise, "negate": negate, "trials": trials, "rng": rng}
    args = {**scores_arg(scores), **common}
    with bounded_time():  # huge trials are refused before any work
        out = ok(lambda: selection.report_noisy_max(
            scores, scale=scale.value, noise=noise.value, negate=negate.value,
            trials=trials.value, rng=rng.value), args)
    if out is not None:
        check_indices(out, np.size(scores), trials.value)
    k = k_arg(k, scores)
    with bounded_time():
        top = ok(lambda: selection.noisy_top_k(
            scores, k.value, scale=scale.value, noise=noise.value, negate=negate.value,
            trials=trials.value, rng=rng.value), {**args, "k": k})
    if top is not None:
        rows = top.reshape(-1, int(k.value))
        assert top.shape == ((int(k.value),) if trials.value is None
                             else (int(trials.value), int(k.value)))
        assert np.all((0 <= rows) & (rows < np.size(scores)))
        assert all(len(set(row)) == len(row) for row in rows.tolist()), "repeated index"



@pytest.mark.slow
@covers("selection.exponential_mechanism", "selection.permute_and_flip")
@PROPERTY
@given(utilities=score_vectors(), epsilon=positive(), sensitivity=positive(),
       monotonic=flags(), trials=trial_counts(), rng=rngs())
def test_exponential_mechanism_and_permute_and_flip(utilities, epsilon, sensitivity, monotonic,
                                                    trials, rng):
    args = {**scores_arg(utilities, "utilities"), "epsilon": epsilon,
            "sensitivity": sensitivity, "monotonic": monotonic, "trials": trials, "rng": rng}
    for select in (selection.exponential_mechanism, selection.permute_and_flip):
        with bounded_time():
            out = ok(lambda s=select: s(utilities, epsilon=epsilon.value,
                                        sensitivity=sensitivity.value, monotonic=monotonic.value,
                                        trials=trials.value, rng=rng.value), args)
        if out is not None:
            check_indices(out, np.size(utilities), trials.value)
            u = np.sort(np.asarray(utilities, dtype=np.float64))
            if trials.value is not None and u.size > 1:
                with np.errstate(over="ignore"):
                    lead = (u[-1] - u[-2]) * as_real(epsilon.value) / as_real(
                        sensitivity.value)
                if lead > 4e3:  # thousands of noise scales ahead: the best always wins
                    assert np.all(out == np.argmax(np.asarray(utilities)))



@pytest.mark.slow
@covers("selection.selection_probabilities", "selection.prob_best_selected",
        "selection.expected_score_gap")
@PROPERTY
@given(scores=score_vectors(), scale=positive(), noise=choices(selection.NOISE_TYPES),
       negate=flags())
def test_selection_probabilities(scores, scale, noise, negate):
    args = {**scores_arg(scores), "scale": scale, "noise": noise, "negate": negate}
    kwargs = {"scale": scale.value, "noise": noise.value, "negate": negate.value}
    probs = ok(lambda: selection.selection_probabilities(scores, **kwargs), args)
    best = ok(lambda: selection.prob_best_selected(scores, **kwargs), args)
    gap = ok(lambda: selection.expected_score_gap(scores, **kwargs), args)
    if probs is None:
        return
    s = np.asarray(scores, dtype=np.float64)
    s = -s if negate.value else s
    assert probs.shape == s.shape
    assert np.all((0 <= probs) & (probs <= 1)) and probs.sum() == pytest.approx(1.0, abs=1e-9)
    order = np.argsort(s, kind="stable")  # a higher score is never less likely
    assert np.all(np.diff(probs[order]) >= -1e-9)
    for value in np.unique(s):  # equal scores, equal chances
        tied = probs[s == value]
        assert np.ptp(tied) <= 1e-9
    assert 1 / s.size - 1e-9 <= best <= 1
    with np.errstate(over="ignore"):
        spread = float(np.ptp(s))
    assert gap >= 0 and (not math.isfinite(spread) or gap <= spread * (1 + 1e-9))



@pytest.mark.slow
@covers("selection.prob_top_k_recovered")
@PROPERTY
@given(scores=score_vectors(), k=counts(1, 7), scale=positive(),
       noise=choices(selection.NOISE_TYPES), negate=flags(),
       trials=trial_counts(none_ok=False, hi=50), rng=rngs())
def test_prob_top_k_recovered(scores, k, scale, noise, negate, trials, rng):
    k = k_arg(k, scores)
    args = {**scores_arg(scores), "k": k, "scale": scale, "noise": noise, "negate": negate,
            "trials": trials, "rng": rng}
    with bounded_time():
        p = ok(lambda: selection.prob_top_k_recovered(
            scores, k.value, scale=scale.value, noise=noise.value, negate=negate.value,
            trials=trials.value, rng=rng.value), args)
    if p is not None:
        assert 0 <= p <= 1
        if int(k.value) == np.size(scores):
            assert p == 1.0  # choosing every candidate always recovers the top-k set



@pytest.mark.slow
@covers("selection.noisy_max_privacy", "selection.noisy_max_scale")
@PROPERTY
@given(scale=positive(), sensitivity=positive(), noise=choices(selection.NOISE_TYPES),
       monotonic=flags(), k=tagged(st.integers(1, 100), st.sampled_from([2**63, 10**30, 10**400]),
                                   st.sampled_from([0, -1, 1.5, True, None, "1"])),
       measure=choices(("pure", "zcdp")))
def test_noisy_max_privacy_and_scale(scale, sensitivity, noise, monotonic, k, measure):
    args = {"scale": scale, "sensitivity": sensitivity, "noise": noise,
            "monotonic": monotonic, "k": k, "measure": measure}
    privacy = ok(lambda: selection.noisy_max_privacy(
        scale.value, sensitivity=sensitivity.value, noise=noise.value,
        monotonic=monotonic.value, k=k.value, measure=measure.value), args)
    if privacy is None:
        return
    assert isinstance(privacy, PureDP if measure.value == "pure" else ZCDP)
    c = 1 if monotonic.value else 2
    eps_round = c * as_real(sensitivity.value) / as_real(scale.value)
    if measure.value == "pure" and int(k.value) < 2**53:
        assert privacy.epsilon == pytest.approx(int(k.value) * eps_round, rel=1e-12)
    del args["scale"], args["measure"]
    back = ok(lambda: selection.noisy_max_scale(
        privacy, sensitivity=sensitivity.value, noise=noise.value, monotonic=monotonic.value,
        k=k.value), args)
    budget = privacy.epsilon if isinstance(privacy, PureDP) else privacy.rho
    # The inverse, where the budget carries full precision: a subnormal one keeps few bits
    # (seed 26: sensitivity 5e-324 / scale 1.5 reads epsilon 5e-324, whose scale is 1.0).
    if back is not None and budget >= np.finfo(float).tiny:
        assert back == pytest.approx(as_real(scale.value), rel=1e-9)
    wrong = ok(lambda: selection.noisy_max_scale(ApproxDP(1.0, 1e-6), noise=noise.value),
               {"privacy": Arg(None, "bad"), "noise": noise})
    assert wrong is None



def exponential_mechanism_breaks_ties_at_random():
    # 0·inf = NaN logits made every tie pick index 0; now ties are broken at random
    picks = finite(lambda: selection.exponential_mechanism(
        [0.0, 0.0, 0.0], epsilon=1.0, sensitivity=TINY, trials=300,
        rng=np.random.default_rng(0)))
    assert set(picks.tolist()) == {0, 1, 2}



#: (what was wrong, check): each check fails on the code before the fix (verified against the
#: commit before it) and passes after it.
REGRESSIONS = {
    "noisy_max_scale(PureDP(0.3), k=3): its privacy an ulp above 0.3": lambda: (
        selection.noisy_max_privacy(selection.noisy_max_scale(
            PureDP(0.3), noise="laplace", k=3), noise="laplace", k=3).epsilon <= 0.3),
    "exponential_mechanism(sensitivity=5e-324): ties always index 0":
        exponential_mechanism_breaks_ties_at_random,
    "report_noisy_max([±1.8e308], scale=1e300): overflow to inf": lambda: (
        finite(lambda: selection.report_noisy_max(
            [HUGE, -HUGE], scale=1e300, noise="laplace", trials=5,
            rng=np.random.default_rng(0))).tolist() == [0] * 5),
    "noisy_top_k([±1.8e308, 0], scale=1e300): overflow to inf": lambda: (
        finite(lambda: selection.noisy_top_k(
            [HUGE, -HUGE, 0.0], 3, scale=1e300, noise="laplace",
            rng=np.random.default_rng(0))).tolist() == [0, 2, 1]),
    "noisy_max_privacy(scale=5e-324): named epsilon": lambda: refused(
        lambda: selection.noisy_max_privacy(TINY, noise="laplace"), "scale"),
    "noisy_max_privacy(k=10**400): OverflowError": lambda: refused(
        lambda: selection.noisy_max_privacy(1.0, noise="laplace", k=10**400), "k"),
    "noisy_max_privacy(zcdp, scale=1e-200): OverflowError": lambda: refused(
        lambda: selection.noisy_max_privacy(1e-200, noise="gumbel", measure="zcdp"), "scale"),
    "noisy_max_scale(k=10**400): OverflowError": lambda: refused(
        lambda: selection.noisy_max_scale(ZCDP(1.0), noise="laplace", k=10**400), "k"),
    "selection_probabilities(laplace, gap 1.8e308): overflow in the series": lambda: (
        finite(lambda: selection.selection_probabilities(
            [0.0, HUGE], scale=1.0, noise="laplace", negate=True))
        == pytest.approx([1.0, 0.0], abs=1e-12)),
    "selection_probabilities(laplace, [0, 5e-324]): zero-width panel": lambda: (
        finite(lambda: selection.selection_probabilities(
            [0.0, TINY], scale=1.0, noise="laplace")) == pytest.approx([0.5, 0.5])),
    "expected_score_gap([1e300, -1.8e308]): overflow": lambda: (
        finite(lambda: selection.expected_score_gap(
            [1e300, -HUGE], scale=1.0, noise="laplace")) == 0.0),
}


@pytest.mark.parametrize("check", REGRESSIONS.values(), ids=REGRESSIONS.keys())
def test_regression(check):
    run_regression(check)
