"""How a privacy or accuracy figure is shown to a user: rounded in the direction that is safe.

A privacy loss (ε, ρ, δ), an attacker's belief bound or an error half-width ±α rounds *up*; a
guarantee ("at least 59.8 % of releases") rounds *down*. Nearest rounding is for estimates only.
"""

from __future__ import annotations

import math
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_EVEN, Decimal, localcontext

from dpcore.checks import check_int, check_real

__all__ = ["upper", "lower", "is_shown_exactly", "percent_upper", "percent_lower"]

#: A float within this many units in the last place of a decimal of at most ``_SHORT`` significant
#: digits stands for that decimal: 1 + 1 + 1 added up and rounded up to a float is
#: 3.0000000000000004, and 3 × 1 is 3 — it must not read 3.001. The accountants pad a total by
#: a relative 2⁻⁴⁸ (about 16 ulps: dpcore.accounting._up) for their float operations; 64 ulps
#: cover that and a few operations more, and are a hundredth of a 12-digit decimal's spacing.
_ULPS = 64
_SHORT = 12


def _rounded(exact: Decimal, digits: int, rounding: str) -> Decimal:
    """``exact`` rounded to ``digits`` significant digits in the direction ``rounding``.

    Callers pass ``_decimal(x)``: the shortest decimal that reads back as the same float,
    so ε = 0.1 shows as 0.1 (its binary value, 0.1000000000000000055…, would round up to 0.101),
    or the short decimal a float stands for within float error.
    """
    if exact == 0:
        return exact
    exponent = exact.adjusted() - digits + 1
    with localcontext() as context:
        context.prec = 2000  # quantize must not round a second time
        return exact.quantize(Decimal(1).scaleb(exponent), rounding=rounding)


def _decimal(x: float) -> Decimal:
    """The decimal ``x`` stands for: a short decimal when ``x`` is within float error of one
    (3.0000000000000004 → 3, 0.30000000000000004 → 0.3), else its shortest repr (1/3 stays
    0.3333333333333333: no 12-digit decimal is within a few ulps of it)."""
    exact = Decimal(repr(x))
    if exact == 0:
        return exact
    short = _rounded(exact, _SHORT, ROUND_HALF_EVEN)
    if short != exact and abs(float(short) - x) <= _ULPS * math.ulp(x):
        return short.normalize()
    return exact


def _text(value: Decimal, digits: int) -> str:
    """A short string for a rounded value: 4.255, 0.0312, 1.5e-06, 1.23e+08, 10."""
    if value == 0:
        return "0"
    magnitude = value.adjusted()
    if -5 <= magnitude < digits + 3:
        text = format(value, "f")
        if "." in text:
            text = text.rstrip("0").rstrip(".")
        return text
    mantissa = value.scaleb(-magnitude).normalize()
    mantissa_text = format(mantissa, "f")
    return f"{mantissa_text}e{magnitude:+03d}"


def _check(x: object, digits: object) -> tuple[float, int]:
    value = check_real("x", x)
    if math.isnan(value):
        raise ValueError("x must be a number, got nan")
    places = check_int("digits", digits)
    if not 1 <= places <= 15:
        raise ValueError(f"digits must be between 1 and 15, got {places}")
    return value, places


def upper(x: float, digits: int = 3) -> str:
    """``x`` rounded up to ``digits`` significant digits: for losses, bounds and ±α.

    >>> upper(4.2541, 4), upper(5.2215), upper(0.8161)
    ('4.255', '5.23', '0.817')
    """
    value, places = _check(x, digits)
    if math.isinf(value):
        return "∞" if value > 0 else "−∞"
    return _text(_rounded(_decimal(value), places, ROUND_CEILING), places)


def lower(x: float, digits: int = 3) -> str:
    """``x`` rounded down to ``digits`` significant digits: for guarantees ("at least …").

    >>> lower(0.5987), lower(2.0)
    ('0.598', '2')
    """
    value, places = _check(x, digits)
    if math.isinf(value):
        return "∞" if value > 0 else "−∞"
    return _text(_rounded(_decimal(value), places, ROUND_FLOOR), places)


def is_shown_exactly(x: float, digits: int = 3) -> bool:
    """Whether ``upper(x, digits)`` (and ``lower``) is the value itself, not rounded: 3 and
    3.0000000000000004 are; 1/3 at any number of digits is not (a page marks it ↑ or ↓).

    >>> is_shown_exactly(3.0000000000000004, 4), is_shown_exactly(1 / 3, 4)
    (True, False)
    """
    value, places = _check(x, digits)
    if math.isinf(value):
        return True
    exact = _decimal(value)
    return _rounded(exact, places, ROUND_CEILING) == exact


def _check_probability(p: object) -> float:
    value = check_real("p", p)
    if not 0.0 <= value <= 1.0:  # NaN fails too
        raise ValueError(f"p must be a probability in [0, 1], got {value}")
    return value


def _percent(p: float, rounding: str) -> str:
    if p == 0.0 or p == 1.0:
        return f"{100 * p:.0f}%"
    # Three significant digits, and near certainty enough decimals to keep the distance to
    # 100 % visible: a bound short of certainty never reads "100%", nor a non-zero one "0%".
    digits = 3
    if 1.0 - p < 0.01:
        digits = min(15, max(3, 1 + math.ceil(-math.log10(1.0 - p))))
    with localcontext() as context:
        context.prec = 2000  # 100·p exactly
        hundred_p = Decimal(repr(p)) * 100
    value = _rounded(hundred_p, digits, rounding)
    if value >= 100 and p < 1.0:
        return "more than 99.9999999999%" if rounding == ROUND_FLOOR else "less than 100%"
    if value == 0 and p > 0.0:
        return "more than 0%"
    return _text(value, digits) + "%"


def percent_upper(p: float) -> str:
    """A probability as a percentage rounded up: for an attacker's belief or a failure chance.

    >>> percent_upper(0.73106), percent_upper(0.999721)
    ('73.2%', '99.973%')
    """
    return _percent(_check_probability(p), ROUND_CEILING)


def percent_lower(p: float) -> str:
    """A probability as a percentage rounded down: for "at least" guarantees.

    >>> percent_lower(0.5987), percent_lower(0.999729)
    ('59.8%', '99.972%')
    """
    return _percent(_check_probability(p), ROUND_FLOOR)
