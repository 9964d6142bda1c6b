"""Why a release does not happen: one exception type with a one-line reason, and its kinds.

A refusal happens before anything is drawn (a map that exceeds the plan's figure, a
mechanism OpenDP cannot sample safely, a plan or data that does not fit) or, for the
budget, inside the ledger's transaction (then the drawn values are discarded unseen).
A draw that fails once noise has been drawn (:class:`DrawFailed`) is not a refusal: its
budget is recorded as spent and nothing is published.
"""

from __future__ import annotations

__all__ = ["ReleaseRefused", "MapCheckFailed", "Unsupported", "OverBudget", "DataMismatch",
           "DrawFailed"]


class ReleaseRefused(Exception):
    """A release that was refused; ``str()`` is one line saying why and what to do."""


class MapCheckFailed(ReleaseRefused):
    """OpenDP's privacy map of a query exceeds the figure in the plan."""


class Unsupported(ReleaseRefused):
    """A mechanism with no floating-point-safe OpenDP sampler (or no OpenDP certificate in
    the plan's measure)."""


class OverBudget(ReleaseRefused):
    """The release would take the dataset (or the plan) over its total budget."""


class DataMismatch(ReleaseRefused):
    """The data is not what the plan was made for, or cannot answer a query as planned."""


class DrawFailed(ReleaseRefused):
    """The release failed after noise had been drawn from the data (OpenDP raised while
    drawing): the failure may depend on what was drawn, so the release's budget is recorded
    as spent in the ledger; nothing is published."""
