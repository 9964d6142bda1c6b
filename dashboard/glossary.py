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
    "neighbouring-datasets": Term(
        "Neighbouring datasets",
        "Two datasets that differ by one privacy unit: one person's rows added or removed. "
        "Differential privacy compares what a release does on every such pair; the attacker "
        "game holds one pair and asks you which one a noisy answer came from.",
        r"neighbou?ring"),
    "laplace-mechanism": Term(
        "Laplace mechanism",
        "Adds noise from the Laplace (double exponential) distribution of scale b = Δ₁/ε to "
        "an answer of L1 sensitivity Δ₁: pure ε-DP. Its typical error is b (mean absolute "
        "error), its standard deviation √2·b, and it is unbiased.",
        r"\bLaplace\b"),
    "gaussian-mechanism": Term(
        "Gaussian mechanism",
        "Adds normal noise of standard deviation σ to an answer of L2 sensitivity Δ₂. It is "
        "(ε, δ)-DP (never pure ε-DP), ρ-zCDP with ρ = Δ₂²/(2σ²) and μ-GDP with μ = Δ₂/σ; for "
        "many answers at once it needs less noise than Laplace.",
        r"\bGaussian\b(?! naive)"),
    "geometric-mechanism": Term(
        "Geometric mechanism (discrete Laplace)",
        "The Laplace mechanism for whole numbers: adds an integer drawn with probability "
        "proportional to e^(−ε|k|/Δ₁). The release is still a whole number and the guarantee "
        "is the same pure ε-DP, with no floating-point pitfalls.",
        r"\bgeometric\b|discrete Laplace"),
    "noise-scale": Term(
        "Noise scale",
        "How wide the noise is: Laplace's scale b (the mean absolute error) or the Gaussian's "
        "standard deviation σ. It grows with the sensitivity and shrinks as ε grows: halving "
        "ε doubles it.",
        r"noise scale|\bscale b\b"),
    "rmse-bias": Term(
        "RMSE and bias",
        "The root-mean-square error is √(mean of (noisy − true)²) over many releases: a "
        "typical size of the error. The bias is the mean of (noisy − true): zero for plain "
        "noise, not zero once answers are clamped, rounded or clipped at 0. RMSE² = variance "
        "+ bias².",
        r"\bRMSE\b|\bbias(?:ed)?\b"),
    "membership-test": Term(
        "Membership test (true and false positive rates)",
        "An attacker's guess, from a release, of whether one person is in the data. Its true-"
        "positive rate (TPR) is the share of releases with the person that it flags, its "
        "false-positive rate (FPR) the share without the person that it flags. ε-DP limits "
        "every test to TPR ≤ e^ε·FPR + δ.",
        r"membership (?:test|attack)|true.positive|false.positive|\bTPR\b|\bFPR\b"),
    "tradeoff-curve": Term(
        "Trade-off curve",
        "The highest true-positive rate any membership test can reach at each false-positive "
        "rate. For ε-DP it is min(e^ε·α, 1 − e^−ε·(1 − α)) at FPR α; no guess gets above it.",
        r"trade-?off curve"),
    "likelihood-ratio-test": Term(
        "Likelihood-ratio test",
        "The best membership test there is (Neyman–Pearson): say “in” when the release is more "
        "likely with the person than without, by a chosen ratio. It reaches the trade-off "
        "curve; no other test does better.",
        r"likelihood.ratio"),
    "randomized-response": Term(
        "Randomized response",
        "Answer a yes/no question truthfully with probability e^ε/(1 + e^ε), else lie. It is "
        "exactly ε-DP, and the best test against it lands on the ε-DP trade-off curve: the "
        "worst case the guarantee allows.",
        r"randomi[sz]ed response"),
    "prior-posterior": Term(
        "Prior and posterior belief",
        "An attacker's belief that a person is in the data before seeing a release (prior) "
        "and after (posterior). With ε-DP the odds can grow by at most e^ε: from 50 %, "
        "at most 73.2 % at ε = 1.",
        r"\bprior\b|\bposterior\b"),
    "clamping-bounds": Term(
        "Clamping and bounds",
        "A sum or mean needs public bounds [L, U]: every value is clamped into them before the "
        "noise, so one person moves the answer by at most the bounds' width. Bounds must come "
        "from public knowledge; bounds read off the data leak and are flagged.",
        r"\bclamp(?:ing|ed)?\b|\bbounds?\b"),
    "max-rows": Term(
        "Max rows (contribution bound)",
        "When a person can have many rows, each person keeps at most this many rows (chosen by "
        "a hash over that person's own rows) before anything is computed, so one person "
        "changes a count by at most max rows. Rows beyond it are dropped.",
        r"max(?:imum)? rows|contribution bound"),
    "basic-advanced-composition": Term(
        "Basic and advanced composition",
        "Two ways to total the loss of k releases. Basic composition adds them: k·ε. Advanced "
        "composition gives about ε·√(2k·ln(1/δ′)) + k·ε·(e^ε − 1) at an extra δ′, smaller "
        "for many small releases.",
        r"(?:basic|advanced) composition"),
    "aim-mst-marginals": Term(
        "AIM, MST and marginals",
        "A marginal is a count table over a few columns (age × sex, say). MST and AIM measure "
        "chosen marginals with noise and fit a model that agrees with them; synthetic rows are "
        "sampled from the model. MST measures pairs along a tree; AIM picks marginals "
        "adaptively.",
        r"\bAIM\b|\bMST\b|\bmarginals?\b"),
    "total-variation": Term(
        "Total-variation distance",
        "How far two distributions over the same categories are: half the sum of the absolute "
        "differences of their shares, from 0 (the same) to 1 (nothing in common). It compares "
        "synthetic data with the real data, column by column.",
        r"total.variation"),
    "cramers-v": Term(
        "Cramér's V",
        "How strongly two categorical columns go together, from 0 (independent) to 1 (one "
        "determines the other): √(χ²/(n·(k − 1))) with k the smaller number of categories.",
        r"Cram[ée]r"),
    "rank-error": Term(
        "Rank error",
        "For a private quantile or selection: how many places the released value is from the "
        "right one in the sorted data (the median of 101 values released as the 55th is off "
        "by 4 ranks), whatever the values' units.",
        r"rank error|\branks?\b"),
}


def link(anchor: str, text: str | None = None) -> str:
    """A markdown link to ``anchor`` on the Glossary page, relative to the current page (it
    stays on the app's server, under any base path): '[ε](./glossary#epsilon)'."""
    if anchor not in TERMS:
        raise ValueError(f"no glossary term {anchor!r}")
    return f"[{text or TERMS[anchor].title}](./{PAGE_PATH}#{anchor})"


#: A glossary link in a page's markdown: (text, anchor).
LINK = re.compile(r"\[([^\]]+)\]\(\./" + PAGE_PATH + r"#([a-z0-9-]+)\)")
