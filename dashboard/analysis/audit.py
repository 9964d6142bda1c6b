"""Check the claim: empirical audits of the mechanism a page has set up, honest or broken.

What each audit samples (worst-case neighbours, fixed events), the claim it reads, and the
sentences that say what the lower bound does and does not show. No widgets here.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dashboard.analysis import statistics as stats
from dashboard.analysis.selection_privacy import privacy_of
from dpcore.audit import AuditResult, audit_mechanism, category_events
from dpcore.measures import ApproxDP
from dpcore.mechanisms.base import AdditiveMechanism
from dpcore.mechanisms.catalogue import audit_claim, spec_of
from dpcore.safe_rounding import lower, upper
from dpcore.selection import noisy_max_privacy, noisy_max_scale, noisy_top_k
from plan.kinds import KINDS

#: Samples per side (and per pair of neighbours) of one audit on Noisy statistics: one click
#: takes about a second for the additive mechanisms (bench/ measures it; see the README).
STATISTICS_SAMPLES = 4 * 10**6
#: Samples per side and pair on Selection: five noisy scores per sample (and k rounds when
#: peeling), so fewer samples for about the same time.
SELECTION_SAMPLES = 10**6
#: The confidence of every lower bound shown.
CONFIDENCE = 0.95
#: The planted bug: the broken copy adds this times the noise, keeping the honest claim.
BROKEN_FACTOR = 0.7
#: An (ε, δ) claim with δ below this is one the audit has little power against: the events
#: that would show a violation are about as rare as δ (the catalogue reads zCDP at 1e-3).
SMALL_DELTA = 1e-3
#: Candidates in the worst-case score vectors of a selection audit.
SELECTION_CANDIDATES = 5

_RNG_OFFSET = 10  # the audits' own random streams, apart from every page's


def audit_stream(seed: int, *, broken: bool, part: int = 0) -> list[int]:
    """The random stream of one audit: ``[seed, 10, broken, part]`` (part: the mean's sum 0
    and count 1)."""
    return [seed, _RNG_OFFSET, int(broken), part]


@dataclass(frozen=True)
class AuditOutcome:
    """One audit as the panel shows it: the claim, the lower bound and how it was found."""

    title: str
    claimed_epsilon: float
    delta: float
    result: AuditResult
    neighbours: str
    events: str
    noise_factor: float
    seconds: float
    part: str = ""

    @property
    def row(self) -> str:
        """Its row in the chart: which part (for the mean) and honest or broken."""
        which = (f"broken copy ({self.noise_factor:g} × noise)" if self.broken
                 else "as claimed")
        return f"{self.part}: {which}" if self.part else which.capitalize()

    @property
    def broken(self) -> bool:
        return self.noise_factor != 1.0

    @property
    def caught(self) -> bool:
        """The lower bound exceeds the claim: at the confidence, the claim is false."""
        return self.result.epsilon_lower_bound > self.claimed_epsilon


# --------------------------------------------------------------------------------------------
# Noisy statistics: the mechanism(s) of the page's release plan


@dataclass(frozen=True)
class AuditTarget:
    """A catalogue mechanism to audit and what to call it on the page."""

    title: str
    mechanism: AdditiveMechanism
    part: str = ""

    @property
    def key(self) -> str:
        """What identifies its audit in a cache: the class and every parameter it holds."""
        fields = sorted((name, repr(value)) for name, value in vars(self.mechanism).items())
        return f"{type(self.mechanism).__name__}{fields}"


def statistics_targets(frame: pd.DataFrame, spec: stats.QuerySpec, choice, *,
                       answer_range: tuple[float, float] | None,
                       sum_share: float) -> tuple[AuditTarget, ...]:
    """The mechanism(s) the page's release uses, as ``make_plan`` builds them.

    A count, sum or histogram has one. A mean is a noisy sum over a noisy count: each part is
    audited against its own share of the budget; their composition is a theorem, not audited.
    """
    plan = stats.make_plan(frame, spec, choice, answer_range=answer_range, sum_share=sum_share)
    if plan.closed_form:
        return (AuditTarget(choice.label(), plan.release),)
    if KINDS[spec.query].split_by_share:
        sum_part, count_part = plan.parts
        return (AuditTarget(f"the noisy sum ({sum_share:.0%} of the budget: "
                            f"{sum_part.privacy.describe()})", sum_part, "Sum"),
                AuditTarget(f"the noisy count ({1 - sum_share:.0%} of the budget: "
                            f"{count_part.privacy.describe()})", count_part, "Count"))
    return tuple(AuditTarget(f"the noisy {name} (its share of the budget: "
                             f"{mechanism.privacy.describe()})", mechanism, name.capitalize())
                 for name, mechanism in zip(plan.part_names, plan.parts, strict=True))


def _threshold_text(thresholds: tuple[float, ...]) -> str:
    return (f"{2 * len(thresholds)} events y > t and y < t, for {len(thresholds)} thresholds t "
            f"from {thresholds[0]:.4g} to {thresholds[-1]:.4g}")


def audit_target(target: AuditTarget, *, seed: int, broken: bool, part: int = 0,
                 samples: int = STATISTICS_SAMPLES,
                 progress: Callable[[float], object] | None = None) -> AuditOutcome:
    """``audit_claim`` on the target's worst-case neighbours (from its spec), from the stream
    :func:`audit_stream`; the broken copy has ``BROKEN_FACTOR`` times the noise."""
    mechanism = target.mechanism
    factor = BROKEN_FACTOR if broken else 1.0
    started = time.perf_counter()
    audit = audit_claim(mechanism, rng=np.random.default_rng(audit_stream(seed, broken=broken,
                                                                          part=part)),
                        samples=samples, confidence=CONFIDENCE, noise_factor=factor,
                        progress=progress)
    seconds = time.perf_counter() - started
    cases = spec_of(mechanism).worst_case(mechanism)
    pairs = "; ".join(f"{c.x:.6g} vs {c.x_prime:.6g}" for c in cases)
    events = "; ".join(_threshold_text(c.thresholds) for c in cases)
    return AuditOutcome(target.title, audit.claimed_epsilon, audit.delta, audit.result,
                        f"true answers {pairs} (one person apart: the sensitivity)", events,
                        factor, seconds, target.part)


# --------------------------------------------------------------------------------------------
# Selection: report noisy max / noisy top-k on worst-case score vectors


@dataclass(frozen=True)
class SelectionSetting:
    """What the Selection page's privacy claim depends on."""

    noise: str
    measure: str
    level: float
    sensitivity: float
    monotonic: bool
    k: int

    @property
    def scale(self) -> float:
        """The noise scale the page uses (``noisy_max_scale`` at the chosen level)."""
        return noisy_max_scale(privacy_of(self.measure, self.level),
                               sensitivity=self.sensitivity, noise=self.noise,
                               monotonic=self.monotonic, k=self.k)

    @property
    def claimed_epsilon(self) -> float:
        """The pure ε its privacy map gives at that scale (under zCDP too: report noisy max is
        also ε-DP, and that claim is stronger than ρ read as (ε, δ))."""
        return noisy_max_privacy(self.scale, sensitivity=self.sensitivity, noise=self.noise,
                                 monotonic=self.monotonic, k=self.k, measure="pure").epsilon


