"""dashboard.number_text: numbers on the pages round up (losses, ±α) or down (guarantees), checked
against exact decimal arithmetic."""

from __future__ import annotations

import math
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dashboard.number_text import down, is_shown_exactly, percent_down, percent_up, up


def value(text: str) -> Decimal:
    return Decimal(text.replace(",", ""))


@pytest.mark.parametrize("x, shown", [
    (4.254084650221792, "4.255"), (1.6094379124341003, "1.61"), (0.6931471805599453, "0.6932"),
    (5.991464547107982, "5.992"), (123456.2, "123,457"), (99999.2, "100,000"), (1e-06, "1e-06"),
    (0.1, "0.1"), (2.0, "2"), (0.0, "0"), (math.inf, "∞"), (math.nan, "—"),
])
def test_up_examples(x, shown):
    assert up(x) == shown


def test_down_and_percent_examples():
    assert down(0.59876) == "0.5987" and down(2.0) == "2"
    assert percent_down(0.5987) == "59.8%" and percent_up(0.5987) == "59.9%"
    assert percent_down(0.5**16) == "0.00152%"   # 1/65536 = 0.00152587…%


finite = st.floats(min_value=-1e15, max_value=1e15, allow_nan=False, allow_infinity=False)


@given(finite, st.integers(min_value=1, max_value=8))
def test_up_never_below_and_down_never_above(x, digits):
    # The float's shortest decimal, as dpcore.safe_rounding reads it: 0.1 is 0.1, not its binary
    # 0.1000000000000000055…, which would show as 0.1001; and a float within 64 ulps of a
    # 12-digit decimal stands for it (float error: 1 + 1 + 1 rounded up is 3, not 3.001).
    exact = Decimal(repr(x))
    slack = Decimal(64 * math.ulp(x))
    high, low = value(up(x, digits)), value(down(x, digits))
    assert low - slack <= exact <= high + slack
    # Within one unit of the last digit shown (never more than 15 significant digits kept).
    if x != 0:
        unit = Decimal(10) ** (max(exact.adjusted(), high.adjusted()) - min(
            15, max(digits, exact.adjusted() + 1)) + 1)
        assert high - exact <= unit and exact - low <= unit


@pytest.mark.parametrize("x, shown", [
    (1.0 + 1.0 + 1.0000000000000002, "3"), (3.0000000000000004, "3"), (0.1 + 0.2, "0.3"),
    (2.9999999999999996, "3"), (1.0000000000000002, "1"),
    (2.0000000000000075, "2"),   # 1 + 1 padded by the accountant's relative 2⁻⁴⁸
])
def test_float_error_reads_as_the_exact_figure(x, shown):
    # Three queries at ε = 1 add up to 3 (the accountant rounds the float sum up by an ulp):
    # the page reads 3, as 3 × 1 is, both ways (not 'basic ε = 3.001' beside 'PLD ε = 3').
    assert up(x) == shown and down(x) == shown and is_shown_exactly(x)


@pytest.mark.parametrize("x, up_shown, down_shown", [
    (1 / 3, "0.3334", "0.3333"), (1 / 9, "0.1112", "0.1111"), (1.99991, "2", "1.999"),
    (3 + 1e-13, "3.001", "3"),   # beyond float error (225 ulps)
])
def test_a_rounded_figure_is_not_exact(x, up_shown, down_shown):
    assert up(x) == up_shown and down(x) == down_shown and not is_shown_exactly(x)


def test_a_planted_nearest_rounding_is_caught():
    nearest = f"{4.254084650221792:.4g}"
    assert value(nearest) < Decimal(4.254084650221792) <= value(up(4.254084650221792))


def test_privacy_labels_never_round_down():
    from dashboard.controls import DELTA_OPTIONS, EPSILON_GRID, RHO_GRID, PrivacyChoice, fmt_number

    # Grid values read as before; a typed value with more digits rounds up at the sixth.
    assert all(fmt_number(x) == f"{x:g}" for x in (*EPSILON_GRID, *RHO_GRID, *DELTA_OPTIONS))
    assert fmt_number(0.12345649) == "0.123457" and fmt_number(1.2345641e-07) == "1.23457e-07"
    label = PrivacyChoice("approx", "gaussian", epsilon=0.12345649, delta=1.2345641e-07).label()
    assert label == "Gaussian, ε = 0.123457, δ = 1.23457e-07"


def test_loss_marks_only_a_rounded_figure():
    from dashboard.number_text import loss

    assert loss(3.0000000000000004) == "3" and loss(0.5) == "0.5" and loss(1e-06) == "1e-06"
    assert loss(1 / 3) == "0.3334↑" and loss(1 / 9) == "0.1112↑"
    assert loss(123456.2) == "123,457↑" and loss(2.0, 6) == "2"


def test_count_is_whole():
    from dashboard.number_text import count

    assert count(8025.35) == "8,025" and count(8025.5) == "8,026" and count(48842.0) == "48,842"
    assert count(math.nan) == "—"
