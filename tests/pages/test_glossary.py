"""AppTest of the Glossary page and of the links to it (issue 21 item 13): every term has its
anchor and a short definition, every page links the Glossary from the sidebar, a page's
introduction links each term it names where it first names it, and every link is relative
(it stays on the app's server)."""

from __future__ import annotations

import re

import pytest

from dashboard.glossary import TERMS
from tests.conftest import PAGE_FILES, open_app

#: The terms the issue asks for, by how a reader would look them up.
ASKED = {"ε": "epsilon", "δ": "delta", "ρ": "rho-zcdp", "zCDP": "rho-zcdp", "μ-GDP": "mu-gdp",
         "PLD": "pld", "L1": "sensitivity", "L2": "sensitivity",
         "privacy unit": "privacy-unit", "partition selection": "partition-selection",
         "Clopper–Pearson": "clopper-pearson",
         # issue 35: what the pages say and the glossary lacked
         "Laplace": "laplace-mechanism", "Gaussian": "gaussian-mechanism",
         "geometric": "geometric-mechanism", "noise scale": "noise-scale", "RMSE": "rmse-bias",
         "bias": "rmse-bias", "membership test": "membership-test",
         "true positive": "membership-test", "false positive": "membership-test",
         "prior": "prior-posterior", "posterior": "prior-posterior",
         "clamping": "clamping-bounds", "bounds": "clamping-bounds", "max rows": "max-rows",
         "basic composition": "basic-advanced-composition",
         "advanced composition": "basic-advanced-composition", "AIM": "aim-mst-marginals",
         "MST": "aim-mst-marginals", "marginals": "aim-mst-marginals",
         "total-variation distance": "total-variation", "Cramér's V": "cramers-v",
         "rank error": "rank-error", "neighbouring": "neighbouring-datasets",
         "likelihood-ratio test": "likelihood-ratio-test",
         "randomized response": "randomized-response", "trade-off curve": "tradeoff-curve"}
MARKDOWN_LINK = re.compile(r"\[([^\]]*)\]\(([^)]*)\)")


def texts(node) -> list[str]:
    """The markdown of ``node``'s texts (markdown, captions, notes), in the page's order."""
    children = getattr(node, "children", None)
    if children is not None:
        return [t for key in sorted(children) for t in texts(children[key])]
    return [node.value] if node.type in ("markdown", "caption", "info", "warning") else []


def intro(at, page: str) -> str:
    """The page's introduction: its first text after the title; on the Data page the note
    that follows the dataset's own description."""
    return at.main.warning[0].value if page == "data.py" else texts(at.main)[0]


@pytest.fixture(scope="module")
def glossary():
    return open_app("glossary.py")


def test_every_term_has_its_anchor_and_a_short_definition(glossary):
    anchors = {h.proto.anchor: h.value for h in glossary.subheader}
    assert set(anchors) == set(TERMS)
    for word, anchor in ASKED.items():
        assert anchor in anchors, word
        assert word in anchors[anchor] or re.search(TERMS[anchor].mentions, word), word
    definitions = texts(glossary.main)[1:]   # after the introduction
    assert len(definitions) == len(TERMS)
    assert all(40 < len(d) < 500 for d in definitions)


@pytest.mark.parametrize("page", [p for p in PAGE_FILES if p != "glossary.py"])
def test_every_page_links_the_glossary_and_each_term_of_its_introduction(page):
    at = open_app(page)
    [link] = [p for p in at.sidebar.get("page_link") if "Glossary" in p.proto.label]
    assert link.proto.page.endswith("glossary")
    text = intro(at, page)
    linked = False
    for anchor, term in TERMS.items():
        first = re.search(term.mentions, text, flags=re.I)
        if first is None:
            continue
        # the first mention sits in the text of a link to the term's anchor
        spans = [m for m in MARKDOWN_LINK.finditer(text)
                 if m[2] == f"./glossary#{anchor}" and m.start(1) <= first.start() < m.end(1)]
        assert spans, f"{page}: the first mention of {anchor!r} is not linked: {text!r}"
        linked = True
    assert linked, f"{page} names no glossary term in its introduction: {text!r}"
    for target in (m[2] for t in texts(at.main) for m in MARKDOWN_LINK.finditer(t)):
        if "glossary" in target:
            assert target.startswith("./glossary"), target   # relative: it stays on the server
            anchor = target.partition("#")[2]
            assert anchor in ("", *TERMS), target
