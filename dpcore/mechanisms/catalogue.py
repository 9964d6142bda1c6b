"""The catalogue of mechanisms: every kind's spec, the factory, and an audit of a claim.

Adding a mechanism is one file in this package (its classes and ``SPECS``) and its module name
in :data:`FAMILIES`; pages, sweeps and tests read the specs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import import_module
from types import MappingProxyType

import numpy as np

from dpcore.audit import AuditResult, audit_mechanism, threshold_events
from dpcore.checks import (
    check_choice,
    check_delta,
    check_int,
    check_positive,
    check_probability_open,
    check_progress,
    check_rng,
)
from dpcore.measures import ApproxDP, PureDP
from dpcore.mechanisms.base import AdditiveMechanism, AuditCase, MechanismSpec

__all__ = ["FAMILIES", "CATALOGUE", "spec_for", "spec_of", "make_mechanism", "ClaimAudit",
           "audit_claim"]

#: The mechanism families, one module of this package each (in the order pages list them).
FAMILIES = ("laplace", "geometric", "gaussian", "bounded", "discrete_gaussian", "staircase")


def _collect(families: tuple[str, ...]) -> Mapping[str, MechanismSpec]:
    specs: dict[str, MechanismSpec] = {}
    for family in families:
        for spec in import_module(f"{__package__}.{family}").SPECS:
            if spec.kind in specs:
                raise ValueError(f"two catalogue entries are named {spec.kind!r}")
            specs[spec.kind] = spec
    return MappingProxyType(specs)


#: Every mechanism kind ("laplace", "gaussian", ...) with its spec.
CATALOGUE: Mapping[str, MechanismSpec] = _collect(FAMILIES)

#: Zero-concentrated claims are audited at this delta unless told otherwise: an event of
#: probability well above it is one a million samples can resolve.
_ZCDP_AUDIT_DELTA = 1e-3


def spec_for(kind: str) -> MechanismSpec:
    """The spec of ``kind`` (ValueError naming ``kind`` and the kinds there are)."""
    return CATALOGUE[check_choice("kind", kind, tuple(CATALOGUE))]


def spec_of(mechanism: AdditiveMechanism) -> MechanismSpec:
    """The spec of a built mechanism, by its class."""
    for spec in CATALOGUE.values():
        if type(mechanism) is spec.mechanism:
            return spec
    raise TypeError(f"mechanism must be one of the catalogue's mechanisms, got "
                    f"{type(mechanism).__name__}")


def make_mechanism(kind: str, *, sensitivity: float, **parameters: float | None
                   ) -> AdditiveMechanism:
    """Build a mechanism of the catalogue by its kind, as the pages and the sweeps do.

    Parameters
    ----------
    kind : str
        A key of :data:`CATALOGUE`.
    sensitivity : float
        The query's sensitivity (L1 or L2 as the spec's ``sensitivity_norm`` says).
    **parameters
        The spec's ``parameters`` (epsilon, delta, rho, scale, lower, upper, gamma...); one
        given as None counts as not given. A parameter the kind does not take raises
        ValueError rather than being silently ignored; a kind that needs an answer range
        needs lower and upper.
    """
    spec = spec_for(kind)
    given = {name: value for name, value in parameters.items() if value is not None}
    unused = sorted(set(given) - set(spec.parameters))
    if unused:
        raise ValueError(f"{', '.join(unused)} does not apply to the {kind} mechanism")
    if spec.needs_range and not {"lower", "upper"} <= set(given):
        raise ValueError(f"the {kind} mechanism needs lower and upper")
    return spec.mechanism(sensitivity=sensitivity, **given)


@dataclass(frozen=True)
class ClaimAudit:
    """An empirical audit of a mechanism's privacy claim (see :func:`audit_claim`).

    ``claimed_epsilon`` is the epsilon the mechanism claims at ``delta``; ``result`` is the
    best lower bound the audit found, with the event and neighbours behind it. ``refuted`` is
    True when that lower bound exceeds the claim: then, at the audit's confidence, the
    mechanism is not as private as it says. False is evidence, not proof.
    """

    claimed_epsilon: float
    delta: float
    result: AuditResult
    x: float
    x_prime: float

    @property
    def refuted(self) -> bool:
        return self.result.epsilon_lower_bound > self.claimed_epsilon


def audit_claim(mechanism: AdditiveMechanism, *, rng: np.random.Generator,
                samples: int = 10**6, confidence: float = 0.95, delta: float | None = None,
                noise_factor: float = 1.0,
                progress: Callable[[float], object] | None = None) -> ClaimAudit:
    """Audit a mechanism's privacy claim on its spec's worst-case neighbours.

    Samples the mechanism ``samples`` times on each of the neighbouring true values its spec
    names, counts the threshold events the spec fixes from its parameters, and bounds epsilon
    from below (``dpcore.audit``). Each pair of neighbours gets an equal share of
    1 − ``confidence`` (Bonferroni), so the best bound over all pairs holds at ``confidence``.

    Parameters
    ----------
    mechanism : AdditiveMechanism
        A mechanism of the catalogue.
    rng : numpy.random.Generator
    samples : int
        Samples per side and per pair of neighbours.
    confidence : float
        Confidence of the lower bound.
    delta : float, optional
        The delta at which the claim is read: by default the mechanism's own (0 for pure DP;
        1e-3 for a zCDP claim, read as (epsilon, delta) by ``epsilon_for_delta``).
    noise_factor : float
        Multiply the noise by this factor while keeping the claim of the honest mechanism:
        0.7 plants the bug of too little noise, which a good audit catches.
    progress : callable, optional
        Called as sampling goes on with the share of all the samples drawn so far (every
        pair of neighbours, both sides), rising to 1.0; the result does not depend on it.
    """
    spec = spec_of(mechanism)
    rng = check_rng(rng)
    samples = check_int("samples", samples, minimum=1)
    confidence = check_probability_open("confidence", confidence)
    factor = check_positive("noise_factor", noise_factor)
    progress = check_progress(progress)
    if delta is None:
        privacy = mechanism.privacy
        delta = (0.0 if isinstance(privacy, PureDP) else privacy.delta
                 if isinstance(privacy, ApproxDP) else _ZCDP_AUDIT_DELTA)
    delta = check_delta("delta", delta)
    claimed = mechanism.epsilon_for_delta(delta)
    sampled = mechanism if factor == 1.0 else mechanism._noise_scaled(factor)

    def release(data, gen, n):
        return sampled.sample(data, rng=gen, trials=n)

    cases: tuple[AuditCase, ...] = spec.worst_case(mechanism)
    # (one pair: the confidence itself, which 1 − (1 − c) would round to 0 for a tiny c)
    each = confidence if len(cases) == 1 else 1 - (1 - confidence) / len(cases)
    best: tuple[AuditResult, AuditCase] | None = None
    for i, case in enumerate(cases):
        result = audit_mechanism(release, np.float64(case.x), np.float64(case.x_prime),
                                 events=threshold_events(case.thresholds), samples=samples,
                                 delta=delta, confidence=each, rng=rng,
                                 progress=lambda share, i=i: progress((i + share) / len(cases)))
        if best is None or result.epsilon_lower_bound > best[0].epsilon_lower_bound:
            best = (result, case)
    result, case = best
    if not math.isfinite(claimed):  # pragma: no cover (claims are finite by construction)
        raise ValueError("the mechanism claims no finite epsilon at this delta")
    return ClaimAudit(claimed, delta, result, case.x, case.x_prime)
