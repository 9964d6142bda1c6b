"""Keeping an upload in the data folder (``dashboard.data.kept``, issue 32 item 3): safe names,
written all at once and never over another file, read back as the same dataset, recorded;
removal deletes only a file kept here that still holds what was kept."""

from __future__ import annotations

import gzip
import os

import pytest

from dashboard.data import kept
from dashboard.datasets import load_upload
from engine.sources import list_data_folder
from plan.identity import content_digest
from release.declarations import DeclarationStore

DATA = b"id,age\n1,30\n2,41\n3,27\n"


def identity(data: bytes, name: str = "f.csv") -> str:
    return content_digest(load_upload(data, name).cells)


@pytest.fixture
def store(tmp_path):
    return DeclarationStore(tmp_path / "declarations.sqlite")


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "data"
    root.mkdir()
    return root


@pytest.mark.parametrize(("uploaded", "safe"), [
    ("Males.csv", "Males.csv"),
    ("../x.csv", "x.csv"),
    ("..\\..\\windows\\x.csv", "x.csv"),
    ("/etc/passwd", "passwd.csv"),
    (".bashrc", "bashrc.csv"),
    ("..", "upload.csv"),
    ("", "upload.csv"),
    ("a b  c.TSV", "a b c.tsv"),
    ("data.txt", "data.csv"),
    ("sales*[2024]?.csv", "sales_2024_.csv"),
    ("Données été.csv", "Donnees ete.csv"),
    ("x\x00y\n.csv", "x_y_.csv"),
    ("-rf .csv", "rf.csv"),
    ("name.schema.json", "name.schema.json.csv"),
])
def test_safe_names(uploaded, safe):
    assert kept.safe_name(uploaded) == safe


def test_a_long_name_is_cut_and_gzip_is_named_by_its_bytes():
    assert kept.safe_name("a" * 300 + ".csv") == "a" * kept.MAX_STEM + ".csv"
    assert len(kept.safe_name("é" * 300 + ".csv.gz", b"\x1f\x8b")) <= kept.MAX_STEM + 7
    assert kept.safe_name("plain.csv", gzip.compress(DATA)) == "plain.csv.gz"
    assert kept.safe_name("x.gz", gzip.compress(DATA)) == "x.csv.gz"


@pytest.mark.parametrize("hostile", ["../x.csv", ".bashrc", "a" * 300 + ".csv", "/tmp/x.csv"])
def test_hostile_names_land_inside_the_folder_as_listed_files(hostile, folder, store):
    path = kept.keep_upload(DATA, hostile, identity(DATA), folder=folder, store=store)
    assert path.parent == folder.resolve()
    assert [f.name for f in list_data_folder(folder)] == [path.name]
    assert not path.name.startswith(".") and len(path.name) <= kept.MAX_STEM + 4
    assert path.read_bytes() == DATA
    assert sorted(os.listdir(folder)) == [path.name]    # no temporary file left
    assert not (folder.parent / "x.csv").exists()


def test_never_overwrites_and_records(folder, store):
    (folder / "Males.csv").write_bytes(b"theirs\n1\n")
    (folder / "Males (2).csv").write_bytes(b"theirs too\n1\n")
    first = kept.keep_upload(DATA, "Males.csv", identity(DATA), folder=folder, store=store)
    second = kept.keep_upload(DATA, "Males.csv", identity(DATA), folder=folder, store=store)
    assert (first.name, second.name) == ("Males (3).csv", "Males (4).csv")
    assert (folder / "Males.csv").read_bytes() == b"theirs\n1\n"
    assert (folder / "Males (2).csv").read_bytes() == b"theirs too\n1\n"
    assert kept.kept_dataset(first, store=store) == identity(DATA)
    assert kept.kept_dataset(folder / "Males.csv", store=store) is None


def test_tsv_and_gzip_are_offered_and_read_as_the_upload(folder, store):
    tabbed = DATA.replace(b",", b"\t")
    for name, data in (("t.tsv", tabbed), ("z.csv.gz", gzip.compress(DATA))):
        path = kept.keep_upload(data, name, identity(data, name), folder=folder, store=store)
        assert path.name == name
    assert sorted(f.name for f in list_data_folder(folder) if f.problem is None) == [
        "t.tsv", "z.csv.gz"]


def test_the_file_appears_whole_or_not_at_all(folder, store, monkeypatch):
    """A failure between writing and naming leaves no file, partial or whole."""
    def broken(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(kept.os, "link", broken)
    with pytest.raises(kept.KeepError, match="could not be written"):
        kept.keep_upload(DATA, "a.csv", identity(DATA), folder=folder, store=store)
    assert os.listdir(folder) == []


def test_a_file_that_would_read_otherwise_is_not_kept(folder, store):
    utf16 = "\ufeffid,age\n1,30\n2,41\n".encode("utf-16")
    with pytest.raises(kept.KeepError, match="CSV UTF-8"):
        kept.keep_upload(utf16, "u.csv", identity(utf16, "u.csv"), folder=folder, store=store)
    assert os.listdir(folder) == []


def test_without_a_data_folder(monkeypatch, store):
    monkeypatch.delenv("EPSILON_LAB_DATA", raising=False)
    with pytest.raises(kept.KeepError, match="EPSILON_LAB_DATA"):
        kept.keep_upload(DATA, "a.csv", identity(DATA), store=store)


def test_remove_deletes_only_a_file_kept_here(folder, store):
    (folder / "admin.csv").write_bytes(DATA)
    with pytest.raises(kept.KeepError, match="administrator"):
        kept.remove_kept(folder / "admin.csv", store=store)
    assert (folder / "admin.csv").read_bytes() == DATA

    path = kept.keep_upload(DATA, "mine.csv", identity(DATA), folder=folder, store=store)
    assert kept.remove_kept(path, store=store) == DATA
    assert not path.exists() and kept.kept_dataset(path, store=store) is None
    with pytest.raises(kept.KeepError):
        kept.remove_kept(path, store=store)    # not twice


def test_remove_refuses_a_kept_file_replaced_since(folder, store):
    path = kept.keep_upload(DATA, "mine.csv", identity(DATA), folder=folder, store=store)
    path.write_bytes(b"someone,else\n1,2\n")
    with pytest.raises(kept.KeepError, match="changed since"):
        kept.remove_kept(path, store=store)
    assert path.exists()


def test_find_kept_finds_the_copy_that_still_holds_the_content(folder, store):
    assert kept.find_kept(identity(DATA), folder=folder, store=store) is None
    path = kept.keep_upload(DATA, "mine.csv", identity(DATA), folder=folder, store=store)
    assert kept.find_kept(identity(DATA), folder=folder, store=store) == path
    assert kept.find_kept(identity(b"x\n1\n"), folder=folder, store=store) is None
    path.write_bytes(b"someone,else\n1,2\n")        # replaced: not a copy any more
    assert kept.find_kept(identity(DATA), folder=folder, store=store) is None
