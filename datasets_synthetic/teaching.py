"""Three small teaching datasets where the noise of ε = 1 is visible: a class of 30, a village
of 400 and a close race between four candidates. Made-up people, drawn from a fixed seed.

Every table is the same on every machine: the category counts that make the point (the class's
vote 11 / 10 / 9, the race's 126 / 125 / 125 / 124) are fixed exactly and only shuffled; the
numbers are drawn from ``numpy.random.default_rng`` with the seeds below.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: The user-facing names, in menu order.
CLASS, VILLAGE, RACE = ("A class of 30 (teaching)", "A village of 400 (teaching)",
                        "A close race (teaching)")
NAMES = (CLASS, VILLAGE, RACE)

SUBJECTS = ("Maths", "Science", "Art", "Music", "Sport")
#: How many pupils name each subject first (30 in all): small bars that ±1 moves.
SUBJECT_COUNTS = (9, 7, 6, 5, 3)
CLASS_CANDIDATES = ("Amira", "Ben", "Chen")
CLASS_VOTES = (11, 10, 9)                # the class representative: a race won by one vote
YES_NO = ("yes", "no")
WALKERS = 17                             # pupils who walk to school

VILLAGE_ROWS = 400
VILLAGE_WORK = ("Farming", "Shop", "School", "Clinic", "Retired", "Other")
VILLAGE_WORK_COUNTS = (88, 41, 19, 12, 97, 143)
VILLAGE_INCOME_BOUNDS = (0, 200_000)     # USD a year: the survey form's largest box
VILLAGE_WITH_CAR = 236

RACE_CANDIDATES = ("Ana", "Ben", "Chloé", "Dev")
RACE_VOTES = (126, 125, 125, 124)        # 500 voters; the winner leads by one vote
RACE_DISTRICTS = ("North", "South", "East", "West")
RACE_AGE_BANDS = ("18-29", "30-44", "45-64", "65+")

_SEEDS = {CLASS: 30, VILLAGE: 400, RACE: 500}


def _fixed_counts(rng: np.random.Generator, names: tuple[str, ...],
                  counts: tuple[int, ...]) -> pd.Categorical:
    """A column holding exactly ``counts[i]`` of ``names[i]``, in a random order."""
    codes = rng.permutation(np.repeat(np.arange(len(names)), counts))
    return pd.Categorical.from_codes(codes, categories=list(names))


def class_of_30() -> pd.DataFrame:
    """30 pupils: exam score (0–100), hours of sleep (3–12), favourite subject, walks to
    school, and the class-representative vote (11 / 10 / 9)."""
    rng = np.random.default_rng(_SEEDS[CLASS])
    n = sum(SUBJECT_COUNTS)
    score = np.clip(np.rint(rng.normal(64.0, 14.0, size=n)), 0, 100).astype(np.int64)
    sleep = np.clip(np.rint(rng.normal(8.5, 1.0, size=n) * 2) / 2, 3.0, 12.0)
    return pd.DataFrame({
        "favourite_subject": _fixed_counts(rng, SUBJECTS, SUBJECT_COUNTS),
        "class_rep_vote": _fixed_counts(rng, CLASS_CANDIDATES, CLASS_VOTES),
        "walks_to_school": _fixed_counts(rng, YES_NO, (WALKERS, n - WALKERS)),
        "exam_score": score,
        "hours_of_sleep": sleep,
    })


def village_of_400() -> pd.DataFrame:
    """400 villagers: age (0–100), household size (1–8), yearly income (0–200,000 USD),
    main work (six categories) and whether the household has a car."""
    rng = np.random.default_rng(_SEEDS[VILLAGE])
    n = VILLAGE_ROWS
    age = np.clip(np.rint(rng.gamma(3.0, 13.0, size=n)), 0, 100).astype(np.int64)
    household = np.clip(rng.poisson(2.2, size=n) + 1, 1, 8).astype(np.int64)
    income = np.clip(np.rint(rng.lognormal(np.log(24_000), 0.6, size=n) / 100) * 100,
                     *VILLAGE_INCOME_BOUNDS).astype(np.int64)
    return pd.DataFrame({
        "work": _fixed_counts(rng, VILLAGE_WORK, VILLAGE_WORK_COUNTS),
        "has_car": _fixed_counts(rng, YES_NO, (VILLAGE_WITH_CAR, n - VILLAGE_WITH_CAR)),
        "age": age,
        "household_size": household,
        "income": income,
    })


def close_race() -> pd.DataFrame:
    """500 voters: their vote (126 / 125 / 125 / 124), district and age band."""
    rng = np.random.default_rng(_SEEDS[RACE])
    n = sum(RACE_VOTES)
    return pd.DataFrame({
        "vote": _fixed_counts(rng, RACE_CANDIDATES, RACE_VOTES),
        "district": pd.Categorical.from_codes(rng.integers(0, len(RACE_DISTRICTS), size=n),
                                              categories=list(RACE_DISTRICTS)),
        "age_band": pd.Categorical.from_codes(
            rng.choice(len(RACE_AGE_BANDS), size=n, p=[0.2, 0.27, 0.33, 0.2]),
            categories=list(RACE_AGE_BANDS)),
    })


TABLES = {CLASS: class_of_30, VILLAGE: village_of_400, RACE: close_race}
