"""Nothing computed from an upload's values enters the URL, on any page (issue 9, item 3).

Two sessions upload files with the same column names but different values and row counts, and
set every page up the same way. Any URL parameter derived from the data (a bound, an answer
range, a category, a count) would differ between them: the URLs must be equal, page by page.
The parameters JSON of each page, on the other hand, must say which declarations came from the
data.
"""

from __future__ import annotations

import pytest

from dashboard import state
from dashboard.analysis import statistics as stats
from dashboard.datasets import load_upload
from plan.identity import content_digest
from tests.conftest import PAGE_FILES, ROOT

UPLOAD = "Upload your own CSV"


def salaries(rows: int, largest: int) -> bytes:
    """A CSV of ``rows`` people: a salary up to ``largest``, a team and a site (categories)."""
    lines = [f"{largest * (i + 1) // rows},{'team_' + 'abc'[i % 3]},{'site_' + 'xy'[i % 2]}"
             for i in range(rows)]
    return ("salary,team,site\n" + "\n".join(lines) + "\n").encode()


FILES = {"A": ("a.csv", salaries(137, 123_456)), "B": ("b.csv", salaries(61, 9_876))}


def session(name: str):
    """A session that uploaded file ``name`` (and chose nothing else yet)."""
    from streamlit import config
    from streamlit.testing.v1 import AppTest

    config.set_option("client.showErrorDetails", "full")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.selectbox(key="dataset_choice").select(UPLOAD).run()
    at.file_uploader(key="upload_file").set_value((*FILES[name], "text/csv")).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state[state.DATASET].name == FILES[name][0]
    return at


def visit(at, page: str):
    at.switch_page(f"app_pages/{page}")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def set_up(at, page: str) -> None:
    """Choose, on ``page``, the settings that show data-derived suggestions."""
    if page == "statistics.py":
        at.selectbox(key="stats_query").select("sum").run()
        at.selectbox(key="stats_mechanism").select("bounded_laplace").run()
    elif page == "selection.py":
        at.selectbox(key="sel_source").select("data").run()
    elif page == "groups.py":
        at.selectbox(key="groups_statistic").select("sum").run()
        at.selectbox(key="groups_by").select("salary (in bins)").run()
    assert not at.exception, [e.value for e in at.exception]


@pytest.fixture(scope="module")
def sessions():
    return {name: session(name) for name in FILES}


# Pages in an order where Choose epsilon comes after the pages it reads its query from.
ORDER = ["home.py", "data.py", "statistics.py", "tables.py", "groups.py", "quantiles.py",
         "selection.py", "choose_epsilon.py", "attacker.py", "plan.py", "releases.py",
         "learning.py",
         "synthetic.py",
         "glossary.py"]


def test_every_page_is_checked():
    assert sorted(ORDER) == PAGE_FILES


@pytest.mark.parametrize("page", ORDER)
def test_no_url_parameter_depends_on_the_uploaded_values(sessions, page):
    urls = {}
    for name, at in sessions.items():
        visit(at, page)
        set_up(at, page)
        urls[name] = dict(at.query_params)
        # issue 32: a reload finds the upload by its content identity's first 16 digits,
        # the one parameter that differs (nothing read off a cell)
        assert urls[name].pop("data") == content_digest(
            load_upload(*reversed(FILES[name])).cells).removeprefix("sha256:")[:16]
        urls[name].pop("plan", None)   # each session's own saved plan, by its id
    assert urls["A"] == urls["B"], {k: (urls["A"].get(k), urls["B"].get(k))
                                    for k in set(urls["A"]) | set(urls["B"])
                                    if urls["A"].get(k) != urls["B"].get(k)}
    # Belt and braces: nothing of file A appears in its URL (its largest salary, the answer
    # range derived from it, its categories).
    shown = " ".join(f"{k}={v}" for k, v in urls["A"].items())
    for secret in ("123456", "40000000", "200000", "team_", "site_", "salary"):
        assert secret not in shown, f"{page}: {secret} in {shown}"


