"""Property tests of dpcore.safe_rounding: shown figures round in the safe direction.

Random valid and invalid input, judged by the shared oracle (tests/dpcore/properties/oracle.py);
then each bug these properties found, pinned by one example.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpcore import safe_rounding
from tests.dpcore.properties.oracle import (
    PROPERTY,
    Arg,
    covers,
    finite_real,
    ok,
    probability,
)


@covers("safe_rounding.upper", "safe_rounding.lower")
@PROPERTY
@given(x=finite_real(), digits=st.sampled_from([Arg(3, "nice"), Arg(4, "nice"), Arg(1, "nice"),
                                                 Arg(0, "bad"), Arg(16, "bad"),
                                                 Arg(2.5, "bad"), Arg("3", "bad")]))
def test_figures_round_in_the_safe_direction(x, digits):
    if isinstance(x.value, (float, np.floating)) and np.isinf(x.value):
        x = Arg(x.value, "nice")  # an unbounded loss (no noise) is shown as ∞
    up = ok(lambda: safe_rounding.upper(x.value, digits.value), {"x": x, "digits": digits})
    down = ok(lambda: safe_rounding.lower(x.value, digits.value), {"x": x, "digits": digits})
    if up is not None and x.tag != "bad":
        value = float(x.value)
        if math.isinf(value):
            assert up == down == ("∞" if value > 0 else "−∞")
            return
        # shown loss ≥ true ≥ shown guarantee, but for float error: within 64 ulps of a short
        # decimal a float reads as it (1 + 1 + 1 composed is 3.0000000000000004 and reads 3)
        slack = 64 * math.ulp(value)
        assert float(up) >= value - slack and float(down) <= value + slack
        if 0 < abs(value) < 1e307:
            assert float(up) == pytest.approx(value, rel=10.0 ** (1 - digits.value))
            assert float(down) == pytest.approx(value, rel=10.0 ** (1 - digits.value))



@covers("safe_rounding.is_shown_exactly")
@PROPERTY
@given(x=finite_real(), digits=st.sampled_from([Arg(3, "nice"), Arg(4, "nice"), Arg(15, "nice"),
                                                 Arg(0, "bad"), Arg("3", "bad")]))
def test_a_figure_is_exact_when_rounding_up_and_down_agree(x, digits):
    if isinstance(x.value, (float, np.floating)) and np.isinf(x.value):
        x = Arg(x.value, "nice")  # ∞ is shown as ∞: exactly
    exact = ok(lambda: safe_rounding.is_shown_exactly(x.value, digits.value),
               {"x": x, "digits": digits})
    if exact is not None and x.tag != "bad":
        assert exact == (safe_rounding.upper(x.value, digits.value)
                         == safe_rounding.lower(x.value, digits.value))


@covers("safe_rounding.percent_upper", "safe_rounding.percent_lower")
@PROPERTY
@given(p=probability(zero_ok=True, nice_hi=1.0))
def test_figures_percentages(p):
    if type(p.value) is float and p.value == 1.0:
        p = Arg(1.0, "nice")  # certainty is a probability too (probability() excludes it)
    up = ok(lambda: safe_rounding.percent_upper(p.value), {"p": p})
    down = ok(lambda: safe_rounding.percent_lower(p.value), {"p": p})
    if up is not None:
        value = float(p.value)
        assert up.endswith("%") and down.endswith("%")
        assert (up == "100%") == (value == 1.0) == (down == "100%")  # never certainty by rounding
        for text, at_least in ((up, True), (down, False)):
            number = text.rstrip("%")
            if number[0].isdigit():
                shown = float(number) / 100
                assert (shown >= value * (1 - 1e-15)) if at_least else (shown <= value)
                assert shown == pytest.approx(value, rel=0.01, abs=1e-12)


def test_float_error_reads_as_the_short_decimal_it_stands_for():
    # Issue 21 item 7: 1 + 1 + 1 composed and padded read 'basic ε = 3.001' beside 'PLD ε = 3'.
    assert (safe_rounding.upper(3.0000000000000004, 4) == "3"
            == safe_rounding.lower(2.9999999999999996, 4))
    assert safe_rounding.upper(2.0000000000000075, 4) == "2"   # the accountants' relative 2⁻⁴⁸
    assert safe_rounding.upper(3 + 1e-13, 4) == "3.001"
    assert safe_rounding.lower(3 - 1e-13, 4) == "2.999"
    assert safe_rounding.is_shown_exactly(0.1 + 0.2)
    assert not safe_rounding.is_shown_exactly(1 / 3, 15)
