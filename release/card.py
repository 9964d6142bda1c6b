"""The release card: a JSON description of a release in the terms of the public registry of
differential privacy deployments (data, privacy unit, flavour, ε/δ/ρ per query and in total,
model, accounting, mechanisms, implementation), and what the guarantee does not cover.
"""

from __future__ import annotations

import json
from typing import Any

from plan import model
from plan.kinds import kind_of
from release.files import _interval_record, _json_safe, release_level, released_by
from release.measurements import OPENDP_VERSION
from release.run import Release

__all__ = ["LOOKING_AT_TRUE_ANSWERS", "release_card", "card_json", "not_covered",
           "data_handling", "budget_record"]


def _declarations(q: model.PlanQuery) -> list[tuple[str, Any]]:
    """(what, declaration) for every bound, category list and grid of a query."""
    return kind_of(q.query).declarations(q.query)


def not_covered(plan: model.Plan) -> list[dict[str, Any]]:
    """What was read off the raw data, and is therefore not covered by the guarantee."""
    out = []
    for q in plan.queries:
        for what, declared in _declarations(q):
            if declared.origin == "data":
                out.append({"query": q.id, "what": what, "origin": "read from the data",
                            "source": declared.source})
        noise = q.mechanism
        if isinstance(noise, model.Noise) and noise.lower is not None and (
                noise.range_origin == "data"):
            out.append({"query": q.id, "what": f"answer range of the {noise.kind} mechanism",
                        "origin": "read from the data",
                        "source": "a round number at or above the data's own size"})
    unit = plan.privacy_unit
    charged = any(isinstance(q.query, model.MaxRows) for q in plan.queries)
    if unit.person_column is not None and (unit.bounds_origin == "data" or (
            unit.bounds_origin == "private" and not charged)):
        out.append({"query": None, "what": "contribution bounds (rows and groups per person)",
                    "origin": "chosen on the raw data", "source": "" if unit.bounds_origin
                    == "data" else "drawn privately, but the draw is not charged in this plan"})
    return out


def data_handling(plan: model.Plan) -> list[dict[str, Any]]:
    """How the release read the data, as rules of the plan (never figures of the data):
    contribution bounds, clamping, rounding, what is not counted."""
    unit = plan.privacy_unit
    out: list[dict[str, Any]] = []
    if unit.person_column is not None:
        groups = ("" if unit.max_groups is None else
                  f"; in a grouped query, in at most {unit.max_groups:,} group(s)")
        out.append({"query": None, "rule": (
            f"each person (rows with the same {unit.person_column!r}) keeps at most "
            f"{unit.max_rows:,} row(s) per query or group{groups}, chosen at random from "
            "their own rows alone (a keyed hash of their rows and of their groups' values); "
            "rows whose person id is missing are not counted")})

    for q in plan.queries:
        out.extend({"query": q.id, "rule": rule} for rule in kind_of(q.query).rules(q))
    return out


def _flavour(release: Release) -> str:
    if release.spent.method == "zcdp":
        return "zero-concentrated DP (zCDP), reported as approximate DP"
    return "pure DP" if release.spent.delta == 0 else "approximate DP"


#: Never covered: what the planner chose while the simulator showed true answers.
LOOKING_AT_TRUE_ANSWERS: dict[str, Any] = {
    "query": None, "what": "choices made while looking at true answers",
    "origin": "the planner's own use of the simulator",
    "source": "Epsilon Lab's simulator shows true answers to whoever makes the plan: "
              "ε, mechanisms, bounds or categories chosen by looking at them depend "
              "on the data in a way no guarantee covers"}


