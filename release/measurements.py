"""Each noised part of a plan query as the OpenDP 0.16 measurement with the plan's noise scale.

Laplace → ``make_laplace`` on floats, geometric → ``make_laplace`` on 64-bit integers (the
discrete Laplace), Gaussian → ``make_gaussian`` on floats, discrete Gaussian → ``make_gaussian``
on integers, clamped Laplace → Laplace then clamping (post-processing), selection →
``make_noisy_max`` / ``make_noisy_top_k``, quantiles → OpenDP's quantile scores
(``make_quantile_score_candidates``) and a noisy arg-min, partition selection →
``make_laplace_threshold`` / ``make_gaussian_threshold``. Each map is read at the part's
sensitivity and checked against the plan's figure before anything is drawn. OpenDP's
samplers are exact, floating-point safe and draw from the operating system's entropy: they
are never seeded.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from dpcore.accounting import Composable, ThresholdLoss, noise_law, privacy_losses
from dpcore.contributions import ContributionBounds, count_sensitivity
from dpcore.measures import ZCDP, PureDP
from dpcore.mechanisms import AdditiveMechanism, spec_of
from dpcore.quantiles import quantile_fraction
from dpcore.quantiles import quantile_scores as dpcore_quantile_scores
from plan.build import Built, Loss, NoisyMax, Part, PartitionThreshold
from plan.kinds.synthetic import MarginalSynthesis
from release.certified import OPENDP_VERSION, Certified, _core, _prelude, dp  # noqa: F401 (its names)
from release.errors import MapCheckFailed, ReleaseRefused, Unsupported
from release.synthesis import certified_loss, certify_synthesis

__all__ = ["OPENDP_VERSION", "Certified", "Certifier", "CERTIFIERS", "certifier_of", "certify",
           "certify_max_rows", "planned_losses", "certified_from_plan", "quantile_scores",
           "alpha_fraction"]

_FLOAT = "float"
_INT = "i64"


def _scalar_or_vector(kind: str, size: int | None, norm: str) -> tuple[Any, Any]:
    """(domain, metric) of a number (``size`` None) or a vector of ``kind`` values."""
    atom = dp.atom_domain(T=_FLOAT, nan=False) if kind == _FLOAT else dp.atom_domain(T=_INT)
    if size is None:
        metric_type = _INT if kind == _INT and norm == "L1" else _FLOAT
        return atom, dp.absolute_distance(T=metric_type)
    if norm == "L1":
        return dp.vector_domain(atom), dp.l1_distance(T=kind)
    return dp.vector_domain(atom), dp.l2_distance(T=_FLOAT)


def _check(query_id: str, part: Part, what: str, opendp_value: float,
           planned_value: float) -> None:
    if not opendp_value <= planned_value:
        raise MapCheckFailed(
            f"query {query_id!r} ({part.name}): OpenDP's privacy map gives {what} = "
            f"{opendp_value!r}, above the plan's {planned_value!r}; nothing was drawn. Plan "
            "it again (a slightly smaller budget, or another mechanism) and release then")


#: OpenDP rounds each step of a map outward, so at the plan's very scale its figure can read
#: a few ulps above the plan's (itself rounded up from the exact loss). The scale handed to
#: OpenDP is then raised ulp by ulp — at most this many, a relative change below 1e-14 —
#: until OpenDP's map is at most the plan's figure. More would be a real mismatch: refused.
_MAX_ULPS = 64


def _fitted(make: Callable[[float], Any], scale: float, d_in: Any,
            read: Callable[[Any], float], planned: float) -> tuple[Any, float, float]:
    """(measurement, its figure at ``d_in``, scale): the plan's scale, or the nearest scale
    above it (within :data:`_MAX_ULPS` ulps) whose OpenDP figure is at most ``planned``."""
    measurement = make(scale)
    value = read(measurement.map(d_in))
    for _ in range(_MAX_ULPS):
        if value <= planned or value > planned * (1 + 2.0**-40):
            break
        scale = math.nextafter(scale, math.inf)
        measurement = make(scale)
        value = read(measurement.map(d_in))
    return measurement, value, scale


def _up(value: float, exact: Fraction) -> float:
    while Fraction(value) < exact:
        value = math.nextafter(value, math.inf)
    return value


def _additive(query_id: str, part: Part) -> Certified:
    """A catalogue mechanism as the OpenDP measurement its spec names
    (``MechanismSpec.release``), on the part's whole numbers or floats, one number or a
    vector of ``part.size`` cells."""
    mechanism: AdditiveMechanism = part.mechanism
    spec = spec_of(mechanism)
    recipe = spec.release
    if recipe is None:
        raise Unsupported(f"query {query_id!r}: {spec.unreleasable}")
    if spec.integer_only and not part.integer:
        raise Unsupported(f"query {query_id!r}: the {spec.label} mechanism adds whole-number "
                          "noise and needs whole-number answers, but this statistic is not "
                          "an integer (bounds that are not whole): use laplace or gaussian")
    value_type = _INT if spec.integer_only else _FLOAT
    domain, metric = _scalar_or_vector(value_type, part.size, spec.sensitivity_norm)
    d_in: Any = part.sensitivity
    if value_type == _INT and spec.sensitivity_norm == "L1":
        d_in = int(part.sensitivity)
    constructor = getattr(dp.m, recipe.opendp)
    post = None
    note = ""
    if recipe.certifies == "epsilon":
        measurement, epsilon, scale = _fitted(
            lambda b: constructor(domain, metric, scale=b), mechanism.scale, d_in,
            float, mechanism.privacy.epsilon)
        _check(query_id, part, "ε", epsilon, mechanism.privacy.epsilon)
        certified = Loss(epsilon=epsilon)
        planned = Loss(epsilon=mechanism.privacy.epsilon)
    else:  # OpenDP certifies it in zCDP
        measurement, rho, scale = _fitted(
            lambda b: constructor(domain, metric, scale=b), mechanism.scale, d_in,
            float, mechanism.zcdp.rho)
        _check(query_id, part, "ρ", rho, mechanism.zcdp.rho)
        read_at = part.loss.read_at
        planned = part.loss
        if part.loss.epsilon is not None:  # planned as (ε, δ) by the exact (analytic) profile
            read_at = part.loss.delta
            note = (f"planned as (ε = {part.loss.epsilon!r}, δ = {part.loss.delta!r}) by the "
                    f"mechanism's exact profile; OpenDP certifies ρ = {rho!r}, accounted at "
                    f"δ = {read_at!r}")
        certified = Loss(rho=rho, read_at=read_at)
    if recipe.clamp:
        post = functools.partial(_clamp, low=mechanism.lower, high=mechanism.upper)
    domain_words = "integers" if value_type == _INT else "floats"
    return Certified(part, measurement, d_in, certified, planned, scale,
                     value_type == _INT, post, note,
                     noise_law(type(mechanism).pld_noise, scale,
                               max(float(d_in), float(part.sensitivity),
                                   float(mechanism.sensitivity)),
                               vector=part.size is not None, epsilon=certified.epsilon,
                               rho=certified.rho),
                     described=spec.kind,
                     opendp=f"{recipe.opendp} on {domain_words}"
                     + (", then clamped" if recipe.clamp else ""))


def _clamp(values: Any, *, low: float, high: float) -> Any:
    if isinstance(values, list):
        return [min(max(v, low), high) for v in values]
    return min(max(values, low), high)


@functools.lru_cache(maxsize=256)
def alpha_fraction(q: float) -> tuple[int, int]:
    """(num, den): the fraction OpenDP 0.16 reads the quantile level ``q`` as, asked from
    OpenDP itself (its scores on one value 0 with candidates −1 and 1 are num and den − num).
    """
    scorer = dp.t.make_quantile_score_candidates(
        dp.vector_domain(dp.atom_domain(T=_FLOAT, nan=False)), dp.symmetric_distance(),
        [-1.0, 1.0], alpha=q)
    num, rest = scorer([0.0])
    return int(num), int(num) + int(rest)


@functools.lru_cache(maxsize=256)
def _score_sensitivity(q: float, max_rows: int) -> int:
    """OpenDP's stability map of its quantile scores at ``max_rows`` rows per person."""
    scorer = dp.t.make_quantile_score_candidates(
        dp.vector_domain(dp.atom_domain(T=_FLOAT, nan=False)), dp.symmetric_distance(),
        [-1.0, 1.0], alpha=q)
    return int(scorer.map(max_rows))


