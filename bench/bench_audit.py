"""Check the claim: the bound and the time of one click, for the pages' default configurations.

Run: ``.venv/bin/python bench/bench_audit.py`` (about half a minute). Prints, per mechanism
(honest, then with 0.7 × the noise): seconds, the claimed ε (δ), the 95% lower bound, caught.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dashboard.analysis import audit as aud  # noqa: E402
from dpcore.mechanisms import make_mechanism  # noqa: E402

SEED = 2026
STATISTICS = (("laplace", {"epsilon": 1.0}), ("gaussian", {"epsilon": 1.0, "delta": 1e-6}),
              ("gaussian", {"rho": 0.5}), ("geometric", {"epsilon": 1.0}),
              ("staircase", {"epsilon": 1.0}),
              ("clamped_laplace", {"epsilon": 1.0, "lower": 0.0, "upper": 50_000.0}),
              ("bounded_laplace", {"epsilon": 1.0, "lower": 0.0, "upper": 50_000.0}))
SELECTION = (("laplace", True, 1), ("laplace", False, 1), ("exponential", False, 1),
             ("gumbel", False, 1), ("laplace", True, 3))


def line(name: str, outcome: aud.AuditOutcome) -> None:
    copy = "broken" if outcome.broken else "honest"
    print(f"{name:<58} {copy:<7} {outcome.seconds:6.2f} s  claim {outcome.claimed_epsilon:.4g}"
          f" (δ {outcome.delta:g})  bound {outcome.result.epsilon_lower_bound:.4f}  "
          f"caught {'yes' if outcome.caught else 'no'}")


def main() -> None:
    print(f"Noisy statistics: {aud.STATISTICS_SAMPLES:,} samples per side and pair")
    for kind, params in STATISTICS:
        target = aud.AuditTarget(kind, make_mechanism(kind, sensitivity=1.0, **params))
        for broken in (False, True):
            line(f"{kind} {params}", aud.audit_target(target, seed=SEED, broken=broken))
    print(f"Selection: {aud.SELECTION_SAMPLES:,} samples per side and pair, ε = 1")
    for noise, monotonic, k in SELECTION:
        setting = aud.SelectionSetting(noise, "pure", 1.0, 1.0, monotonic, k)
        for broken in (False, True):
            line(f"{noise}, monotonic {monotonic}, k = {k}",
                 aud.audit_selection(setting, seed=SEED, broken=broken))


if __name__ == "__main__":
    main()
