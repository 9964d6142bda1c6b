"""What the ledger records for a plan, against OpenDP's certificates composed (the figure
recorded before issue 31 item 7) and, where there is one, the closed form.

Run: ``.venv/bin/python bench/bench_ledger_figures.py`` (a few seconds). Prints, per plan:
OpenDP's scales, the certificates composed, the figure recorded
(``release.accounting.certified_spent``), dp_accounting's PLD of the same noises built here
(connect-the-dots, a grid of 1e-4) and the closed form for Gaussians alone (k Gaussians of
scale σ and sensitivity Δ are one of scale σ/√k: Balle & Wang's exact ε at δ).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dp_accounting.pld import common  # noqa: E402
from dp_accounting.pld import privacy_loss_distribution as pld  # noqa: E402
from scipy import optimize  # noqa: E402
from scipy.special import ndtr  # noqa: E402

from plan.kinds.quantiles import Quantiles  # noqa: E402
from plan.model import (  # noqa: E402
    Accounting,
    Bounds,
    Count,
    Dataset,
    Grid,
    Noise,
    Plan,
    PlanQuery,
    PrivacyUnit,
    SelectionNoise,
    Sum,
)
from release import prepare  # noqa: E402
from release.accounting import privacy_spent  # noqa: E402

DELTA = 1e-5
GAUSSIAN = Noise("gaussian", "approx", epsilon=1.0, delta=1e-6)


def gaussian_epsilon(mu: float, delta: float) -> float:
    """Exact ε at δ of a μ-GDP mechanism (Balle & Wang 2018)."""
    def delta_at(eps: float) -> float:
        return ndtr(mu / 2 - eps / mu) - math.exp(eps) * ndtr(-mu / 2 - eps / mu)

    return optimize.brentq(lambda e: delta_at(e) - delta, 0.0, 200.0, xtol=1e-13)


def plans() -> dict[str, Plan]:
    three = tuple(PlanQuery(f"n{i}", f"Rows {i}", Count(), GAUSSIAN) for i in range(3))
    grid = Grid(tuple(float(v) for v in range(0, 101, 5)), "public")
    mixed = (PlanQuery("n", "Rows", Count(), Noise("laplace", "pure", epsilon=1.0)),
             PlanQuery("s", "Income", Sum("income", Bounds(0, 100)), GAUSSIAN),
             PlanQuery("q", "Income median", Quantiles("income", (0.5,), grid),
                       SelectionNoise("exponential", "pure", epsilon=1.0)))
    return {name: Plan(Dataset("people"), queries, PrivacyUnit(),
                       accounting=Accounting("pld", DELTA))
            for name, queries in (("three Gaussian counts", three),
                                  ("Laplace + Gaussian + quantile", mixed))}


def by_hand(certified) -> float:
    """dp_accounting's PLD of the Laplace and Gaussian noises at OpenDP's scales, an ε-DP
    certificate as its randomized-response pair."""
    options = {"value_discretization_interval": 1e-4}
    out = None
    for c in certified:
        law = c.noise_law[0] if c.noise_law else None
        if law is not None and law.noise == "gaussian":
            part = pld.from_gaussian_mechanism(law.scale, sensitivity=law.sensitivity, **options)
        elif law is not None:
            part = pld.from_laplace_mechanism(law.scale, sensitivity=law.sensitivity, **options)
        else:
            part = pld.from_privacy_parameters(
                common.DifferentialPrivacyParameters(c.certified.epsilon, 0.0), **options)
        out = part if out is None else out.compose(part)
    return out.get_epsilon_for_delta(DELTA)


def main() -> None:
    for name, plan in plans().items():
        prepared = prepare(plan)
        certified = [c for cs in prepared.certified for c in cs]
        certificates = privacy_spent([c.certified for c in certified], plan.accounting)
        print(f"{name} (PLD at δ = {DELTA:g})")
        print(f"  OpenDP's scales            {[round(c.opendp_scale, 4) for c in certified]}")
        print(f"  certificates composed      ε = {certificates.epsilon:.4f}   (recorded before)")
        print(f"  recorded now               ε = {prepared.spent.epsilon:.4f}   at δ = "
              f"{prepared.spent.delta:g}")
        print(f"  dp_accounting by hand      ε = {by_hand(certified):.4f}")
        if all(c.noise_law and c.noise_law[0].noise == "gaussian" for c in certified):
            sigma, sensitivity = certified[0].opendp_scale, certified[0].noise_law[0].sensitivity
            mu = math.sqrt(len(certified)) * sensitivity / sigma
            print(f"  closed form (σ/√k)         ε = {gaussian_epsilon(mu, DELTA):.4f}")


if __name__ == "__main__":
    main()
