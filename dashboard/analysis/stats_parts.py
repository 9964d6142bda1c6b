"""Noisy statistics on the release's path.

The page builds its query as the release plan's query (``plan.model.PlanQuery``) and builds
it with ``plan.build``: the very parts, mechanisms, scales and budget shares a release draws.
A count, a sum or a histogram is one part (its closed forms are the page's figures). A mean or
a variance is made of parts: their true inputs come from the engine queries ``plan.build``
gives (truncated under the page's privacy unit), and releases are simulated as the query's
kind post-processes them (``QueryKind.combine``). A simulated release differs from a real one
only in who draws the noise: seeded numpy here, OpenDP in ``release``.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dashboard.analysis.stats_query import QuerySpec
from dashboard.choices import PrivacyChoice
from dashboard.data import true_answers
from dashboard.kinds import PageSettings, adapter_of
from dashboard.kinds.base import plan_noise as _plan_noise
from dpcore.measures import Measure, compose
from dpcore.mechanisms import AdditiveMechanism
from engine.queries import Contribution
from plan import model
from plan.build import Built, build

__all__ = ["PartsRelease", "plan_query", "plan_unit", "page_built", "parts_release",
           "part_mechanisms", "page_settings"]


def part_mechanisms(query: str) -> tuple[str, ...]:
    """The catalogue kinds a query made of parts takes (its page adapter's): noise without an
    answer range (a variance's parts also on real numbers: no whole-number noise)."""
    return adapter_of(query).mechanisms() or ()


def plan_unit(contribution: Contribution | None) -> model.PrivacyUnit:
    """The plan's privacy unit for the page's truncation (one row = one person: None)."""
    if contribution is None:
        return model.PrivacyUnit()
    return model.PrivacyUnit(contribution.person, contribution.max_rows,
                             contribution.max_groups)


def plan_noise(choice: PrivacyChoice) -> model.Noise:
    """The plan's mechanism for the page's choice, as Add to plan enters it (a pure-DP kind
    offered under approximate DP enters as pure DP at its ε)."""
    return _plan_noise(choice)


def page_settings(spec: QuerySpec, choice: PrivacyChoice, *, sum_share: float = 0.5,
                  answer_range: tuple[float, float] | None = None,
                  labels: tuple[object, ...] | None = None) -> PageSettings:
    """The page adapter's settings for the page's query (bounds and categories as typed: a
    simulation's origins change no figure; Add to plan records them)."""
    return PageSettings(spec.query, choice, spec.column, spec.lower, spec.upper,
                        spec.categories, sum_share, answer_range, labels)


def plan_query(spec: QuerySpec, choice: PrivacyChoice, *, sum_share: float = 0.5,
               answer_range: tuple[float, float] | None = None,
               labels: tuple[object, ...] | None = None) -> model.PlanQuery:
    """The page's query as the plan's query: its page adapter's ``page_query`` (the one
    conversion, Add to plan's too). A histogram's categories are the declared ones, else
    ``labels`` (the ones the page found)."""
    return adapter_of(spec.query).page_query(page_settings(
        spec, choice, sum_share=sum_share, answer_range=answer_range, labels=labels))


def page_built(spec: QuerySpec, choice: PrivacyChoice, *, sum_share: float = 0.5,
               answer_range: tuple[float, float] | None = None,
               labels: tuple[object, ...] | None = None) -> Built:
    """The page's query built as a release builds it (``plan.build``) under the page's
    privacy unit: its parts are what the page simulates.

    Raises ValueError (the plan's reason, without its field path) when the query or the
    mechanism cannot be built.
    """
    query = plan_query(spec, choice, sum_share=sum_share, answer_range=answer_range,
                       labels=labels)
    try:
        query.check("query")
        return build(query, plan_unit(spec.contribution))
    except model.PlanError as exc:
        raise ValueError(exc.reason) from None


class PartsRelease:
    """One statistic post-processed from several noisy parts, simulated from the parts
    ``plan.build`` gives the release (:attr:`parts`, in the order they are drawn), each drawn
    on its true input (:attr:`values`) and combined by the query's kind."""

    def __init__(self, built: Built, aggregates: tuple) -> None:
        self.built = built
        self._kind = built.kind
        self.values = tuple(float(v) for v in self._kind.part_values(built, aggregates))

    @property
    def kind(self) -> str:
        """The catalogue kind every part uses."""
        return self.built.query.mechanism.kind

    @property
    def parts(self) -> tuple[AdditiveMechanism, ...]:
        return tuple(part.mechanism for part in self.built.parts)

    @property
    def names(self) -> tuple[str, ...]:
        """Each part's name ("sum", "count", "sum of deviations", …)."""
        return tuple(part.name for part in self.built.parts)

    @property
    def privacy(self) -> Measure:
        """The parts composed: at most the query's budget."""
        return compose(*(part.privacy for part in self.parts))

    @property
    def lower(self) -> float:
        return float(self.built.query.query.bounds.lower)

    @property
    def upper(self) -> float:
        return float(self.built.query.query.bounds.upper)

    @property
    def true_value(self) -> float:
        """What the release estimates: the post-processing of the parts' true values."""
        return float(self._kind.combine(self.built, self.values))

    def sample_parts(self, *, rng: np.random.Generator, trials: int | None = None
                     ) -> tuple[NDArray[np.float64], ...]:
        """Each part's noisy value: 0-d (``trials=None``) or shape ``(trials,)``, drawn in
        the release's order from ``rng``."""
        return tuple(np.asarray(m.sample(v, rng=rng, trials=trials), dtype=np.float64)
                     for m, v in zip(self.parts, self.values, strict=True))

    def combine(self, noisy: tuple[NDArray[np.float64], ...]) -> NDArray[np.float64]:
        """The released statistic from its parts' noisy values, as the kind post-processes
        them."""
        return np.asarray(self._kind.combine(self.built, noisy), dtype=np.float64)

    def sample(self, *, rng: np.random.Generator, trials: int | None = None
               ) -> NDArray[np.float64]:
        """Released statistics: 0-d (``trials=None``) or shape ``(trials,)``; the parts are
        drawn in the release's order from ``rng``."""
        return self.combine(self.sample_parts(rng=rng, trials=trials))


def parts_release(frame: pd.DataFrame | true_answers.Relation, spec: QuerySpec,
                  choice: PrivacyChoice, *, sum_share: float = 0.5) -> PartsRelease:
    """Build the page's query as the release does (:func:`page_built`) and compute its
    parts' true inputs."""
    offered = part_mechanisms(spec.query)
    if choice.mechanism not in offered:
        raise ValueError(f"the {spec.query} is released with {', '.join(offered)} noise; got "
                         f"{choice.mechanism}")
    built = page_built(spec, choice, sum_share=sum_share)
    relation = true_answers.relation_of(frame)
    # read together, as a release reads a plan's (a variance's two sums: one ranking)
    aggregates = tuple(relation.answer_many([replace(q, contribution=spec.contribution)
                                             for q in built.engine_queries]))
    return PartsRelease(built, aggregates)
