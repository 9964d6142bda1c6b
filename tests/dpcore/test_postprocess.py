"""Tests for dpcore.postprocess: hand-computed cases and the properties each step promises."""

from __future__ import annotations

import numpy as np
import pytest

from dpcore.postprocess import (
    clip_negative,
    publish,
    rescale_to_total,
    round_counts,
    round_to_total,
    table_errors,
)

# --- hand cases ------------------------------------------------------------------------------


def test_clip_negative_by_hand():
    np.testing.assert_array_equal(clip_negative([-1.5, 0.0, 2.25]), [0.0, 0.0, 2.25])


def test_round_counts_rounds_to_nearest_with_halves_to_even():
    np.testing.assert_array_equal(round_counts([0.4, 0.5, 1.5, 2.6, -0.6]), [0, 0, 2, 3, -1])


def test_rescale_to_total_by_hand():
    # negatives become 0, then 1:3 is kept and scaled to 8
    np.testing.assert_allclose(rescale_to_total([1.0, 3.0, -2.0], 8.0), [2.0, 6.0, 0.0])


def test_rescale_to_total_spreads_evenly_when_every_cell_is_zero():
    np.testing.assert_allclose(rescale_to_total([-1.0, 0.0, -3.0, 0.0], 6.0), [1.5] * 4)


def test_rescale_to_total_treats_a_negative_total_as_zero():
    np.testing.assert_array_equal(rescale_to_total([1.0, 2.0], -4.0), [0.0, 0.0])


def test_rescale_to_total_gives_each_trial_its_own_total():
    noisy = np.array([[1.0, 1.0, 2.0], [-1.0, 5.0, 5.0]])
    out = rescale_to_total(noisy, np.array([8.0, 3.0]))
    np.testing.assert_allclose(out, [[2.0, 2.0, 4.0], [0.0, 1.5, 1.5]])


def test_rescale_to_total_one_total_for_every_trial_with_table_ndim():
    noisy = np.array([[1.0, 3.0], [2.0, 2.0]])
    out = rescale_to_total(noisy, 8.0, table_ndim=1)
    np.testing.assert_allclose(out, [[2.0, 6.0], [4.0, 4.0]])
    # without table_ndim a scalar total makes the whole array one table
    np.testing.assert_allclose(rescale_to_total(noisy, 8.0).sum(), 8.0)


def test_round_to_total_by_hand_largest_remainder():
    # floors 1, 1, 2 sum to 4; the missing unit goes to the largest fraction (0.6)
    np.testing.assert_array_equal(round_to_total([1.6, 1.3, 2.1], 5.0), [2.0, 1.0, 2.0])
    # three equal thirds of 10: ties go to the earlier cell
    np.testing.assert_array_equal(round_to_total([1.0, 1.0, 1.0], 10.0), [4.0, 3.0, 3.0])
    # the total itself is rounded first (9.6 -> 10), negatives dropped
    np.testing.assert_array_equal(round_to_total([-3.0, 2.0, 2.0], 9.6), [0.0, 5.0, 5.0])


def test_publish_clips_then_rounds_without_total():
    np.testing.assert_array_equal(publish([-0.4, 1.5, 2.5, 3.7]), [0.0, 2.0, 2.0, 4.0])
    np.testing.assert_array_equal(publish([-0.4, 1.5], round=False), [0.0, 1.5])
    np.testing.assert_array_equal(publish([-0.6, 1.5], clip=False), [-1.0, 2.0])
    np.testing.assert_array_equal(publish([-0.6, 1.4], clip=False, round=False), [-0.6, 1.4])


def test_publish_with_total_by_hand():
    # clip: [3.2, 0, 0.4]; rescale to 5: [4.444, 0, 0.556]; largest remainder: [4, 0, 1]
    np.testing.assert_array_equal(publish([3.2, -1.0, 0.4], total=5.0), [4.0, 0.0, 1.0])
    np.testing.assert_allclose(publish([3.0, -1.0, 1.0], total=2.0, round=False),
                               [1.5, 0.0, 0.5])


def test_table_errors_by_hand():
    true = np.array([10.0, 0.0, 5.0])
    published = np.array([[9.0, 1.0, 5.0], [10.0, 0.0, 5.0], [0.0, 0.0, 0.0]])
    errors = table_errors(true, published)
    np.testing.assert_allclose(errors["l1_error"], [2.0, 0.0, 15.0])
    np.testing.assert_allclose(errors["relative_l1_error_percent"], [200 / 15, 0.0, 100.0])
    single = table_errors(true, [10.0, 2.0, 5.0])
    assert single["l1_error"].shape == ()
    assert single["l1_error"] == 2.0


def test_table_errors_on_2d_tables_with_trials():
    true = np.array([[1.0, 2.0], [3.0, 4.0]])
    published = np.stack([true + 1.0, true])
    errors = table_errors(true, published)
    np.testing.assert_allclose(errors["l1_error"], [4.0, 0.0])
    np.testing.assert_allclose(errors["relative_l1_error_percent"], [40.0, 0.0])


