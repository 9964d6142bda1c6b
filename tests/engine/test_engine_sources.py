"""The server's data folder: every dataset by name, nothing outside it, clear problems."""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest

from engine import DataFolderError, EngineError, FileSource, list_data_folder, open_data_file
from engine import sources as sources_module


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "data"
    root.mkdir()
    frame = pd.DataFrame({"x": [1, 2, 3]})
    frame.to_csv(root / "a.csv", index=False)
    frame.to_csv(root / "b.csv.gz", index=False, compression="gzip")
    frame.to_parquet(root / "c.parquet")
    (root / "d").mkdir()
    frame.to_parquet(root / "d" / "part-0.parquet")
    (root / "notes.txt").write_text("not data")
    (root / ".hidden.csv").write_text("x\n1\n")
    (root / "a.schema.json").write_text(json.dumps({"columns": {"x": {"lower": 0}}}))
    return root


def names(entries) -> list[str]:
    return [e.name for e in entries]


def test_lists_every_dataset_by_name(folder) -> None:
    entries = list_data_folder(folder)
    assert names(entries) == ["a.csv", "b.csv.gz", "c.parquet", "d"]
    by_name = {e.name: e for e in entries}
    assert [by_name[n].format for n in names(entries)] == ["csv", "csv", "parquet", "parquet"]
    assert by_name["d"].folder and not by_name["a.csv"].folder
    assert all(e.problem is None for e in entries)
    assert by_name["a.csv"].schema == {"columns": {"x": {"lower": 0}}}
    assert by_name["c.parquet"].schema is None


def test_environment_variable_names_the_folder(folder, monkeypatch) -> None:
    monkeypatch.delenv("EPSILON_LAB_DATA", raising=False)
    assert list_data_folder() == []
    monkeypatch.setenv("EPSILON_LAB_DATA", str(folder))
    assert names(list_data_folder()) == ["a.csv", "b.csv.gz", "c.parquet", "d"]
    source = open_data_file("d")
    assert isinstance(source, FileSource) and source.format == "parquet"
    monkeypatch.setenv("EPSILON_LAB_DATA", str(folder / "missing"))
    with pytest.raises(DataFolderError, match="does not exist"):
        list_data_folder()


@pytest.mark.parametrize("name", ["..", "../a.csv", "/etc/passwd", "d/part-0.parquet", "",
                                  ".", "a.csv\x00", "notes.txt", "nope.csv", ".hidden.csv"])
def test_only_listed_names_open(folder, name) -> None:
    with pytest.raises(DataFolderError):
        open_data_file(name, folder)


def test_links_out_of_the_folder_are_refused(folder, tmp_path) -> None:
    outside = tmp_path / "secret.csv"
    outside.write_text("password\nhunter2\n")
    (folder / "leak.csv").symlink_to(outside)
    (folder / "leakdir").symlink_to(tmp_path)  # a folder link out
    (folder / "inner.csv").symlink_to(folder / "a.csv")  # a link inside is fine
    (folder / "dangling.csv").symlink_to(folder / "no-such-file.csv")
    out_parts = tmp_path / "elsewhere.parquet"
    pd.DataFrame({"x": [1]}).to_parquet(out_parts)
    (folder / "d" / "part-1.parquet").symlink_to(out_parts)  # a part of a folder links out
    by_name = {e.name: e for e in list_data_folder(folder)}
    assert "outside the data folder" in by_name["leak.csv"].problem
    assert "outside the data folder" in by_name["d"].problem
    assert by_name["inner.csv"].problem is None
    assert "points to nothing" in by_name["dangling.csv"].problem
    for name in ("leak.csv", "d", "dangling.csv"):
        with pytest.raises(DataFolderError, match="data folder"):
            open_data_file(name, folder)
    assert open_data_file("inner.csv", folder).format == "csv"


def test_unreadable_files_say_so(folder, monkeypatch) -> None:
    os.mkfifo(folder / "pipe.csv")  # opening it would block: never opened
    (folder / "empty").mkdir()
    (folder / "glob[1].csv").write_text("x\n1\n")
    locked = folder / "locked.csv"
    locked.write_text("x\n1\n")
    locked.chmod(0)
    if os.geteuid() == 0:  # root reads anything: make the read fail as it would for others
        real = sources_module._read_head

        def refuse(path):
            if path.name == "locked.csv":
                raise PermissionError(13, "Permission denied")
            return real(path)

        monkeypatch.setattr(sources_module, "_read_head", refuse)
    by_name = {e.name: e for e in list_data_folder(folder)}
    assert "not a regular file" in by_name["pipe.csv"].problem
    assert "holds no .parquet files" in by_name["empty"].problem
    assert "Rename the file" in by_name["glob[1].csv"].problem
    assert "cannot be read (Permission denied)" in by_name["locked.csv"].problem
    with pytest.raises(DataFolderError, match="Permission denied"):
        open_data_file("locked.csv", folder)
    assert isinstance(DataFolderError("x"), EngineError)


def test_bad_schema_files_do_not_hide_the_data(folder) -> None:
    (folder / "c.schema.json").write_text("{not json")
    (folder / "b.schema.json").write_text("[1, 2]")
    by_name = {e.name: e for e in list_data_folder(folder)}
    assert by_name["c.parquet"].problem is None and by_name["c.parquet"].schema is None
    assert "not valid JSON" in by_name["c.parquet"].schema_problem
    assert "must hold a JSON object" in by_name["b.csv.gz"].schema_problem


def test_a_file_removed_after_listing(folder) -> None:
    source = open_data_file("a.csv", folder)
    (folder / "a.csv").unlink()
    with pytest.raises(EngineError, match="moved or removed"):
        _ = source.version
