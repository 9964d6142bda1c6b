"""The page adapters (``dashboard.kinds``): every query kind a page offers has one, and its
``page_query`` is the one conversion from a page's settings to the plan's query.

Issue 36 item 1: what a page offers is read from the adapters (no page-side list of kind
names); what each adapter builds is checked against the plan's kinds and written out here.
"""

from __future__ import annotations

import pandas as pd
import pytest

from dashboard.analysis import groups as ga
from dashboard.analysis import statistics as stats
from dashboard.choices import PrivacyChoice
from dashboard.datasets import BUILTIN_DATASETS, LoadedDataset, load_builtin
from dashboard.kinds import ADAPTERS, PageSettings, adapter_of, offered
from plan import model
from plan.build import build
from plan.kinds import KINDS

SETTINGS = {   # one page setting per kind: (column, lower, upper, found categories)
    "count": (None, None, None, None),
    "sum": ("age", 0.0, 100.0, None),
    "mean": ("age", 0.0, 100.0, None),
    "variance": ("age", 0.0, 100.0, None),
    "histogram": ("sex", None, None, ("Female", "Male")),
}


@pytest.fixture(scope="module")
def adult():
    return load_builtin(BUILTIN_DATASETS[0])


def test_every_adapter_is_a_plan_kind_with_its_own_label():
    assert set(ADAPTERS) <= set(KINDS)
    assert all(name == adapter.name == adapter.kind.name for name, adapter in ADAPTERS.items())
    labels = [a.label for a in ADAPTERS.values()]
    assert all(labels) and len(set(labels)) == len(labels)


def test_every_kind_the_pages_offer_has_an_adapter(adult):
    """The Noisy statistics page offers, on a dataset with numeric and categorical columns,
    the five statistics it offered before the adapters (in that order); the Groups page its
    three statistics per group, each a group-by's statistic of the plan."""
    assert stats.available_queries(adult) == offered(adult) == [
        "count", "sum", "mean", "variance", "histogram"]
    assert set(offered(adult)) <= set(ADAPTERS)
    assert ga.statistics() == {"count": "Count per group", "sum": "Sum per group",
                               "mean": "Mean per group"}
    assert set(ga.statistics()) <= set(model.GROUP_STATISTICS)
    # a dataset without a categorical column: no histogram; without a numeric one: no sum
    numeric = LoadedDataset("n", pd.DataFrame({"x": [1.0, 2.0]}), {}, [], "test")
    words = LoadedDataset("w", pd.DataFrame({"c": ["a", "b"]}), {}, [], "test")
    assert offered(numeric) == ["count", "sum", "mean", "variance"]
    assert offered(words) == ["count", "histogram"]


@pytest.mark.parametrize("name", list(SETTINGS))
def test_page_query_builds_the_plan_kind_the_page_shows(name):
    """Each adapter's ``page_query`` makes its plan kind's query, which ``plan.build`` builds
    (bounds and categories as the page set them; a mean's share from the page)."""
    column, lower, upper, labels = SETTINGS[name]
    choice = PrivacyChoice("pure", "laplace", epsilon=0.5)
    query = adapter_of(name).page_query(PageSettings(name, choice, column, lower, upper,
                                                     sum_share=0.3, labels=labels))
    assert query.query.kind == name and query.page == "statistics"
    assert query.mechanism == model.Noise("laplace", "pure", epsilon=0.5)
    if lower is not None:
        assert (query.query.bounds.lower, query.query.bounds.upper) == (lower, upper)
    if labels is not None:
        assert query.query.categories.values == labels
    if name == "mean":
        assert query.query.sum_share == 0.3
    query.check("query")
    assert build(query, model.PrivacyUnit()).parts


def test_an_unknown_kind_is_refused_by_name():
    with pytest.raises(ValueError, match="query must be one of count, sum, mean"):
        adapter_of("median")


# --------------------------------------------------------------------------------------------
# Page wording, moved from plan.kinds.QueryKind onto the adapters (same assertions)

# The crosstab has no page adapter (the Noisy tables page words its own cells): no noun.
@pytest.mark.parametrize("name, noun", [("count", "count"), ("histogram", "count"),
                                         ("sum", "sum"), ("mean", "mean"),
                                         ("variance", "variance")])
def test_a_released_number_is_called_by_its_noun(name, noun):
    assert ADAPTERS[name].value_noun == noun


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_only_the_mean_is_a_noisy_sum_divided_by_a_noisy_count(name):
    adapter = ADAPTERS[name]
    assert (adapter.made_of == "a noisy sum divided by a noisy count") is (name == "mean")
    assert adapter.made_of in ("", "a noisy sum divided by a noisy count")


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_the_kinds_made_of_parts_say_why_their_error_chart_is_simulated(name):
    note = ADAPTERS[name].error_note
    assert bool(note) is KINDS[name].made_of_parts
    assert not note or f"A noisy {name} " in note and "no closed-form distribution" in note


def test_when_a_page_offers_a_kind_sees_the_privacy_unit(adult, monkeypatch):
    """A page adapter decides from the dataset and the privacy unit: one offered only under a
    person-id unit is on the Noisy statistics page's list with one and not without."""
    from dashboard import kinds
    from dpcore.contributions import PrivacyUnit

    class PersonsOnly(type(kinds.ADAPTERS["count"])):
        name = "count"

        def offered_on(self, loaded, unit=None):
            return unit is not None and unit.person_column is not None

    monkeypatch.setitem(kinds.ADAPTERS, "count", PersonsOnly())
    by_person = PrivacyUnit("age", 3)
    assert "count" not in offered(adult)
    assert "count" not in offered(adult, PrivacyUnit())
    assert offered(adult, by_person)[0] == "count"
    assert stats.available_queries(adult, by_person)[0] == "count"
