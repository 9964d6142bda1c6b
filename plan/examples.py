"""Example plans: the Adult plan the command line prints with ``--example-plan``.

Its declarations are public: the 16 education levels and 14 occupations of UCI's
adult.names, age 17–90 and hours 1–99 from its extraction rules and the CPS top-codes (the
same sources as ``data/README.md``).
"""

from __future__ import annotations

import os
from pathlib import Path

from plan.identity import file_hash
from plan.model import (
    Accounting,
    Bounds,
    Budget,
    Categories,
    Count,
    Dataset,
    Histogram,
    Mean,
    Noise,
    Plan,
    PlanQuery,
    PrivacyUnit,
    Selection,
    SelectionNoise,
    Sum,
    Target,
)

__all__ = ["ADULT_PATH", "adult_plan"]

#: The built-in Adult file.
ADULT_PATH = Path(__file__).resolve().parent.parent / "data" / "adult.csv.gz"
_ADULT_NAMES = "UCI adult.names (Becker & Kohavi 1996)"
EDUCATION = ("Bachelors", "Some-college", "11th", "HS-grad", "Prof-school", "Assoc-acdm",
             "Assoc-voc", "9th", "7th-8th", "12th", "Masters", "1st-4th", "10th", "Doctorate",
             "5th-6th", "Preschool")
OCCUPATION = ("Tech-support", "Craft-repair", "Other-service", "Sales", "Exec-managerial",
              "Prof-specialty", "Handlers-cleaners", "Machine-op-inspct", "Adm-clerical",
              "Farming-fishing", "Transport-moving", "Priv-house-serv", "Protective-serv",
              "Armed-Forces")


def adult_plan(path: str | os.PathLike = ADULT_PATH, *, pin: bool = True) -> Plan:
    """Five statistics of Adult under basic composition, ε ≈ 2.7 in all.

    A count (geometric, ε = 0.5), the education histogram (geometric, ε = 0.5), the mean of
    age (Laplace, ε = 0.5 split between its sum and count), the hours-per-week sum (Gaussian,
    ε = 0.5, δ = 1e-6; OpenDP certifies it through zCDP, so the release accounts it at a
    larger ε) and the most frequent occupation (permute-and-flip, ε = 0.5). One row is one
    person. ``pin`` records the file's content hash, so the plan refuses other data.
    """
    public = "public"
    queries = (
        PlanQuery("people", "Number of people", Count(),
                  Noise("geometric", "pure", epsilon=0.5), page="statistics",
                  target=Target("error", alpha=10.0, beta=0.05)),
        PlanQuery("education", "People by education (16 levels)",
                  Histogram("education", Categories(EDUCATION, public, _ADULT_NAMES)),
                  Noise("geometric", "pure", epsilon=0.5), page="statistics",
                  target=Target("error", alpha=10.0, beta=0.05)),
        PlanQuery("mean-age", "Mean age (17–90)",
                  Mean("age", Bounds(17, 90, public, f"{_ADULT_NAMES}: age > 16; the CPS "
                                     "top-codes age at 90")),
                  Noise("laplace", "pure", epsilon=0.5), page="statistics",
                  target=Target("error", alpha=0.1, beta=0.05)),
        PlanQuery("hours", "Total hours worked per week (1–99)",
                  Sum("hours_per_week", Bounds(1, 99, public, f"{_ADULT_NAMES}: hours > 0; "
                                               "the CPS field holds at most 99")),
                  Noise("gaussian", "approx", epsilon=0.5, delta=1e-6), page="statistics",
                  target=Target("error", alpha=2000.0, beta=0.05)),
        PlanQuery("top-occupation", "Most frequent occupation",
                  Selection("occupation", Categories(OCCUPATION, public, _ADULT_NAMES), k=1),
                  SelectionNoise("exponential", "pure", epsilon=0.5), page="selection",
                  target=Target("selection", probability=0.9)),
    )
    return Plan(
        Dataset("adult", "file:data/adult.csv.gz", file_hash(path) if pin else None),
        queries, PrivacyUnit(), Accounting("basic", 0.0), Budget(epsilon=3.0, delta=1e-6))
