"""Are the synthetic rows a faithful sample of the fitted model (issue 34)? One fit of AIM or
MST on Adult's 8 columns (bench_synthetic.py's columns and fit, the page's ``sy.fit``), then
for every pair of columns the 2-way TV of ``synthetic_rows`` (10^4 rows, 5 seeds) against the
model's own projection, beside what i.i.d. rows give (each pair's counts drawn multinomially
from that projection, 20 draws: an independent reference); a pair whose mean is above every
i.i.d. draw is flagged. Last, the mean 2-way TV against the real data of the model and of the
rows.

Run: ``.venv/bin/python bench/bench_synthetic_faithful.py [AIM|MST] [epsilon]`` (a fit takes
one to two minutes).
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ROWS, SEEDS, DRAWS = 10_000, 5, 20


def _folded(values: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The model's extra (null) key folded into each column's last code, as the rows read it."""
    for axis, size in enumerate(shape):
        head = np.take(values, np.arange(size - 1), axis=axis)
        tail = np.take(values, np.arange(size - 1, values.shape[axis]), axis=axis).sum(
            axis=axis, keepdims=True)
        values = np.concatenate([head, tail], axis=axis)
    return values / values.sum()


def _tv(counts: np.ndarray, p: np.ndarray) -> float:
    return float(0.5 * np.abs(counts / counts.sum() - p).sum())


def main(argv: list[str]) -> int:
    from bench.bench_synthetic import COLUMNS
    from dashboard.analysis import synthetic as sy
    from dashboard.data.builtins import BUILTIN_DATASETS, load_builtin
    from dpcore.contributions import PrivacyUnit
    from release.synthesis import synthetic_rows

    algorithm = argv[0] if argv else "AIM"
    epsilon = float(argv[1]) if len(argv) > 1 else 1.0
    loaded = load_builtin(BUILTIN_DATASETS[0])
    columns = sy.choose_columns(loaded, list(COLUMNS), PrivacyUnit())
    cells, shape = sy.joint_cells(loaded, columns), columns.shape
    table = sy.fit(cells, shape, measure="epsilon", budget=epsilon, max_rows=1,
                   algorithm=algorithm, iters=sy.DEFAULT_ITERS)
    print(f"{algorithm} at ε = {epsilon}: cliques {table.model.cliques}")
    pairs = list(itertools.combinations(range(len(shape)), 2))
    model = {(a, b): _folded(np.asarray(table.model.project((f"c{a}", f"c{b}")).datavector(
        flatten=False), dtype=np.float64), (shape[a], shape[b])) for a, b in pairs}
    real = {p: sy.marginal(cells.codes, cells.counts, shape, p) for p in pairs}
    draws = [synthetic_rows(table, shape, ROWS, rng=np.random.default_rng(s))
             for s in range(SEEDS)]
    ours = np.array([[_tv(sy.marginal(codes, None, shape, p), model[p]) for p in pairs]
                     for codes in draws])
    rng = np.random.default_rng(99)
    iid = np.array([[_tv(rng.multinomial(ROWS, model[p].ravel()).reshape(model[p].shape),
                         model[p]) for p in pairs] for _ in range(DRAWS)])
    print("| pair | rows vs model (mean) | i.i.d. mean | i.i.d. max |\n|---|---|---|---|")
    for i, (a, b) in enumerate(pairs):
        flag = " **beyond i.i.d.**" if ours[:, i].mean() > iid[:, i].max() else ""
        print(f"| {COLUMNS[a]} × {COLUMNS[b]} | {ours[:, i].mean():.4f}{flag} | "
              f"{iid[:, i].mean():.4f} | {iid[:, i].max():.4f} |")
    print(f"mean over pairs: rows {ours.mean():.4f}, i.i.d. {iid.mean():.4f}")
    against_model = np.mean([_tv(real[p], model[p]) for p in pairs])
    against_rows = np.mean([[_tv(sy.marginal(codes, None, shape, p), real[p] / real[p].sum())
                             for p in pairs] for codes in draws])
    print(f"2-way TV against the real data: model {against_model:.4f}, rows {against_rows:.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
