"""Memory and work bounds: huge simulation requests are chunked or refused, never run out of
memory. Peak memory is measured with tracemalloc (numpy reports its allocations to it)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from dpcore import Laplace, checks
from dpcore.selection import exponential_mechanism, noisy_top_k, report_noisy_max

BLOCK_BYTES = checks.MAX_BLOCK_ELEMENTS * 8


def _peak_bytes(fn) -> tuple[object, int]:
    tracemalloc.start()
    try:
        result = fn()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("noise", ["laplace", "exponential", "gumbel"])
def test_1e8_selection_trials_over_1000_candidates_refused_without_allocating(noise):
    scores = np.arange(1000.0)
    rng = np.random.default_rng(0)

    def ask():
        with pytest.raises(ValueError, match="trials") as info:
            report_noisy_max(scores, scale=1.0, noise=noise, trials=10**8, rng=rng)
        return str(info.value)

    message, peak = _peak_bytes(ask)
    assert "ask for at most" in message
    assert peak < 1 << 20, f"refusing allocated {peak:,} bytes"


@pytest.mark.slow
def test_large_chunked_selection_stays_under_the_block_bound():
    scores = np.arange(1000.0)
    trials = 40_000  # 4·10^7 draws: ten blocks of 2**22
    rng = np.random.default_rng(1)
    winners, peak = _peak_bytes(
        lambda: report_noisy_max(scores, scale=50.0, noise="gumbel", trials=trials, rng=rng)
    )
    assert winners.shape == (trials,)
    # one noise block plus argmax temporaries, never the whole (trials, d) matrix (320 MB)
    assert peak < 3 * BLOCK_BYTES, f"peak {peak:,} bytes"
    assert peak < trials * scores.size * 8 / 4


def test_top_k_and_exponential_mechanism_refuse_oversized_work():
    scores = np.arange(1000.0)
    rng = np.random.default_rng(2)
    with pytest.raises(ValueError, match="trials"):
        noisy_top_k(scores, 3, scale=1.0, noise="gumbel", trials=10**8, rng=rng)
    with pytest.raises(ValueError, match="trials"):
        exponential_mechanism(scores, epsilon=1.0, sensitivity=1.0, trials=10**8, rng=rng)


def test_mechanism_sample_refuses_output_beyond_the_returned_array_bound():
    mech = Laplace(sensitivity=1.0, epsilon=1.0)
    with pytest.raises(ValueError, match="trials"):
        mech.sample(np.zeros(1000), rng=np.random.default_rng(3), trials=10**6)


def test_mechanism_sample_draws_large_requests_into_the_result():
    mech = Laplace(sensitivity=1.0, epsilon=1.0)
    values = np.zeros(100)
    trials = 200_000  # 2·10^7 draws; the result itself is 160 MB
    out, peak = _peak_bytes(lambda: mech.sample(values, rng=np.random.default_rng(4),
                                                trials=trials))
    assert out.shape == (trials, 100)
    result_bytes = out.nbytes
    # the noise is drawn straight into the result, a cache-sized block at a time: beyond the
    # result only the block's scratch (2**15 float64, 256 KiB) is ever allocated
    assert peak < result_bytes + (1 << 20), f"peak {peak:,} for {result_bytes:,} result"
