"""The kinds over one column clamped to declared bounds (sum, mean, variance) share one base
(plan/kinds/bounded.py): each built from fixed plan JSON gives back the very JSON, dataclasses,
engine queries, parts and card wording written out below by hand (what a plan file written
before the base was factored out reads as, and what the published plan shows)."""

from __future__ import annotations

import json
from dataclasses import fields

import pytest

from engine.queries import BoundedSum, Contribution
from plan.build import build_plan
from plan.kinds import KINDS
from plan.kinds.mean import Mean
from plan.kinds.sum import Sum
from plan.kinds.variance import Variance
from plan.model import Bounds, Plan, PlanError

PLAN = """{
  "format": "epsilon-lab-plan",
  "version": 1,
  "dataset": {
    "name": "people",
    "origin": "",
    "content_hash": null
  },
  "privacy_unit": {
    "person_column": "pid",
    "max_rows": 3,
    "max_groups": null,
    "bounds_origin": "typed"
  },
  "accounting": {
    "method": "basic",
    "delta": 0.0
  },
  "budget": null,
  "queries": [
    {
      "id": "s",
      "label": "Sum",
      "page": "plan",
      "query": {
        "kind": "sum",
        "column": "age",
        "bounds": {
          "lower": 0.0,
          "upper": 100.0,
          "origin": "public",
          "source": "census"
        }
      },
      "mechanism": {
        "family": "noise",
        "kind": "geometric",
        "measure": "pure",
        "epsilon": 1.0
      }
    },
    {
      "id": "m",
      "label": "Mean",
      "page": "plan",
      "query": {
        "kind": "mean",
        "column": "age",
        "bounds": {
          "lower": 10.0,
          "upper": 90.0,
          "origin": "typed",
          "source": ""
        },
        "sum_share": 0.25
      },
      "mechanism": {
        "family": "noise",
        "kind": "laplace",
        "measure": "pure",
        "epsilon": 2.0
      }
    },
    {
      "id": "v",
      "label": "Var",
      "page": "plan",
      "query": {
        "kind": "variance",
        "column": "age",
        "bounds": {
          "lower": 10.0,
          "upper": 90.0,
          "origin": "data",
          "source": ""
        }
      },
      "mechanism": {
        "family": "noise",
        "kind": "laplace",
        "measure": "pure",
        "epsilon": 3.0
      }
    }
  ]
}"""

TYPED = Bounds(10.0, 90.0, "typed", "")
PERSON = Contribution("pid", 3, None, 0)


def test_the_plan_reads_into_the_same_dataclasses_and_writes_back_byte_for_byte():
    plan = Plan.from_json(PLAN)
    assert plan.to_json() == PLAN
    specs = [q.query for q in plan.queries]
    assert specs == [Sum("age", Bounds(0.0, 100.0, "public", "census")),
                     Mean("age", TYPED, 0.25), Variance("age", Bounds(10.0, 90.0, "data", ""))]
    assert [repr(s) for s in specs] == [
        "Sum(column='age', bounds=Bounds(lower=0.0, upper=100.0, origin='public', "
        "source='census'), kind='sum')",
        "Mean(column='age', bounds=Bounds(lower=10.0, upper=90.0, origin='typed', source=''), "
        "sum_share=0.25, kind='mean')",
        "Variance(column='age', bounds=Bounds(lower=10.0, upper=90.0, origin='data', "
        "source=''), kind='variance')"]
    assert [[f.name for f in fields(cls)] for cls in (Sum, Mean, Variance)] == [
        ["column", "bounds", "kind"], ["column", "bounds", "sum_share", "kind"],
        ["column", "bounds", "kind"]]
    assert Mean("age", TYPED).sum_share == 0.5
    assert Mean("age", TYPED) != Variance("age", TYPED) and Sum("age", TYPED) != Variance(
        "age", TYPED)
    assert [KINDS[name].spec for name in ("sum", "mean", "variance")] == [Sum, Mean, Variance]


