"""The glossary: each term the pages use, its anchor on the Glossary page, a short plain
definition, and how a page mentions it; ``link`` writes the relative link a page's text uses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: The Glossary page's URL path (``st.Page`` names it after app_pages/glossary.py).
PAGE_PATH = "glossary"


@dataclass(frozen=True)
class Term:
    title: str
    definition: str
    mentions: str   # a regular expression: how a page's text names the term


TERMS: dict[str, Term] = {
    "differential-privacy": Term(
        "Differential privacy",
        "A promise about a release, not about the data: whether or not any one person's data "
        "is in the input, every possible output is about equally likely — at most e^ε times "
        "more likely one way than the other (up to a small chance δ). So the release tells "
        "little about any one person, whatever else an attacker knows.",
        r"differential(?:ly)? priva(?:cy|te)"),
    "epsilon": Term(
        "ε (epsilon)",
        "The privacy loss of a release: adding or removing one person changes the probability "
        "of any output by at most a factor e^ε. Smaller ε means more privacy and more noise. "
        "At ε = 1 the factor is e ≈ 2.72; the losses of several releases about the same "
        "people add up.",
        r"ε|\bepsilon\b"),
    "delta": Term(
        "δ (delta)",
        "In (ε, δ)-differential privacy, a small probability with which the e^ε bound may "
        "fail. It should be far below one over the number of people (10⁻⁶ or less, say). "
        "δ = 0 is pure differential privacy.",
        r"δ|\bdelta\b"),
    "rho-zcdp": Term(
        "ρ (rho) and zCDP",
        "Zero-concentrated differential privacy (zCDP) measures the loss by ρ: the Rényi "
        "divergence of every order a between the outputs on neighbouring data is at most "
        "ρ·a. Gaussian noise of standard deviation σ on a query of L2 sensitivity Δ₂ gives "
        "ρ = Δ₂²/(2σ²). The ρ of several releases add up; ρ converts to (ε, δ) with "
        "ε = ρ + 2√(ρ·ln(1/δ)).",
        r"ρ|\bzCDP\b"),
    "mu-gdp": Term(
        "μ-GDP (Gaussian differential privacy)",
        "Telling whether one person is in the data from the release is no easier than telling "
        "a draw of N(0, 1) from a draw of N(μ, 1). Gaussian noise σ on a query of L2 "
        "sensitivity Δ₂ is μ-GDP with μ = Δ₂/σ (so μ = √(2ρ)); releases compose as "
        "μ = √(μ₁² + μ₂² + …).",
        r"μ-GDP|\bGDP\b"),
    "pld": Term(
        "PLD (privacy loss distribution)",
        "The distribution of the privacy loss L = ln(P(output | D) / P(output | D′)) over "
        "the outputs of a mechanism on neighbouring datasets D, D′. Composing releases "
        "convolves their PLDs, which gives the tightest δ at each ε for a whole plan: "
        "δ(ε) = E[max(0, 1 − e^(ε − L))].",
        r"\bPLD\b|privacy loss distribution"),
    "sensitivity": Term(
        "Sensitivity (L1 and L2)",
        "The most a query's answer can change when one privacy unit (one person) is added or "
        "removed. For several answers at once, L1 adds up the absolute changes and L2 is the "
        "square root of the sum of their squares. Laplace noise is scaled to L1 (b = L1/ε), "
        "Gaussian noise to L2. A count where a person is one row has sensitivity 1.",
        r"\bsensitivit(?:y|ies)\b|\bL[12]\b"),
    "privacy-unit": Term(
        "Privacy unit",
        "Who is protected: what two neighbouring datasets differ by. By default one row is "
        "one person; with a person id, all the rows of one person, with declared bounds on "
        "the rows (and groups) per person so that the sensitivity is finite.",
        r"privacy unit"),
    "partition-selection": Term(
        "Partition selection",
        "Releasing groups whose keys are not public: a group is released only if its noisy "
        "count clears a threshold, so that a group made by one person alone is released only "
        "with a small probability δ. Groups below the threshold are dropped, and nobody "
        "learns they existed.",
        r"partition selection"),
    "clopper-pearson": Term(
        "Clopper–Pearson interval",
        "An exact confidence interval for a probability estimated from k successes in n "
        "trials, read off the binomial distribution (quantiles of a beta distribution). It "
        "covers the true probability at least as often as its stated level; the audit uses "
        "it to bound how often an output occurs.",
        r"Clopper.Pearson"),
    "accuracy": Term(
        "Accuracy ±α",
        "A noisy answer lands within ±α of the true answer with probability 1 − β (95% on "
        "these pages, β = 5%). α follows from the noise's exact law: b·ln(1/β) for Laplace "
        "noise of scale b, σ·Φ⁻¹(1 − β/2) for Gaussian noise of standard deviation σ.",
        r"±α"),
    "privacy-budget": Term(
        "Privacy budget and composition",
        "Every release about the same people spends privacy, and the losses add up "
        "(composition): ε's add, ρ's add, and the privacy loss distribution gives the "
        "tightest total. The budget is what a dataset's releases may spend in all.",
        r"privacy budget|\bcomposition\b"),
    "post-processing": Term(
        "Post-processing",
        "Anything computed from a private release alone, without the data — rounding, "
        "clipping negative counts to 0, a mean from a noisy sum and a noisy count — keeps the "
        "release's privacy guarantee and costs nothing more.",
        r"post-processing"),
    "report-noisy-max": Term(
        "Report noisy max, exponential mechanism, permute-and-flip",
        "Private selection: noise is added to every candidate's score and only the best noisy "
        "candidate is reported. With Gumbel noise this is exactly the exponential mechanism, "
        "with exponential noise permute-and-flip; neither releases the scores.",
        r"report noisy max|exponential mechanism|permute-and-flip"),
}


def link(anchor: str, text: str | None = None) -> str:
    """A markdown link to ``anchor`` on the Glossary page, relative to the current page (it
    stays on the app's server, under any base path): '[ε](./glossary#epsilon)'."""
    if anchor not in TERMS:
        raise ValueError(f"no glossary term {anchor!r}")
    return f"[{text or TERMS[anchor].title}](./{PAGE_PATH}#{anchor})"


#: A glossary link in a page's markdown: (text, anchor).
LINK = re.compile(r"\[([^\]]+)\]\(\./" + PAGE_PATH + r"#([a-z0-9-]+)\)")
