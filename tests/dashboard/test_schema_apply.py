"""The schema table's Apply (issue 21, item 3): cells typed in a row left "not declared" give
it the role they imply instead of being dropped; the editor's edits are applied to the table
it was drawn from; the confirmation names each column that changed and nothing else."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dashboard.data import schema as sc
from dashboard.data import schema_table as tab
from dashboard.data.model import ColumnDomain
from dashboard.person import PrivacyUnit
from dashboard.schema_editor import _edited

COLUMNS = ["pid", "age", "team", "city", "score"]
KINDS = {"pid": "integer", "age": "integer", "team": "text", "city": "text",
         "score": "float"}
DECLARED = sc.Schema({"city": sc.with_origin(ColumnDomain("categorical",
                                                          categories=("x", "y")), "typed")})


def drawn() -> pd.DataFrame:
    return tab.to_table(DECLARED, COLUMNS, KINDS)


def edit(table: pd.DataFrame, column: str, **cells) -> pd.DataFrame:
    out = table.copy()
    for name, value in cells.items():
        out.loc[out["column"] == column, name] = value
    return out


def test_typed_bounds_and_categories_give_an_undeclared_row_its_role():
    before = drawn()
    table = edit(edit(before, "age", upper=90.0, lower=0.0), "team", categories="a, b, c")
    table, problems = tab.with_implied_roles(table, before)
    assert problems == []
    assert dict(zip(table["column"], table["role"], strict=True)) == {
        "pid": "not declared", "age": "numeric", "team": "categorical", "city": "categorical",
        "score": "not declared"}
    declared, problems = tab.from_table(table)
    assert problems == []
    assert (declared.domains["age"].lower, declared.domains["age"].upper) == (0.0, 90.0)
    assert declared.domains["team"].categories == ("a", "b", "c")


def test_a_lone_bound_is_reported_not_dropped():
    before = drawn()
    table, _ = tab.with_implied_roles(edit(before, "age", upper=90.0), before)
    _, problems = tab.from_table(table)
    assert problems == ["age: lower bound: type a number"]


def test_bounds_and_categories_in_one_row_ask_for_the_role():
    before = drawn()
    table, problems = tab.with_implied_roles(
        edit(before, "score", lower=0.0, upper=1.0, categories="a"), before)
    assert problems == ["score: both categories and bounds are typed: choose its role "
                        "(categorical or numeric)"]
    assert table.loc[table["column"] == "score", "role"].item() == "not declared"


def test_a_row_set_back_to_not_declared_by_hand_stays_undeclared():
    before = drawn()
    table, problems = tab.with_implied_roles(edit(before, "city", role="not declared"), before)
    declared, _ = tab.from_table(table)
    assert problems == [] and "city" not in declared.domains


def test_the_editor_edits_apply_to_the_drawn_table():
    base = drawn()
    widget = {"edited_rows": {1: {"upper": 90, "lower": 0}, "2": {"categories": "a, b"},
                              4: {"upper": None}},
              "added_rows": [], "deleted_rows": []}
    out = _edited(base, widget)
    assert out.loc[1, ["lower", "upper"]].tolist() == [0, 90]
    assert out.loc[2, "categories"] == "a, b"
    assert np.isnan(out.loc[4, "upper"])
    assert base.loc[1, "upper"] != 90   # the drawn table itself is kept as it was
    assert _edited(base, None).equals(base)


def test_the_confirmation_names_what_changed():
    after = sc.Schema({
        "age": ColumnDomain("numeric", 0, 90, bins=(0, 30, 90)),
        "team": ColumnDomain("categorical", categories=tuple("abcdefgh")),
        "city": DECLARED.domains["city"]}, frozenset({"score"}), PrivacyUnit("pid", 2))
    assert tab.changes(DECLARED, after, COLUMNS) == [
        "pid: the person id", "age: numeric from 0 to 90, bin edges 0, 30, 90",
        "team: categories a, b, c, d, e, f, …", "score: ignored"]
    assert tab.changes(after, sc.Schema(), COLUMNS) == [
        f"{c}: not declared" for c in COLUMNS]
    assert tab.changes(DECLARED, DECLARED, COLUMNS) == []


def test_applying_the_table_again_keeps_every_source_as_it_was():
    """Each Apply wrote "READ OFF THE DATA: " once more in front of a data-read source."""
    read = sc.with_origin(ColumnDomain("numeric", 0, 9), "data", "filled in from the data")
    typed = sc.with_origin(ColumnDomain("categorical", categories=("a",)), "typed", "my notes")
    public = sc.with_origin(ColumnDomain("numeric", 1, 2), "public", "the codebook")
    declared = sc.Schema({"age": read, "team": typed, "score": public})
    again, problems = tab.from_table(tab.to_table(declared, COLUMNS, KINDS))
    assert problems == []
    assert again.domains == declared.domains
    assert again.domains["age"].source == "READ OFF THE DATA: filled in from the data"


# Issue 31, item 6: a category is one text, whatever it holds. Males' occupations include
# "Craftsmen, Foremen_and_kindred", which the table's list split at the comma.
HOSTILE = ("Craftsmen, Foremen_and_kindred", "Managers; Officials", 'say "hi"', '"',
           "two\nlines", "carriage\rreturn", " leading", "trailing ", "\ttab", "Zürich ✓ 東京",
           "x" * 5_000, "012", "12", "-0", "1.0", ",", "", "Laborers")


def categorical(categories: tuple[str, ...], origin: str = "data") -> sc.Schema:
    return sc.Schema({"team": sc.with_origin(ColumnDomain("categorical",
                                                          categories=categories), origin)})


def test_hostile_categories_survive_the_table_byte_for_byte():
    table = tab.to_table(categorical(HOSTILE), COLUMNS, KINDS)
    declared, problems = tab.from_table(table)
    assert problems == []
    assert declared.domains["team"].categories == HOSTILE
    # applied again from the table it draws (Apply twice): still the same
    again, _ = tab.from_table(tab.to_table(declared, COLUMNS, KINDS))
    assert again.domains["team"].categories == HOSTILE


def test_categories_filled_from_the_data_are_each_one_category():
    before = tab.to_table(sc.Schema(), COLUMNS, KINDS)
    profile = pd.DataFrame({"column": COLUMNS, "min": np.nan, "max": np.nan})
    filled = tab.filled_from_data(before, profile, {"team": HOSTILE})
    table, problems = tab.with_implied_roles(filled, before)
    declared, more = tab.from_table(table)
    assert problems == more == []
    assert declared.domains["team"].categories == HOSTILE
    assert declared.domains["team"].from_data


def test_hostile_categories_survive_the_schema_json_byte_for_byte():
    back = sc.from_json(sc.to_json(categorical(HOSTILE)), COLUMNS)
    assert back.domains["team"].categories == HOSTILE
    written = json.loads(sc.to_json(categorical(("012", "12", "-3", "1.0"))))
    # an integer code is a JSON number; a text that only reads as one keeps its spelling
    assert written["columns"]["team"]["categories"] == ["012", 12, -3, "1.0"]


def test_typed_lists_read_as_before_and_quotes_hold_a_comma():
    def read(text: str) -> tuple[str, ...]:
        return sc.parse_categories(text, "team")

    assert read("a, b\nc") == ("a", "b", "c")
    assert read(" a ,, b ,\n\n") == ("a", "b")            # blanks ignored, spaces dropped
    assert read("0, 1") == ("0", "1")
    assert read('"Craftsmen, Foremen_and_kindred", Laborers') == (
        "Craftsmen, Foremen_and_kindred", "Laborers")
    assert read('" kept ", "say ""hi""" ,"two\nlines"') == (" kept ", 'say "hi"', "two\nlines")
    assert read('5" screen, 7') == ('5" screen', "7")      # a quote inside is a quote
    assert sc.format_categories(["a", "b, c", ' q"']) == 'a, "b, c", " q"""'


