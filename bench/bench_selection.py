"""Throughput of dpcore's private selection: report noisy max simulated over many trials.

Compares with the raw numpy argmax over the same noise, diffprivlib's per-release mechanisms
and OpenDP's ``make_noisy_max``; also times the exact selection probabilities.
Run: ``.venv/bin/python bench/bench_selection.py``.
"""

from __future__ import annotations

import sys
import time
import warnings
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import timing  # noqa: E402

from dpcore.selection import (  # noqa: E402
    NOISE_TYPES,
    exponential_mechanism,
    permute_and_flip,
    report_noisy_max,
    selection_probabilities,
)

CASES = ((10, 10**6), (1000, 10**4))  # (candidates d, simulated trials)
PER_RELEASE_CALLS = {10: 2000, 1000: 200}  # diffprivlib / OpenDP: one release per call
REPEATS = 3  # best of, for dpcore and numpy
TARGET_RATIO = 0.8
SCALE, EPSILON, SENSITIVITY, SEED = 2.0, 1.0, 1.0, 2024



def paired_best_times(first: Callable[[], object], second: Callable[[], object],
                      repeats: int = REPEATS) -> tuple[float, float]:
    return timing.paired_best_times(first, second, repeats, clock=time.perf_counter)


def time_calls(run: Callable[[], object], calls: int) -> float:
    """Seconds per call, over ``calls`` calls."""
    start = time.perf_counter()
    for _ in range(calls):
        run()
    return (time.perf_counter() - start) / calls


def raw_numpy(noise: str, scores: np.ndarray, trials: int, rng: np.random.Generator):
    d = scores.size
    draw = {"laplace": lambda: rng.laplace(0.0, SCALE, size=(trials, d)),
            "exponential": lambda: rng.exponential(SCALE, size=(trials, d)),
            "gumbel": lambda: rng.gumbel(0.0, SCALE, size=(trials, d))}[noise]
    return lambda: np.argmax(scores + draw(), axis=1)


def simulation_rows() -> list[tuple[str, ...]]:
    rows = []
    for d, trials in CASES:
        scores = np.linspace(0.0, 10.0, d)
        for noise in NOISE_TYPES:
            rng = np.random.default_rng(SEED)
            ours, raw = paired_best_times(
                partial(report_noisy_max, scores, scale=SCALE, noise=noise, trials=trials,
                        rng=rng),
                raw_numpy(noise, scores, trials, rng),
            )
            ratio = raw / ours
            rows.append((f"report_noisy_max {noise}", f"{d}", f"{trials:.0e}",
                         f"{trials / ours / 1e6:.3g}", f"{trials / raw / 1e6:.3g}",
                         f"{ratio:.2f}", "ok" if ratio >= TARGET_RATIO else "BELOW TARGET"))
    return rows


def per_release_rows() -> list[tuple[str, ...]]:
    import opendp.prelude as dp
    from diffprivlib.mechanisms import Exponential, PermuteAndFlip

    dp.enable_features("contrib")
    rows = []
    for d, _ in CASES:
        utility = np.linspace(0.0, 10.0, d)
        calls = PER_RELEASE_CALLS[d]
        rng = np.random.default_rng(SEED)
        bulk = 10**5
        start = time.perf_counter()
        permute_and_flip(utility, epsilon=EPSILON, sensitivity=SENSITIVITY, trials=bulk, rng=rng)
        ours_bulk = (time.perf_counter() - start) / bulk
        start = time.perf_counter()
        exponential_mechanism(utility, epsilon=EPSILON, sensitivity=SENSITIVITY, trials=bulk,
                              rng=rng)
        ours_bulk_em = (time.perf_counter() - start) / bulk
        ours_one = time_calls(partial(permute_and_flip, utility, epsilon=EPSILON,
                                      sensitivity=SENSITIVITY, rng=rng), calls)
        ours_one_em = time_calls(partial(exponential_mechanism, utility, epsilon=EPSILON,
                                         sensitivity=SENSITIVITY, rng=rng), calls)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pf = PermuteAndFlip(epsilon=EPSILON, sensitivity=SENSITIVITY,
                                utility=utility.tolist(), random_state=SEED)
            em = Exponential(epsilon=EPSILON, sensitivity=SENSITIVITY,
                             utility=utility.tolist(), random_state=SEED)
            dpl_pf = time_calls(pf.randomise, calls)
            dpl_em = time_calls(em.randomise, calls)
        space = (dp.vector_domain(dp.atom_domain(T=float, nan=False)),
                 dp.linf_distance(T=float))
        # Same epsilon: OpenDP's pure-DP noisy max (exponential noise) at scale 2Δ/ε; the zCDP
        # one (Gumbel noise) at the same scale is the exponential mechanism.
        odp_pf = dp.m.make_noisy_max(*space, dp.max_divergence(),
                                     scale=2 * SENSITIVITY / EPSILON)
        odp_em = dp.m.make_noisy_max(*space, dp.zero_concentrated_divergence(),
                                     scale=2 * SENSITIVITY / EPSILON)
        scores = utility.tolist()
        odp_pf_t = time_calls(partial(odp_pf, scores), calls)
        odp_em_t = time_calls(partial(odp_em, scores), calls)
        for name, ours_b, ours_1, dpl, odp in (
                ("permute-and-flip", ours_bulk, ours_one, dpl_pf, odp_pf_t),
                ("exponential mechanism", ours_bulk_em, ours_one_em, dpl_em, odp_em_t)):
            rows.append((name, f"{d}", f"{ours_b * 1e6:.3g}", f"{ours_1 * 1e6:.3g}",
                         f"{dpl * 1e6:.3g}", f"{odp * 1e6:.3g}", f"{dpl / ours_b:.0f}x",
                         f"{odp / ours_b:.0f}x"))
    return rows


def probability_rows() -> list[tuple[str, ...]]:
    rows = []
    rng = np.random.default_rng(SEED)
    for d in (10**3, 10**4):
        scores = rng.normal(0.0, 3.0, d)
        for noise in NOISE_TYPES:
            start = time.perf_counter()
            probs = selection_probabilities(scores, scale=1.0, noise=noise)
            elapsed = time.perf_counter() - start
            rows.append((noise, f"{d}", f"{elapsed * 1e3:.3g}", f"{abs(probs.sum() - 1):.1e}"))
    return rows


def print_table(title: str, header: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    print(f"\n{title}")
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)))


def main() -> None:
    print_table(
        f"Selection Monte Carlo (best of {REPEATS}; million trials per second; ratio = "
        f"numpy time / dpcore time, target >= {TARGET_RATIO})",
        ("mechanism", "d", "trials", "dpcore Mtrial/s", "numpy Mtrial/s", "ratio", ""),
        simulation_rows())
    print_table(
        "Per release (microseconds; dpcore bulk = 10^5 trials in one call, divided)",
        ("mechanism", "d", "dpcore bulk", "dpcore 1 call", "diffprivlib", "OpenDP",
         "diffprivlib/bulk", "OpenDP/bulk"),
        per_release_rows())
    print_table("Exact selection probabilities (milliseconds per call)",
                ("noise", "d", "ms", "|sum - 1|"), probability_rows())


if __name__ == "__main__":
    main()
