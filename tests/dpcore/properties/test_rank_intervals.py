"""Property tests of the intervals of the kinds made of several parts or of a choice: the
variance's box (dpcore.intervals.variance_interval) holds every variance the box allows; a
choice's shortfall (dpcore.rank_intervals) meets its union bound, grows as alpha falls and
shrinks as candidates are peeled; bad arguments are refused by name."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from dpcore import intervals, rank_intervals
from dpcore.mechanisms import make_mechanism
from dpcore.selection import NOISE_TYPES
from tests.dpcore.properties.oracle import PROPERTY, covers, refused


@covers("intervals.variance_interval")
@PROPERTY
@given(n=st.floats(-50, 1e4), d=st.floats(-1e4, 1e4), s=st.floats(-1e4, 1e5),
       scales=st.tuples(st.floats(0.1, 100), st.floats(0.1, 100), st.floats(0.1, 100)),
       half=st.floats(0.5, 50), alpha=st.floats(1e-6, 0.9),
       at=st.tuples(st.floats(0, 1), st.floats(0, 1), st.floats(0, 1)))
def test_variance_interval_holds_every_variance_of_its_box(n, d, s, scales, half, alpha, at):
    mechs = [make_mechanism("laplace", sensitivity=1.0, scale=b) for b in scales]
    low, high = intervals.variance_interval(mechs[0], n, mechs[1], d, mechs[2], s,
                                            half_width=half, alpha=alpha)
    assert 0.0 <= low <= high <= half * half
    # any point of the box (each part within its own interval at alpha / 3)
    ends = [intervals.noise_interval(m, v, alpha / 3) for m, v in zip(mechs, (n, d, s),
                                                                       strict=True)]
    nn, dd, ss = (float(lo + t * (hi - lo)) for (lo, hi), t in zip(ends, at, strict=True))
    nn = max(nn, 1.0)
    variance = float(np.clip(ss / nn - (dd / nn) ** 2, 0.0, half * half))
    assert low - 1e-9 * half * half <= variance <= high + 1e-9 * half * half
    refused(lambda: intervals.variance_interval(mechs[0], n, mechs[1], d, mechs[2], s,
                                                half_width=-1.0), "half_width")
    refused(lambda: intervals.variance_interval(mechs[0], n, mechs[1], d, mechs[2], s,
                                                half_width=half, alpha=0.0), "alpha")


@covers("rank_intervals.difference_tail", "rank_intervals.selection_shortfall",
        "rank_intervals.top_k_shortfalls")
@PROPERTY
@given(noise=st.sampled_from(NOISE_TYPES), scale=st.floats(1e-3, 1e3),
       m=st.integers(1, 10**6), k=st.integers(1, 5), alpha=st.floats(1e-12, 0.99))
def test_a_shortfall_meets_its_union_bound(noise, scale, m, k, alpha):
    e = rank_intervals.selection_shortfall(noise, scale, m, alpha)
    assert 0.0 <= e < np.inf
    if m == 1:
        assert e == 0.0
    else:  # (m − 1)·P(D > E/b) <= alpha, tight where E > 0
        bound = (m - 1) * float(rank_intervals.difference_tail(noise, e / scale))
        assert bound <= alpha * (1 + 1e-9)
        if e > 0:
            assert bound >= alpha * (1 - 1e-6)
    assert rank_intervals.selection_shortfall(noise, scale, m, alpha / 2) >= e
    k = min(k, m)
    peeled = rank_intervals.top_k_shortfalls(noise, scale, m, k, alpha)
    assert peeled.shape == (k,) and peeled[0] == e
    assert np.all(np.diff(peeled) <= 0)
    refused(lambda: rank_intervals.selection_shortfall(noise, -1.0, m, alpha), "scale")
    refused(lambda: rank_intervals.selection_shortfall(noise, scale, 0, alpha), "candidates")
    refused(lambda: rank_intervals.top_k_shortfalls(noise, scale, m, m + 1, alpha), "k")
    refused(lambda: rank_intervals.selection_shortfall(noise, scale, m, 1.0), "alpha")
    refused(lambda: rank_intervals.selection_shortfall("gauss", scale, m, alpha), "noise")
    refused(lambda: rank_intervals.difference_tail(noise, -1.0), "t")