def selection_pairs(setting: SelectionSetting) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """Worst-case neighbouring score vectors for candidate 0 (tests/dpcore/test_selection_audit.py).

    Non-monotonic: every score may move by Δ in either direction, so candidate 0 falls by Δ
    while the others rise by Δ. Monotonic: all move the same way, so candidate 0 stays while
    the others rise, or falls while they stay.
    """
    d, s = max(SELECTION_CANDIDATES, setting.k + 1), setting.sensitivity
    zeros, ups = np.zeros(d), np.r_[0.0, np.full(d - 1, s)]
    if setting.monotonic:
        return ((np.r_[s, np.zeros(d - 1)], zeros), (zeros, ups))
    return ((np.r_[s, np.zeros(d - 1)], ups), (zeros, np.r_[-s, np.full(d - 1, s)]))


def _vector_text(v: np.ndarray) -> str:
    return "(" + ", ".join(f"{x:g}" for x in v) + ")"


def audit_selection(setting: SelectionSetting, *, seed: int, broken: bool,
                    samples: int = SELECTION_SAMPLES,
                    progress: Callable[[float], object] | None = None) -> AuditOutcome:
    """Audit the selection's claim on :func:`selection_pairs`, events {first pick == i}.

    Each pair gets an equal share of 1 − confidence (Bonferroni), as ``audit_claim`` does;
    the best bound over the pairs holds at :data:`CONFIDENCE`. Claims are pure ε, δ = 0.
    """
    factor = BROKEN_FACTOR if broken else 1.0
    scale = setting.scale * factor
    claimed = setting.claimed_epsilon
    pairs = selection_pairs(setting)
    d = pairs[0][0].size
    rng = np.random.default_rng(audit_stream(seed, broken=broken))
    report = progress if progress is not None else (lambda share: None)

    def release(scores, gen, n):
        return noisy_top_k(scores, setting.k, scale=scale, noise=setting.noise, trials=n,
                           rng=gen)

    each = 1 - (1 - CONFIDENCE) / len(pairs)
    started = time.perf_counter()
    best: tuple[AuditResult, int] | None = None
    for i, (x, x_prime) in enumerate(pairs):
        result = audit_mechanism(release, x, x_prime, events=category_events(d),
                                 samples=samples, confidence=each, rng=rng,
                                 progress=lambda share, i=i: report((i + share) / len(pairs)))
        if best is None or result.epsilon_lower_bound > best[0].epsilon_lower_bound:
            best = (result, i)
    seconds = time.perf_counter() - started
    result, i = best
    x, x_prime = pairs[i]
    noise = {"laplace": "Laplace", "exponential": "exponential", "gumbel": "Gumbel"}
    title = (f"report noisy {'top-' + str(setting.k) if setting.k > 1 else 'max'}, "
             f"{noise.get(setting.noise, setting.noise)} noise")
    pair_text = " and ".join(f"{_vector_text(a)} vs {_vector_text(b)}" for a, b in pairs)
    return AuditOutcome(
        title, claimed, 0.0, result,
        f"scores {pair_text} (each score moves by at most Δ = {setting.sensitivity:g}); the "
        f"bound came from {_vector_text(x)} vs {_vector_text(x_prime)}",
        f"{d} events: the first pick is candidate i, for each of the {d} candidates",
        factor, seconds)