def test_table_errors_relative_is_nan_when_the_true_total_is_zero():
    errors = table_errors([0.0, 0.0], [[1.0, 0.0]])
    assert errors["l1_error"][0] == 1.0
    assert np.isnan(errors["relative_l1_error_percent"][0])


# --- properties over random noisy tables ------------------------------------------------------


@pytest.fixture
def noisy_tables():
    rng = np.random.default_rng(20240611)
    true = rng.integers(0, 30, size=(3, 4)).astype(float)
    noisy = true + rng.laplace(scale=4.0, size=(500, 3, 4))  # many cells go negative
    totals = true.sum() + rng.laplace(scale=2.0, size=500)
    return noisy, totals


def test_publish_with_total_is_non_negative_integer_and_sums_exactly(noisy_tables):
    noisy, totals = noisy_tables
    out = publish(noisy, total=totals)
    assert out.shape == noisy.shape
    assert np.all(out >= 0)
    np.testing.assert_array_equal(out, np.round(out))
    np.testing.assert_array_equal(out.sum(axis=(1, 2)), np.rint(np.maximum(totals, 0)))
    # largest-remainder rounding moves each cell by less than one unit from its scaled value
    scaled = rescale_to_total(noisy, np.rint(np.maximum(totals, 0)))
    assert np.all(np.abs(out - scaled) < 1.0)


def test_rescale_keeps_proportions_and_sums_to_total(noisy_tables):
    noisy, totals = noisy_tables
    out = publish(noisy, total=totals, round=False)
    np.testing.assert_allclose(out.sum(axis=(1, 2)), np.maximum(totals, 0), rtol=1e-12)
    clipped = np.maximum(noisy, 0)
    ratio = out / np.maximum(totals, 0)[:, None, None]
    proportion = clipped / clipped.sum(axis=(1, 2), keepdims=True)
    np.testing.assert_allclose(ratio, proportion, rtol=1e-10, atol=1e-15)


def test_publish_without_total_is_non_negative_and_integer(noisy_tables):
    noisy, _ = noisy_tables
    out = publish(noisy)
    assert np.all(out >= 0)
    np.testing.assert_array_equal(out, np.round(out))
    np.testing.assert_array_equal(out, np.maximum(np.rint(noisy), 0))


def test_vectorized_over_trials_equals_one_table_at_a_time(noisy_tables):
    noisy, totals = noisy_tables
    together = publish(noisy[:20], total=totals[:20])
    one_by_one = np.stack([publish(noisy[i], total=totals[i]) for i in range(20)])
    np.testing.assert_array_equal(together, one_by_one)


def test_round_to_total_with_zero_tables_and_one_public_total():
    # first table: all zero after clipping, so 7/3 each -> floors 2, 2, 2 + one unit (tie:
    # earlier cell); second: 1.75, 1.75, 3.5 -> floors 1, 1, 3 + two units to the 0.75s
    noisy = np.array([[-1.0, -2.0, -0.5], [0.25, 0.25, 0.5]])
    out = round_to_total(noisy, 7.0, table_ndim=1)
    np.testing.assert_array_equal(out, [[3.0, 2.0, 2.0], [2.0, 2.0, 3.0]])


# --- validation -------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [[1.0, np.nan], [np.inf, 1.0]])
def test_non_finite_noisy_values_are_rejected(bad):
    with pytest.raises(ValueError, match="noisy"):
        publish(bad)
    with pytest.raises(ValueError, match="noisy"):
        rescale_to_total(bad, 3.0)


def test_non_finite_total_is_rejected():
    with pytest.raises(ValueError, match="total"):
        publish([1.0, 2.0], total=np.nan)


def test_total_requires_clipping():
    with pytest.raises(ValueError, match="clip"):
        publish([1.0, -2.0], total=3.0, clip=False)


def test_total_must_match_the_trial_axes():
    with pytest.raises(ValueError, match="total"):
        rescale_to_total(np.ones((4, 3)), np.ones(5))


def test_a_scalar_is_not_a_table():
    with pytest.raises(ValueError, match="table"):
        rescale_to_total(3.0, 3.0)


def test_bad_table_ndim():
    with pytest.raises(ValueError, match="table_ndim"):
        rescale_to_total(np.ones((4, 3)), 1.0, table_ndim=3)
    with pytest.raises(TypeError, match="table_ndim"):
        rescale_to_total(np.ones((4, 3)), 1.0, table_ndim=1.0)


def test_publish_flags_must_be_booleans():
    with pytest.raises(TypeError, match="clip"):
        publish([1.0], clip="yes")


def test_table_errors_shape_mismatch():
    with pytest.raises(ValueError, match="published"):
        table_errors([1.0, 2.0], [[1.0, 2.0, 3.0]])
    with pytest.raises(ValueError, match="published"):
        table_errors(np.ones((2, 2)), np.ones(2))
