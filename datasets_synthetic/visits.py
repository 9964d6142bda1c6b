"""A synthetic "clinic visits" table: many rows per patient, heavy-tailed, with rare diagnoses.

Generated from a seed with numpy only, vectorised (10^7 rows in a few seconds); its public
domains are declared here, by the generator, so they are public by construction.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpcore.checks import check_int

__all__ = [
    "MAX_ROWS",
    "PERSON_ID",
    "YEAR",
    "MAX_VISITS_PER_PATIENT",
    "VISITS_EXPONENT",
    "AGE_BANDS",
    "DIAGNOSES",
    "COST_BOUNDS",
    "clinic_visits",
    "visits_per_patient_pmf",
]

#: Largest table the generator makes (rows = visits).
MAX_ROWS = 10**7
#: The person-id column: neighbours differ by all visits of one patient.
PERSON_ID = "patient_id"
#: Every visit falls in this (leap) year: visit_date in YEAR-01-01 .. YEAR-12-31.
YEAR = 2024
#: Visits per patient lie in 1 .. this (declared domain of the generator).
MAX_VISITS_PER_PATIENT = 365
#: Visits per patient follow a power law P(v) ∝ v^-a on 1..MAX_VISITS_PER_PATIENT: with
#: a = 2.2, 88 % of patients have 1-3 visits (2.7 on average) and about 1 in 570 has more than
#: 100.
VISITS_EXPONENT = 2.2
#: Age bands (per patient), youngest first.
AGE_BANDS = ("0-17", "18-34", "35-49", "50-64", "65-79", "80+")
_AGE_SHARES = (0.20, 0.24, 0.20, 0.18, 0.13, 0.05)
# patients with more than _FREQUENT visits are older on average
_FREQUENT = 10
_AGE_SHARES_FREQUENT = (0.06, 0.10, 0.14, 0.22, 0.30, 0.18)

#: Diagnosis codes (ICD-10 three-character categories, a public classification): description,
#: share of first diagnoses, cost multiplier, chronic (a frequent patient's main diagnosis).
DIAGNOSES: dict[str, tuple[str, float, float, bool]] = {
    "Z00": ("general examination", 0.20, 1.0, False),
    "J06": ("acute upper respiratory infection", 0.14, 0.8, False),
    "I10": ("essential hypertension", 0.10, 1.0, True),
    "E11": ("type 2 diabetes", 0.08, 1.3, True),
    "M54": ("back pain", 0.08, 1.2, False),
    "F32": ("depressive episode", 0.06, 1.5, True),
    "K21": ("gastro-oesophageal reflux", 0.05, 1.0, False),
    "N39": ("urinary tract disorder", 0.05, 0.9, False),
    "L30": ("dermatitis", 0.05, 0.8, False),
    "S93": ("ankle sprain", 0.04, 2.0, False),
    "J45": ("asthma", 0.04, 1.1, True),
    "H10": ("conjunctivitis", 0.03, 0.7, False),
    "R51": ("headache", 0.03, 1.0, False),
    "C50": ("breast cancer", 0.02, 25.0, True),
    "N18": ("chronic kidney disease", 0.015, 8.0, True),
    "B20": ("HIV disease", 0.002, 6.0, True),
    "A15": ("respiratory tuberculosis", 0.001, 5.0, True),
    "G35": ("multiple sclerosis", 0.001, 15.0, True),
    "E84": ("cystic fibrosis", 0.0003, 12.0, True),
    "D66": ("haemophilia A", 0.0002, 40.0, True),
}
#: Cost of one visit in whole US dollars lies in this range (the generator clips to it).
COST_BOUNDS = (0, 50_000)
_COST_MEDIAN = 90.0    # USD, a general examination
_COST_LOG_SD = 0.6
# a visit of a patient with several visits is for the main diagnosis with this probability
_MAIN_SHARE = 0.6


def visits_per_patient_pmf() -> NDArray[np.float64]:
    """P(v visits) for v = 1..MAX_VISITS_PER_PATIENT (index v − 1): ∝ v^-VISITS_EXPONENT."""
    v = np.arange(1, MAX_VISITS_PER_PATIENT + 1, dtype=np.float64)
    weights = v ** -VISITS_EXPONENT
    return weights / weights.sum()


def _draw_categories(rng: np.random.Generator, shares: NDArray[np.float64],
                     size: int) -> NDArray[np.int64]:
    """Inverse-CDF draws of category indices (exact, vectorised)."""
    cdf = np.cumsum(shares / shares.sum())
    return np.minimum(np.searchsorted(cdf, rng.random(size), side="right"), shares.size - 1)


def _visit_counts(rng: np.random.Generator, rows: int) -> NDArray[np.int64]:
    """Visits of each patient, drawn until they add up to ``rows``; the last one is cut."""
    pmf = visits_per_patient_pmf()
    mean = float(np.dot(np.arange(1, pmf.size + 1), pmf))
    parts: list[NDArray[np.int64]] = []
    total = 0
    while total < rows:  # one draw almost always suffices; each further one adds 20 % more
        batch = _draw_categories(rng, pmf, int((rows - total) / mean * 1.2) + 16) + 1
        parts.append(batch)
        total += int(batch.sum())
    visits = np.concatenate(parts)
    cumulative = np.cumsum(visits)
    patients = int(np.searchsorted(cumulative, rows, side="left")) + 1
    visits = visits[:patients].copy()
    visits[-1] -= int(cumulative[patients - 1]) - rows
    return visits


def clinic_visits(rows: int = 10_000, *, seed: int = 0) -> pd.DataFrame:
    """A synthetic table of clinic visits, one row per visit, the same for the same seed.

    Per patient: a visit count v from a power law on 1..365 (P(v) ∝ v^-2.2: most patients
    come 1-3 times, a few more than 100), an age band (older for patients with more than 10
    visits) and a main diagnosis (a chronic one for those patients). Per visit: the diagnosis
    (the main one with probability 0.6 for a patient with several visits, else a fresh draw,
    so rare codes stay rare), a date uniform in 2024, and a cost log-normal around
    90 USD × the diagnosis's multiplier, rounded to whole dollars and clipped to
    [0, 50,000]. The last patient's visits are cut so that the table has exactly ``rows``
    rows. Rows are in date order; patient ids are 1..P in order of first draw.

    Columns: ``patient_id`` (int64, the person id), ``visit_date`` (datetime64[s], a day),
    ``month`` (int64 1-12, an integer-coded category), ``age_band`` and ``diagnosis``
    (pandas Categorical holding every declared category), ``cost`` (int64 USD).

    Parameters
    ----------
    rows : int
        Number of visits, 1 to 10,000,000.
    seed : int
        Seed of ``numpy.random.default_rng`` (any non-negative integer).

    Returns
    -------
    pandas.DataFrame
    """
    rows = check_int("rows", rows, minimum=1, maximum=MAX_ROWS)
    seed = check_int("seed", seed, minimum=0)
    rng = np.random.default_rng(seed)
    visits = _visit_counts(rng, rows)
    patients = visits.size
    frequent = visits > _FREQUENT

    age = np.where(frequent,
                   _draw_categories(rng, np.asarray(_AGE_SHARES_FREQUENT), patients),
                   _draw_categories(rng, np.asarray(_AGE_SHARES), patients))
    codes = list(DIAGNOSES)
    shares = np.array([DIAGNOSES[c][1] for c in codes])
    chronic = np.array([DIAGNOSES[c][3] for c in codes])
    main = np.where(frequent,
                    _draw_categories(rng, np.where(chronic, shares, 0.0), patients),
                    _draw_categories(rng, shares, patients))

    # Rows come in date order. Days are independent of everything else, so the table sorted by
    # day is the rows in a uniformly random order beside sorted uniform days: shuffle which
    # patient each row belongs to, and draw per-visit attributes directly in that order.
    days = 366 if YEAR % 4 == 0 else 365
    patient = rng.permutation(np.repeat(np.arange(patients), visits))
    day = np.repeat(np.arange(days), rng.multinomial(rows, np.full(days, 1.0 / days)))
    fresh = _draw_categories(rng, shares, rows)
    use_main = (rng.random(rows) < _MAIN_SHARE) & (visits[patient] > 1)
    diagnosis = np.where(use_main, main[patient], fresh)
    multiplier = np.array([DIAGNOSES[c][2] for c in codes])[diagnosis]
    cost = _COST_MEDIAN * multiplier * np.exp(rng.normal(0.0, _COST_LOG_SD, size=rows))
    cost = np.clip(np.rint(cost), *COST_BOUNDS).astype(np.int64)
    first = np.datetime64(f"{YEAR}-01-01", "D")
    calendar = first + np.arange(days)
    month_of_day = calendar.astype("datetime64[M]").astype(np.int64) % 12 + 1
    return pd.DataFrame({
        PERSON_ID: patient + 1,
        "visit_date": (first + day).astype("datetime64[s]"),
        "month": month_of_day[day],
        "age_band": pd.Categorical.from_codes(age[patient], categories=list(AGE_BANDS)),
        "diagnosis": pd.Categorical.from_codes(diagnosis, categories=codes),
        "cost": cost,
    }, copy=False)