def release_card(release: Release) -> dict[str, Any]:
    """The card of a recorded release (a JSON-able dict)."""
    plan = release.plan
    unit = plan.privacy_unit
    spent = release.spent
    flagged = not_covered(plan)
    public = [{"query": q.id, "what": what, "origin": declared.origin,
               "source": declared.source}
              for q in plan.queries for what, declared in _declarations(q)
              if declared.origin != "data"]
    mechanisms = sorted({part["mechanism"] for q in release.queries for part in q.parts})
    level = release_level(release)
    return _json_safe({
        "format": "epsilon-lab-release-card",
        "version": 1,
        "product": {
            "name": f"{plan.dataset.name}: {len(plan.queries)} statistic(s)",
            "description": "; ".join(q.label for q in plan.queries),
            "released_at": release.record.time,
            **({} if released_by() is None else {"released_by": released_by()}),
            "ledger_entry": release.record.id,
            "values_sha256": release.values_hash,
        },
        "data": {"name": plan.dataset.name, "origin": plan.dataset.origin},
        "privacy_unit": {
            "unit": "row" if unit.person_column is None else "person",
            "person_column": unit.person_column,
            "max_rows_per_person": unit.max_rows,
            "max_groups_per_person": unit.max_groups,
            "neighbouring_datasets": "add or remove one " + (
                "row" if unit.person_column is None else "person with all their rows"),
            "description": unit.describe(),
        },
        "flavour": _flavour(release),
        "model": "central (a trusted curator runs the release on the raw data)",
        "privacy_loss": {**spent.to_dict(), "scope": "this release; releases of the same "
                         "dataset add up in the ledger"},
        "accounting": {"method": spent.method, "requested": spent.requested,
                       "delta": plan.accounting.delta, "note": spent.note},
        "queries": [{"id": q.id, "label": q.label, "statistic": q.statistic,
                     "mechanisms": [{"part": p["part"], "mechanism": p["mechanism"],
                                     "opendp": p["opendp"], "noise_scale": p["scale"],
                                     "sensitivity": p["sensitivity"],
                                     "privacy": p["certified"], "planned": p["planned"]}
                                    for p in q.parts],
                     "notes": list(q.notes),
                     "interval": _interval_record(q, level)}
                    for q in release.queries],
        "intervals": {
            "level": level,
            "what": f"each released value with a {level:.0%} interval for the noise: from the "
                    "mechanism's law, its scale, the released value and the declared bounds "
                    "only (never the true data); it covers the true value (after contribution "
                    "bounds and clamping) with at least that probability, unless a query's "
                    "interval method says otherwise (a count found by partition selection)",
            "choices": "a released category or grid value (a selection, a quantile) has no "
                       "error of its own and no interval: its choice's error is bounded "
                       "instead, from 0 to an upper end at the same level (each query's "
                       "interval.of says what: the chosen category's count short of the top "
                       "count, the quantile's rank error in rows above the grid's best), "
                       "given apart from value intervals (choice_error in release.json, the "
                       "'choice error' columns of release.csv), never as lower and upper",
            "not_given": "the max rows per person drawn before the release carries no "
                         "interval",
        },
        "mechanisms": mechanisms,
        "implementation": {"library": "OpenDP", "version": OPENDP_VERSION,
                           "tool": "Epsilon Lab",
                           "samplers": "OpenDP's exact samplers with the operating system's "
                                       "entropy; never seeded"},
        "data_handling": data_handling(plan),
        "dataset_budget": budget_record(release),
        "public_information": public,
        "not_covered_by_the_guarantee": [*flagged, dict(LOOKING_AT_TRUE_ANSWERS)],
    })


def budget_record(release: Release) -> dict[str, Any]:
    """The dataset's budget as the ledger held it when this release was recorded: every
    budget event before it (set, raised, lowered, δ cap removed or set), with its time, its
    reason and what earlier releases had spent then. The steward's decisions and the ε of
    earlier releases only (public facts about the release), never a figure of the data."""
    history = [change.to_dict() for change in release.budget_history]
    return {
        "what": "every setting of this dataset's total budget in the ledger before this "
                "release, oldest first; the latest held when it was released; a budget "
                "raised, or its δ cap removed, after releases were made lets this data "
                "spend more than was first promised",
        "history": history,
        "in_force": history[-1] if history else None,
    }


def card_json(release: Release) -> bytes:
    return json.dumps(release_card(release), indent=2, ensure_ascii=False,
                      allow_nan=False).encode("utf-8")
