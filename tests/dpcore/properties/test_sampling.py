"""Property tests of dpcore.sampling: the fast exact noise samplers.

Random valid and invalid input, judged by the shared oracle (tests/dpcore/properties/oracle.py):
finite noise of the right shape and type, or a refusal naming the parameter.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpcore import sampling
from tests.dpcore.properties.oracle import (
    INF,
    NAN,
    PROPERTY,
    Arg,
    covers,
    finite_real,
    ok,
    positive,
    rngs,
    tagged,
)


def outputs(dtype) -> st.SearchStrategy[Arg]:
    """Arrays to fill: 1-D contiguous ones of the right dtype, or ones that are not."""
    good = st.integers(0, 50).map(lambda n: np.empty(n, dtype=dtype))
    wrong = np.float32 if dtype is np.float64 else np.float64
    bad = st.sampled_from([np.empty((2, 3), dtype=dtype), np.empty(4, dtype=wrong),
                           np.empty(8, dtype=dtype)[::2], [0.0, 1.0], None,
                           np.empty(0, dtype=np.complex128)])
    return tagged(good, None, bad)


def whole_shifts() -> st.SearchStrategy[Arg]:
    return tagged(st.integers(-(2**40), 2**40), st.sampled_from([2**62, -(2**62)]),
                  st.sampled_from([0.5, NAN, 2**63, "1", None, True]))


def geometric_scales() -> st.SearchStrategy[Arg]:
    scale = positive()
    # beyond 2**42 the draws would leave exact float64 integers: refused, naming scale
    return scale.map(lambda a: Arg(a.value, "bad") if a.tag != "bad" and not (
        float(a.value) <= 2.0**42) else a)


@pytest.mark.slow
@covers("sampling.fill_laplace", "sampling.fill_gaussian")
@PROPERTY
@given(out=outputs(np.float64), scale=positive(), shift=finite_real(), rng=rngs(),
       gaussian=st.booleans())
def test_fill_continuous_noise(out, scale, shift, rng, gaussian):
    fill = sampling.fill_gaussian if gaussian else sampling.fill_laplace
    args = {"out": out, "scale": scale, "shift": shift, "rng": rng}
    if scale.tag != "bad" and shift.tag != "bad" and (
            float(scale.value) > 1e100 or abs(float(shift.value)) > 1e300):
        args["scale"] = Arg(scale.value, "extreme")  # noise + shift may overflow to inf
    with np.errstate(over="ignore"):
        filled = ok(lambda: fill(out.value, scale=scale.value, shift=shift.value,
                                 rng=rng.value), args) if args["scale"].tag != "extreme" else None
    if filled is not None:
        assert filled is out.value and filled.dtype == np.float64


@pytest.mark.slow
@covers("sampling.fill_two_sided_geometric")
@PROPERTY
@given(out=outputs(np.int64), scale=geometric_scales(), shift=whole_shifts(), rng=rngs())
def test_fill_two_sided_geometric(out, scale, shift, rng):
    filled = ok(lambda: sampling.fill_two_sided_geometric(
        out.value, scale=scale.value, shift=shift.value, rng=rng.value),
        {"out": out, "scale": scale, "shift": shift, "rng": rng})
    if filled is not None and filled.size:
        assert filled.dtype == np.int64
        assert np.all(np.abs(filled - shift.value) < 2**53)


def sizes() -> st.SearchStrategy[Arg]:
    good = st.one_of(st.integers(0, 30), st.tuples(st.integers(0, 5), st.integers(0, 5)),
                     st.integers(0, 30).map(np.int64))
    bad = st.sampled_from([-1, 2.5, "3", None, (2, -1), 2**40, (2**20, 2**20), INF])
    return tagged(good, None, bad)


@pytest.mark.slow
@covers("sampling.standard_laplace", "sampling.standard_gumbel",
        "sampling.standard_exponential")
@PROPERTY
@given(size=sizes(), rng=rngs(), which=st.sampled_from(["laplace", "gumbel", "exponential"]))
def test_standard_noise(size, rng, which):
    draw = getattr(sampling, f"standard_{which}")
    noise = ok(lambda: draw(size.value, rng=rng.value), {"size": size, "rng": rng})
    if noise is not None:
        dims = size.value if isinstance(size.value, tuple) else (int(size.value),)
        assert noise.shape == tuple(int(d) for d in dims) and noise.dtype == np.float64
        if which == "exponential":
            assert np.all(noise >= 0)
