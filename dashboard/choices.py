"""What a user can choose, read off the catalogue of mechanisms (no widgets here).

The privacy measures, the mechanisms each measure offers, the grids of ε, ρ and δ, and
:class:`PrivacyChoice`, the picked measure, mechanism and budget, which builds its mechanism
from the kind's spec. The widget module (``controls``) draws these; analysis reads them.
Nothing here names a mechanism kind: a kind added to ``dpcore.mechanisms.CATALOGUE`` is
offered wherever its spec fits.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dpcore import safe_rounding
from dpcore.mechanisms import CATALOGUE, AdditiveMechanism, MechanismSpec, make_mechanism
from dpcore.mechanisms.catalogue import spec_for

# A log-spaced grid (the E12 series) from 0.01 to 10: the slider moves in equal ratios.
_E12 = (1.0, 1.2, 1.5, 1.8, 2.2, 2.7, 3.3, 3.9, 4.7, 5.6, 6.8, 8.2)
EPSILON_GRID: tuple[float, ...] = tuple(
    [round(m * 10.0**e, 6) for e in (-2, -1, 0) for m in _E12] + [10.0]
)
# ρ = ε²/2 for each ε on the grid, so a pure-DP ε and its zCDP equivalent line up (ε = 1 ↔ ρ = 0.5).
RHO_GRID: tuple[float, ...] = tuple(float(f"{e * e / 2:.6g}") for e in EPSILON_GRID)
DELTA_OPTIONS: tuple[float, ...] = (1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10)
TRIAL_OPTIONS: tuple[int, ...] = (1_000, 10_000, 100_000, 1_000_000)

MEASURES = {
    "pure": "Pure DP (ε)",
    "approx": "Approximate DP (ε, δ)",
    "zcdp": "zCDP (ρ)",
}
#: Every mechanism of the catalogue with its name for users, in the catalogue's order.
MECHANISMS: dict[str, str] = {kind: spec.label for kind, spec in CATALOGUE.items()}
#: The kinds that need no answer range: the ones a histogram, a table or a mean can use.
RANGE_FREE: tuple[str, ...] = tuple(k for k, s in CATALOGUE.items() if not s.needs_range)
#: The kind a page starts with: the catalogue's first (pure DP, real-valued).
DEFAULT_KIND: str = next(iter(CATALOGUE))
#: The kind a page of counts starts with: the first pure-DP whole-number kind.
WHOLE_NUMBER_KIND: str = next(k for k, s in CATALOGUE.items()
                              if s.integer_only and "pure" in s.budgets)
#: The kind compared with the default at the same ε when δ is allowed: the first kind that
#: needs approximate DP when calibrated from ε.
APPROX_KIND: str = next(k for k, s in CATALOGUE.items() if "delta" in s.epsilon_budget()
                        and not s.integer_only and not s.needs_range)


def spec(kind: str) -> MechanismSpec:
    """The catalogue's spec of ``kind`` (ValueError naming the kinds there are)."""
    return spec_for(kind)


def label(kind: str) -> str:
    """The kind's name for users: 'Geometric (discrete Laplace)'."""
    return CATALOGUE[kind].label


def mechanism_name(kind: str) -> str:
    """The short name: 'Geometric' for 'Geometric (discrete Laplace)'."""
    return label(kind).split(" (")[0]


def budget_keywords(kind: str, measure: str) -> tuple[str, ...] | None:
    """The keywords that set the budget of ``kind`` under ``measure``: its own budget for the
    measure, or its pure ε under approximate DP (ε-DP is (ε, 0)-DP); None when the kind
    cannot be calibrated to the measure."""
    budgets = spec(kind).budgets
    if measure in budgets:
        return budgets[measure]
    if measure == "approx" and "pure" in budgets:
        return budgets["pure"]
    return None


def needs_delta(kind: str) -> bool:
    """Whether ``kind``, calibrated from ε (as the sweeps do), needs a δ too."""
    return "delta" in spec(kind).epsilon_budget()


def calibrated_from_epsilon(kind: str, epsilon: float, delta: float) -> PrivacyChoice:
    """The choice the sweeps make for ``kind`` at ``epsilon``: pure DP, or approximate DP at
    ``delta`` for a kind that needs it."""
    if needs_delta(kind):
        return PrivacyChoice("approx", kind, epsilon=epsilon, delta=delta)
    return PrivacyChoice("pure", kind, epsilon=epsilon)


def offered(measure: str, *, integer_query: bool = True, bounds_declared: bool = True,
            allowed: Sequence[str] | None = None) -> list[str]:
    """The kinds a page offers under ``measure``: calibrated to it (a pure-DP kind under
    approximate DP too), whole-number kinds only for integer queries, kinds that need an
    answer range only when one is declared, and only ``allowed`` ones when given."""
    out = []
    for kind, entry in CATALOGUE.items():
        if budget_keywords(kind, measure) is None:
            continue
        if (entry.integer_only and not integer_query) or (entry.needs_range
                                                          and not bounds_declared):
            continue
        if allowed is None or kind in allowed:
            out.append(kind)
    return out


