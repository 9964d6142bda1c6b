"""Sampling throughput of every mechanism of the catalogue and of the selection noises.

For each, ``.sample`` (10^7 simulated releases of one true value) against numpy's own way of
drawing the same law, plus diffprivlib's per-value ``randomise`` and OpenDP's vector
measurements where they have the mechanism. Run: ``.venv/bin/python bench/bench_sampling.py``.

Times are CPU time of this process (``time.process_time``), best of alternating runs: on a
shared machine wall-clock time mostly measures the other tenants. Every contender here runs on
one thread.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import timing  # noqa: E402

from dpcore.mechanisms import CATALOGUE, make_mechanism  # noqa: E402
from dpcore.sampling import standard_exponential, standard_gumbel, standard_laplace  # noqa: E402

DRAWS = 10**7  # dpcore and numpy
DIFFPRIVLIB_CALLS = 10**4  # one value per call; extrapolated per draw
OPENDP_VECTOR = 10**5  # OpenDP samples exactly (arbitrary precision): slow, so a shorter vector
REPEATS = 5  # best of, for dpcore and numpy (--repeats to change)
#: The issue's targets: at least this ratio against numpy for these, and 1.0 for every other.
FAST_TARGET, FAST = 1.5, ("laplace", "geometric", "gumbel (selection)")
TARGET = 1.0

EPSILON, DELTA, SEED = 1.0, 1e-6, 2024


def numpy_baselines(rng: np.random.Generator) -> dict[str, Callable[[object, float], object]]:
    """Numpy's own sampler for each law: ``baseline(mechanism, true_value)`` draws DRAWS
    noisy values the obvious vectorised way (what dpcore did before its own samplers)."""

    def laplace(m, q):
        return rng.laplace(q, m.scale, DRAWS)

    def gaussian(m, q):
        return rng.normal(q, m.scale, DRAWS)

    def geometric(m, q):
        p = -math.expm1(-1 / m.scale)
        return q + rng.geometric(p, DRAWS) - rng.geometric(p, DRAWS)

    def bounded(m, q):
        # inverse CDF of the truncated Laplace from a uniform, as numpy's laplace inverts one
        b, lo, hi = m.scale, m.lower, m.upper
        below = 0.5 * math.exp(-(q - lo) / b)
        mass = 1 - below - 0.5 * math.exp(-(hi - q) / b)
        p = below + rng.random(DRAWS) * mass
        noisy = np.where(p <= 0.5, q + b * np.log(2 * p), q - b * np.log(2 - 2 * p))
        return np.clip(noisy, lo, hi)

    def clamped(m, q):
        return np.clip(rng.laplace(q, m.scale, DRAWS), m.lower, m.upper)

    def discrete_gaussian(m, q):
        # CKS Algorithm 3 as numpy would run it: discrete Laplace proposals of scale
        # floor(σ) + 1 from two geometric draws, kept with probability e^{−(|y| − σ²/t)²/2σ²}
        sigma = m.scale
        t = math.floor(sigma) + 1.0
        p = -math.expm1(-1 / t)
        out = np.empty(DRAWS, dtype=np.int64)
        filled = 0
        while filled < DRAWS:
            n = int((DRAWS - filled) * 1.5) + 16
            y = rng.geometric(p, n) - rng.geometric(p, n)
            gap = np.abs(y) - sigma * sigma / t
            kept = y[rng.random(n) < np.exp(-0.5 * gap * gap / (sigma * sigma))]
            kept = kept[:DRAWS - filled]
            out[filled:filled + kept.size] = kept
            filled += kept.size
        return q + out

    def staircase(m, q):
        # Geng & Viswanath's construction with numpy's samplers (as diffprivlib draws it, but
        # vectorised): a sign, a geometric step, a uniform place and the step's part
        b, gamma, width = math.exp(-m.privacy.epsilon), m.gamma, m.scale
        sign = np.where(rng.random(DRAWS) < 0.5, -1.0, 1.0)
        steps = rng.geometric(1 - b, DRAWS) - 1
        u = rng.random(DRAWS)
        first = rng.random(DRAWS) < gamma / (gamma + (1 - gamma) * b)
        place = np.where(first, gamma * u, gamma + (1 - gamma) * u)
        return q + sign * width * (steps + place)

    return {"laplace": laplace, "gaussian": gaussian, "geometric": geometric,
            "bounded_laplace": bounded, "clamped_laplace": clamped,
            "discrete_gaussian": discrete_gaussian, "staircase": staircase}


def diffprivlib_rate(mechanism) -> float:
    start = time.process_time()
    for _ in range(DIFFPRIVLIB_CALLS):
        mechanism.randomise(0)
    return DIFFPRIVLIB_CALLS / (time.process_time() - start)


def opendp_rate(measurement, vector: list) -> float:
    start = time.process_time()
    measurement(vector)
    return len(vector) / (time.process_time() - start)


def peers(kind: str, mech, dpl, dp) -> tuple[object | None, tuple | None]:
    """diffprivlib's mechanism and OpenDP's (measurement, input) for a kind, where they exist."""
    floats = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    ints = dp.vector_domain(dp.atom_domain(T=int))
    if kind == "laplace":
        return (dpl.Laplace(epsilon=EPSILON, delta=0.0, sensitivity=1.0, random_state=SEED),
                (dp.m.make_laplace(floats, dp.l1_distance(T=float), scale=mech.scale),
                 [0.0] * OPENDP_VECTOR))
    if kind == "gaussian":
        return (dpl.GaussianAnalytic(epsilon=EPSILON, delta=DELTA, sensitivity=1.0,
                                     random_state=SEED),
                (dp.m.make_gaussian(floats, dp.l2_distance(T=float), scale=mech.scale),
                 [0.0] * OPENDP_VECTOR))
    if kind == "geometric":
        return (dpl.Geometric(epsilon=EPSILON, sensitivity=1, random_state=SEED),
                (dp.m.make_laplace(ints, dp.l1_distance(T=int), scale=mech.scale),
                 [0] * OPENDP_VECTOR))
    if kind == "bounded_laplace":
        return (dpl.LaplaceBoundedDomain(epsilon=EPSILON, sensitivity=1.0, lower=mech.lower,
                                         upper=mech.upper, random_state=SEED), None)
    if kind == "discrete_gaussian":
        return None, (dp.m.make_gaussian(ints, dp.l2_distance(T=int), scale=mech.scale),
                      [0] * OPENDP_VECTOR)
    if kind == "staircase":
        return dpl.Staircase(epsilon=EPSILON, sensitivity=1.0, random_state=SEED), None
    return None, None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=REPEATS,
                        help="best of this many alternating dpcore/numpy runs (default 5)")
    repeats = max(1, parser.parse_args().repeats)

    import diffprivlib.mechanisms as dpl
    import opendp.prelude as dp

    dp.enable_features("contrib")
    rng = np.random.default_rng(SEED)
    baselines = numpy_baselines(rng)

    rows = []
    for kind, spec in CATALOGUE.items():
        params = {n: v for n, v in spec.sample_parameters[0].items()}
        params.pop("scale", None)
        params["epsilon"] = EPSILON
        if "delta" in spec.epsilon_budget():
            params["delta"] = DELTA
        mech = make_mechanism(kind, **params)
        q = (mech.lower + mech.upper) / 2 if spec.needs_range else 0.0
        if spec.integer_only:
            q = 0
        rows.append((kind, lambda m=mech, q=q: m.sample(q, rng=rng, trials=DRAWS),
                     lambda b=baselines[kind], m=mech, q=q: b(m, q), *peers(kind, mech, dpl, dp)))
    selection = {"laplace": (standard_laplace, lambda: rng.laplace(0.0, 1.0, DRAWS)),
                 "exponential": (standard_exponential, lambda: rng.exponential(1.0, DRAWS)),
                 "gumbel": (standard_gumbel, lambda: rng.gumbel(0.0, 1.0, DRAWS))}
    for noise, (ours_fn, theirs) in selection.items():
        rows.append((f"{noise} (selection)", lambda f=ours_fn: f(DRAWS, rng=rng), theirs,
                     None, None))

    print(f"{DRAWS:.0e} draws per dpcore/numpy run (best of {repeats}); diffprivlib: "
          f"{DIFFPRIVLIB_CALLS:.0e} randomise() calls; OpenDP: one vector of {OPENDP_VECTOR:.0e}")
    print(f"numpy {np.__version__}, {os.cpu_count()} CPUs (shared), epsilon={EPSILON}, "
          f"delta={DELTA} where needed; rates in draws per CPU-second; ratio = dpcore / numpy")
    header = (f"{'mechanism':<24} {'dpcore/s':>10} {'numpy/s':>10} {'ratio':>6} "
              f"{'diffprivlib/s':>14} {'speedup':>8} {'OpenDP/s':>10} {'speedup':>8}")
    print(header)
    print("-" * len(header))
    missed = []
    for name, ours_run, theirs_run, dpl_mech, odp in rows:
        ours_time, numpy_time = timing.paired_best_times(ours_run, theirs_run, repeats)
        ours, numpy_rate = DRAWS / ours_time, DRAWS / numpy_time
        ratio = ours / numpy_rate
        line = f"{name:<24} {ours:>10.3g} {numpy_rate:>10.3g} {ratio:>6.2f} "
        if dpl_mech is not None:
            dpl_rate = diffprivlib_rate(dpl_mech)
            line += f"{dpl_rate:>14.3g} {ours / dpl_rate:>7.0f}x "
        else:
            line += f"{'-':>14} {'-':>8} "
        if odp is not None:
            odp_rate = opendp_rate(*odp)
            line += f"{odp_rate:>10.3g} {ours / odp_rate:>7.0f}x"
        else:
            line += f"{'-':>10} {'-':>8}"
        print(line, flush=True)
        target = FAST_TARGET if name in FAST else TARGET
        if ratio < target:
            missed.append(f"{name} ({ratio:.2f} < {target})")
    print(f"targets: >= {FAST_TARGET}x numpy for {', '.join(FAST)}; >= {TARGET}x for every "
          "other -> " + ("met" if not missed else f"NOT met for {', '.join(missed)}"))


if __name__ == "__main__":
    main()
