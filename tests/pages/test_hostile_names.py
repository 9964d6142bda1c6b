"""Every page on a dataset whose file name, schema source, column names and category labels
are hostile (tests/hostile.py): each markdown source shows them literally (escaped, and
dashes, autolinks and shortcodes broken up), each plain-text option shows them raw."""

from __future__ import annotations

import html
import json

import pytest

from tests import hostile
from tests.conftest import PAGE_FILES, open_app

#: Elements whose value Streamlit renders as markdown.
MARKDOWN_VALUES = ("markdown", "caption", "title", "header", "subheader", "info", "warning",
                   "error", "success", "toast")
#: Widgets: their label and help are markdown; options are plain text except the radio's.
WIDGETS = ("selectbox", "multiselect", "radio", "checkbox", "toggle", "button", "number_input",
           "slider", "select_slider", "text_input", "text_area", "date_input", "color_picker",
           "pills", "segmented_control", "metric", "expander", "tabs", "status",
           "file_uploader", "download_button", "page_link", "progress", "link_button")
#: Widgets whose options are markdown too.
MARKDOWN_OPTIONS = ("radio", "pills", "segmented_control")
PLAIN_OPTIONS = ("selectbox", "multiselect", "select_slider")


@pytest.fixture(scope="module")
def choices(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    names = hostile.write_folder(root)
    mp = pytest.MonkeyPatch()
    mp.setenv("EPSILON_LAB_DATA", str(root))
    yield names
    mp.undo()


def _elements(at, kind):
    try:
        return list(at.get(kind))
    except (KeyError, AttributeError):
        return []


def markdown_sources(at) -> list[str]:
    sources = [str(e.value) for kind in MARKDOWN_VALUES for e in _elements(at, kind)]
    for kind in WIDGETS:
        for e in _elements(at, kind):
            for attribute in ("label", "help", "placeholder", "text"):
                value = getattr(e, attribute, None) or getattr(e.proto, attribute, None)
                if isinstance(value, str):
                    sources.append(value)
            if kind in MARKDOWN_OPTIONS:
                sources.extend(map(str, e.options))
    return sources


def plain_options(at) -> list[str]:
    return [str(o) for kind in PLAIN_OPTIONS for e in _elements(at, kind) for o in e.options]


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def chart_problems(at) -> list[str]:
    """Plotly shows its text as pseudo-HTML: a name must come back raw once its entities are
    read, and never carry a raw tag."""
    found = []
    for chart in _elements(at, "plotly_chart"):
        for text in _strings(json.loads(chart.proto.spec)):
            found += hostile.plain_text_problems(html.unescape(text))
            found += [f"{name!r} is raw markup in a chart: {text!r}"
                      for name in hostile.NAMES if "<" in name and name in text]
    return found


def problems(at) -> list[str]:
    return [*(p for s in markdown_sources(at) for p in hostile.markdown_problems(s)),
            *(p for o in plain_options(at) for p in hostile.plain_text_problems(o)),
            *chart_problems(at)]


def test_the_checks_catch_what_they_must():
    """Planted bugs: a raw link, an escaped name in a plain-text option, a dash pair that
    is escaped but not broken up; and what is right passes."""
    link = hostile.CATEGORICAL[0]
    assert hostile.markdown_problems(f"Column {link}")
    assert hostile.markdown_problems(r"a \-\- b")
    assert hostile.plain_text_problems(r"patient\_id")
    assert not hostile.plain_text_problems("patient_id")
    assert not hostile.markdown_problems(r"Column \[link\]\(http\:" + "\u2060"
                                         + r"//evil\.example\)")
    assert not hostile.markdown_problems(r"x\\y and patient\_id")


@pytest.mark.parametrize("page", PAGE_FILES)
@pytest.mark.parametrize("which", ["full", "one numeric column"])
def test_every_page_shows_hostile_names_literally(choices, which, page):
    at = open_app(page, dataset=choices[which != "full"])
    assert not at.exception, [e.value for e in at.exception]
    found = problems(at)
    assert not found, "\n".join(found[:20])


def test_the_person_id_select_offers_the_raw_names(choices):
    at = open_app("data.py", dataset=choices[0])
    options = plain_options(at)
    for name in (*hostile.CATEGORICAL, *hostile.NUMERIC):
        assert name in options, name


def test_a_name_escaped_twice_is_caught():
    assert hostile.markdown_problems(r"\\\[link\\\]\\\(http\\\:" + "\u2060"
                                     + r"//evil\\\.example\\\) has no categorical column")


def test_the_data_page_shows_every_column_and_person_id_literally(choices):
    at = open_app("data.py", dataset=choices[0])
    at.multiselect(key="data_columns").set_value(list(hostile.frame().columns)).run()
    assert not at.exception, [e.value for e in at.exception]
    shown = markdown_sources(at)
    for name in (*hostile.CATEGORICAL[:3], *hostile.NUMERIC):
        assert any(hostile.PATTERNS[name].search(s) for s in shown), name
    found = problems(at)
    assert not found, "\n".join(found[:20])
    person = next(s for s in at.selectbox if s.label == "Person-id column")
    for name in (*hostile.CATEGORICAL, hostile.NUMERIC[1]):
        person.set_value(name).run()
        assert not at.exception, [e.value for e in at.exception]
        found = problems(at)
        assert not found, "\n".join(found[:20])


def test_the_statistics_page_shows_every_column_literally(choices):
    from dashboard.analysis import statistics as stats

    at = open_app("statistics.py", dataset=choices[0])
    loaded = at.session_state["dataset"]
    for query in stats.available_queries(loaded):
        at.selectbox(key="stats_query").set_value(query).run()
        assert not at.exception, [e.value for e in at.exception]
        for column in stats.columns_for(loaded, query) if query != "count" else ():
            at.selectbox(key="stats_column").set_value(column).run()
            assert not at.exception, [e.value for e in at.exception]
            found = problems(at)
            assert not found, (query, column, "\n".join(found[:20]))


def test_choose_epsilon_shows_hostile_names_literally_for_every_source(choices):
    from dashboard.analysis.epsilon_question import SOURCES

    at = open_app("choose_epsilon.py", dataset=choices[0])
    for source in SOURCES:
        at.radio(key="choose_source").set_value(source).run()
        assert not at.exception, [e.value for e in at.exception]
        found = problems(at)
        assert not found, (source, "\n".join(found[:20]))


@pytest.mark.parametrize("page", ["selection.py", "tables.py", "groups.py", "quantiles.py"])
def test_every_column_choice_shows_hostile_names_literally(choices, page):
    """Each column select of the page set to each of its columns in turn."""
    columns = set(hostile.frame().columns)
    at = open_app(page, dataset=choices[0])
    selects = [s.key for s in at.selectbox if s.key and columns & set(s.options)]
    assert selects, "the page has no column select"
    for key in selects:
        for column in [o for o in at.selectbox(key=key).options if o in columns]:
            at.selectbox(key=key).set_value(column).run()
            assert not at.exception, (key, column, [e.value for e in at.exception])
            found = problems(at)
            assert not found, (key, column, "\n".join(found[:20]))


def test_a_plan_and_its_release_show_hostile_names_literally(choices, tmp_path, monkeypatch):
    """Queries of every page on hostile columns, the plan page, a real release and the
    Releases page."""
    monkeypatch.setenv("EPSILON_LAB_LEDGER", str(tmp_path / "ledger.sqlite"))
    at = open_app("statistics.py", dataset=choices[0])
    at.selectbox(key="stats_query").set_value("histogram").run()
    for page, key in (("statistics.py", "stats"), ("tables.py", "tables"),
                      ("groups.py", "groups"), ("selection.py", "sel"),
                      ("quantiles.py", "quantiles")):
        at.switch_page(f"app_pages/{page}").run()
        at.button(key=f"{key}_add_to_plan").click().run()
        assert not at.exception, (page, [e.value for e in at.exception])
        found = problems(at)
        assert not found, (page, "\n".join(found[:20]))
    at.switch_page("app_pages/plan.py").run()
    assert not at.exception, [e.value for e in at.exception]
    shown = markdown_sources(at)
    assert any(hostile.PATTERNS[hostile.CATEGORICAL[0]].search(s) for s in shown)
    found = problems(at)
    assert not found, "\n".join(found[:20])
    at.number_input(key="plan_set_budget_epsilon").set_value(100.0).run()
    at.checkbox(key="plan_set_budget_confirm").check().run()
    at.button(key="plan_set_budget").click().run()
    at.checkbox(key="plan_release_confirm").check().run()
    at.button(key="plan_release").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("Released and recorded" in s.value for s in at.success), \
        [e.value for e in at.error]
    found = problems(at)
    assert not found, "\n".join(found[:20])
    at.switch_page("app_pages/releases.py").run()
    assert not at.exception, [e.value for e in at.exception]
    found = problems(at)
    assert not found, "\n".join(found[:20])


def test_an_uploaded_file_shows_hostile_names_literally():
    """The same names through the sidebar's uploader: file name, header and labels."""
    at = open_app()
    at.selectbox(key="dataset_choice").select("Upload your own CSV").run()
    content = hostile.frame().to_csv(index=False).encode()
    name = hostile.CATEGORICAL[0] + " -- $x$ :smile:.csv"
    at.file_uploader(key="upload_file").set_value((name, content, "text/csv")).run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(hostile.PATTERNS[hostile.CATEGORICAL[0]].search(c.value)
               for c in at.sidebar.caption)
    for page in ("data.py", "statistics.py", "plan.py"):
        at.switch_page(f"app_pages/{page}").run()
        assert not at.exception, (page, [e.value for e in at.exception])
        found = problems(at)
        assert not found, (page, "\n".join(found[:20]))
