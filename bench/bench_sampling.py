"""Sampling throughput of dpcore's Laplace, Gaussian and Geometric mechanisms.

Compares ``.sample`` with the raw numpy Generator call, diffprivlib's per-value ``randomise``
and OpenDP's vector measurements. Run: ``.venv/bin/python bench/bench_sampling.py``.

Times are CPU time of this process (``time.process_time``): on a shared machine wall-clock
time mostly measures the other tenants. Every contender here runs on one thread.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import timing  # noqa: E402

from dpcore.additive import Gaussian, Geometric, Laplace  # noqa: E402

DRAWS = 10**7  # dpcore and raw numpy
DIFFPRIVLIB_CALLS = 10**4  # one value per call; extrapolated per draw
OPENDP_VECTOR = 10**5  # OpenDP samples exactly (arbitrary precision): slow, so a shorter vector
REPEATS = 3  # best of, for dpcore and numpy (--repeats to change)
TARGET_RATIO = 0.8

EPSILON, DELTA, SEED = 1.0, 1e-6, 2024



def diffprivlib_rate(mechanism) -> float:
    start = time.process_time()
    for _ in range(DIFFPRIVLIB_CALLS):
        mechanism.randomise(0)
    return DIFFPRIVLIB_CALLS / (time.process_time() - start)


def opendp_rate(measurement, vector: list) -> float:
    start = time.process_time()
    measurement(vector)
    return len(vector) / (time.process_time() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=REPEATS,
                        help="best of this many alternating dpcore/numpy runs (default 3)")
    repeats = max(1, parser.parse_args().repeats)

    import diffprivlib.mechanisms as dpl
    import opendp.prelude as dp

    dp.enable_features("contrib")
    rng = np.random.default_rng(SEED)
    zeros = np.zeros(DRAWS)

    laplace = Laplace(sensitivity=1.0, epsilon=EPSILON)
    gaussian = Gaussian(sensitivity=1.0, epsilon=EPSILON, delta=DELTA)
    geometric = Geometric(sensitivity=1, epsilon=EPSILON)
    b, sigma = laplace.scale, gaussian.scale
    p = -math.expm1(-1 / geometric.scale)

    floats = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    ints = dp.vector_domain(dp.atom_domain(T=int))
    cases = [
        ("Laplace", laplace,
         lambda: rng.laplace(0.0, b, DRAWS),
         dpl.Laplace(epsilon=EPSILON, delta=0.0, sensitivity=1.0, random_state=SEED),
         dp.m.make_laplace(floats, dp.l1_distance(T=float), scale=b), [0.0] * OPENDP_VECTOR),
        ("Gaussian", gaussian,
         lambda: rng.normal(0.0, sigma, DRAWS),
         dpl.GaussianAnalytic(epsilon=EPSILON, delta=DELTA, sensitivity=1.0, random_state=SEED),
         dp.m.make_gaussian(floats, dp.l2_distance(T=float), scale=sigma),
         [0.0] * OPENDP_VECTOR),
        ("Geometric", geometric,
         lambda: rng.geometric(p, DRAWS) - rng.geometric(p, DRAWS),
         dpl.Geometric(epsilon=EPSILON, sensitivity=1, random_state=SEED),
         dp.m.make_laplace(ints, dp.l1_distance(T=int), scale=geometric.scale),
         [0] * OPENDP_VECTOR),
    ]

    print(f"{DRAWS:.0e} draws per dpcore/numpy run (best of {repeats}); diffprivlib: "
          f"{DIFFPRIVLIB_CALLS:.0e} randomise() calls; OpenDP: one vector of {OPENDP_VECTOR:.0e}")
    print(f"numpy {np.__version__}, {os.cpu_count()} CPUs (shared), epsilon={EPSILON}, "
          f"delta={DELTA} for the Gaussian; rates in draws per CPU-second")
    header = (f"{'mechanism':<10} {'dpcore/s':>10} {'numpy/s':>10} {'ratio':>6} "
              f"{'diffprivlib/s':>14} {'speedup':>8} {'OpenDP/s':>10} {'speedup':>8}")
    print(header)
    print("-" * len(header))
    below_target = []
    for name, mech, raw, dpl_mech, odp_meas, odp_vector in cases:
        ours_time, numpy_time = timing.paired_best_times(
            lambda mech=mech: mech.sample(zeros, rng=rng), raw, repeats)
        ours, numpy_rate = DRAWS / ours_time, DRAWS / numpy_time
        ratio = ours / numpy_rate
        dpl_rate = diffprivlib_rate(dpl_mech)
        odp_rate = opendp_rate(odp_meas, odp_vector)
        print(f"{name:<10} {ours:>10.3g} {numpy_rate:>10.3g} {ratio:>6.2f} "
              f"{dpl_rate:>14.3g} {ours / dpl_rate:>7.0f}x {odp_rate:>10.3g} "
              f"{ours / odp_rate:>7.0f}x")
        if ratio < TARGET_RATIO:
            below_target.append(name)
    print(f"target: dpcore >= {TARGET_RATIO}x raw numpy -> "
          + ("met" if not below_target else f"NOT met for {', '.join(below_target)}"))


if __name__ == "__main__":
    main()
