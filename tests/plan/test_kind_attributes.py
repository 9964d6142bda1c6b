"""What each query kind answers for the pages (``plan.kinds.base.QueryKind``): the pages ask
these instead of comparing a kind's name (tests/test_no_kind_names.py)."""

from __future__ import annotations

import pytest

from plan import model
from plan.kinds import KINDS

#: The kinds whose answer is a number of rows (or of people), shown whole.
COUNTS_ROWS = {"count", "histogram", "crosstab", "people"}


@pytest.mark.parametrize("name", sorted(KINDS))
def test_a_kind_says_whether_its_answer_counts_rows(name):
    assert KINDS[name].counts_rows is (name in COUNTS_ROWS)


# A released number's noun, how a mean is made and why its error chart is simulated are page
# wording: tests/dashboard/test_page_kinds.py asks the kinds' page adapters (issue 36 item 1).


@pytest.mark.parametrize("name", sorted(KINDS))
def test_only_the_mean_splits_its_budget_by_a_share_and_is_clamped_to_its_bounds(name):
    kind = KINDS[name]
    assert kind.split_by_share is (name == "mean")
    assert kind.clamps_to_bounds is (name == "mean")


def test_a_group_by_splits_by_a_share_only_for_its_means():
    bounds = model.Bounds(0.0, 100.0)
    kind = KINDS["group_by"]
    means = model.GroupBy("sex", "mean", "age", bounds)
    sums = model.GroupBy("sex", "sum", "age", bounds)
    counts = model.GroupBy("sex", "count")
    assert kind.splits_by_share(means)
    assert not kind.splits_by_share(sums) and not kind.splits_by_share(counts)
    assert KINDS["mean"].splits_by_share(model.Mean("age", bounds))
    assert not KINDS["sum"].splits_by_share(model.Sum("age", bounds))


@pytest.mark.parametrize("target, by_probability", [
    (model.Target("selection", probability=0.9), True),
    (model.Target("error", alpha=1.0, beta=0.05), False),
    (model.Target("rank", alpha=2.0, beta=0.05), False)])
def test_a_selection_target_is_the_one_stated_as_a_probability(target, by_probability):
    assert target.by_probability is by_probability


@pytest.mark.parametrize("name", sorted(KINDS))
def test_only_the_variance_sums_deviations_from_the_midpoint(name):
    assert KINDS[name].centred is (name == "variance")


@pytest.mark.parametrize("name", sorted(KINDS))
def test_only_a_synthetic_table_cannot_be_drawn_with_numpy(name):
    """Its parts are OpenDP's mbi (a model fit): the plan page says it is not simulated and
    offers no simulation report for a plan holding one."""
    assert KINDS[name].simulated is (name != "synthetic")


def test_a_kind_in_a_file_of_its_own_is_found_without_a_line_naming_it(tmp_path, monkeypatch):
    """``found_in`` (what plan.kinds and dashboard.kinds register with): a module of the
    package holding a kind not listed is found; a listed one, and a module without one, are
    not."""
    from plan.kinds import count, found_in
    from plan.kinds.base import QueryKind

    package = tmp_path / "planted_kinds"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "listed.py").write_text("from plan.kinds.count import KIND\n")
    (package / "helper.py").write_text("VALUE = 1\n")
    (package / "extra.py").write_text(
        "from plan.kinds.count import CountKind\n\n\nclass Extra(CountKind):\n"
        "    name = 'extra'\n\n\nKIND = Extra()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    found = found_in("planted_kinds", [str(package)], "KIND", QueryKind, (count.KIND,))
    assert [k.name for k in found] == ["extra"]
