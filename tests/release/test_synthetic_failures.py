"""A synthetic table whose fit fails for a reason of the plan alone (issue 34, items 2 and 4):
OpenDP's rounding of the budget is worked around (a budget a hair lower, certified at its own
figure), AIM's last step of float dust is not taken; any other failure is found on a public
table before the data is read, refused in one sentence (no traceback, no path) and charges
nothing."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine import Engine, FrameSource
from engine.duckdb_backend import DuckDBBackend
from plan.kinds.synthetic import Synthetic, SyntheticColumn
from plan.model import Accounting, Categories, Dataset, Plan, PlanQuery, PrivacyUnit
from release import Ledger, ReleaseRefused, prepare, run
from release.synthesis import opendp_failure_in_words, public_cells

#: OpenDP 0.16's error when a mbi step's privacy comes out a hair above its share (measured:
#: MST under pure DP at ε = 3 on CPS1985's 7 categorical columns), as it reaches Python.
CHAINED = (
    'Continued stack trace from Exception in user-defined function:\nTraceback (most recent '
    'call last):\n  File "/srv/venv/lib/python3.11/site-packages/opendp/_convert.py", line '
    '1057, in _invoke_py_callback\n    py_out = func(py_arg)\nopendp.mod.OpenDPException: \n'
    '  FailedFunction("insufficient budget for query: 0.14999999999999988 > '
    '0.14999999999999986")\n")\n')


class _Chained(Exception):
    message = CHAINED


def test_opendps_chained_failure_reads_as_its_innermost_sentence():
    assert opendp_failure_in_words(_Chained()) == (
        "insufficient budget for query: 0.14999999999999988 > 0.14999999999999986")
    words = opendp_failure_in_words(ValueError("cannot read /srv/data/people.csv now"))
    assert "/srv" not in words and words.startswith("cannot read")


#: OpenDP 0.16's error from MST on one column (its scores' stability map takes max() of an
#: empty list), as it reaches Python: the last line is ")", which was the whole message.
PYTHON_INSIDE = (
    'Continued stack trace from Exception in user-defined function:\nTraceback (most recent '
    'call last):\n  File "/srv/venv/lib/python3.11/site-packages/opendp/_convert.py", line '
    '1057, in _invoke_py_callback\n    py_out = func(py_arg)\nopendp.mod.OpenDPException: \n'
    '  FFI("Continued stack trace from Exception in user-defined function:\nTraceback (most '
    'recent call last):\n  File "/srv/venv/lib/python3.11/site-packages/opendp/extras/mbi/'
    '_mst/__init__.py", line 305, in <lambda>\n    stability_map=lambda d_in: '
    'max(d_in.values()),\n                               ^^^^^^^^^^^^^^^^^^\nValueError: '
    'max() arg is an empty sequence\n")\n")\n')


def test_a_python_error_inside_opendp_reads_as_its_own_sentence_never_as_punctuation():
    """On main this read ")" (the chained error's last line)."""
    class Inside(Exception):
        message = PYTHON_INSIDE

    assert opendp_failure_in_words(Inside()) == "max() arg is an empty sequence"

    class Bare(Exception):
        message = '")\n")\n'

    words = opendp_failure_in_words(Bare())
    assert any(ch.isalpha() for ch in words) and ")" not in words.replace("(Bare)", "")


def test_the_public_table_holds_every_code_of_every_column():
    cells = public_cells((4, 3, 7, 2))
    assert cells.codes.shape == (7, 4) and cells.counts.tolist() == [1] * 7
    for column, size in enumerate((4, 3, 7, 2)):
        assert set(cells.codes[:, column].tolist()) == set(range(size))


#: CPS1985's 7 categorical columns' category counts (ethnicity, region, gender, occupation,
#: sector, union, married): where MST under pure DP at ε = 3 failed every time.
CPS_CATEGORIES = (3, 2, 2, 6, 3, 2, 2)


def _frame(categories: tuple[int, ...], rows: int = 300, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({f"v{i}": rng.integers(0, k, rows).astype(str)
                         for i, k in enumerate(categories)})


def _plan(categories: tuple[int, ...], algorithm: str, epsilon: float) -> Plan:
    columns = tuple(SyntheticColumn(f"v{i}", Categories(tuple(str(j) for j in range(k)),
                                                        "public", "test"))
                    for i, k in enumerate(categories))
    spec = Synthetic(columns, algorithm, 50, "pure", epsilon=epsilon, iters=30)
    return Plan(Dataset("d"), (PlanQuery("syn", "Synthetic", spec, None),), PrivacyUnit(),
                Accounting("basic"))


@pytest.mark.slow   # OpenDP builds MST's measurement up to twice and fits on public rows
def test_mst_under_pure_dp_at_epsilon_3_releases_at_its_certified_figure(tmp_path):
    """On main this release failed while drawing (OpenDP's rounding) and was charged."""
    plan = _plan(CPS_CATEGORIES, "MST", 3.0)
    (certified,) = prepare(plan).certified[0]
    assert 3.0 * (1 - 1e-3) < certified.certified.epsilon <= 3.0
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        release = run(plan, FrameSource(_frame(CPS_CATEGORIES)), ledger=ledger,
                      engine=Engine(DuckDBBackend(threads=1)))
        [record] = ledger.releases()
    assert record.epsilon == certified.certified.epsilon == release.spent.epsilon
    assert sum(count for _, count in release.queries[0].rows) == 50


@pytest.mark.slow   # OpenDP builds AIM's measurement, fits on public rows, then releases
def test_aim_under_pure_dp_on_a_small_table_releases(tmp_path):
    """AIM under pure DP at ε = 1 on 4 small columns: on main its last step was float dust
    (5.6·10⁻¹⁷) and failed every time while drawing, charged; now AIM stops there."""
    plan = _plan((3, 2, 2, 3), "AIM", 1.0)
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        release = run(plan, FrameSource(_frame((3, 2, 2, 3))), ledger=ledger,
                      engine=Engine(DuckDBBackend(threads=1)))
        [record] = ledger.releases()
    assert 1.0 * (1 - 1e-9) < record.epsilon <= 1.0
    assert sum(count for _, count in release.queries[0].rows) == 50


@pytest.fixture
def fresh_measurements():
    """OpenDP's measurements built afresh (they are cached by the plan's spec)."""
    from release.synthesis import _measurement

    _measurement.cache_clear()
    yield
    _measurement.cache_clear()


@pytest.mark.slow   # OpenDP builds MST's measurement
def test_a_fit_that_fails_on_the_public_table_is_refused_before_the_data_is_read(
        tmp_path, monkeypatch, fresh_measurements):
    """Any failure of the fit on the public table (here a planted one, worded as OpenDP's
    chained errors are) refuses in prepare(), from the plan alone, in one sentence; a release
    of it records nothing."""
    from release.synthesis import SynthesisMeasurement

    class Failed(Exception):
        message = CHAINED.replace("insufficient budget for query: 0.14999999999999988 > "
                                  "0.14999999999999986", "scale (-0.5) must not be finite")

    def fit(self, cells):
        raise Failed()

    monkeypatch.setattr(SynthesisMeasurement, "fit", fit)
    plan = _plan((3, 2, 2), "MST", 1.0)
    with pytest.raises(ReleaseRefused) as refused:
        prepare(plan)   # the plan alone: no data at hand
    words = str(refused.value)
    assert "before any data is read" in words and "scale (-0.5)" in words
    assert "Traceback" not in words and "/srv" not in words and "\n" not in words
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        with pytest.raises(ReleaseRefused):
            run(plan, FrameSource(_frame((3, 2, 2))), ledger=ledger,
                engine=Engine(DuckDBBackend(threads=1)))
        assert ledger.releases() == []


@pytest.mark.slow   # three small OpenDP fits (a few seconds each)
@pytest.mark.parametrize(("algorithm", "marginals", "measure"), [
    ("MST", "auto", "zcdp"), ("MST", "auto", "pure"), ("AIM", "auto", "zcdp")])
def test_a_one_column_table_fits_and_its_rows_follow_its_measured_marginal(
        algorithm, marginals, measure, fresh_measurements):
    """One column (3 categories and the missing-or-other code): on main MST failed inside
    OpenDP, on the public table as on the data, with the message ")". Its synthetic rows now
    follow the column's measured 1-way marginal: at a budget so large the noise is below a
    thousandth of a row (OpenDP's scale for a 1-way marginal at ε or ρ of 10⁶), the 1,000
    rows' counts are the real shares' within one row (the rounding's bound) and a little
    estimation error."""
    from engine import JointAggregate
    from plan.kinds.synthetic import MarginalSynthesis
    from release.synthesis import _measurement, fit_cells, synthetic_rows

    spec = MarginalSynthesis(algorithm, marginals, (4,), measure, 1e6, 1, 1000, 300)
    built = _measurement(spec)   # the plan-only trial on the public table
    assert not isinstance(built, str), built
    assert built[1] <= 1e6
    real = np.array([500, 300, 200, 0])
    table = fit_cells(spec, JointAggregate(np.arange(4).reshape(-1, 1), real))
    rows = synthetic_rows(table, (4,), 1000, rng=np.random.default_rng(1))
    counts = np.bincount(rows[:, 0], minlength=4)
    assert counts.sum() == 1000
    assert np.all(np.abs(counts - real) <= 3), counts