@pytest.mark.parametrize("text, message", [
    ('"Craftsmen, Foremen', "never closed"),
    ('Laborers, "Craftsmen, Foremen', "never closed"),
    ('"Craftsmen" Foremen, Laborers', "followed by more text"),
    ('a, "a"', "repeat a: list each once"),
    (" , ,", "at least one category"),
])
def test_a_list_that_cannot_be_read_says_how_to_fix_it(text, message):
    with pytest.raises(sc.SchemaError, match=message):
        sc.parse_categories(text, "team")


def test_rows_left_out_are_counted_by_the_engine_and_said_from_one_percent():
    from dashboard.data.left_out import LeftOut, rows_left_out
    from dashboard.data.relation import Relation

    frame = pd.DataFrame({"job": ["a, b"] * 5 + ["a", " b"] * 3 + [None] * 2 + ["c"],
                          "code": [1, 2, 3] * 4 + [4, 4]})
    relation = Relation.of_frame(frame)
    # by hand: "a" and " b" (6 rows) and "c" (1) are outside ["a, b"]; 2 rows are missing
    assert rows_left_out(relation, "job", ["a, b"]) == LeftOut("job", 7, 14)
    assert rows_left_out(relation, "job", ["a, b", "a", " b", "c"]) == LeftOut("job", 0, 14)
    assert rows_left_out(relation, "code", ["1", "2"]) == LeftOut("code", 6, 14)   # codes
    # a text that is no code of a number column leaves every row out, as a release counts
    # it (the declared text matched by key, whatever the column's type; the page used to
    # refuse it only when the column was typed as numbers)
    assert rows_left_out(relation, "code", ["x"]) == LeftOut("code", 14, 14)
    assert not LeftOut("job", 9, 1_000).many and LeftOut("job", 10, 1_000).many
    assert "leave out 10 of 1,000 rows (1 %)" in LeftOut("job", 10, 1_000).sentence()
    assert "(99 %)" in LeftOut("job", 999, 1_000).sentence()
    assert "(100 %)" in LeftOut("job", 1_000, 1_000).sentence()


