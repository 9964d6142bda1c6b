"""AppTest of the Quantiles page: every figure shown against an independent computation.

The exact distribution against a brute-force enumeration (a Python loop over candidates and
rows; OpenDP's tie rule; permute-and-flip's polynomial integral, or the exponential
mechanism's softmax) on a tiny data-folder Parquet file and against a simulation of
permute-and-flip as McKenna & Sheldon state it (a random order, a coin per candidate); the
accuracy and the true quantile against the sorted rows; the budget split; zCDP with Gumbel
noise; a person-level unit; bad inputs that keep the controls.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from dashboard import datasets
from dashboard.person import PrivacyUnit
from tests.conftest import open_app
from tests.pages.test_page_tables import array, figures

TINY = [1.0, 2.0, 2.0, 3.0, 5.0, 8.0, 13.0, np.nan]
PIDS = [1, 1, 2, 3, 3, 4, 5, 6]          # at most 2 rows per person
GRID = [0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0]


@pytest.fixture
def tiny_folder(tmp_path, monkeypatch):
    frame = pd.DataFrame({"x": TINY, "pid": PIDS, "name": list("abcdefgh")})
    frame.to_parquet(tmp_path / "tiny.parquet", index=False)
    pd.DataFrame({"name": ["a", "b"], "town": ["x", "y"]}).to_parquet(
        tmp_path / "words.parquet", index=False)
    monkeypatch.setenv("EPSILON_LAB_DATA", str(tmp_path))
    return tmp_path


def brute_errors(values, grid, q):
    """|(1 − q)·#{x < c} − q·#{x > c}| (OpenDP's score over its denominator: a value equal
    to c on neither side), one candidate and one row at a time."""
    present = [v for v in values if v == v]
    share = Fraction(q).limit_denominator(10**4)   # 1/2, 1/4, 9/10: as OpenDP reads them
    return [float(abs((1 - share) * sum(1 for v in present if v < c)
                      - share * sum(1 for v in present if v > c))) for c in grid]


def brute_force(values, grid, q, epsilon, sensitivity, noise="exponential"):
    """The law of argmin(err(c) + noise·b), b = 2Δ/ε. Gumbel noise: P(c) ∝ exp(−err(c)/b).
    Exponential noise (permute-and-flip): P(c) = ∫₀¹ p_c Π_{j≠c} (1 − p_j t) dt with
    p_j = exp(−(err_j − min err)/b), a polynomial integrated exactly."""
    errors = brute_errors(values, grid, q)
    b = 2 * sensitivity / epsilon
    p = [math.exp(-(e - min(errors)) / b) for e in errors]
    if noise == "gumbel":
        return [w / math.fsum(p) for w in p]
    out = []
    for i, p_i in enumerate(p):
        poly = np.polynomial.Polynomial([1.0])
        for j, p_j in enumerate(p):
            if j != i:
                poly = poly * np.polynomial.Polynomial([1.0, -p_j])
        integral = poly.integ()
        out.append(p_i * (integral(1.0) - integral(0.0)))
    return out


def true_quantile(values, q):
    present = sorted(v for v in values if v == v)
    for i, v in enumerate(present):
        if i + 1 >= q * len(present):
            return v
    return present[-1]


def set_text(at, key, value):
    next(w for w in at.text_input if w.key == key).set_value(value)


def set_number(at, key, value):
    next(w for w in at.number_input if w.key == key).set_value(value)


def tiny_app(levels="0.5", alpha=2.0, epsilon=None):
    at = open_app("quantiles.py", dataset="file:tiny.parquet")
    at.selectbox(key="quantiles_grid").select("typed")
    at.run()
    set_text(at, "quantiles_typed", ", ".join(f"{g:g}" for g in GRID))
    set_text(at, "quantiles_levels", levels)
    set_number(at, "quantiles_alpha", alpha)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


def shown_distribution(at):
    fig = figures(at)[0]
    return {t["name"]: (array(t["x"]), array(t["y"])) for t in fig["data"]}


def table(at) -> pd.DataFrame:
    return next(d.value for d in at.dataframe)


def test_tiny_file_distribution_matches_brute_force_and_simulation(tiny_folder):
    at = tiny_app()
    x, shown = shown_distribution(at)["median"]
    np.testing.assert_array_equal(x, GRID)
    expected = brute_force(TINY, GRID, 0.5, 1.0, 0.5)
    np.testing.assert_allclose(shown, expected, rtol=1e-10, atol=1e-15)
    # permute-and-flip as the page sets it up (ε = 1 on the median, Δ = 1/2), simulated as
    # McKenna & Sheldon state it: a random order, candidate c kept with probability
    # exp(−(err(c) − best)/b), the first kept released; within 5 standard errors (2e5 draws)
    errors = np.array(brute_errors(TINY, GRID, 0.5))
    keep = np.exp(-(errors - errors.min()) / (2 * 0.5))
    rng = np.random.default_rng(11)
    order = rng.random((200_000, len(GRID)))
    kept = rng.random((200_000, len(GRID))) < keep
    draws = np.argmin(np.where(kept, order, 2.0), axis=1)
    freq = np.bincount(draws, minlength=len(GRID)) / draws.size
    se = np.sqrt(np.asarray(expected) * (1 - np.asarray(expected)) / draws.size)
    assert np.all(np.abs(freq - expected) <= 5 * se + 1e-12)
    # the accuracy and the truth shown
    row = table(at).iloc[0]
    truth = true_quantile(TINY, 0.5)
    assert float(row["True quantile"]) == truth
    within = sum(p for c, p in zip(GRID, expected, strict=True) if abs(c - truth) <= 2.0)
    shown_within = float(row["P(|released − true| ≤ 2)"].rstrip("%")) / 100
    assert shown_within <= within + 1e-12            # rounded down …
    assert within - shown_within < 0.01 * within     # … to its three digits
    released = float(row["Simulated release"])
    assert released in GRID
    assert float(row["Rank error of this release"]) == errors[list(GRID).index(released)]
    expected_rank = sum(p * e for e, p in zip(errors, expected, strict=True))
    assert float(row["Expected rank error"]) >= expected_rank - 1e-12
    assert any("n = 7 values" in c.value for c in at.main.caption)   # NaN not counted
    assert "permute-and-flip (exponential noise)" in " ".join(m.value for m in at.markdown)


def test_zcdp_with_gumbel_noise_is_the_exponential_mechanism(tiny_folder):
    """zCDP starts with Gumbel noise at ρ = 1/8: scale 2Δ/√(8ρ) = 2Δ, the exponential
    mechanism at ε = 1 (softmax of −err/b); exponential noise under zCDP is read from
    ε₀ = √(2ρ) (scale 2Δ/√(2ρ))."""
    at = tiny_app()
    at.selectbox(key="quantiles_measure").select("zcdp").run()
    assert not at.exception and not at.error, [e.value for e in (*at.exception, *at.error)]
    assert at.selectbox(key="quantiles_noise").value == "gumbel"
    expected = brute_force(TINY, GRID, 0.5, 1.0, 0.5, noise="gumbel")
    np.testing.assert_allclose(shown_distribution(at)["median"][1], expected, rtol=1e-10)
    assert "ρ = 0.125 (zCDP)" in " ".join(m.value for m in at.markdown)
    at.selectbox(key="quantiles_noise").select("exponential").run()
    expected = brute_force(TINY, GRID, 0.5, math.sqrt(2 * 0.125), 0.5)
    np.testing.assert_allclose(shown_distribution(at)["median"][1], expected, rtol=1e-10)


def test_several_quantiles_split_the_budget(tiny_folder):
    at = tiny_app(levels="0.25, 0.5, 0.9")
    text = " ".join(m.value for m in at.markdown)
    assert "split equally over the 3 quantiles" in text
    share = float(re.search(r"each is released with ε = ([0-9.]+)", text).group(1))
    assert share >= 1 / 3 and 3 * (share - 1e-4) <= 1   # rounded up to 4 digits
    shown = shown_distribution(at)
    assert set(shown) == {"0.25-quantile", "median", "0.9-quantile"}
    for name, q in (("0.25-quantile", 0.25), ("median", 0.5), ("0.9-quantile", 0.9)):
        expected = brute_force(TINY, GRID, q, 1 / 3, max(q, 1 - q))
        np.testing.assert_allclose(shown[name][1], expected, rtol=1e-9, atol=1e-15)
    assert "Δ = 0.75" in text and "Δ = 0.9" in text


def test_nine_quantiles_mark_their_rounded_share_once(tiny_folder):
    """Issue 21 item 7: nine quantiles read 'ε = 0.1112' as if it were 1/9. The share is
    rounded up, so it is marked ↑, the page says once what ↑ means, and the table's column
    reads the same figure; the total ε = 1 is exact and reads 1."""
    at = tiny_app(levels=", ".join(f"{k / 10:g}" for k in range(1, 10)))
    text = " ".join(m.value for m in at.markdown)
    assert "ε = 1 (pure DP) in all, split equally over the 9 quantiles" in text
    assert "each is released with ε = 0.1112↑," in text
    assert text.count("marked ↑") == 1
    assert set(table(at)["ε spent"]) == {"0.1112↑"}


def test_one_quantile_reads_its_exact_budget(tiny_folder):
    text = " ".join(m.value for m in tiny_app().markdown)
    assert "ε = 1 (pure DP), all of it on this one quantile" in text and "↑" not in text


def test_person_unit_scales_the_sensitivity(tiny_folder):
    at = open_app("quantiles.py", dataset="file:tiny.parquet")
    key = at.session_state["dataset"].key
    at.session_state["privacy_unit_by_dataset"] = {key: PrivacyUnit("pid", 2)}
    at.selectbox(key="quantiles_grid").select("typed")
    at.run()
    set_text(at, "quantiles_typed", ", ".join(f"{g:g}" for g in GRID))
    at.run()
    assert not at.exception and not at.error
    text = " ".join(m.value for m in at.markdown)
    assert "median Δ = 1" in text and "pid" in text
    # nobody has more than 2 rows: nothing is dropped, the scores are the rows' own, but
    # the sensitivity doubles (ε/(2Δ) halves)
    expected = brute_force(TINY, GRID, 0.5, 1.0, 1.0)
    np.testing.assert_allclose(shown_distribution(at)["median"][1], expected, rtol=1e-10)


@pytest.mark.parametrize("name,column", [("Adult (UCI census income)", "age"),
                                         ("Iris", "sepal_length")])
def test_builtins_against_the_rows(name, column):
    """The law of the release on the rows themselves (OpenDP's scores, ties at the
    candidates; dpcore.selection's permute-and-flip probabilities). Adult's median age at
    ε = 1: the page showed 38 with probability 1.000 where a release draws 37 (the old score
    |#{x < c} − n/2| broke the tie at 37 the other way)."""
    from dpcore.selection import selection_probabilities

    at = open_app("quantiles.py", dataset=name)
    at.selectbox(key="quantiles_column").select(column)
    at.run()
    assert not at.exception and not at.error
    x, shown = shown_distribution(at)["median"]
    frame = datasets.load_builtin(name).frame
    values = frame[column].dropna().to_numpy()
    below = (values[None, :] < x[:, None]).sum(axis=1)       # independent of searchsorted
    above = (values[None, :] > x[:, None]).sum(axis=1)
    errors = np.abs(0.5 * below - 0.5 * above)
    expected = selection_probabilities(errors, scale=2 * 0.5 / 1.0, noise="exponential",
                                       negate=True)
    np.testing.assert_allclose(shown, expected, rtol=1e-9, atol=1e-300)
    row = table(at).iloc[0]
    assert float(row["True quantile"]) == float(np.quantile(values, 0.5,
                                                            method="inverted_cdf"))
    if column == "age":
        assert x[np.argmax(shown)] == 37.0 and shown.max() > 0.999


def test_bad_inputs_say_so_and_keep_the_controls(tiny_folder):
    at = tiny_app(levels="0.1, 0.5")
    set_text(at, "quantiles_typed", "  ")
    at.run()
    assert any("empty" in e.value for e in at.error) and not at.exception
    assert next(w for w in at.text_input if w.key == "quantiles_levels").value == "0.1, 0.5"
    set_text(at, "quantiles_typed", "1, 2, 3")
    set_number(at, "quantiles_alpha", 0.0)
    at.run()
    assert any("α must be greater than 0" in e.value for e in at.error)
    assert next(w for w in at.text_input if w.key == "quantiles_typed").value == "1, 2, 3"
    set_number(at, "quantiles_alpha", 1.0)
    set_text(at, "quantiles_levels", "1.5")
    at.run()
    assert any("between 0 and 1" in e.value for e in at.error)
    set_text(at, "quantiles_levels", "half")
    at.run()
    assert any("'half' is not a number" in e.value for e in at.error)
    assert at.selectbox(key="quantiles_grid").value == "typed"


def test_no_numeric_column_says_so(tiny_folder):
    at = open_app("quantiles.py", dataset="file:words.parquet")
    assert not at.exception
    assert any("no numeric column" in i.value for i in at.info)


def test_gumbel_under_pure_dp_offers_the_releasable_alternatives(tiny_folder):
    """The exponential mechanism (Gumbel noise) under pure DP has no OpenDP certificate: the
    panel says so before adding, and offers Gumbel noise under zCDP at ρ = ε²/8 (the same
    noise scale, so the very law shown) and exponential noise at the same ε."""
    at = tiny_app()
    at.selectbox(key="quantiles_noise").select("gumbel").run()
    assert not at.exception and not at.error
    assert not [b for b in at.button if b.key == "quantiles_add_to_plan"]
    warning = " ".join(w.value for w in at.warning).replace("\\", "")
    assert "Not releasable as set" in warning and "zCDP" in warning
    first, second = [b for b in at.button if b.key.startswith("quantiles_add_alternative")]
    assert "Exponential mechanism (Gumbel noise), ρ = 0.125" in first.label.replace("\\", "")
    assert "Permute-and-flip (exponential noise), ε = 1" in second.label.replace("\\", "")
    first.click().run()
    key = at.session_state["dataset"].key
    [entry] = at.session_state["release_plan_by_dataset"][key]
    assert entry.query.mechanism.measure == "zcdp"
    assert entry.query.mechanism.rho == pytest.approx(0.125, rel=1e-12)


def test_a_tiny_rank_error_reads_as_less_than_a_thousandth(tmp_path, monkeypatch):
    """50 ones, one 2, 50 threes and the candidates 1, 2, 3: at ε = 10 the median is 2 except
    with probability ~e^-127, so its expected rank error is ~1e-54 ranks. The sentence and the
    table say "less than 0.001" (an exponent reads as an arithmetic error); the exact value
    (brute force) is indeed below it."""
    values = [1.0] * 50 + [2.0] + [3.0] * 50
    pd.DataFrame({"x": values}).to_parquet(tmp_path / "gap.parquet", index=False)
    monkeypatch.setenv("EPSILON_LAB_DATA", str(tmp_path))
    at = open_app("quantiles.py", dataset="file:gap.parquet")
    at.selectbox(key="quantiles_grid").select("typed")
    at.run()
    set_text(at, "quantiles_typed", "1, 2, 3")
    set_text(at, "quantiles_levels", "0.5")
    set_number(at, "quantiles_epsilon_exact", 10.0)
    at.run()
    assert not at.exception and not at.error, [e.value for e in (*at.exception, *at.error)]
    said = " ".join(m.value for m in at.markdown)
    assert "is less than 0.001 ranks away from the true one on average" in said
    assert not re.search(r"\de-\d", said)
    assert table(at)["Expected rank error"].iloc[0] == "less than 0.001"
    probs = brute_force(values, [1.0, 2.0, 3.0], 0.5, 10.0, 1.0)
    assert 0 < probs[0] + probs[2] < 1e-50


def test_the_accuracy_box_shows_the_alpha_the_text_uses(tiny_folder):
    """α = 0.025 read '0.03' in the box (Streamlit's two decimals) while the sentence and the
    table said ±0.025: the box now writes the very digits the text does."""
    at = tiny_app(alpha=0.025)
    box = next(w for w in at.number_input if w.key == "quantiles_alpha")
    assert box.value == 0.025
    shown = box.proto.format % box.value
    assert shown == "0.025"
    said = " ".join(m.value for m in at.markdown)
    assert f"within ±{shown} of the true value" in said
    assert f"P(|released − true| ≤ {shown})" in table(at).columns


def noise_label(at) -> str:
    """The picked noise as the page's Noise picker names it."""
    picker = at.selectbox(key="quantiles_noise")
    return picker.options[picker.index]


def test_the_plan_names_a_quantile_by_the_pages_noise_not_report_noisy_max(tiny_folder):
    """A quantile went into the plan as 'report noisy max, Exponential noise
    (permute-and-flip)' while the page said 'report noisy min' and the Selection page named
    its noises otherwise (issue 21 item 10): the plan's row names the mechanism as the
    page's picker does, for both noises, and so does the Release plan page's table."""
    at = tiny_app()
    for measure, budget in (("pure", "ε = 1"), ("zcdp", "ρ = 0.125")):
        at.selectbox(key="quantiles_measure").select(measure).run()
        assert not at.exception and not at.error
        label = noise_label(at)
        adds = next(c.value for c in at.caption if c.value.startswith("Adds ")).replace("\\", "")
        assert f" with {label}, {budget}; target" in adds, adds
        assert "noisy max" not in adds
    assert noise_label(at) == "Exponential mechanism (Gumbel noise)"
    at.button(key="quantiles_add_to_plan").click().run()
    at.switch_page("app_pages/plan.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    shown = " ".join(str(v) for d in at.dataframe for v in d.value.to_numpy().ravel())
    assert "Exponential mechanism (Gumbel noise), ρ = 0.125" in shown, shown[:500]
    assert "noisy max" not in shown


def test_a_grid_the_plan_refuses_is_an_error_with_the_plans_reason(tiny_folder):
    """One typed candidate: the page showed a law of one point (probability 100%) where the
    plan, and so a release, refuses the grid (issue 20: one path). Now the plan's reason, in
    place of the results; the controls keep their values."""
    at = tiny_app(levels="0.25, 0.5")
    set_text(at, "quantiles_typed", "7")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    said = " ".join(e.value for e in at.error).replace("\\", "")
    assert "a release cannot draw these settings" in said
    assert "query.candidates.values must hold at least 2 number(s)" in said
    assert not figures(at) and not at.dataframe
    assert next(w for w in at.text_input if w.key == "quantiles_typed").value == "7"
    assert next(w for w in at.text_input if w.key == "quantiles_levels").value == "0.25, 0.5"


def test_a_setting_no_release_draws_is_shown_and_said_not_releasable(tiny_folder):
    """Gumbel noise under pure DP: its law is shown (the exponential mechanism at ε = 1), but
    above the results the page says a release refuses it and why, and the chart's note no
    longer calls it what a release draws. Releasable settings say neither."""
    at = tiny_app()
    captions = " ".join(c.value for c in at.main.caption)
    assert "Not releasable" not in captions and "what a release draws" in captions
    at.selectbox(key="quantiles_noise").select("gumbel").run()
    assert not at.exception and not at.error
    captions = " ".join(c.value for c in at.main.caption).replace("\\", "")
    assert "Not releasable as set:" in captions and "zCDP" in captions
    assert "no release draws it" in captions and "of what a release draws" not in captions
    expected = brute_force(TINY, GRID, 0.5, 1.0, 0.5, noise="gumbel")
    np.testing.assert_allclose(shown_distribution(at)["median"][1], expected, rtol=1e-10)


def test_the_query_added_is_the_query_whose_law_is_shown(tiny_folder):
    """A person with up to 2 rows, two levels, exponential noise under zCDP: the chart's laws
    are those of the parts plan.build gives the query Add to plan put in the plan (their
    scales, on the rank errors counted by brute force)."""
    from dashboard.analysis.plan_entries import plan_unit
    from plan.build import build

    at = open_app("quantiles.py", dataset="file:tiny.parquet")
    key = at.session_state["dataset"].key
    at.session_state["privacy_unit_by_dataset"] = {key: PrivacyUnit("pid", 2)}
    at.selectbox(key="quantiles_grid").select("typed")
    at.run()
    set_text(at, "quantiles_typed", ", ".join(f"{g:g}" for g in GRID))
    set_text(at, "quantiles_levels", "0.25, 0.75")
    at.selectbox(key="quantiles_measure").select("zcdp").run()
    at.selectbox(key="quantiles_noise").select("exponential").run()
    assert not at.exception and not at.error, [e.value for e in (*at.exception, *at.error)]
    at.button(key="quantiles_add_to_plan").click().run()
    [entry] = at.session_state["release_plan_by_dataset"][key]
    parts = build(entry.query, plan_unit(PrivacyUnit("pid", 2))).parts
    shown = shown_distribution(at)
    for name, q, part in zip(("0.25-quantile", "0.75-quantile"), (0.25, 0.75), parts,
                             strict=True):
        assert part.quantile == q and part.sensitivity == 2 * 0.75
        # b = 2Δ/√(2ρ) at ρ = 0.125/2 each: brute_force's b = 2Δ/ε with ε = √(2ρ)
        assert part.scale == pytest.approx(2 * 1.5 / math.sqrt(0.125), rel=1e-12)
        expected = brute_force(TINY, GRID, q, 2 * 1.5 / part.scale, 1.5)
        np.testing.assert_allclose(shown[name][1], expected, rtol=1e-9, atol=1e-15)


def test_each_release_shows_its_rank_bound_in_words(tiny_folder):
    """Issue 22: the median at ε = 1 (Δ = 1/2, permute-and-flip b = 2Δ/ε = 1) over the 8
    candidates: with 95 %, the released median's rank error is at most b·ln(7/(2·0.05))
    = ln 70 rows more than the best grid value's (the union bound on the Laplace law of two
    exponential noises' difference), in the table and in words next to the release."""
    at = tiny_app()
    want = math.log(7 / 0.1)
    shown = table(at).iloc[0]["Rank error above the best's, at most (95 %)"]
    assert want <= float(shown) < want + 1e-3            # rounded up to 4 digits
    said = next(c.value for c in at.main.caption if c.value.startswith("With 95 %"))
    assert (f"the released median's rank error is at most {shown} rows more than the best "
            "grid value's") in said
    assert "never the data" in said