def measure_notes(measure: str, *, integer_query: bool = True) -> str:
    """Why some mechanisms are missing under ``measure``, in one or two sentences."""
    notes = []
    other = [mechanism_name(k) for k in CATALOGUE if budget_keywords(k, measure) is None]
    if other and measure == "pure":
        verb = "needs" if len(other) == 1 else "need"
        notes.append(f"{_join(other)} noise {verb} approximate DP or zCDP.")
    whole = [mechanism_name(k) for k, s in CATALOGUE.items()
             if s.integer_only and budget_keywords(k, measure) is not None]
    if whole and not integer_query:
        notes.append(f"{_join(whole)} noise is for integer-valued queries (counts).")
    return " ".join(notes)


def _join(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def norm_names(norm: str) -> str:
    """The mechanisms calibrated to an ``norm`` ("L1" or "L2") sensitivity, named in words."""
    names = [mechanism_name(k) for k, s in CATALOGUE.items() if s.sensitivity_norm == norm
             and not s.needs_range]
    return _join(names) if names else "no"


def range_names() -> str:
    """The mechanisms that keep the answer in a public range, named in words."""
    return _join([mechanism_name(k) for k, s in CATALOGUE.items() if s.needs_range])


def uses_answer_range(kinds: Sequence[str]) -> bool:
    """Whether any of these kinds needs a public range for the answer (names that are not
    kinds, such as a page's "no comparison", need none)."""
    return any(CATALOGUE[k].needs_range for k in kinds if k in CATALOGUE)


def fmt_number(x: float) -> str:
    """A short label for a grid or typed value: 0.012, 1, 10, 1e-06 (six significant digits).

    Never smaller than ``x``: these label privacy parameters (ε, δ, ρ), and a privacy loss
    shown to a user rounds up (0.1234567 reads 0.123457, 0.12345649 reads 0.123457 too).
    """
    text = f"{x:g}"
    if float(text) < x:
        text = f"{float(safe_rounding.upper(x, 6)):g}"
    return text


@dataclass(frozen=True)
class PrivacyChoice:
    """What the user picked: a measure, a mechanism and its privacy parameters."""

    measure: str
    mechanism: str
    epsilon: float | None = None
    delta: float | None = None
    rho: float | None = None

    @property
    def spec(self) -> MechanismSpec:
        return spec(self.mechanism)

    def budget(self) -> dict[str, float]:
        """The budget keywords the kind takes under the measure, with their values."""
        keywords = budget_keywords(self.mechanism, self.measure)
        if keywords is None:
            raise ValueError(f"the {mechanism_name(self.mechanism)} mechanism is not offered "
                             f"under {MEASURES.get(self.measure, self.measure)}")
        return {name: getattr(self, name) for name in keywords}

    def sensitivity(self, *, l1_sensitivity: float, l2_sensitivity: float | None = None
                    ) -> float:
        """The sensitivity the kind is calibrated to (its spec's norm). A whole-number kind
        gets it rounded up to a whole number: a larger sensitivity is still a valid bound."""
        sens = (l2_sensitivity if self.spec.sensitivity_norm == "L2"
                and l2_sensitivity is not None else l1_sensitivity)
        return float(math.ceil(sens)) if self.spec.integer_only else sens

    def build(self, *, l1_sensitivity: float, l2_sensitivity: float | None = None,
              lower: float | None = None, upper: float | None = None) -> AdditiveMechanism:
        """The dpcore mechanism for this choice; a kind that needs an answer range gets
        ``lower`` and ``upper`` (ValueError without them)."""
        bounds = {"lower": lower, "upper": upper} if self.spec.needs_range else {}
        sens = self.sensitivity(l1_sensitivity=l1_sensitivity, l2_sensitivity=l2_sensitivity)
        return make_mechanism(self.mechanism, sensitivity=sens, **self.budget(), **bounds)

    def label(self) -> str:
        """e.g. 'Laplace, ε = 1 (pure DP)'."""
        name = mechanism_name(self.mechanism)
        if self.measure == "zcdp":
            return f"{name}, ρ = {fmt_number(self.rho)} (zCDP)"
        if self.measure == "approx":
            return f"{name}, ε = {fmt_number(self.epsilon)}, δ = {fmt_number(self.delta)}"
        return f"{name}, ε = {fmt_number(self.epsilon)} (pure DP)"


def scale_text(mechanism: AdditiveMechanism, choice: PrivacyChoice, fmt: Any = None) -> str:
    """One line: the noise scale, what it means, and what it is calibrated to."""
    fmt = fmt or (lambda x: f"{x:.4g}")
    entry = choice.spec
    text = (f"{entry.label} noise of scale {fmt(mechanism.scale)} — {entry.scale_meaning} — "
            f"calibrated to {entry.sensitivity_norm} sensitivity Δ = "
            f"{fmt(mechanism.sensitivity)} for {choice.label()}")
    if entry.needs_range:
        text += f", answers kept in [{mechanism.lower:g}, {mechanism.upper:g}]"
    return f"{text}. {entry.explanation}"
