"""AppTest of the Quantiles page: every figure shown against an independent computation.

The exact distribution against a brute-force enumeration (a Python loop over candidates and
rows) on a tiny data-folder Parquet file and against a simulation of the mechanism as the page
sets it up (Gumbel-max on the same scores); the accuracy and the true quantile against the
sorted rows; the budget split; a person-level unit; bad inputs that keep the controls.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

from dashboard import datasets
from dashboard.person import PrivacyUnit
from tests.conftest import open_app
from tests.test_page_tables import array, figures

TINY = [1.0, 2.0, 2.0, 3.0, 5.0, 8.0, 13.0, np.nan]
PIDS = [1, 1, 2, 3, 3, 4, 5, 6]          # at most 2 rows per person
GRID = [0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0]


@pytest.fixture
def tiny_folder(tmp_path, monkeypatch):
    frame = pd.DataFrame({"x": TINY, "pid": PIDS, "name": list("abcdefgh")})
    frame.to_parquet(tmp_path / "tiny.parquet", index=False)
    pd.DataFrame({"name": ["a", "b"], "town": ["x", "y"]}).to_parquet(
        tmp_path / "words.parquet", index=False)
    monkeypatch.setenv("EPSILON_LAB_DATA", str(tmp_path))
    return tmp_path


def brute_force(values, grid, q, epsilon, sensitivity):
    """P(c) ∝ exp(−ε|#{x < c} − q·n| / (2Δ)), one candidate and one row at a time."""
    present = [v for v in values if v == v]
    n = len(present)
    weights = []
    for c in grid:
        below = sum(1 for v in present if v < c)
        weights.append(math.exp(-epsilon * abs(below - q * n) / (2 * sensitivity)))
    total = sum(weights)
    return [w / total for w in weights]


def true_quantile(values, q):
    present = sorted(v for v in values if v == v)
    for i, v in enumerate(present):
        if i + 1 >= q * len(present):
            return v
    return present[-1]


def set_text(at, key, value):
    next(w for w in at.text_input if w.key == key).set_value(value)


def set_number(at, key, value):
    next(w for w in at.number_input if w.key == key).set_value(value)


def tiny_app(levels="0.5", alpha=2.0, epsilon=None):
    at = open_app("quantiles.py", dataset="file:tiny.parquet")
    at.selectbox(key="quantiles_grid").select("typed")
    at.run()
    set_text(at, "quantiles_typed", ", ".join(f"{g:g}" for g in GRID))
    set_text(at, "quantiles_levels", levels)
    set_number(at, "quantiles_alpha", alpha)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


def shown_distribution(at):
    fig = figures(at)[0]
    return {t["name"]: (array(t["x"]), array(t["y"])) for t in fig["data"]}


def table(at) -> pd.DataFrame:
    return next(d.value for d in at.dataframe)


def test_tiny_file_distribution_matches_brute_force_and_simulation(tiny_folder):
    at = tiny_app()
    x, shown = shown_distribution(at)["median"]
    np.testing.assert_array_equal(x, GRID)
    expected = brute_force(TINY, GRID, 0.5, 1.0, 0.5)
    np.testing.assert_allclose(shown, expected, rtol=1e-12, atol=1e-15)
    # the mechanism as the page sets it up (ε = 1 on the median, Δ = 1/2), simulated by
    # Gumbel-max on brute-force scores: frequencies within 5 standard errors (2e5 draws)
    present = [v for v in TINY if v == v]
    scores = np.array([-abs(sum(v < c for v in present) - 0.5 * len(present)) for c in GRID])
    rng = np.random.default_rng(11)
    draws = np.argmax(scores / (2 * 0.5) + rng.gumbel(size=(200_000, len(GRID))), axis=1)
    freq = np.bincount(draws, minlength=len(GRID)) / draws.size
    se = np.sqrt(np.asarray(expected) * (1 - np.asarray(expected)) / draws.size)
    assert np.all(np.abs(freq - expected) <= 5 * se + 1e-12)
    # the accuracy and the truth shown
    row = table(at).iloc[0]
    truth = true_quantile(TINY, 0.5)
    assert float(row["True quantile"]) == truth
    within = sum(p for c, p in zip(GRID, expected, strict=True) if abs(c - truth) <= 2.0)
    shown_within = float(row["P(|released − true| ≤ 2)"].rstrip("%")) / 100
    assert shown_within <= within + 1e-12            # rounded down …
    assert within - shown_within < 0.01 * within     # … to its three digits
    released = float(row["Simulated release"])
    assert released in GRID
    assert float(row["Rank error of this release"]) == abs(
        sum(v < released for v in present) - 0.5 * len(present))
    expected_rank = sum(p * abs(sum(v < c for v in present) - 3.5)
                        for c, p in zip(GRID, expected, strict=True))
    assert float(row["Expected rank error"]) >= expected_rank - 1e-12
    assert any("n = 7 values" in c.value for c in at.main.caption)   # NaN not counted


def test_several_quantiles_split_the_budget(tiny_folder):
    at = tiny_app(levels="0.25, 0.5, 0.9")
    text = " ".join(m.value for m in at.markdown)
    assert "split equally over the 3 quantiles" in text
    share = float(re.search(r"each is released with ε = ([0-9.]+)", text).group(1))
    assert share >= 1 / 3 and 3 * (share - 1e-4) <= 1   # rounded up to 4 digits
    shown = shown_distribution(at)
    assert set(shown) == {"0.25-quantile", "median", "0.9-quantile"}
    for name, q in (("0.25-quantile", 0.25), ("median", 0.5), ("0.9-quantile", 0.9)):
        expected = brute_force(TINY, GRID, q, 1 / 3, max(q, 1 - q))
        np.testing.assert_allclose(shown[name][1], expected, rtol=1e-9)
    assert "Δ = 0.75" in text and "Δ = 0.9" in text


def test_person_unit_scales_the_sensitivity(tiny_folder):
    at = open_app("quantiles.py", dataset="file:tiny.parquet")
    key = at.session_state["dataset"].key
    at.session_state["privacy_unit_by_dataset"] = {key: PrivacyUnit("pid", 2)}
    at.selectbox(key="quantiles_grid").select("typed")
    at.run()
    set_text(at, "quantiles_typed", ", ".join(f"{g:g}" for g in GRID))
    at.run()
    assert not at.exception and not at.error
    text = " ".join(m.value for m in at.markdown)
    assert "median Δ = 1" in text and "pid" in text
    # nobody has more than 2 rows: nothing is dropped, the scores are the rows' own, but
    # the sensitivity doubles (ε/(2Δ) halves)
    expected = brute_force(TINY, GRID, 0.5, 1.0, 1.0)
    np.testing.assert_allclose(shown_distribution(at)["median"][1], expected, rtol=1e-12)


@pytest.mark.parametrize("name,column", [("Adult (UCI census income)", "age"),
                                         ("Iris", "sepal_length")])
def test_builtins_against_the_rows(name, column):
    at = open_app("quantiles.py", dataset=name)
    at.selectbox(key="quantiles_column").select(column)
    at.run()
    assert not at.exception and not at.error
    x, shown = shown_distribution(at)["median"]
    frame = datasets.load_builtin(name).frame
    values = frame[column].dropna().to_numpy()
    n = values.size
    below = (values[None, :] < x[:, None]).sum(axis=1)       # independent of searchsorted
    logits = -1.0 * np.abs(below - 0.5 * n) / (2 * 0.5)
    expected = np.exp(logits - logits.max())
    np.testing.assert_allclose(shown, expected / expected.sum(), rtol=1e-9, atol=1e-300)
    row = table(at).iloc[0]
    assert float(row["True quantile"]) == float(np.quantile(values, 0.5,
                                                            method="inverted_cdf"))


def test_bad_inputs_say_so_and_keep_the_controls(tiny_folder):
    at = tiny_app(levels="0.1, 0.5")
    set_text(at, "quantiles_typed", "  ")
    at.run()
    assert any("empty" in e.value for e in at.error) and not at.exception
    assert next(w for w in at.text_input if w.key == "quantiles_levels").value == "0.1, 0.5"
    set_text(at, "quantiles_typed", "1, 2, 3")
    set_number(at, "quantiles_alpha", 0.0)
    at.run()
    assert any("α must be greater than 0" in e.value for e in at.error)
    assert next(w for w in at.text_input if w.key == "quantiles_typed").value == "1, 2, 3"
    set_number(at, "quantiles_alpha", 1.0)
    set_text(at, "quantiles_levels", "1.5")
    at.run()
    assert any("between 0 and 1" in e.value for e in at.error)
    set_text(at, "quantiles_levels", "half")
    at.run()
    assert any("'half' is not a number" in e.value for e in at.error)
    assert at.selectbox(key="quantiles_grid").value == "typed"


def test_no_numeric_column_says_so(tiny_folder):
    at = open_app("quantiles.py", dataset="file:words.parquet")
    assert not at.exception
    assert any("no numeric column" in i.value for i in at.info)
