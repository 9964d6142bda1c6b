"""Tests for datasets_synthetic.visits: the synthetic clinic visits, a person-level table.

Same seed, same table; exact row count; every column inside its declared domain; the shape
promised (most patients 1-3 visits, a few over 100, rare diagnoses rare) against the closed-form
visit distribution.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from datasets_synthetic.visits import (
    AGE_BANDS,
    COST_BOUNDS,
    DIAGNOSES,
    MAX_VISITS_PER_PATIENT,
    PERSON_ID,
    YEAR,
    clinic_visits,
    visits_per_patient_pmf,
)


@pytest.fixture(scope="module")
def visits() -> pd.DataFrame:
    return clinic_visits(300_000, seed=7)


def test_same_seed_same_table_and_exact_size():
    a, b = clinic_visits(5_000, seed=3), clinic_visits(5_000, seed=3)
    pd.testing.assert_frame_equal(a, b)
    assert not clinic_visits(5_000, seed=4).equals(a)
    for rows in (1, 2, 17, 5_000):
        assert len(clinic_visits(rows, seed=1)) == rows


def test_columns_stay_in_their_declared_domains(visits):
    assert list(visits.columns) == [PERSON_ID, "visit_date", "month", "age_band", "diagnosis",
                                    "cost"]
    assert visits[PERSON_ID].min() == 1
    assert visits["visit_date"].min() >= pd.Timestamp(f"{YEAR}-01-01")
    assert visits["visit_date"].max() <= pd.Timestamp(f"{YEAR}-12-31")
    assert visits["visit_date"].is_monotonic_increasing  # rows in date order
    np.testing.assert_array_equal(visits["month"], visits["visit_date"].dt.month)
    assert list(visits["age_band"].cat.categories) == list(AGE_BANDS)
    assert list(visits["diagnosis"].cat.categories) == list(DIAGNOSES)
    assert visits["cost"].between(*COST_BOUNDS).all()
    per_patient = visits.groupby(PERSON_ID)
    assert per_patient.size().max() <= MAX_VISITS_PER_PATIENT
    assert (per_patient["age_band"].nunique() == 1).all()  # an age band per patient


def test_visits_per_patient_follow_the_declared_power_law(visits):
    pmf = visits_per_patient_pmf()
    v = np.arange(1, MAX_VISITS_PER_PATIENT + 1)
    assert pmf.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(pmf[1] / pmf[0], 2.0**-2.2)
    counts = visits.groupby(PERSON_ID).size().to_numpy()[:-1]  # the last patient was cut
    patients = counts.size
    for low, high in [(1, 1), (2, 3), (4, 10), (11, 100), (101, 365)]:
        p = pmf[(v >= low) & (v <= high)].sum()
        share = np.mean((counts >= low) & (counts <= high))
        assert share == pytest.approx(p, abs=5 * math.sqrt(p * (1 - p) / patients) + 1e-9)
    assert np.mean(counts <= 3) > 0.85           # most patients come 1-3 times
    assert 1e-3 < np.mean(counts > 100) < 3e-3   # a few come more than 100 times


def test_rare_diagnoses_are_rare_but_present(visits):
    shares = visits["diagnosis"].value_counts(normalize=True)
    assert shares["Z00"] > 0.1
    for code in ("E84", "D66"):
        assert 0 < shares[code] < 2e-3
    patients = visits.groupby("diagnosis", observed=False)[PERSON_ID].nunique()
    assert patients["D66"] < 100  # few patients: partition selection may drop it


def test_costs_are_heavier_for_costly_diagnoses(visits):
    medians = visits.groupby("diagnosis", observed=True)["cost"].median()
    assert medians["C50"] > 10 * medians["J06"]


def test_validation():
    with pytest.raises(ValueError, match="rows"):
        clinic_visits(0)
    with pytest.raises(ValueError, match="rows"):
        clinic_visits(10**7 + 1)
    with pytest.raises(TypeError, match="seed"):
        clinic_visits(10, seed=1.5)
