"""The plan model: JSON round trip, the example plan, and validation that names the bad field."""

from __future__ import annotations

import copy
import hashlib
import io
import json
from contextlib import redirect_stdout

import pytest

from plan.examples import ADULT_PATH, adult_plan
from plan.model import (
    Bounds,
    Count,
    Dataset,
    Noise,
    Plan,
    PlanError,
    PlanQuery,
    PrivacyUnit,
    Sum,
)
from release.cli import main
from tests.release_fixtures import every_kind_plan


def test_every_kind_round_trips_through_json():
    plan = every_kind_plan(content_hash="sha256:" + "ab" * 32)
    text = plan.to_json()
    again = Plan.from_json(text)
    assert again == plan
    assert again.to_json() == text
    assert Plan.from_json(text.encode("utf-8")) == plan
    kinds = {q.query.kind for q in plan.queries}
    assert kinds == {"count", "sum", "mean", "histogram", "crosstab", "group_by", "quantiles",
                     "selection"}
    families = {q.mechanism.family for q in plan.queries if q.mechanism is not None}
    assert families == {"noise", "selection"}
    assert any(q.threshold is not None for q in plan.queries)


def test_the_example_plan_is_printed_valid_and_pinned_to_adult():
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["--example-plan"]) == 0
    plan = Plan.from_json(out.getvalue())
    assert plan == adult_plan()
    # pinned to the file's bytes (hashlib directly, not plan.identity)
    digest = hashlib.sha256(ADULT_PATH.read_bytes()).hexdigest()
    assert plan.dataset.content_hash == f"sha256:{digest}"
    kinds = [(q.query.kind, getattr(q.query, "column", None)) for q in plan.queries]
    assert kinds == [("count", None), ("histogram", "education"), ("mean", "age"),
                     ("sum", "hours_per_week"), ("selection", "occupation")]
    assert plan.queries[-1].query.k == 1


def _set(data: dict, path: str, value: object) -> dict:
    """A copy of ``data`` with the field at ``path`` (a.b[2].c) set, or removed (...)."""
    out = copy.deepcopy(data)
    keys: list = []
    for token in path.replace("]", "").split("."):
        name, *index = token.split("[")
        keys.append(name)
        keys.extend(int(i) for i in index)
    target = out
    for key in keys[:-1]:
        target = target[key]
    if value is ...:
        del target[keys[-1]]
    else:
        target[keys[-1]] = value
    return out


BASE = json.loads(every_kind_plan().to_json())


@pytest.mark.parametrize("path, value, field, words", [
    ("format", "something-else", "format", "not an Epsilon Lab plan"),
    ("version", 2, "version", "newer"),
    ("dataset.name", ..., "dataset.name", "required"),
    ("dataset.name", "  ", "dataset.name", "empty"),
    ("dataset.content_hash", "md5:abc", "dataset.content_hash", "sha256"),
    ("privacy_unit.max_rows", 0, "privacy_unit.max_rows", "between 1"),
    ("privacy_unit.max_groups", 2.5, "privacy_unit.max_groups", "whole number"),
    ("privacy_unit.bounds_origin", "guessed", "privacy_unit.bounds_origin", "one of"),
    ("accounting.method", "rdp", "accounting.method", "one of"),
    ("accounting", {"method": "zcdp", "delta": 0}, "accounting.delta", "δ > 0"),
    ("budget", {"epsilon": 0}, "budget.epsilon", "> 0"),
    ("queries", [], "queries", "at least one"),
    ("queries[0].mechanism.epsilon", -1, "queries[0].mechanism.epsilon", "> 0"),
    ("queries[0].mechanism.epsilon", "1", "queries[0].mechanism.epsilon", "a number"),
    ("queries[0].mechanism.epsilon", ..., "queries[0].mechanism.epsilon", "required"),
    ("queries[0].mechanism.kind", "laplacian", "queries[0].mechanism.kind", "one of"),
    ("queries[0].mechanism.measure", "approx", "queries[0].mechanism.measure", "one of"),
    ("queries[0].mechanism.epslion", 1.0, "queries[0].mechanism.epslion", "not a field"),
    ("queries[0].id", "two words", "queries[0].id", "letters"),
    ("queries[1].id", "n", "queries[1].id", "repeats"),
    ("queries[0].page", "", "queries[0].page", "must not be empty"),
    ("queries[1].query.colum", "cost", "queries[1].query.colum", "not a field"),
    ("queries[1].query.bounds.upper", -1, "queries[1].query.bounds.upper", "> lower"),
    ("queries[1].query.bounds.origin", "guess", "queries[1].query.bounds.origin", "one of"),
    ("queries[1].mechanism.lower", ..., "queries[1].mechanism.lower", "answer range"),
    ("queries[2].query.sum_share", 1.0, "queries[2].query.sum_share", "(0, 1)"),
    ("queries[3].query.categories.values", ["A", "A"], "queries[3].query.categories.values",
     "repeat"),
    ("queries[3].query.categories.values", ["A", 1], "queries[3].query.categories.values",
     "all text"),
    ("queries[3].query.categories.values", [], "queries[3].query.categories.values",
     "at least one"),
    ("queries[4].query.edges.values", [18, 40, 30], "queries[4].query.edges.values",
     "increasing"),
    ("queries[4].mechanism.rho", ..., "queries[4].mechanism.rho", "required"),
    ("queries[4].mechanism.epsilon", 1.0, "queries[4].mechanism.epsilon", "rho, not epsilon"),
    ("queries[5].mechanism.delta", 1.5, "queries[5].mechanism.delta", "(0, 1)"),
    ("queries[6].threshold", ..., "queries[6].threshold", "partition selection"),
    ("queries[6].threshold.noise", "gumbel", "queries[6].threshold.noise", "one of"),
    ("queries[8].query.statistic", "median", "queries[8].query.statistic", "one of"),
    ("queries[9].query.levels", [1.5], "queries[9].query.levels[0]", "[0, 1]"),
    ("queries[9].mechanism.family", "noise", "queries[9].mechanism.family", "selection"),
    ("queries[10].query.k", 7, "queries[10].query.k", "number of candidates"),
    ("queries[10].target", {"kind": "selection", "alpha": 1.0},
     "queries[10].target.probability", "required"),
    ("queries[1].query.column", "pid", "queries[1].query.column", "person-id"),
])
def test_a_bad_field_is_named(path, value, field, words):
    with pytest.raises(PlanError) as info:
        Plan.from_dict(_set(BASE, path, value))
    assert info.value.field == field
    assert str(info.value).startswith(field)
    assert words in str(info.value)


