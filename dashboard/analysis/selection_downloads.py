"""One private release at the Selection page's settings, and the download of its results
(values per candidate and the parameters file).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from dashboard.analysis.selection_choices import _RNG_OFFSET, NOISES, SOURCES
from dashboard.analysis.selection_maths import SelectionSummary
from dashboard.exports import SIMULATION, simulation_fields
from dashboard.text import plain
from dpcore.checks import check_int
from dpcore.selection import noisy_top_k, report_noisy_max

MAX_RELEASE = 10**9   # the highest release number ("Draw another release" counts up from 1)


#: What the noise scale means for each noise, for the parameters file.
NOISE_SCALE_MEANING = {
    "laplace": "scale b of the Laplace noise added to each score",
    "exponential": "scale b of the one-sided exponential noise added to each score",
    "gumbel": "scale b of the Gumbel noise added to each score",
}


@dataclass(frozen=True, eq=False)
class SelectionRelease:
    """One private pick at the page's settings, a sentence about it, and the download."""

    picks: tuple[int, ...]
    sentence: str
    values: pd.DataFrame
    parameters: dict


def release_stream(release: int) -> list[int | str]:
    """The random stream of release number ``release`` of a seed: ``[seed, 4, 2]`` for the
    first, ``[seed, 4, 2, n]`` for release n > 1."""
    check_int("release", release, minimum=1, maximum=MAX_RELEASE)
    return ["seed", _RNG_OFFSET, 2] + ([release] if release > 1 else [])


def one_release(scores: ArrayLike, *, scale: float, noise: str, negate: bool, k: int,
                seed: int, release: int = 1) -> tuple[int, ...]:
    """The candidate(s) release number ``release`` of ``seed`` picks, best first (its own
    stream, :func:`release_stream`)."""
    values = np.asarray(scores, dtype=np.float64)
    rng = np.random.default_rng([seed if part == "seed" else part
                                 for part in release_stream(release)])
    if k == 1:
        return (int(report_noisy_max(values, scale=scale, noise=noise, negate=negate,
                                     rng=rng)),)
    chosen = noisy_top_k(values, k, scale=scale, noise=noise, negate=negate, rng=rng)
    return tuple(int(i) for i in np.asarray(chosen).reshape(-1))


def selection_values(summary: SelectionSummary, picks: tuple[int, ...], *,
                     candidates: str) -> pd.DataFrame:
    """Per candidate: exact probability of being (first) picked, simulated share of releases
    with its 95% half-width, top-k inclusion when k > 1, and its rank in one release.

    The true scores are left out: the file holds what the mechanism releases and how often.
    """
    k = len(picks)
    first = " first" if k > 1 else ""
    rank = np.full(len(summary.labels), np.nan)
    rank[list(picks)] = np.arange(1, k + 1)
    columns = {
        candidates: [str(label) for label in summary.labels],
        f"Exact probability of being picked{first}": summary.exact,
        f"Simulated share of releases picking it{first}": summary.empirical,
        "95% half-width of the simulated share": summary.half_width,
    }
    if summary.inclusion is not None:
        columns[f"Simulated share of releases with it in the top {k}"] = summary.inclusion
    columns["Rank in one private release (empty: not picked)"] = rank
    return pd.DataFrame(columns)


def private_release(summary: SelectionSummary, *, source: str, dataset: str, candidates: str,
                    level: float, seed: int, categories_from: str | None = None,
                    release: int = 1, neighbours: str | None = None) -> SelectionRelease:
    """One private release at the page's settings (the summary's mechanism), with the
    download's values and parameters (the seed is added by the download).
    ``categories_from`` says where the candidates of a column's counts come from
    (``selection_wording.categories_origin``)."""
    mechanism = summary.mechanism
    noise, measure, k = mechanism.noise, mechanism.measure, mechanism.k
    negate, monotonic = mechanism.negate, mechanism.monotonic
    picks = one_release(summary.scores, scale=summary.scale, noise=noise, negate=negate, k=k,
                        seed=seed, release=release)
    names = ", ".join(f"**{plain(summary.labels[i])}**" for i in picks)
    sentence = (f"One private release at these settings (release {release:,} of seed {seed}) "
                f"picks {names}"
                + (" (best first)." if k > 1 else "."))
    privacy = mechanism.privacy
    parameters = {
        "page": "Selection", "scores_from": SOURCES[source],
        "dataset": dataset if source == "data" else None, "candidates": candidates,
        "categories_from": categories_from if source == "data" else None,
        "number_of_candidates": int(summary.scores.size),
        "mechanism": NOISES[noise] + (f", top {k} picks" if k > 1 else ""),
        "noise": noise, "measure": measure,
        "epsilon": level if measure == "pure" else None, "delta": None,
        "rho": level if measure == "zcdp" else None,
        "sensitivity": float(mechanism.sensitivity),
        "sensitivity_meaning": "the most any one score changes between neighbours: "
                               + (neighbours or "add/remove one row (one row = one person)"),
        "monotonic": monotonic, "pick": "smallest score" if negate else "largest score",
        "k": k, "noise_scale": float(summary.scale),
        "noise_scale_meaning": NOISE_SCALE_MEANING[noise],
        "privacy": {**{n: float(v) for n, v in asdict(privacy).items()},
                    "guarantee": privacy.describe()},
        "picked_in_one_release": [str(summary.labels[i]) for i in picks],
        "release_number": release,
        "release_random_stream": "numpy.random.default_rng([{}])".format(
            ", ".join(str(part) for part in release_stream(release))),
        SIMULATION: simulation_fields("numpy.random.default_rng([{}])".format(
            ", ".join(str(part) for part in release_stream(release)))),
        "simulated_releases": int(summary.trials),
        "simulated_releases_requested": int(summary.requested_trials),
    }
    return SelectionRelease(picks, sentence, selection_values(summary, picks,
                                                              candidates=candidates), parameters)
