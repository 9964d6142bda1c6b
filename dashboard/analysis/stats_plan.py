"""Noisy statistics, the release plan: a query's true answer and what adds the noise (a
mechanism of the catalogue, or the parts a mean or a variance is made of — built by
``plan.build`` as a release builds them: ``stats_parts``), with the closed forms of its error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from dashboard.analysis.stats_parts import PartsRelease, page_built, parts_release
from dashboard.analysis.stats_query import QuerySpec
from dashboard.choices import PrivacyChoice
from dashboard.exports import noise_stream
from dashboard.kinds import adapter_of
from dpcore.checks import check_int
from dpcore.mechanisms import AdditiveMechanism
from dpcore.queries import QueryAnswer
from plan.build import Built
from plan.kinds import KINDS

#: The error chart spans the errors of all but this share of releases (by the closed form):
#: wide enough to show the tails, narrow enough that the bulk fills many bins.
RANGE_BETA = 1e-3
#: A variance's error chart spans the quantiles of a pilot simulation of this many releases,
#: from a fixed stream of its own (the chart's range, not a figure the page states).
PILOT_TRIALS = 20_000
PILOT_STREAM = [2, 9, 9]

# --------------------------------------------------------------------------------------------
# The release plan: the query's true answer and the mechanism(s) that add noise


def answer_query(frame: pd.DataFrame, spec: QuerySpec) -> QueryAnswer | tuple[QueryAnswer,
                                                                              QueryAnswer]:
    """The true answer with its sensitivity (for a mean or a variance: the clamped sum and
    the count of values), as the query's page adapter reads it."""
    return adapter_of(spec.query).true_answer(frame, spec)


