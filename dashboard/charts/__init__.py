"""Plotly figures for Epsilon Lab: pure functions from numbers to ``go.Figure``.

One template for the whole app (``base``); one module per page area, re-exported here.
"""

from dashboard.charts.base import PALETTE, TEMPLATE, finish  # noqa: F401
