"""Every synthetic table the Synthetic data page offers fits at both ends of the sweep, ε or
ρ ∈ {0.1, 10} (issue 34, item 4): each algorithm × marginals × measure on three small
categorical columns (Adult's sex, race and income: 2, 5 and 2 categories) is prepared as a
release prepares it (``prepare``: OpenDP's measurement built from the plan alone, run on the
public table of the same columns, its map read at the unit's distance), with nothing refused
and the certified figure within a hair of the planned budget (OpenDP's rounding workaround
lowers it by at most 10⁻⁴ of it).

``tests/release/test_releasable.py`` releases each choice once at the page's default (ε = 1)
from the page; ``bench/bench_synthetic_offered.py`` runs the same grid on two more schemas
(CPS1985's 7 categorical columns, Adult's first 8 columns). Slow: 50 OpenDP measurements
(seconds each: OpenDP calibrates every step).
"""

from __future__ import annotations

import pytest

from plan.kinds.synthetic import Synthetic, SyntheticColumn
from plan.model import Accounting, Categories, Dataset, Plan, PlanQuery, PrivacyUnit
from release import prepare

#: What the page offers (app_pages/synthetic.py; the releasable test checks the page's radios):
#: each algorithm with its marginals choices.
OFFERED = (("MST", "auto"), ("MST", "one-way"), ("AIM", "auto"), ("AIM", "one-way"),
           ("AIM", "pairs"))
#: The sweep's two ends here (each about 80 s of OpenDP calibration on 2 cores);
#: ``bench/bench_synthetic_offered.py`` runs all five budgets, 0.3, 1 and 3 too.
BUDGETS = (0.1, 10.0)
#: Adult's sex, race and income as declared in its schema.
COLUMNS = (("sex", ("Female", "Male")),
           ("race", ("Amer-Indian-Eskimo", "Asian-Pac-Islander", "Black", "Other", "White")),
           ("income", ("<=50K", ">50K")))


def _plan(algorithm: str, marginals: str, measure: str, budget: float) -> Plan:
    columns = tuple(SyntheticColumn(name, Categories(values, "public", "test"))
                    for name, values in COLUMNS)
    # ρ is read as (ε, δ) at the plan's δ under basic composition
    figure = {"epsilon": budget} if measure == "pure" else {"rho": budget, "delta": 1e-6}
    spec = Synthetic(columns, algorithm, 100, measure, marginals=marginals, iters=20,
                     pairs=(("sex", "income"),) if marginals == "pairs" else (), **figure)
    return Plan(Dataset("adult"), (PlanQuery("syn", "Synthetic", spec, None),), PrivacyUnit(),
                Accounting("basic"))


@pytest.mark.slow
@pytest.mark.parametrize("budget", BUDGETS)
def test_every_offered_synthetic_table_fits_at_every_budget(budget):
    refused, certified = [], {}
    for algorithm, marginals in OFFERED:
        for measure in ("pure", "zcdp"):
            name = f"{algorithm}/{marginals}/{measure}"
            try:
                (part,) = prepare(_plan(algorithm, marginals, measure, budget)).certified[0]
            except Exception as exc:   # any refusal of an offered choice fails the test
                refused.append(f"{name}: {exc}")
                continue
            loss = part.certified
            certified[name] = loss.epsilon if measure == "pure" else loss.rho
    assert refused == []
    assert all(budget * (1 - 1e-4) - 1e-12 <= v <= budget for v in certified.values()), certified
