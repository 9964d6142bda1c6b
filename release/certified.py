"""A part of a query ready to draw (:class:`Certified`) and OpenDP, imported on first use
(``dp``): what ``release.measurements`` and ``release.synthesis`` both build on.

Below both, so that the certifiers (``release.measurements``) can call the synthetic table's
(``release.synthesis``) and the synthetic table can build on the same lazy OpenDP, without an
import circle between them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import version
from typing import Any

from dpcore.accounting import Composable
from plan.parts import Loss, Part

__all__ = ["OPENDP_VERSION", "Certified", "dp"]


@functools.cache
def _core() -> dict[str, Any]:
    """The names of OpenDP's core modules (``mod``, domains, metrics, measures, with
    ``m`` and ``t`` the measurements and transformations), contrib features on, imported on
    first use: everything a plan's additive, selection, quantile and threshold parts are
    built from, in about 0.15 CPU seconds. The prelude costs about a second more whatever
    the plan (issue 37, item 4: it imports scikit-learn, pandas, scipy.stats and polars for
    its extras), so only a name outside the core (``mbi``, ``polars``) imports it."""
    import opendp.domains
    import opendp.measurements
    import opendp.measures
    import opendp.metrics
    import opendp.mod
    import opendp.transformations

    opendp.mod.enable_features("contrib")
    names: dict[str, Any] = {}
    for module in (opendp.mod, opendp.domains, opendp.metrics, opendp.measures):
        # what the prelude's ``from module import *`` re-exports: the same objects
        names.update((n, getattr(module, n)) for n in module.__all__)
    names["m"] = opendp.measurements
    names["t"] = opendp.transformations
    return names


@functools.cache
def _prelude() -> Any:
    """OpenDP's prelude with its contrib features on, imported on first use of a name outside
    :func:`_core` (a synthetic table's ``mbi``): it brings polars, scikit-learn and
    scipy.stats (about 2 CPU seconds), which a page that only opens the ledger or the saved
    plans (every page's first run) must not wait for (issue 20), nor a release of counts,
    sums and histograms (issue 37)."""
    import opendp.prelude as prelude

    prelude.enable_features("contrib")
    return prelude


class _OpenDP:
    """``dp.<name>`` is ``opendp.prelude.<name>``: from OpenDP's core modules when the name
    is one of theirs (the same objects the prelude re-exports), else from the prelude,
    OpenDP imported the first time."""

    def __getattr__(self, name: str) -> Any:
        core = _core()
        if name in core:
            return core[name]
        return getattr(_prelude(), name)


dp = _OpenDP()

#: The OpenDP release behind every real release (recorded in the ledger and the card).
OPENDP_VERSION = version("opendp")

@dataclass(frozen=True, eq=False)
class Certified:
    """One part of a query, ready to draw: its OpenDP measurement, the input distance its map
    was read at, and the privacy OpenDP certifies there (``certified``, with the δ recorded:
    for partition selection the larger of OpenDP's and dpcore's).

    ``planned`` is the part's figure in the plan, ``opendp_scale`` the scale handed to OpenDP
    (the plan's, in the units of OpenDP's scores for a quantile), ``note`` what differs
    between what the plan says and what OpenDP certifies, if anything.

    ``noise_law`` is the part's noise as the accountants compose it when its law is one a
    privacy-loss distribution represents exactly (Laplace, Gaussian, discrete Laplace, a
    scalar discrete Gaussian; a threshold's noise and its recorded δ): a
    :class:`~dpcore.accounting.NoiseLoss` at OpenDP's scale and the distance OpenDP's map was
    read at (never less than the certificate implies). Empty when OpenDP's certificate is
    all that is known (selections, quantiles, bounded Laplace, staircase, synthetic tables).

    ``described`` is the mechanism as the ledger records it, ``opendp`` the OpenDP
    constructor it was built with, in words: each certifier says them for its type.
    """

    part: Part
    measurement: Any
    d_in: Any
    certified: Loss
    planned: Loss
    opendp_scale: float
    integer: bool
    post: Callable[[Any], Any] | None = None
    note: str = ""
    noise_law: tuple[Composable, ...] = ()
    described: str = ""
    opendp: str = ""

    def draw(self, value: Any) -> Any:
        """One release of this part on ``value`` (a number, a list, or a dict of counts)."""
        out = self.measurement(value)
        return out if self.post is None else self.post(out)