def quantile_scores(below: Sequence[int], equal: Sequence[int], total: int,
                    q: float) -> list[int]:
    """OpenDP 0.16's score of each candidate, |(den − num)·#{x < c} − num·#{x > c}| with
    q = num/den, from the counts below and equal to each candidate (the engine's rank cells)
    and the number of values: :func:`dpcore.quantiles.quantile_scores`, the very scores the
    Quantiles page computes its law from (tested equal to ``make_quantile_score_candidates``
    on the rows)."""
    return [int(s) for s in dpcore_quantile_scores(below, equal, total, q)]


def _noisy_max(query_id: str, part: Part, quantile: float | None,
               max_rows: int) -> Certified:
    nm: NoisyMax = part.mechanism
    if nm.noise == "laplace":
        raise Unsupported(
            f"query {query_id!r}: report noisy max with Laplace noise has no OpenDP 0.16 "
            "measurement; use permute-and-flip (exponential noise), which OpenDP certifies as "
            "ε-DP and which picks the best at least as often at the same ε")
    if nm.noise == "gumbel" and nm.measure == "pure":
        raise Unsupported(
            f"query {query_id!r}: OpenDP 0.16 certifies the exponential mechanism (Gumbel "
            "noise) in zCDP only (ρ = ε²/8): plan it under zCDP (measure zcdp, ρ), or use "
            "permute-and-flip (exponential noise), which OpenDP certifies as ε-DP")
    measure = dp.max_divergence() if nm.noise == "exponential" else (
        dp.zero_concentrated_divergence())
    if quantile is None:
        domain = dp.vector_domain(dp.atom_domain(T=_INT))
        metric = dp.linf_distance(T=_INT, monotonic=nm.monotonic)
        d_in: Any = int(nm.sensitivity)
        scale = nm.scale
    else:
        # OpenDP's scores are den times the rank errors: scale and sensitivity in the same
        # units, the scale rounded up so that the ratio never grows. The page's law reads q
        # as dpcore does: were OpenDP to read it otherwise, what it shows would not be this.
        if quantile_fraction(quantile) != alpha_fraction(quantile):
            raise MapCheckFailed(
                f"query {query_id!r}: OpenDP reads the level {quantile!r} as "
                f"{alpha_fraction(quantile)}, dpcore as {quantile_fraction(quantile)}: the "
                "released quantile would not follow the law the page shows; nothing was drawn")
        _, den = alpha_fraction(quantile)
        domain = dp.vector_domain(dp.atom_domain(T="u64"))
        metric = dp.linf_distance(T="u64")
        d_in = _score_sensitivity(quantile, max_rows)
        scale = _up(den * nm.scale, den * Fraction(nm.scale))

    def make(b: float) -> Any:
        if nm.k == 1:
            return dp.m.make_noisy_max(domain, metric, measure, scale=b, negate=nm.negate)
        return dp.m.make_noisy_top_k(domain, metric, measure, k=nm.k, scale=b,
                                     negate=nm.negate)

    if nm.noise == "exponential" and nm.measure == "zcdp":
        measurement, rho, scale = _fitted(make, scale, d_in,
                                          lambda e: PureDP(e).to_zcdp().rho, nm.privacy.rho)
        _check(query_id, part, "ρ = ε²/2", rho, nm.privacy.rho)
        certified = Loss(epsilon=measurement.map(d_in))
    elif nm.noise == "exponential":
        measurement, value, scale = _fitted(make, scale, d_in, float, nm.privacy.epsilon)
        _check(query_id, part, "ε", value, nm.privacy.epsilon)
        certified = Loss(epsilon=value)
    else:
        measurement, value, scale = _fitted(make, scale, d_in, float, nm.privacy.rho)
        _check(query_id, part, "ρ", value, nm.privacy.rho)
        certified = Loss(rho=value, read_at=part.loss.read_at)
    return Certified(part, measurement, d_in, certified, part.loss, scale, True,
                     described=nm.described, opendp=nm.opendp_constructor)