def test_the_statistics_parameters_say_which_declarations_came_from_the_data():
    """The bounds and the answer range suggested for an upload come from its values; once the
    user types their own, the parameters say so."""
    loaded = load_upload(*reversed(FILES["A"]))
    bounds = stats.default_bounds(loaded, "salary")
    spec = stats.QuerySpec("sum", "salary", bounds.lower, bounds.upper)
    rows = len(loaded.frame)
    suggested = stats.default_answer_range(spec, rows)
    origin = stats.declaration_origins(loaded, spec, answer_range=suggested, upload=True)
    assert "the data" in origin["clamping_bounds_from"]
    assert "the data" in origin["answer_range_from"]

    typed = stats.QuerySpec("sum", "salary", 0.0, 150_000.0)
    origin = stats.declaration_origins(loaded, typed, answer_range=(0.0, 1e6), upload=True)
    assert origin["clamping_bounds_from"] == stats.TYPED
    assert origin["answer_range_from"] == stats.TYPED


def data_warnings(at) -> list[str]:
    return [w.value for w in at.warning if "data's own minimum and maximum" in w.value]


def test_the_bounds_from_the_data_warning_goes_when_the_user_types_bounds():
    """Issue 9, item 12: the warning stayed after the user typed their own bounds."""
    at = visit(session("A"), "statistics.py")
    at.selectbox(key="stats_query").select("sum").run()
    suggested = stats.default_bounds(load_upload(*reversed(FILES["A"])), "salary")
    assert (suggested.lower, suggested.upper) == (0.0, 200_000.0)   # round numbers ≥ 123,456
    assert len(data_warnings(at)) == 1

    at.number_input(key="stats_upper").set_value(150_000.0).run()
    assert not at.exception
    assert data_warnings(at) == []
    assert any("Your bounds [0, 150000]" in c.value for c in at.caption)

    at.number_input(key="stats_upper").set_value(200_000.0).run()   # back to the suggestion
    assert len(data_warnings(at)) == 1


# -- the parameters JSON of each page says what came from the data ------------------------------

@pytest.fixture
def served(monkeypatch):
    """Every file a page hands to Streamlit's media storage: file id → bytes."""
    from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

    files: dict[str, bytes] = {}
    original = MemoryMediaFileStorage.load_and_get_id

    def spy(self, path_or_data, mimetype, kind, filename=None):
        file_id = original(self, path_or_data, mimetype, kind, filename)
        files[file_id] = path_or_data
        return file_id

    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", spy)
    return files


def parameters(at, served, key: str) -> dict:
    import json

    button = at.download_button(key=f"{key}_json")
    return json.loads(served[button.proto.url.rsplit("/", 1)[-1].split(".")[0]])


FROM_DATA = "the data"


@pytest.mark.slow
def test_every_parameters_file_says_what_came_from_the_upload(served):
    at = visit(session("A"), "statistics.py")
    set_up(at, "statistics.py")                           # sum of salary, bounded Laplace
    found = parameters(at, served, "stats_download")
    assert found["clamping_bounds_from"].startswith(FROM_DATA), found
    assert found["answer_range_from"].startswith(FROM_DATA), found

    at = visit(at, "choose_epsilon.py")                   # the same query, read from there
    at.multiselect(key="choose_mechanisms_statistics").set_value(["laplace", "bounded_laplace"])
    at.run()
    found = parameters(at, served, "choose_download")
    assert found["clamping_bounds_from"].startswith(FROM_DATA), found
    assert found["answer_range_from"].startswith(FROM_DATA), found

    for page, key in (("tables.py", "tables_download"), ("selection.py", "sel_download")):
        at = visit(at, page)
        set_up(at, page)
        found = parameters(at, served, key)
        assert found["categories_from"].startswith(FROM_DATA), (page, found)

    at = visit(at, "statistics.py")                       # the user types their own
    at.number_input(key="stats_upper").set_value(150_000.0).run()
    at.number_input(key="stats_answer_upper").set_value(25_000_000.0).run()
    found = parameters(at, served, "stats_download")
    assert (found["clamping_bounds_from"], found["answer_range_from"]) == (stats.TYPED,) * 2
    found = parameters(visit(at, "choose_epsilon.py"), served, "choose_download")
    assert (found["clamping_bounds_from"], found["answer_range_from"]) == (stats.TYPED,) * 2


def test_builtin_data_says_public_where_it_is_public(served):
    from tests.conftest import open_app

    at = open_app("statistics.py")                      # Adult
    at.selectbox(key="stats_query").select("sum").run()
    at.selectbox(key="stats_column").select("age").run()
    at.selectbox(key="stats_mechanism").select("bounded_laplace").run()
    found = parameters(at, served, "stats_download")
    assert found["clamping_bounds_from"].startswith("the column's public range"), found
    assert found["answer_range_from"].startswith("the dataset's published number of rows")
