"""The pricing example of the Selection page: a public grid of prices, bids typed in or
simulated, and the revenue at each price as the scores.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dashboard.analysis.selection_choices import _RNG_OFFSET
from dashboard.analysis.selection_scores import MIN_CANDIDATES, parse_numbers
from dpcore.checks import check_positive

PRICE_STEPS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0)
EXAMPLE_BIDS = "1, 1, 1, 3.01"
SIMULATED_BIDS = 100
MAX_PRICES = 2000
MAX_BIDS = 10_000


def price_grid(highest: float, step: float) -> NDArray[np.float64]:
    """Prices step, 2·step, …, up to ``highest`` (public: chosen without looking at the bids).

    Rounded to 9 decimals so that a price typed as 3.01 equals the bid 3.01 (0.01 × 301 is
    3.0100000000000002 in floating point, which a bid of exactly 3.01 would not reach).
    """
    highest = check_positive("highest price", highest)
    step = check_positive("price step", step)
    count = math.floor(highest / step + 1e-9)
    if count < MIN_CANDIDATES:
        raise ValueError(f"the price grid has {count} price(s): make the step smaller than "
                         "half the highest price")
    if count > MAX_PRICES:
        raise ValueError(f"the price grid would have {count:,} prices (the limit is "
                         f"{MAX_PRICES:,}): use a larger step or a lower highest price")
    return np.round(np.arange(1, count + 1) * step, 9)


def revenue_curve(bids: ArrayLike, prices: ArrayLike) -> NDArray[np.float64]:
    """Revenue at each price: price × number of bids at or above it (one item per bidder).

    Adding or removing one bidder changes the revenue at price p by p or by 0, so the scores
    have sensitivity max(prices) and only move up (add) or down (remove): monotonic.
    """
    bids = np.sort(np.asarray(bids, dtype=np.float64))
    prices = np.asarray(prices, dtype=np.float64)
    buyers = bids.size - np.searchsorted(bids, prices, side="left")
    return prices * buyers


def simulated_bids(highest: float, seed: int, count: int = SIMULATED_BIDS) -> NDArray:
    """``count`` bids drawn uniformly up to ``highest``, in cents, from the page's seed stream."""
    rng = np.random.default_rng([seed, _RNG_OFFSET, 9])
    return np.round(rng.uniform(0.0, highest, size=count), 2)


def parse_bids(text: str) -> NDArray[np.float64]:
    """Typed bids: 1 to MAX_BIDS non-negative numbers separated by commas."""
    bids = parse_numbers(text, what="bids", minimum=1, maximum=MAX_BIDS, largest=None)
    if np.any(bids < 0):
        raise ValueError("a bid is negative: bids are amounts a buyer would pay, 0 or more")
    return bids
