"""Plotly figures for Epsilon Lab: pure functions from numbers to ``go.Figure``.

One template for the whole app (``base``); one module per page area, re-exported here.
"""

from dashboard.charts.attacker import attack_chart  # noqa: F401
from dashboard.charts.base import PALETTE, TEMPLATE, finish  # noqa: F401
from dashboard.charts.data import (  # noqa: F401
    binned_histogram,
    category_bars,
    counted_bars,
    numeric_histogram,
    rows_per_person,
)
from dashboard.charts.epsilon import tradeoff_chart, utility_curves  # noqa: F401
from dashboard.charts.learning import accuracy_against_epsilon  # noqa: F401
from dashboard.charts.selection import correctness_chart, selection_chart  # noqa: F401
from dashboard.charts.statistics import category_errors, error_spread, noisy_bars  # noqa: F401
from dashboard.charts.tables import l1_error_histograms, svg_text, table_heatmap  # noqa: F401