@dataclass(frozen=True, eq=False)
class ReleasePlan:
    """What one release is: the true answer and the noise added to it.

    ``release`` is what adds the noise: a mechanism of the catalogue for a count, sum or
    histogram, or the parts a release draws for a mean or a variance
    (``stats_parts.PartsRelease``: the plan's parts, each with its share of the budget,
    post-processed by the query's kind). Both have a ``privacy`` and ``parts``; only a
    mechanism has closed forms for its error (:attr:`closed_form`). ``answer`` and
    ``count_answer`` are the clamped sum and the count of values of a mean or variance.
    """

    spec: QuerySpec
    choice: PrivacyChoice
    true_value: NDArray[np.float64]
    labels: tuple[str, ...] | None
    answer: QueryAnswer
    release: AdditiveMechanism | PartsRelease
    count_answer: QueryAnswer | None = None
    sum_share: float = 0.5
    #: the page's query built as a release builds it (``plan.build``): for one mechanism,
    #: ``release`` is its one part's (a mean's or a variance's is ``release.built``)
    one_part: Built | None = None

    @property
    def closed_form(self) -> bool:
        """Whether the error has closed forms (a mechanism; a noisy mean is simulated)."""
        return not isinstance(self.release, PartsRelease)

    @property
    def parts(self) -> tuple[AdditiveMechanism, ...]:
        """The mechanisms that add noise: the one mechanism, or the parts in the release's
        order (a mean's sum and count; a variance's count, sums of deviations and squares)."""
        return (self.release,) if self.closed_form else self.release.parts

    @property
    def cells(self) -> int:
        return int(self.true_value.size)

    @property
    def integer_errors(self) -> bool:
        return self.closed_form and self.release.integer_output

    def _cells(self) -> NDArray[np.float64]:
        # Shape (1, cells): broadcasts against a column of error values x[:, None].
        return self.true_value.reshape(1, -1)

    def sample(self, trials: int | None, rng: np.random.Generator) -> NDArray[np.float64]:
        """Noisy releases: shape ``true_value.shape``, or ``(trials, *true_value.shape)``."""
        return self.released(self.sample_parts(trials, rng))

    def sample_parts(self, trials: int | None, rng: np.random.Generator
                     ) -> tuple[NDArray[np.float64], ...]:
        """Each part's noisy value, drawn in the release's order from ``rng`` (the one
        mechanism's release; a mean's noisy sum and count, …)."""
        if self.closed_form:
            noisy = self.release.sample(self.true_value, rng=rng, trials=trials)
            return (np.asarray(noisy, dtype=np.float64),)
        return self.release.sample_parts(rng=rng, trials=trials)

    def released(self, noisy_parts: tuple[NDArray[np.float64], ...]) -> NDArray[np.float64]:
        """The released statistic from its parts' noisy values (post-processing)."""
        if self.closed_form:
            return noisy_parts[0]
        return self.release.combine(noisy_parts)

    @property
    def built(self) -> Built:
        """The page's query as ``plan.build`` builds it for a release."""
        return self.one_part if self.closed_form else self.release.built

    @property
    def built_parts(self) -> tuple:
        """The plan's parts (``plan.parts.Part``: name, mechanism, sensitivity) of a mean or
        a variance; empty for one mechanism."""
        return () if self.closed_form else self.release.built.parts

    @property
    def part_names(self) -> tuple[str, ...]:
        """Each part's name, as the release names it ("value" for one mechanism)."""
        return ("value",) if self.closed_form else self.release.names

    @property
    def clamped_to(self) -> tuple[float, float] | None:
        """The range a released mean is clamped to (its bounds: ``means_of``); None for the
        other queries."""
        if not KINDS[self.spec.query].clamps_to_bounds:
            return None
        return self.release.lower, self.release.upper

    def accuracy(self, beta: float) -> NDArray[np.float64] | None:
        """Closed-form alpha per cell with P(|error| > alpha) <= beta; None for parts."""
        if not self.closed_form:
            return None
        alpha = self.release.accuracy(beta, true_value=self.true_value)
        return np.broadcast_to(np.asarray(alpha, dtype=np.float64), self.true_value.shape)

    def error_cdf(self, x: ArrayLike) -> NDArray[np.float64] | None:
        """P(error <= x) for one cell drawn at random (the mixture over cells); None for a mean."""
        if not self.closed_form:
            return None
        x = np.asarray(x, dtype=np.float64).reshape(-1, 1)
        cdf = self.release.error_cdf(x, true_value=self._cells())
        return np.broadcast_to(cdf, (x.shape[0], self.cells)).mean(axis=1)

    def error_density(self, x: ArrayLike) -> NDArray[np.float64] | None:
        """Density of the error (probability of each whole number for geometric noise)."""
        if not self.closed_form:
            return None
        x = np.asarray(x, dtype=np.float64).reshape(-1, 1)
        if self.integer_errors:
            pmf = self.release.error_pmf(x)
            return np.broadcast_to(pmf, (x.shape[0], 1)).mean(axis=1)
        pdf = self.release.error_pdf(x, true_value=self._cells())
        return np.broadcast_to(pdf, (x.shape[0], self.cells)).mean(axis=1)

    def analytic_bias(self) -> NDArray[np.float64] | None:
        if not self.closed_form:
            return None
        bias = self.release.bias(self.true_value)
        return np.broadcast_to(np.asarray(bias, dtype=np.float64), self.true_value.shape)

    def analytic_rmse(self) -> NDArray[np.float64] | None:
        if not self.closed_form:
            return None
        mse = np.asarray(self.release.mse(self.true_value), dtype=np.float64)
        return np.sqrt(np.broadcast_to(mse, self.true_value.shape))

    def error_span(self, beta: float = RANGE_BETA) -> tuple[float, float]:
        """The range of errors the chart shows: all but about ``beta`` of them.

        For the mean, the noisy sum and count each stay within their (beta/2)-accuracy,
        and then |(S + e_s)/(C + e_c) − S/C| = |e_s − m·e_c| / (C + e_c) is at most
        (alpha_s + |m|·alpha_c) / (C − alpha_c); the clamp keeps the mean in [lower, upper].
        For the variance (no such bound is simple), the (beta/2, 1 − beta/2) quantiles of a
        pilot simulation of its own (fixed stream), inside [0, h²] − the true variance.
        """
        if self.closed_form:
            reach = float(np.max(self.accuracy(beta)))
            low, high = -reach, reach
            if self.choice.spec.needs_range:  # the output stays in [lower, upper]
                low = max(low, float(np.min(self.release.lower - self.true_value)))
                high = min(high, float(np.max(self.release.upper - self.true_value)))
        elif self.clamped_to is None:   # a variance (kept within [0, h²], not the bounds)
            pilot = self.sample(PILOT_TRIALS, np.random.default_rng(PILOT_STREAM))
            low, high = (float(q) for q in np.quantile(pilot - float(self.true_value),
                                                       [beta / 2, 1 - beta / 2]))
            half = (self.answer.upper - self.answer.lower) / 2
            low = max(low - 0.05 * (high - low), -float(self.true_value))
            high = min(high + 0.05 * (high - low), half * half - float(self.true_value))
        else:
            sum_mech, count_mech = self.parts
            count = float(self.count_answer.true_value)
            mean = float(self.true_value)
            alpha_sum, alpha_count = sum_mech.accuracy(beta / 2), count_mech.accuracy(beta / 2)
            lower, upper = self.answer.lower, self.answer.upper
            reach = upper - lower
            if count - alpha_count > 1:
                reach = min(reach, (alpha_sum + abs(mean) * alpha_count) / (count - alpha_count))
            low, high = max(-reach, lower - mean), min(reach, upper - mean)
        if not (math.isfinite(low) and math.isfinite(high) and high > low):
            low, high = -1.0, 1.0
        return low, high