def test_declared_categories_that_are_one_key_are_said():
    """012, 12 and 12.0 are one key as every path reads a cell (engine.cells): the page says
    so, naming them, rather than counting every such row for the first and 0 for the rest."""
    from dashboard.data.left_out import same_key_note

    note = same_key_note("code", ["012", "a", "12", "1.50", "1.5", 12.0, "b"])
    assert note is not None
    note = note.replace("\\", "")               # the page's Markdown escapes
    assert "012 and 12 and 12.0" in note        # 1.50 and 1.5 are two keys: not named
    assert "1.50" not in note
    # " a" is "a" without its surrounding space; "A" is another key
    assert same_key_note("code", ["012", "1.50", "1.5", "a", " a"]) is not None
    assert same_key_note("code", ["012", "1.50", "1.5", "a", "A"]) is None
    assert same_key_note("code", []) is None


def test_a_bound_read_off_the_data_and_edited_by_hand_is_typed():
    """Issue 35 item 4: a bound edited by hand kept origin "data" and "read off the data"."""
    read = sc.Schema({
        "age": sc.with_origin(ColumnDomain("numeric", 17, 90), "data", "the file's maximum"),
        "team": sc.with_origin(ColumnDomain("categorical", categories=("a", "b")), "data"),
        "score": sc.with_origin(ColumnDomain("numeric", 0, 1), "data")})
    before = tab.to_table(read, COLUMNS, KINDS)
    table = edit(before, "age", upper=100.0)
    table = edit(table, "team", categories="a, b, c")
    table = edit(table, "score", upper=2.0, source="the exam's rules")   # said by the user
    table, problems = tab.with_implied_roles(tab.with_hand_edits(table, before), before)
    declared, more = tab.from_table(table)
    assert problems == [] and more == []
    assert sc.origin_of(declared.domains["age"]) == "typed"
    assert sc.FROM_DATA not in declared.domains["age"].source
    assert sc.origin_of(declared.domains["team"]) == "typed"
    assert sc.origin_of(declared.domains["score"]) == "data"   # its own source typed: kept
    # untouched rows keep their origin, whatever the table's dtypes make of them
    untouched, _ = tab.from_table(tab.with_hand_edits(before.copy(), before))
    assert {c: sc.origin_of(d) for c, d in untouched.domains.items()} == {
        "age": "data", "team": "data", "score": "data"}
