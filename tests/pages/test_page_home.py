"""AppTest of the Welcome page: what ε = 1 means in plain words, with numbers that are
computed (checked here against Bayes' rule), rounded the safe way, and a pointer to where to
see more."""

from __future__ import annotations

import math
import re

import pytest

from tests.conftest import open_app


@pytest.fixture(scope="module")
def welcome():
    return open_app()


def text(at) -> str:
    return " ".join(m.value for m in at.markdown)


def posterior(epsilon: float, prior: float = 0.5) -> float:
    """Bayes' rule with likelihood ratio at most e^ε: the most the belief can reach."""
    return math.exp(epsilon) * prior / (math.exp(epsilon) * prior + 1 - prior)


def test_epsilon_one_in_plain_words(welcome):
    assert any(s.value == "What ε = 1 means" for s in welcome.subheader)
    shown = text(welcome)
    ratio = float(re.search(r"at ε = 1, every possible result is at most ([\d.]+) times",
                            shown)[1])
    assert math.e <= ratio <= math.e + 0.01          # e¹ = 2.718…, rounded up


def test_the_attacker_sentence_is_computed_and_rounds_up(welcome):
    shown = text(welcome)
    belief = float(re.search(r"starts 50/50 .* ends \*\*at most ([\d.]+)% sure\*\* after one "
                             r"release at ε = 1", shown)[1])
    assert 100 * posterior(1.0) <= belief <= 100 * posterior(1.0) + 0.1   # 73.1058…% → 73.2%
    for epsilon, value in re.findall(r"at ε = ([\d.]+), ([\d.]+)%", shown):
        assert 100 * posterior(float(epsilon)) <= float(value) <= 100 * posterior(
            float(epsilon)) + 0.1


def test_it_points_to_where_to_see_it(welcome):
    links = {link.proto.page: link.proto.label for link in welcome.main.get("page_link")}
    assert "attacker" in links["choose_epsilon"]
    assert "Play the attacker" in links["attacker"]   # the game (issue 35)


def test_bounds_wording_is_true(welcome):
    """Adult's capital_loss bound is read off the data: the page no longer says that bounds
    are never read off the data, and says such bounds are flagged."""
    info = " ".join(i.value for i in welcome.info)
    assert "never read off the data" not in info
    assert "read off the data leaks" in info and "flagged" in info


def test_the_pages_table_lists_every_page_of_the_navigation(welcome):
    """Every page app.py navigates to (but the Welcome page itself) has its row."""
    from tests.conftest import ROOT

    app = (ROOT / "app.py").read_text()
    titles = [t for t in re.findall(r'st\.Page\("app_pages/\w+\.py", title="([^"]+)"', app)
              if t != "Welcome"]
    assert len(titles) >= 10
    table = next(m.value for m in welcome.markdown if "| Page | What it shows |" in m.value)
    assert [t for t in titles if f"| **{t}** |" not in table] == []


def test_the_footer_says_where_a_private_release_is_made(welcome):
    footer = " ".join(c.value for c in welcome.caption)
    assert "nothing on these pages is a private release" not in footer
    assert "**Release** on the Release plan page" in footer and "ledger" in footer


def test_the_footer_says_exactly_what_is_kept_on_the_server(welcome):
    """Issue 35 item 4: 'uploads never leave the session' while saved plans (column names,
    categories read off the data) are written to the server: the page says what is kept."""
    footer = " ".join(c.value for c in welcome.caption)
    for kept in ("column names", "categories", "read off the data", "privacy unit",
                 "fingerprint of its content", "the plans you save", "never the rows"):
        assert kept in footer, kept