def make_plan(frame: pd.DataFrame, spec: QuerySpec, choice: PrivacyChoice, *,
              answer_range: tuple[float, float] | None = None,
              sum_share: float = 0.5) -> ReleasePlan:
    """Compute the true answer and build the mechanism(s) for one release.

    Parameters
    ----------
    frame : pandas.DataFrame
        The data, one row per person.
    spec : QuerySpec
        The query; sum and mean need bounds, a histogram may declare its categories.
    choice : PrivacyChoice
        Measure, mechanism and privacy parameters (from ``controls.privacy_controls``).
    answer_range : (float, float), optional
        Public range of the answer, required by the bounded and clamped Laplace mechanisms.
    sum_share : float
        The mean's budget share for the noisy sum (the count gets the rest).

    Returns
    -------
    ReleasePlan
        The true answer (0-d, or one count per category) and the mechanism(s).

    Raises
    ------
    ValueError, TypeError
        From ``dpcore`` when bounds, parameters or the mechanism do not fit the query.
    """
    answered = answer_query(frame, spec)
    if KINDS[spec.query].made_of_parts:
        sum_answer, count_answer = answered
        if float(count_answer.true_value) == 0:
            raise ValueError(f"column {spec.column!r} has no values (all are missing)")
        # The parts a release draws (plan.build): their mechanisms are the very ones the
        # simulation samples from, to show each part's sensitivity and scale.
        release = parts_release(frame, spec, choice, sum_share=sum_share)
        return ReleasePlan(spec, choice, np.array(release.true_value), None, sum_answer,
                           release, count_answer=count_answer, sum_share=sum_share)
    lower = upper = None
    if choice.spec.needs_range:
        if answer_range is None:
            raise ValueError(f"the {choice.spec.label} mechanism needs a public "
                             "range for the answer")
        lower, upper = answer_range
    built = page_built(spec, choice, answer_range=answer_range, labels=answered.labels)
    mechanism = built.parts[0].mechanism   # what a release draws: plan.build's one part
    true_value = np.asarray(answered.true_value, dtype=np.float64)
    if choice.spec.true_value_in_range:
        mechanism.bias(true_value)  # raises ValueError naming the range if the answer is outside
    return ReleasePlan(spec, choice, true_value, answered.labels, answered, mechanism,
                       one_part=built)


#: This page's own random streams, apart from the other pages'.
_RNG_OFFSET = 2
#: The highest release number a page may show ("Draw another release" counts up from 1).
MAX_RELEASE = 10**9


def release_stream(release: int, stream: int = 0) -> list[int | str]:
    """The random stream of release number ``release`` of a seed: ``[seed, 2, 1, stream]`` for
    the first, ``[seed, 2, 1, stream, n]`` for release n > 1; ``stream`` tells the dataset and
    query apart (:func:`query_stream`)."""
    check_int("release", release, minimum=1, maximum=MAX_RELEASE)
    return ["seed", _RNG_OFFSET, 1, stream] + ([release] if release > 1 else [])


def query_stream(dataset_key: str, frame: pd.DataFrame, spec: QuerySpec) -> int:
    """The number mixed into the seed's streams for this dataset and query: the same seed
    draws other noise for another dataset, query, column or clamping range."""
    return noise_stream(dataset_key, frame, "statistics", spec.query, spec.column, spec.lower,
                        spec.upper)

