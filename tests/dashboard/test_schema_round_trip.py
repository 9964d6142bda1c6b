"""A declared schema read back from its own JSON is the schema saved (issue 32: the kept
declarations are stored as schema JSON and restored from it after a reload; a plan records the
JSON it was built on). The source of a typed or read-off-the-data declaration used to gain its
origin's words once more at every reading ("Typed by the user: Typed by the user"), so the
restored schema differed from the plan's and the Release plan page said so."""

from __future__ import annotations

import json

import pytest

from dashboard.data import schema as sc
from dashboard.data.model import ColumnDomain

COLUMNS = ["wage", "union"]


def declared(origin: str, note: str) -> sc.Schema:
    return sc.Schema({
        "wage": sc.with_origin(ColumnDomain("numeric", 0.0, 5.0), origin, note),
        "union": sc.with_origin(ColumnDomain("categorical", categories=("no", "yes")),
                                origin, note)})


@pytest.mark.parametrize("note", ["", "from the codebook"])
@pytest.mark.parametrize("origin", sc.ORIGINS)
def test_a_schema_read_back_from_its_json_is_the_schema_saved(origin, note):
    saved = declared(origin, note)
    text = sc.to_json(saved)
    again = sc.from_json(text, COLUMNS)
    assert again.domains == saved.domains
    assert sc.to_json(sc.from_json(sc.to_json(again), COLUMNS)) == text


@pytest.mark.parametrize(("origin", "source"), [
    ("typed", "Typed by the user"),
    ("typed", "Typed by the user: from the codebook"),
    ("data", "READ OFF THE DATA: bounds or categories taken from the data itself, not covered "
             "by the privacy guarantee"),
])
def test_a_source_written_twice_by_older_versions_is_read_once(origin, source):
    """Files kept before the fix hold the origin's words two or three times: read, once."""
    repeated = source.split(":")[0] + ": " + source.split(":")[0] + ": " + source
    text = json.dumps({"columns": {"wage": {"role": "numeric", "lower": 0, "upper": 5,
                                            "origin": origin, "source": repeated}}})
    assert sc.from_json(text, COLUMNS).domains["wage"].source == source


def test_a_note_that_only_begins_like_the_origins_words_is_kept_whole():
    domain = sc.with_origin(ColumnDomain("numeric", 0.0, 5.0), "typed",
                            "Typed by the users' codebook")
    assert domain.source == "Typed by the user: Typed by the users' codebook"
    assert sc.from_json(sc.to_json(sc.Schema({"wage": domain})), COLUMNS).domains[
        "wage"].source == domain.source