# --------------------------------------------------------------------------------------------
# What the panel says


def shown_figures(bound: float, claim: float) -> tuple[str, str]:
    """(bound rounded down, claim rounded up), with digits enough to keep them apart when
    they differ: "1 > 1" would say nothing."""
    digits = 3
    while digits < 8:
        shown_bound, shown_claim = lower(bound, digits), upper(claim, digits)
        if (bound > claim) == (float(shown_bound) > float(shown_claim)) or bound == claim:
            break
        digits += 1
    return shown_bound, shown_claim


def claim_text(outcome: AuditOutcome) -> str:
    """The claim as audited: ε, or (ε, δ)."""
    _, claim = shown_figures(outcome.result.epsilon_lower_bound, outcome.claimed_epsilon)
    return f"ε = {claim}" + (f" at δ = {outcome.delta:g}" if outcome.delta > 0 else "")


def verdict(outcome: AuditOutcome) -> str:
    """One sentence: what the audit found, against the claim."""
    bound, claim = shown_figures(outcome.result.epsilon_lower_bound, outcome.claimed_epsilon)
    level = f"{CONFIDENCE:.0%} confidence"
    if outcome.broken:
        if outcome.caught:
            return (f"Broken copy ({outcome.noise_factor:g} × the noise): the audit found "
                    f"ε ≥ {bound} > claimed ε = {claim} ({level}): **caught**.")
        return (f"Broken copy ({outcome.noise_factor:g} × the noise): the audit found "
                f"ε ≥ {bound}, not above the claimed ε = {claim}: **not caught** — this audit "
                "has too little power here to see the bug (see below).")
    if outcome.caught:
        return (f"The audit found ε ≥ {bound} > claimed ε = {claim} ({level}): the mechanism "
                "is **less private than it claims**.")
    return (f"The audit found ε ≥ {bound} ({level}), at or below the claimed ε = {claim}: "
            "no violation found. That is evidence, not proof: only these neighbours and events "
            "were tried.")


def power_notes(outcome: AuditOutcome, *, measure: str | None = None,
                mechanism: AdditiveMechanism | None = None, k: int = 1) -> list[str]:
    """When the audit has little power, or reads a converted claim: say so."""
    notes = []
    privacy = mechanism.privacy if mechanism is not None else None
    if isinstance(privacy, ApproxDP) and 0 < outcome.delta < SMALL_DELTA:
        notes.append(f"δ = {outcome.delta:g} is tiny: the events that would show a violation "
                     "near the claimed ε are about as rare as δ, too rare for this many samples. "
                     "The bound can sit well below the claim even for a broken mechanism: the "
                     "audit has little power here (try δ ≥ 0.001 to see it bite).")
    elif mechanism is not None and privacy is not None and not isinstance(privacy, ApproxDP) \
            and outcome.delta > 0:
        notes.append(f"A zCDP claim (ρ) is audited as the (ε, δ) it implies at δ = "
                     f"{outcome.delta:g} (Canonne, Kamath & Steinke 2020).")
    if measure == "zcdp":
        notes.append("A zCDP claim (ρ) is audited through the pure ε the same noise scale "
                     "gives (report noisy max is also ε-DP): the stronger of the two claims.")
    if k > 1:
        notes.append(f"With k = {k} picks the claim covers all {k}, but the events read only the "
                     f"first pick, which spends one k-th of the budget: the bound cannot get "
                     "near the claim, and a broken copy will usually go unnoticed. Little "
                     "power here: set k = 1 to audit report noisy max itself.")
    return notes


def details_table(outcomes: list[AuditOutcome]) -> pd.DataFrame:
    """One row per audit: the claim, the bound, the event behind it, samples, confidence, time."""
    rows = []
    for o in outcomes:
        bound, claim = shown_figures(o.result.epsilon_lower_bound, o.claimed_epsilon)
        rows.append({
            "Audited": o.title + (f" — broken copy ({o.noise_factor:g} × noise)"
                                  if o.broken else ""),
            "Claimed ε": claim + (f" (δ = {o.delta:g})" if o.delta > 0 else ""),
            "Lower bound on ε": f"≥ {bound}",
            "Caught": "yes" if o.caught else "no",
            "Best event": o.result.event,
            "Event frequency (likelier side, other)": f"{o.result.p_hat:.4g}, {o.result.q_hat:.4g}",
            "Samples per side": f"{o.result.samples:,}",
            "Confidence": f"{CONFIDENCE:.0%} (all events and pairs together)",
            "Seconds": f"{o.seconds:.1f}",
        })
    return pd.DataFrame(rows)


def seconds_text(outcomes: list[AuditOutcome]) -> str:
    total = math.fsum(o.seconds for o in outcomes)
    return f"{total:.1f} s"
