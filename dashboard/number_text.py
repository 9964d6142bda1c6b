"""Numbers as the pages show them: privacy losses and error bounds ±α rounded up, guarantees
("at least …") rounded down, through ``dpcore.safe_rounding``, with thousands separators; a loss
that was rounded up is marked ↑ (:func:`loss`, :data:`ROUNDED_UP`); counts are whole
(:func:`count`).
"""

from __future__ import annotations

import math

from dpcore import safe_rounding

__all__ = ["up", "down", "loss", "count", "is_shown_exactly", "UP_MARK", "ROUNDED_UP", "percent_up",
           "percent_down"]

#: The mark of a privacy figure rounded up, and the one note a page that shows it gives.
UP_MARK = "↑"
ROUNDED_UP = ("Figures marked ↑ are rounded up so the guarantee holds: the privacy loss is at "
              "most the figure shown.")


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
    return _shown(x, digits, safe_rounding.upper)


def is_shown_exactly(x: float, digits: int = 4) -> bool:
    """Whether :func:`up` and :func:`down` show ``x`` itself (3 × 1 = 3.0000000000000004 is 3),
    not a figure rounded from it (1/3 → 0.3334)."""
    x = float(x)
    if not math.isfinite(x) or x == 0:
        return True
    return safe_rounding.is_shown_exactly(x, _places(x, digits))


def loss(x: float, digits: int = 4) -> str:
    """A privacy loss (ε, δ, ρ) as every page shows it: exact when it is a short decimal
    (within float error), else rounded up and marked ↑ (the page then shows :data:`ROUNDED_UP`
    once).

    >>> loss(3.0000000000000004), loss(1 / 3), loss(0.5)
    ('3', '0.3334↑', '0.5')
    """
    return up(x, digits) + ("" if is_shown_exactly(x, digits) else UP_MARK)


def count(x: float) -> str:
    """A count of people or rows, or an integer mechanism's release: a whole number with
    thousands separators (8025.35 → 8,025; a noisy count rounded is still private).

    >>> count(8025.35), count(48842), count(-3.5)
    ('8,025', '48,842', '-4')
    """
    x = float(x)
    if math.isnan(x):
        return "—"
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    return f"{round(x):,}"


def down(x: float, digits: int = 4) -> str:
    """``x`` rounded down to ``digits`` significant digits: for a guarantee ("at least …").

    >>> down(0.59876), down(41.999)
    ('0.5987', '41.99')
    """
    return _shown(x, digits, safe_rounding.lower)


def percent_up(p: float) -> str:
    """A probability as a percentage, rounded up (a failure chance, an attacker's belief)."""
    return safe_rounding.percent_upper(p)


def percent_down(p: float) -> str:
    """A probability as a percentage, rounded down (a guarantee: "at least 59.8 %")."""
    return safe_rounding.percent_lower(p)
