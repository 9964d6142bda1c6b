""""Draw another release" on Noisy statistics and Selection (issue 9, item 15).

Each click shows a new random release at the same settings; release n of a seed is always the
same (its own random stream, mirrored in the URL), and the simulation of many releases does not
change. The draws are checked against the mechanism's distribution with scipy: a button that
showed the same release again, or correlated ones, would fail.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from dashboard.analysis import statistics as stats
from dashboard.analysis.selection_downloads import one_release, release_stream
from dashboard.controls import PrivacyChoice
from dpcore.selection import selection_probabilities
from tests.conftest import open_app

SEED = 2026
RELEASES = 2000


def figure(at, key: str) -> dict:
    for element in at.get("plotly_chart"):
        if element.proto.id.endswith(f"-{key}"):
            return json.loads(element.proto.spec)
    raise AssertionError(f"no chart {key}")


def shown_release(at) -> str:
    return next(m.value for m in at.metric if m.label.startswith("One release"))


def release_caption(at) -> str:
    return next(c.value for c in at.caption if c.value.startswith("Showing **release"))


# -- Noisy statistics ----------------------------------------------------------------------------

def test_statistics_draws_another_release_and_keeps_the_simulation():
    at = open_app("statistics.py")
    at.selectbox(key="stats_query").select("count").run()
    first, errors = shown_release(at), figure(at, "stats_errors")
    assert "release 1 of seed 2026" in release_caption(at)

    at.button(key="stats_release_next").click().run()
    assert not at.exception
    assert "release 2 of seed 2026" in release_caption(at)
    second = shown_release(at)
    assert second != first
    assert figure(at, "stats_errors") == errors          # the simulation is the same
    assert at.query_params["stats_release"] == "2"       # a copied link shows release 2

    at.button(key="stats_release_next").click().run()
    assert "release 3 of seed 2026" in release_caption(at)
    at.button(key="stats_release_first").click().run()   # back to the first one
    assert shown_release(at) == first and "release 1 of" in release_caption(at)

    shared = open_app()
    shared.query_params["stats_release"] = "2"
    shared.query_params["stats_query"] = "count"
    shared.switch_page("app_pages/statistics.py")
    shared.run()
    assert not shared.exception
    assert shown_release(shared) == second               # release 2 of the seed, again


def count_plan(epsilon: float) -> stats.ReleasePlan:
    frame = pd.DataFrame({"x": np.arange(250)})
    return stats.make_plan(frame, stats.QuerySpec("count"),
                           PrivacyChoice("pure", "laplace", epsilon=epsilon))


def test_statistics_releases_are_fresh_laplace_draws():
    """Releases 1..2000 of one seed: their noise is Laplace(1/ε) (Kolmogorov–Smirnov) and
    one release says nothing about the next (lag-1 correlation within 4 standard errors)."""
    plan = count_plan(0.5)
    noise = np.array([float(stats.draw_release(plan, seed=SEED, release=n)) - 250.0
                      for n in range(1, RELEASES + 1)])
    assert scipy_stats.kstest(noise, scipy_stats.laplace(scale=2.0).cdf).pvalue > 1e-3
    assert abs(np.corrcoef(noise[:-1], noise[1:])[0, 1]) < 4 / np.sqrt(RELEASES)
    assert np.unique(noise).size == RELEASES


def test_statistics_parameters_name_the_release_and_its_stream():
    plan = count_plan(1.0)
    found = stats.describe_release([plan], dataset="x", trials=1000, stream=77, release=3)
    assert found["release_number"] == 3
    assert found["release_random_stream"] == "numpy.random.default_rng([seed, 2, 1, 77, 3])"
    # The stream named there is the one used: the file is enough to draw release 3 again.
    again = plan.release.sample(plan.true_value,
                                  rng=np.random.default_rng([SEED, 2, 1, 77, 3]))
    assert float(stats.draw_release(plan, seed=SEED, release=3, stream=77)) == float(again)
    first = stats.describe_release([plan], dataset="x", trials=1000, stream=77)
    assert first["release_random_stream"] == "numpy.random.default_rng([seed, 2, 1, 77])"


@pytest.mark.parametrize("release", [0, -1, 10**9 + 1, 1.5])
def test_a_release_number_out_of_range_is_refused(release):
    with pytest.raises((ValueError, TypeError), match="release"):
        stats.release_stream(release)
    with pytest.raises((ValueError, TypeError), match="release"):
        release_stream(release)


# -- Selection -------------------------------------------------------------------------------------

def test_selection_draws_another_release_and_keeps_the_simulation():
    at = open_app("selection.py")
    at.selectbox(key="sel_source").select("typed").run()
    at.text_input(key="sel_scores_text").input("0, 0.5, 1, 1.5").run()   # picks vary
    chart = figure(at, "sel_chart")
    sentences = []
    for release in range(1, 7):
        sentence = next(m.value for m in at.markdown if m.value.startswith("One private"))
        assert f"(release {release} of seed 2026)" in sentence
        assert f"release {release} of seed 2026" in release_caption(at)
        assert figure(at, "sel_chart") == chart
        sentences.append(sentence.split(" picks ")[1])
        at.button(key="sel_release_next").click().run()
        assert not at.exception
    assert len(set(sentences)) > 1        # six releases do not all pick the same candidate
    assert at.query_params["sel_release"] == "7"


def test_selection_releases_follow_the_exact_probabilities():
    """Releases 1..2000 of one seed pick each candidate as often as the exact probabilities
    say (chi-square test)."""
    scores = np.array([0.0, 1.0, 2.0, 2.5])
    picks = np.array([one_release(scores, scale=1.0, noise="laplace", negate=False, k=1,
                                  seed=SEED, release=n)[0] for n in range(1, RELEASES + 1)])
    observed = np.bincount(picks, minlength=scores.size)
    expected = RELEASES * selection_probabilities(scores, scale=1.0, noise="laplace")
    assert scipy_stats.chisquare(observed, expected).pvalue > 1e-3
