"""Releasing a plan for real: OpenDP's measurements, the ledger, the files and the card.

``release.run(plan, source, ledger=...)`` runs a plan once (``release.run``), with each
query's noise drawn by the OpenDP measurement of the planned scale (``release.measurements``)
and the release recorded in the append-only ledger (``release.ledger``) before anything is
returned; ``release.files`` and ``release.card`` write it out; ``python -m release`` is the
command line.
"""

from release.errors import (
    DataMismatch,
    DrawFailed,
    MapCheckFailed,
    OverBudget,
    ReleaseRefused,
    Unsupported,
)
from release.ledger import Ledger, LedgerError
from release.run import Release, ReleasedQuery, prepare, run

__all__ = ["DataMismatch", "DrawFailed", "Ledger", "LedgerError", "MapCheckFailed", "OverBudget",
           "Release", "ReleaseRefused", "ReleasedQuery", "Unsupported", "prepare", "run"]