def test_partition_selection_needs_a_group_bound_per_person():
    data = _set(BASE, "privacy_unit.max_groups", None)
    with pytest.raises(PlanError) as info:
        Plan.from_dict(data)
    assert info.value.field == "privacy_unit.max_groups"


@pytest.mark.parametrize("text, words", [
    ('{"format": "epsilon-lab-plan", "version": NaN}', "NaN"),
    ("{not json", "not valid JSON"),
    (b"\xff\xfe\x00", "UTF-8"),
    ("[1, 2]", "JSON object"),
])
def test_text_that_is_no_plan_is_refused(text, words):
    with pytest.raises(PlanError, match=words):
        Plan.from_json(text)


def test_the_privacy_unit_reads_in_either_spelling():
    """One JSON form with the schema file ("person_column"); "person" reads too."""
    new = _set(BASE, "privacy_unit", {"person_column": "pid", "max_rows": 4, "max_groups": 2})
    old = _set(BASE, "privacy_unit", {"person": "pid", "max_rows": 4, "max_groups": 2})
    assert Plan.from_dict(new).privacy_unit == Plan.from_dict(old).privacy_unit \
        == PrivacyUnit("pid", 4, 2)
    assert json.loads(Plan.from_dict(old).to_json())["privacy_unit"]["person_column"] == "pid"
    with pytest.raises(PlanError, match=r"privacy_unit\.person"):
        Plan.from_dict(_set(BASE, "privacy_unit", {"person": "pid", "person_column": "pid"}))


def test_objects_are_checked_as_json_is():
    good = PlanQuery("s", "sum", Sum("x", Bounds(0, 1)), Noise("laplace", "pure", epsilon=1.0))
    Plan(Dataset("d"), (good,))
    bad = PlanQuery("s", "sum", Sum("x", Bounds(2, 1)), Noise("laplace", "pure", epsilon=1.0))
    with pytest.raises(PlanError, match=r"queries\[0\]\.query\.bounds\.upper"):
        Plan(Dataset("d"), (bad,))
    with pytest.raises(ValueError, match="max_rows"):   # dpcore's unit, named by field
        PrivacyUnit(None, max_rows=3)
    with pytest.raises(PlanError, match="privacy_unit.max_rows"):   # the plan file's, by path
        Plan.from_dict(_set(BASE, "privacy_unit", {"person_column": None, "max_rows": 3}))
    with pytest.raises(PlanError, match=r"queries\[0\]\.mechanism"):
        Plan(Dataset("d"), (PlanQuery("c", "count", Count(), None),))


def test_the_declarations_a_plan_was_built_on_are_optional_and_checked():
    """Issue 32 item 5: ``dataset.declarations`` (schema and unit versions, and the ones a
    steward confirmed it from) round-trips; a plan file without it reads as before and is
    written back byte for byte; a bad version is named by its path."""
    from plan.model import BuiltOn

    assert "declarations" not in BASE["dataset"]
    assert Plan.from_dict(BASE).dataset.declarations is None
    assert Plan.from_dict(BASE).to_json() == json.dumps(BASE, indent=2, ensure_ascii=False)
    bound = _set(BASE, "dataset.declarations",
                 {"schema": 2, "unit": 1, "confirmed_from": {"schema": 1, "unit": 0}})
    plan = Plan.from_dict(bound)
    assert plan.dataset.declarations == BuiltOn(2, 1, (1, 0))
    assert json.loads(plan.to_json()) == bound
    assert plan.published().dataset.declarations == BuiltOn(2, 1, (1, 0))   # public facts
    for path, value, field in (
            ("dataset.declarations.schema", -1, r"dataset\.declarations\.schema"),
            ("dataset.declarations.unit", 1.5, r"dataset\.declarations\.unit"),
            ("dataset.declarations.unit", ..., r"dataset\.declarations\.unit"),
            ("dataset.declarations.confirmed_from.unit", "1",
             r"dataset\.declarations\.confirmed_from\.unit"),
            ("dataset.declarations.when", 3, r"dataset\.declarations")):
        with pytest.raises(PlanError, match=field):
            Plan.from_dict(_set(bound, path, value))
