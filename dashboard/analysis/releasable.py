"""Can a page's query be released as it would be added to the plan? And if not, what can?

The query alone in a plan, through ``release.prepare``: built, and every part certified against
OpenDP's privacy maps, without reading any data. A refusal (no OpenDP measurement for the
mechanism or its measure, a map above the plan's figure, a plan error) is the reason shown
before the query is added; the alternatives are the same query with another mechanism that
``release.prepare`` accepts — for a selection or a quantile, first the same noise under the
other measure at the same noise scale (the very law the page shows), then the other noises at
the same budget; for an additive query, the catalogue's other kinds at the same budget. No
mechanism is named here: the candidates are read off the catalogue and the noise types.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace

from dpcore.mechanisms import CATALOGUE
from dpcore.selection import NOISE_TYPES
from plan import model
from plan.build import build
from release import MapCheckFailed, ReleaseRefused, Unsupported, prepare

__all__ = ["Releasability", "releasability", "MAX_ALTERNATIVES"]

#: Most alternatives offered beside a refusal.
MAX_ALTERNATIVES = 2
_REFUSED = (Unsupported, MapCheckFailed, model.PlanError)


@dataclass(frozen=True)
class Releasability:
    """``reason`` None: releasable as set. Else why not (one line), and ``alternatives``: the
    same query with a mechanism a release accepts, each ready to add."""

    reason: str | None
    alternatives: tuple[model.PlanQuery, ...] = ()

    @property
    def releasable(self) -> bool:
        return self.reason is None


def _refusal(query: model.PlanQuery, unit: model.PrivacyUnit) -> str | None:
    """Why ``release.prepare`` refuses the one-query plan, None when it certifies it.

    The plan's accounting and total budget are the Release plan page's business: a refusal
    there (not of the query's own parts) does not count here."""
    try:
        prepare(model.Plan(model.Dataset("release check"), (query,), unit))
    except _REFUSED as exc:
        return re.sub(r"^query '[^']*'(?: \([^)]*\))?: ", "", str(exc)).rstrip(". ")
    except ReleaseRefused:
        return None
    except Exception as exc:  # noqa: BLE001 — OpenDP's own refusals: shown, never a traceback
        return f"OpenDP cannot certify it as set ({type(exc).__name__}: {exc})"
    return None


def _selection_alternatives(query: model.PlanQuery, unit: model.PrivacyUnit
                            ) -> Iterator[model.PlanQuery]:
    noise: model.SelectionNoise = query.mechanism
    other = "zcdp" if noise.measure == "pure" else "pure"
    try:
        # a selection's or quantiles' parts are all report noisy max
        parts = [p.mechanism for p in build(query, unit).parts]
    except (model.PlanError, ValueError):
        parts = []
    if parts:   # the same noise at the same scale, read in the other measure
        read = [m.privacy_under(other) for m in parts]
        total = math.fsum(r.rho if other == "zcdp" else r.epsilon for r in read)
        budget = {"rho": total} if other == "zcdp" else {"epsilon": total}
        yield replace(query, mechanism=model.SelectionNoise(noise.noise, other, **budget))
    for kind in NOISE_TYPES:
        if kind != noise.noise:
            yield replace(query, mechanism=replace(noise, noise=kind))


def _additive_alternatives(query: model.PlanQuery) -> Iterator[model.PlanQuery]:
    noise: model.Noise = query.mechanism
    needs_range = CATALOGUE[noise.kind].needs_range
    for kind, spec in CATALOGUE.items():
        if kind == noise.kind or spec.needs_range != needs_range:
            continue
        measure = noise.measure if noise.measure in spec.budgets else (
            "pure" if "pure" in spec.budgets else None)
        if measure is None:
            continue
        budget = {name: getattr(noise, name) for name in spec.budgets[measure]}
        if any(value is None for value in budget.values()):
            continue
        ends = {"lower": noise.lower, "upper": noise.upper} if needs_range else {}
        yield replace(query, mechanism=model.Noise(kind, measure, **budget, **ends))


def releasability(query: model.PlanQuery, unit: model.PrivacyUnit) -> Releasability:
    """Whether ``query`` (under ``unit``) can be released as it would be added, and if not,
    up to :data:`MAX_ALTERNATIVES` releasable alternatives (each checked the same way)."""
    reason = _refusal(query, unit)
    if reason is None:
        return Releasability(None)
    mechanism = query.mechanism
    if isinstance(mechanism, model.SelectionNoise):
        candidates: Iterator[model.PlanQuery] = _selection_alternatives(query, unit)
    elif isinstance(mechanism, model.Noise):
        candidates = _additive_alternatives(query)
    else:
        candidates = iter(())
    found: list[model.PlanQuery] = []
    for candidate in candidates:
        try:
            candidate.check("query")
        except model.PlanError:
            continue
        if _refusal(candidate, unit) is None:
            found.append(candidate)
        if len(found) == MAX_ALTERNATIVES:
            break
    return Releasability(reason, tuple(found))
