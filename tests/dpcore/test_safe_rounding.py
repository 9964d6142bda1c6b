"""dpcore.safe_rounding: privacy losses and bounds round up, guarantees round down (exact cases)."""

from __future__ import annotations

import pytest

from dpcore import safe_rounding


@pytest.mark.parametrize(("x", "digits", "up", "down"), [
    (4.2541, 4, "4.255", "4.254"),      # a budget total that used to read 4.254
    (5.2215, 3, "5.23", "5.22"),        # describe_risk's ε that used to read 5.22
    (0.8161, 3, "0.817", "0.816"),      # the smallest ε the hover showed as 0.816
    (0.1, 3, "0.1", "0.1"),             # a typed ε shows as typed
    (1.0, 3, "1", "1"),
    (2.5e-7, 2, "2.5e-07", "2.5e-07"),
    (123456789.0, 3, "1.24e+08", "1.23e+08"),
    (-1.234, 2, "-1.2", "-1.3"),        # up is towards +∞
    (0.0, 3, "0", "0"),
])
def test_rounding_direction(x, digits, up, down):
    assert safe_rounding.upper(x, digits) == up
    assert safe_rounding.lower(x, digits) == down


@pytest.mark.parametrize(("p", "up", "down"), [
    (0.5987, "59.9%", "59.8%"),         # "at least 59.9 %" for 59.87 % was the defect
    (0.731058, "73.2%", "73.1%"),
    (0.95, "95%", "95%"),
    (0.999721, "99.973%", "99.972%"),   # near certainty the distance to 100 % stays visible
    (1 - 1e-13, "99.99999999999%", "99.99999999999%"),
    (1 - 2**-53, "less than 100%", "99.9999999999999%"),
    (1.0, "100%", "100%"),
    (0.0, "0%", "0%"),
])
def test_percentages(p, up, down):
    assert safe_rounding.percent_upper(p) == up
    assert safe_rounding.percent_lower(p) == down


@pytest.mark.parametrize(("call", "name"), [
    (lambda: safe_rounding.upper(float("nan")), "x"),
    (lambda: safe_rounding.lower(1.0, 0), "digits"),
    (lambda: safe_rounding.percent_upper(1.5), "p"),
    (lambda: safe_rounding.percent_lower(float("nan")), "p"),
])
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()
