"""Property tests of dpcore.risk: what an attacker can learn (posterior bounds, trade-off curves).

Random valid and invalid input, judged by the shared oracle (tests/dpcore/properties/oracle.py);
then each bug these properties found, pinned by one example.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpcore import risk
from dpcore.measures import ZCDP, PureDP
from tests.dpcore.properties.oracle import (
    MEASURE_WORDS,
    PROPERTY,
    TINY,
    Arg,
    any_arrays,
    covers,
    finite,
    float_arrays,
    measure_args,
    numeric_or_none,
    ok,
    positive,
    probability,
    refused,
    run_regression,
)


@covers("risk.percent")
@PROPERTY
@given(p=probability(zero_ok=True, nice_hi=1.0))
def test_percent(p):
    if type(p.value) is float and p.value == 1.0:
        p = Arg(1.0, "nice")  # certainty is a probability too (probability() excludes it)
    text = ok(lambda: risk.percent(p.value), {"p": p})
    if text is not None:
        assert text.endswith("%")
        assert (text == "100%") == (float(p.value) >= 1.0)  # a bound never reads as certainty
        if text[0].isdigit():
            assert float(text.rstrip("%")) == pytest.approx(100 * float(p.value), abs=0.51)



def probability_arrays(*, closed: bool) -> st.SearchStrategy:
    """Priors (open interval) or false-positive rates (closed) as scalars or arrays, with
    invalid ones among them."""
    inside = st.floats(0, 1, exclude_min=not closed, exclude_max=not closed)
    edges = st.sampled_from([TINY, 1e-300, 0.5, 1 - 2**-53] + ([0.0, 1.0] if closed else []))
    return st.one_of(inside, edges, float_arrays(st.one_of(inside, edges), min_dims=0,
                                                 max_dims=2, max_side=4), any_arrays())



def probability_tag(value: object, *, closed: bool) -> str:
    arr = numeric_or_none(value)
    if arr is None:
        return "bad"
    inside = (0 <= arr) & (arr <= 1) if closed else (0 < arr) & (arr < 1)
    return "nice" if np.all(inside) else "bad"



def zcdp_only(privacy: Arg, delta: Arg, *, mu: bool = False) -> Arg:
    """delta applies only to zCDP and the Gaussian's ``gaussian_mu`` (and must then be in
    (0, 1)); None is "not given"."""
    if delta.value is None:
        return Arg(None, "nice")
    if not mu and privacy.tag != "bad" and not isinstance(privacy.value, ZCDP):
        return Arg(delta.value, "bad")
    return delta


def privacy_or_mu(privacy: Arg, use_mu: bool) -> Arg:
    """With ``gaussian_mu`` given, privacy must be None."""
    if not use_mu:
        return privacy
    return Arg(None, "nice") if privacy.value is None else Arg(privacy.value, "bad")


@covers("risk.max_posterior", "risk.PosteriorBound", "risk.describe_risk")
@PROPERTY
@given(privacy=measure_args(), prior=probability_arrays(closed=False),
       delta=st.one_of(*[st.none().map(lambda v: Arg(v, "nice"))] * 3,
                       probability(zero_ok=False)),
       mu=positive(), use_mu=st.booleans())
def test_max_posterior_and_describe_risk(privacy, prior, delta, mu, use_mu):
    mu_value = mu.value if use_mu else None
    args = {"privacy": privacy_or_mu(privacy, use_mu),
            "prior": Arg(prior, probability_tag(prior, closed=False)),
            "delta": zcdp_only(privacy, delta, mu=use_mu)}
    if use_mu:
        args["gaussian_mu"] = mu
    aliases = {**MEASURE_WORDS, "gaussian_mu": ("mu",)}
    bound = ok(lambda: risk.max_posterior(privacy.value, prior, delta=delta.value,
                                          gaussian_mu=mu_value), args, aliases)
    if bound is not None:
        assert isinstance(bound, risk.PosteriorBound)
        p = np.asarray(prior, dtype=np.float64)
        posterior = np.asarray(bound.posterior)
        assert posterior.shape == p.shape
        assert np.all((p * (1 - 1e-12) <= posterior) & (posterior <= 1))
        assert 0 <= bound.failure_probability <= 1 and bound.epsilon >= 0
        if not use_mu and isinstance(privacy.value, PureDP):
            assert bound.failure_probability == 0
    # (the tag first: np.ndim raises on a ragged prior, which is already tagged bad)
    if args["prior"].tag != "bad" and np.ndim(prior) != 0:
        args["prior"] = Arg(prior, "bad")  # a sentence needs one number
    sentence = ok(lambda: risk.describe_risk(privacy.value, prior, delta=delta.value,
                                             gaussian_mu=mu_value), args, aliases)
    if sentence is not None:
        assert isinstance(sentence, str) and "nan" not in sentence.lower()
        assert "inf" not in sentence.replace("information", "")


@pytest.mark.slow
@covers("risk.exceed_probability")
@PROPERTY
@given(privacy=measure_args(), prior=probability_arrays(closed=False),
       belief=probability_arrays(closed=True), mu=positive(), use_mu=st.booleans())
def test_exceed_probability(privacy, prior, belief, mu, use_mu):
    args = {"privacy": privacy_or_mu(privacy, use_mu),
            "prior": Arg(prior, probability_tag(prior, closed=False)),
            "belief": Arg(belief, probability_tag(belief, closed=True))}
    if use_mu:
        args["gaussian_mu"] = mu
    if all(a.tag != "bad" for a in (args["prior"], args["belief"])):
        try:
            np.broadcast_shapes(np.shape(prior), np.shape(belief))
        except ValueError:
            args["belief"] = Arg(belief, "bad")  # shapes that do not broadcast
    chance = ok(lambda: risk.exceed_probability(privacy.value, prior, belief,
                                                gaussian_mu=mu.value if use_mu else None),
                args, {**MEASURE_WORDS, "gaussian_mu": ("mu",)})
    if chance is not None:
        values = np.asarray(chance)
        assert values.shape == np.broadcast_shapes(np.shape(prior), np.shape(belief))
        assert np.all((0 <= values) & (values <= 1))
        # passing a belief at or below the prior is never promised against, passing 1 never
        # happens (the privacy loss is finite)
        b = np.broadcast_to(np.asarray(belief, dtype=np.float64), values.shape)
        assert np.all(values[b == 1.0] == 0.0)


@pytest.mark.slow
@covers("risk.tradeoff", "risk.gaussian_tradeoff", "risk.advantage")
@PROPERTY
@given(privacy=measure_args(), fpr=probability_arrays(closed=True), mu=positive(),
       use_mu=st.booleans(), search=st.integers(0, 3))
def test_tradeoff_and_advantage(privacy, fpr, mu, use_mu, search):
    fpr_arg = Arg(fpr, probability_tag(fpr, closed=True))
    if use_mu:  # gaussian_mu instead of a measure: privacy must then be None
        both = Arg(privacy.value, "bad") if privacy.value is not None else Arg(None, "nice")
        tpr = ok(lambda: risk.tradeoff(privacy.value, fpr, gaussian_mu=mu.value),
                 {"privacy": both, "fpr": fpr_arg, "gaussian_mu": mu},
                 {"gaussian_mu": ("mu",)})
        gain = ok(lambda: risk.advantage(privacy.value, gaussian_mu=mu.value),
                  {"privacy": both, "gaussian_mu": mu})
        direct = ok(lambda: risk.gaussian_tradeoff(mu.value, fpr), {"mu": mu, "fpr": fpr_arg})
        assert tpr is None or direct is None or np.array_equal(tpr, direct)
    else:
        tpr = ok(lambda: risk.tradeoff(privacy.value, fpr), {"privacy": privacy, "fpr": fpr_arg},
                 MEASURE_WORDS)
        gain = None
        # The zCDP advantage is a numerical search of 0.1-0.3 s: a quarter of the zCDP
        # examples run it, to keep this test within its time.
        if not isinstance(privacy.value, ZCDP) or search == 0:
            gain = ok(lambda: risk.advantage(privacy.value), {"privacy": privacy},
                      MEASURE_WORDS)
    if gain is not None:
        assert 0 <= gain <= 1
    if tpr is not None:
        alpha = np.asarray(fpr, dtype=np.float64)
        assert np.shape(tpr) == alpha.shape
        assert np.all((alpha <= tpr) & (tpr <= 1))
        order = np.argsort(alpha, axis=None)  # a looser test never catches fewer
        assert np.all(np.diff(np.ravel(tpr)[order]) >= -1e-9)
        if gain is not None:  # the advantage is the largest gap TPR − FPR
            assert np.all(np.asarray(tpr) - alpha <= gain + 1e-6)



#: (what was wrong, check): each check fails on the code before the fix (verified against the
#: commit before it) and passes after it.
REGRESSIONS = {
    "max_posterior(prior=5e-324): posterior 0, below the prior": lambda: (
        finite(lambda: risk.max_posterior(PureDP(1.0), TINY)).posterior >= TINY),
    "describe_risk(prior=ragged list): numpy's message": lambda: refused(
        lambda: risk.describe_risk(PureDP(1.0), [[1.0], [1.0, 2.0]]), "prior", TypeError),
    "tradeoff(ZCDP(1e300), fpr=0): NaN": lambda: (
        finite(lambda: risk.tradeoff(ZCDP(1e300), [0.0, 0.5])).tolist() == [0.0, 1.0]),
    "tradeoff(fpr=complex array): imaginary part dropped": lambda: refused(
        lambda: risk.tradeoff(PureDP(1.0), np.array([0.5 + 1j])), "fpr", TypeError),
}


@pytest.mark.parametrize("check", REGRESSIONS.values(), ids=REGRESSIONS.keys())
def test_regression(check):
    run_regression(check)


@covers("risk.attacker_in_words")
@pytest.mark.parametrize(("epsilon", "belief", "label"),
                         [(1.0, "73.2%", "1"), (0.1, "52.5%", "0.1"), (5.0, "99.34%", "5"),
                          (0.1234567, "53.1%", "0.123457")])
def test_attacker_in_words(epsilon, belief, label):
    # e^ε / (1 + e^ε) from a coin flip, rounded up: 0.7311 → 73.2 %, 0.52498 → 52.5 %,
    # 0.993307 → 99.34 % (two decimals above 99 %), 0.53083 → 53.1 %; ε labelled in six
    # digits, never below it.
    text = risk.attacker_in_words(epsilon)
    assert f"at most {belief} sure** after one release at ε = {label}," in text
    assert "(at ε = 0.1, 52.5%; at ε = 5, 99.34%)" in text
    with pytest.raises(ValueError):
        risk.attacker_in_words(0.0)
