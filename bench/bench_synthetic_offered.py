"""Synthetic data (issue 34): does every configuration the Synthetic data page offers fit, from
the plan alone? For each schema × algorithm × marginals × measure × budget, OpenDP's
measurement is built as a release builds it and run on the public table of the same columns
(``release.synthesis._measurement``: what ``prepare()`` refuses before any data is read), and
the line says "fits" with the certified figure, or OpenDP's failure in one sentence.

Schemas (shapes: each column's declared cells plus the missing-or-other cell): Adult's sex,
race and income (3, 6, 3); CPS1985's 7 categorical columns (4, 3, 3, 7, 4, 3, 3); Adult's first
8 declared columns, age through sex (7, 9, 17, 8, 15, 7, 6, 3; as bench_synthetic.py).

Run: ``.venv/bin/python bench/bench_synthetic_offered.py [--budgets 0.1,0.3,1,3,10]
[--measures pure,zcdp] [--schemas small,cps,adult8] [--algorithms MST,AIM] [--iters 30]``
(seconds to minutes per line; the budget under zCDP is read as ρ).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SCHEMAS = {"small": (3, 6, 3), "cps": (4, 3, 3, 7, 4, 3, 3),
           "adult8": (7, 9, 17, 8, 15, 7, 6, 3)}
#: What the page offers: each algorithm with its marginals choices.
OFFERED = (("MST", "auto"), ("MST", "one-way"), ("AIM", "auto"), ("AIM", "one-way"),
           ("AIM", "pairs"))


def main(argv: list[str]) -> int:
    from plan.kinds.synthetic import MarginalSynthesis
    from release.synthesis import _measurement

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budgets", default="0.1,0.3,1,3,10")
    parser.add_argument("--measures", default="pure,zcdp")
    parser.add_argument("--schemas", default="small,cps,adult8")
    parser.add_argument("--iters", type=int, default=30)
    parser.add_argument("--algorithms", default="MST,AIM")
    args = parser.parse_args(argv)
    print("| schema | algorithm | marginals | measure | budget | result | seconds |")
    print("|---|---|---|---|---|---|---|")
    failures = 0
    for schema in args.schemas.split(","):
        shape = SCHEMAS[schema]
        for algorithm, marginals in OFFERED:
            if algorithm not in args.algorithms.split(","):
                continue
            pairs = ((0, 1),) if marginals == "pairs" else ()
            for measure in args.measures.split(","):
                for budget in map(float, args.budgets.split(",")):
                    spec = MarginalSynthesis(algorithm, marginals, shape, measure, budget, 1,
                                             100, args.iters, pairs)
                    start = time.perf_counter()
                    built = _measurement(spec)
                    seconds = time.perf_counter() - start
                    result = built if isinstance(built, str) else f"fits at {built[1]:.9g}"
                    failures += isinstance(built, str)
                    print(f"| {schema} | {algorithm} | {marginals} | {measure} | {budget:g} | "
                          f"{result} | {seconds:.0f} |", flush=True)
    print(f"{failures} configuration(s) do not fit")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