def _threshold(query_id: str, part: Part, planned_delta: float) -> Certified:
    pt: PartitionThreshold = part.mechanism
    r, k = pt.max_rows, pt.max_groups
    if pt.noise == "discrete_laplace":
        domain = dp.map_domain(dp.atom_domain(T=str), dp.atom_domain(T=_INT))
        metric = dp.l01inf_distance(dp.absolute_distance(T=_INT))
        d_in: Any = (k, k * r, r)
        threshold: Any = int(pt.threshold)
        integer = True
    else:
        domain = dp.map_domain(dp.atom_domain(T=str), dp.atom_domain(T=_FLOAT, nan=False))
        d_in = (k, float(k * r), float(r))
        threshold = float(pt.threshold)
        integer = False
    if pt.noise == "gaussian":
        metric = dp.l02inf_distance(dp.absolute_distance(T=_FLOAT))
        l2 = count_sensitivity(ContributionBounds(r, k)).l2
        d_in = (k, l2, float(r))
        measurement = dp.m.make_gaussian_threshold(domain, metric, scale=pt.scale,
                                                   threshold=threshold)
    else:
        if pt.noise == "laplace":
            metric = dp.l01inf_distance(dp.absolute_distance(T=_FLOAT))
        measurement = dp.m.make_laplace_threshold(domain, metric, scale=pt.scale,
                                                  threshold=threshold)
    loss, delta = measurement.map(d_in)
    planned_measure = pt.privacy.measure
    if isinstance(planned_measure, ZCDP):
        _check(query_id, part, "ρ", loss, planned_measure.rho)
    else:
        _check(query_id, part, "ε", loss, planned_measure.epsilon)
    _check(query_id, part, "δ", delta, planned_delta)
    # OpenDP 0.16 counts P(Z > T − r) for integer counts, one step short (opendp/opendp#2922):
    # dpcore.partition counts the mass at T − r too. The larger is recorded.
    recorded = max(delta, pt.privacy.delta)
    note = ""
    if recorded > delta:
        note = (f"δ recorded as dpcore.partition's {recorded!r}, not OpenDP's {delta!r}, which "
                "leaves out the point mass at T − r (opendp/opendp#2922)")
    if isinstance(planned_measure, ZCDP):
        certified = Loss(rho=loss, delta=recorded, read_at=part.loss.read_at)
    else:
        certified = Loss(epsilon=loss, delta=recorded)
    # The counts' noise at OpenDP's scale (dpcore.accounting.partition_losses), read at no
    # less than OpenDP's figure for it implies, and, outright, the threshold's recorded δ
    # (the larger of OpenDP's and dpcore's).
    counts, _ = pt.losses()
    law = noise_law(counts.noise, counts.scale, counts.sensitivity,
                    epsilon=certified.epsilon, rho=certified.rho)
    return Certified(part, measurement, d_in, certified, part.loss, pt.scale, integer,
                     note=note, noise_law=(*law, ThresholdLoss(recorded)) if law else (),
                     described=pt.described, opendp=pt.opendp_constructor)


