"""Numbers as the pages show them: privacy losses and error bounds ±α rounded up, guarantees
("at least …") rounded down, through ``dpcore.figures``, with thousands separators.
"""

from __future__ import annotations

import math

from dpcore import figures

__all__ = ["up", "down", "percent_up", "percent_down"]


def _places(x: float, digits: int) -> int:
    """``digits`` significant digits, but never fewer than the integer part has (at most 15)."""
    whole = math.floor(math.log10(abs(x))) + 1 if abs(x) >= 1 else 0
    return min(15, max(digits, whole))


def _shown(x: float, digits: int, rounding) -> str:
    x = float(x)
    if math.isnan(x):
        return "—"
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    if x == 0:
        return "0"
    places = _places(x, digits)
    # The rounded decimal has at most ``places`` digits, and the float nearest to it is on the
    # same side of x (rounding to the nearest float is monotone); formatting that float to
    # ``places`` digits gives the decimal back, now with separators: 1,235 · 0.0001235 · 1e-06.
    rounded = float(rounding(x, places))
    return f"{rounded:,.{_places(rounded, places)}g}"   # 99,999.2 → 100,000 has one more


def up(x: float, digits: int = 4) -> str:
    """``x`` rounded up to ``digits`` significant digits (whole numbers kept whole): for a
    privacy loss (ε, δ, ρ) or an error bound ±α. '—' for NaN.

    >>> up(4.25412), up(2.99573), up(123456.2), up(1e-06)
    ('4.255', '2.996', '123,457', '1e-06')
    """
    return _shown(x, digits, figures.upper)


def down(x: float, digits: int = 4) -> str:
    """``x`` rounded down to ``digits`` significant digits: for a guarantee ("at least …").

    >>> down(0.59876), down(41.999)
    ('0.5987', '41.99')
    """
    return _shown(x, digits, figures.lower)


def percent_up(p: float) -> str:
    """A probability as a percentage, rounded up (a failure chance, an attacker's belief)."""
    return figures.percent_upper(p)


def percent_down(p: float) -> str:
    """A probability as a percentage, rounded down (a guarantee: "at least 59.8 %")."""
    return figures.percent_lower(p)
