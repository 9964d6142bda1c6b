"""dpcore: Epsilon Lab's differential-privacy engine — pure numpy/scipy, vectorized over trials.

The most used names are importable from here; every module keeps its own ``__all__``.
"""

from dpcore.measures import (
    ZCDP,
    ApproxDP,
    PureDP,
    advanced_composition,
    compose,
    zcdp_epsilon,
)
from dpcore.mechanisms import CATALOGUE, make_mechanism
from dpcore.mechanisms.bounded import BoundedLaplace, ClampedLaplace
from dpcore.mechanisms.gaussian import Gaussian
from dpcore.mechanisms.geometric import Geometric
from dpcore.mechanisms.laplace import Laplace
from dpcore.quantiles import quantile_probabilities
from dpcore.selection import (
    exponential_mechanism,
    noisy_max_privacy,
    noisy_max_scale,
    noisy_top_k,
    permute_and_flip,
    report_noisy_max,
    selection_probabilities,
)
from dpcore.utility import smallest_epsilon, smallest_epsilon_for_selection

__all__ = [
    "ApproxDP",
    "BoundedLaplace",
    "CATALOGUE",
    "ClampedLaplace",
    "Gaussian",
    "Geometric",
    "Laplace",
    "PureDP",
    "ZCDP",
    "advanced_composition",
    "compose",
    "exponential_mechanism",
    "make_mechanism",
    "noisy_max_privacy",
    "noisy_max_scale",
    "noisy_top_k",
    "permute_and_flip",
    "quantile_probabilities",
    "report_noisy_max",
    "selection_probabilities",
    "smallest_epsilon",
    "smallest_epsilon_for_selection",
    "zcdp_epsilon",
]