def certify_max_rows(part: Part) -> Certified:
    """One draw of a DP quantile of rows per person (``plan.build.max_rows_draw``) as its
    OpenDP measurement, map checked: each person adds one value, their number of rows."""
    return _noisy_max("max-rows", part, part.quantile, part.score_rows)


def _synthesis(built: Built, part: Part) -> Certified:
    spec: MarginalSynthesis = part.mechanism
    return replace(certify_synthesis(built.query.id, part), described=spec.described,
                   opendp=spec.opendp_constructor)


def _synthesis_from_plan(part: Part) -> Loss:
    return certified_loss(part)


@dataclass(frozen=True)
class Certifier:
    """How a release draws one type of part: ``certify`` builds its OpenDP measurement for a
    part of a built query, map checked; ``from_plan``, for a type whose privacy only OpenDP's
    map states (a synthetic table), reads that certificate from the plan alone (None: its
    mechanism states its own losses)."""

    certify: Callable[[Built, Part], Certified]
    from_plan: Callable[[Part], Loss] | None = None


#: The certifier of each part mechanism type (a catalogue mechanism's class is found by its
#: base class), as the engine registers its compilers: a new type of part is one entry here.
CERTIFIERS: dict[type, Certifier] = {
    AdditiveMechanism: Certifier(lambda built, part: _additive(built.query.id, part)),
    NoisyMax: Certifier(lambda built, part: _noisy_max(built.query.id, part, part.quantile,
                                                       part.score_rows)),
    PartitionThreshold: Certifier(lambda built, part: _threshold(
        built.query.id, part, built.query.threshold.delta)),
    MarginalSynthesis: Certifier(_synthesis, _synthesis_from_plan),
}