def test_the_engine_queries_and_parts_are_the_ones_written_out():
    """Under 3 rows per person: the sum's 3·100 on whole numbers (geometric noise); the mean's
    sum 3·90 with a quarter of ε = 2 and its count 3 with the rest; the variance's count 3,
    deviations 3·40 and squares 3·40² with a third of ε = 3 each."""
    sums, means, variances = build_plan(Plan.from_json(PLAN))
    assert sums.engine_queries == (BoundedSum("age", 0.0, 100.0, PERSON, whole=True),)
    assert means.engine_queries == (BoundedSum("age", 10.0, 90.0, PERSON),)
    assert variances.engine_queries == (
        BoundedSum("age", 10.0, 90.0, PERSON, centre=50.0),
        BoundedSum("age", 10.0, 90.0, PERSON, centre=50.0, squared=True))
    parts = [[(p.name, type(p.mechanism).__name__, p.sensitivity, p.scale, p.loss.epsilon,
               p.integer, p.size) for p in built.parts] for built in (sums, means, variances)]
    assert parts == [
        [("value", "Geometric", 300.0, 300.0, 1.0, True, None)],
        [("sum", "Laplace", 270.0, 540.0, 0.5, False, None),
         ("count", "Laplace", 3.0, 2.0, 1.5, True, None)],
        [("count", "Laplace", 3.0, 3.0, 1.0, True, None),
         ("sum of deviations", "Laplace", 120.0, 120.0, 1.0, False, None),
         ("sum of squared deviations", "Laplace", 4800.0, 4800.0, 1.0, False, None)]]
    assert [b.sensitivity.l1 for b in (sums, means, variances)] == [300.0, 270.0, 4800.0]


def test_the_card_and_the_programs_read_the_same_words():
    built = build_plan(Plan.from_json(PLAN))
    clamped = ("values of 'age' are clamped to [10, 90]; missing or non-numeric values are not "
               "counted")
    assert [b.kind.rules(b.query) for b in built] == [
        ["values of 'age' are clamped to [0, 100] and rounded to whole numbers (ties to even), "
         "as the whole-number noise needs; missing or non-numeric values are not counted"],
        [clamped, "the mean is released as noisy sum / max(noisy count, 1), clamped to the "
         "bounds (post-processing)"],
        [clamped, "the variance is released as S₂/n − (S₁/n)² from the noisy count n (floored "
         "at 1), sum of deviations S₁ and sum of squared deviations S₂ from the bounds' "
         "midpoint, clamped to [0, ((upper − lower)/2)²] (post-processing)"]]
    specs = [b.query.query for b in built]
    assert [b.kind.declarations(s) for b, s in zip(built, specs, strict=True)] == [
        [("bounds of 'age'", s.bounds)] for s in specs]
    assert [b.kind.program_record(s) for b, s in zip(built, specs, strict=True)] == [
        {"column": "age", "lower": 0.0, "upper": 100.0},
        {"column": "age", "lower": 10.0, "upper": 90.0},
        {"column": "age", "lower": 10.0, "upper": 90.0}]
    assert [(b.kind.spark_reason(s), b.kind.opendp_program_reason(s), b.kind.columns(s),
             b.kind.statistic_of(s)) for b, s in zip(built, specs, strict=True)] == [
        ("", "", ("age",), "sum"), ("", "", ("age",), "mean"), ("", "", ("age",), "variance")]


BOUNDS = {"lower": 0, "upper": 10, "origin": "typed"}


@pytest.mark.parametrize(("query", "message"), [
    ({"kind": "sum", "bounds": BOUNDS}, "queries[0].query.column: is required"),
    ({"kind": "sum", "column": "a"}, "queries[0].query.bounds: is required"),
    ({"kind": "variance", "column": "", "bounds": BOUNDS},
     "queries[0].query.column: must not be empty"),
    ({"kind": "variance", "column": "a", "bounds": {**BOUNDS, "upper": 0}},
     "queries[0].query.bounds.upper: must be > lower = 0, got 0"),
    # the share is read first: a wrong share is named before a missing column
    ({"kind": "mean", "bounds": BOUNDS, "sum_share": "x"},
     "queries[0].query.sum_share: must be a number, got a string"),
    ({"kind": "mean", "column": "a", "bounds": BOUNDS, "sum_share": 1.5},
     "queries[0].query.sum_share: must lie in (0, 1), got 1.5"),
    ({"kind": "mean", "column": "a", "bounds": BOUNDS, "extra": 1},
     "queries[0].query.extra: is not a field of this part of the plan (known: bounds, column, "
     "kind, sum_share)"),
    ({"kind": "sum", "column": "a", "bounds": BOUNDS, "sum_share": 0.5},
     "queries[0].query.sum_share: is not a field of this part of the plan (known: bounds, "
     "column, kind)"),
])
def test_a_wrong_query_is_refused_at_the_same_field(query, message):
    data = json.loads(PLAN)
    data["queries"] = [{"id": "q", "label": "Q", "query": query, "mechanism": {
        "family": "noise", "kind": "laplace", "measure": "pure", "epsilon": 1}}]
    with pytest.raises(PlanError) as error:
        Plan.from_json(json.dumps(data))
    assert str(error.value) == message
