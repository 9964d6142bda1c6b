"""Property tests of dpcore.intervals: every interval holds its released value's noise bound,
lower <= upper, and bad alphas are refused by name."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from dpcore import intervals
from dpcore.mechanisms import CATALOGUE, make_mechanism
from tests.dpcore.properties.oracle import PROPERTY, attempt, covers, refused

KINDS = sorted(CATALOGUE)
_RANGE = {"lower": -50.0, "upper": 50.0}


def _mechanism(kind: str, scale: float):
    spec = CATALOGUE[kind]
    extra = {k: v for k, v in _RANGE.items() if k in spec.parameters}
    if "delta" in spec.parameters and "epsilon" not in spec.budgets.get("pure", ()):
        extra["delta"] = 1e-6
    mech, error = attempt(lambda: make_mechanism(kind, sensitivity=1.0, epsilon=1 / scale,
                                                 **extra))
    return mech


@covers("intervals.noise_half_width", "intervals.noise_interval", "intervals.table_interval",
        "mechanisms.base.check_mechanism")
@PROPERTY
@given(kind=st.sampled_from(KINDS), scale=st.floats(0.05, 50.0),
       alpha=st.floats(1e-9, 0.999), values=st.lists(st.integers(-50, 50), min_size=1,
                                                     max_size=6),
       simultaneous=st.booleans())
def test_intervals_are_ordered_and_contain_the_released_value(kind, scale, alpha, values,
                                                               simultaneous):
    mech = _mechanism(kind, scale)
    if mech is None:
        return
    half = intervals.noise_half_width(mech, alpha)
    assert half >= 0 and np.isfinite(half)
    released = np.asarray(values, dtype=float)
    low, high = intervals.table_interval(mech, released, alpha, simultaneous=simultaneous)
    assert low.shape == high.shape == released.shape
    assert np.all(low <= released) and np.all(released <= high)
    assert np.all(high - low <= 2 * intervals.noise_half_width(mech, alpha / released.size)
                  + 1e-9)
    refused(lambda: intervals.noise_interval(mech, released, 0.0), "alpha")
    refused(lambda: intervals.noise_interval(mech, [np.nan], alpha), "released")
    # anything but a catalogue mechanism (here its spec) is refused by type, naming it
    refused(lambda: intervals.noise_half_width(CATALOGUE[kind], alpha), "mechanism", TypeError)


@covers("intervals.ratio_interval", "intervals.mean_interval", "intervals.monotone_interval")
@PROPERTY
@given(n=st.tuples(st.floats(-1e6, 1e6), st.floats(0, 1e6)),
       d=st.tuples(st.floats(-1e3, 1e6), st.floats(0, 1e6)),
       alpha=st.floats(1e-6, 0.9))
def test_ratio_and_mean_hold_every_ratio_inside(n, d, alpha):
    n_low, n_high = n[0], n[0] + n[1]
    d_low, d_high = d[0], d[0] + d[1]
    low, high = intervals.ratio_interval(n_low, n_high, d_low, d_high, lower=-10, upper=10)
    assert -10 <= low <= high <= 10
    for nn in (n_low, n_high):
        for dd in (max(d_low, 1.0), max(d_high, 1.0)):
            assert low <= np.clip(nn / dd, -10, 10) <= high
    mech = make_mechanism("laplace", sensitivity=1.0, scale=2.0)
    m_low, m_high = intervals.mean_interval(mech, n_low, mech, d_low, lower=0.0, upper=5.0,
                                            alpha=alpha)
    assert 0.0 <= m_low <= m_high <= 5.0
    c_low, c_high = intervals.monotone_interval(n_low, n_high, np.floor)
    assert c_low <= c_high
    refused(lambda: intervals.ratio_interval(0, 1, 0, 1, least_denominator=0.0),
            "least_denominator")