def certifier_of(part: Part) -> Certifier | None:
    """The certifier registered for the type of ``part``'s mechanism (or one of its bases),
    None when there is none."""
    for cls in type(part.mechanism).__mro__:
        if cls in CERTIFIERS:
            return CERTIFIERS[cls]
    return None


def certified_from_plan(part: Part) -> Loss | None:
    """What OpenDP's map certifies for ``part``, read from the plan alone, when only that map
    states its privacy (a synthetic table); None for a part whose mechanism states its own.
    Raises :class:`~release.errors.ReleaseRefused` when OpenDP refuses the measurement."""
    certifier = certifier_of(part)
    if certifier is None or certifier.from_plan is None:
        return None
    return certifier.from_plan(part)


def planned_losses(part: Part) -> tuple[Composable, ...]:
    """What the accountants compose for ``part`` before anything is drawn: what its mechanism
    states (``dpcore.accounting.privacy_losses``: a catalogue mechanism's noise law or
    guarantee, report noisy max's guarantee, partition selection's noise and threshold δ),
    or the certificate OpenDP's map gives from the plan alone (a synthetic table: the figure
    the ledger records; the plan's own figure when OpenDP refuses the measurement — the
    release is then refused, and the page says why)."""
    try:
        certified = certified_from_plan(part)
    except ReleaseRefused:
        return part.loss.measures()
    if certified is not None:
        return certified.measures()
    return privacy_losses([part.mechanism])


def certify(built: Built) -> tuple[Certified, ...]:
    """Every part of ``built`` as its OpenDP measurement, each map checked.

    What each part needs is on the part (its mechanism, sensitivity, size, whole numbers or
    not, a quantile's level), and its type's certifier (:data:`CERTIFIERS`) builds it:
    nothing here asks which kind of query it belongs to. Raises
    :class:`~release.errors.Unsupported` or :class:`~release.errors.MapCheckFailed` before
    any measurement is invoked.
    """
    out = []
    for part in built.parts:
        certifier = certifier_of(part)
        if certifier is None:  # an unknown part is refused, never drawn as another
            raise Unsupported(f"query {built.query.id!r}: no OpenDP measurement for the part "
                              f"{part.name!r} ({type(part.mechanism).__name__})")
        out.append(certifier.certify(built, part))
    return tuple(out)
