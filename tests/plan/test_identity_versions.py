"""A file's identity follows its version (issue 37, item 1): a rewrite that keeps the size and
puts the modification time back, or a Parquet part rewritten in place (the folder's own entry
unchanged), is new content; main's key (path, size, modification time, inode; a folder's own
entry only) kept the old digest in both."""

from __future__ import annotations

import hashlib
import os
from collections import OrderedDict

import pandas as pd
import pytest

from engine.sources import FileSource
from plan import identity
from plan.identity import content_digest


@pytest.fixture
def settled(monkeypatch):
    """A new process, whose files count as old enough to remember at once (raising=False:
    the same test runs on main, which has no racy window)."""
    monkeypatch.setattr(identity, "_digest_cache", OrderedDict())
    monkeypatch.setattr(identity, "RACY_SECONDS", 0.0, raising=False)
    return monkeypatch


def reads(monkeypatch) -> list[str]:
    """Each time the data's cells are read to compute a digest."""
    calls: list[str] = []
    real = identity._digest_of

    def counted(*args, **kwargs):
        calls.append("read")
        return real(*args, **kwargs)

    monkeypatch.setattr(identity, "_digest_of", counted)
    return calls


def write_people(path, amounts):
    path.write_text("person,amount\n" + "".join(f"{i},{a}\n" for i, a in enumerate(amounts)))


def rewrite_in_place(path, text: str) -> None:
    """New bytes into the same inode, the old modification time put back (as ``touch -d`` or
    ``cp -p`` would): only the change time and the content differ."""
    before = path.stat()
    with open(path, "r+b") as stream:   # same inode: no new file
        stream.write(text.encode())
        stream.truncate()
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino, before.st_size, before.st_mtime_ns)


def sha256_of_rows(path) -> str:
    """An independent witness that the content changed: the rows as pandas reads them."""
    return hashlib.sha256(pd.read_csv(path).to_csv(index=False).encode()).hexdigest()


def test_same_size_and_modification_time_but_new_content_is_read_again(tmp_path, settled):
    data = tmp_path / "people.csv"
    write_people(data, [10, 20, 30, 40])
    old_rows = sha256_of_rows(data)
    before = content_digest(FileSource(data, "csv"))
    rewrite_in_place(data, data.read_text().replace("20", "21"))
    assert sha256_of_rows(data) != old_rows

    counted = reads(settled)
    after = content_digest(FileSource(data, "csv"))
    assert counted == ["read"]
    assert after != before
    copy = tmp_path / "copy.csv"   # the new content under another name: its identity
    copy.write_bytes(data.read_bytes())
    assert after == content_digest(FileSource(copy, "csv"))


def test_a_parquet_part_rewritten_in_place_is_read_again(tmp_path, settled):
    folder = tmp_path / "people"
    folder.mkdir()
    pd.DataFrame({"person": [1, 2], "amount": [5.0, 6.0]}).to_parquet(folder / "a.parquet")
    pd.DataFrame({"person": [3, 4], "amount": [7.0, 8.0]}).to_parquet(folder / "b.parquet")
    before = content_digest(FileSource(folder, "parquet"))
    folder_mtime = folder.stat().st_mtime_ns
    replacement = tmp_path / "b.parquet"
    pd.DataFrame({"person": [3, 4], "amount": [7.0, 9.0]}).to_parquet(replacement)
    with open(folder / "b.parquet", "wb") as stream:   # same entry: the folder is unchanged
        stream.write(replacement.read_bytes())
    assert folder.stat().st_mtime_ns == folder_mtime

    after = content_digest(FileSource(folder, "parquet"))
    assert after != before
    settled.setattr(identity, "_digest_cache", OrderedDict())
    assert content_digest(FileSource(folder, "parquet")) == after


class _Memo:
    """A store of remembered digests (``plan.identity.DigestMemo``), in memory."""

    def __init__(self) -> None:
        self.kept: dict[tuple[str, str], str] = {}

    def recall(self, path: str, version: str) -> str | None:
        return self.kept.get((path, version))

    def remember(self, path: str, version: str, digest: str) -> None:
        self.kept[(path, version)] = digest


def test_a_digest_remembered_by_the_older_reading_is_computed_again(tmp_path, settled):
    """A one-column CSV with blank lines reads otherwise since the data folder's reader left
    its blank lines out (as the upload and engine.cells do): a digest remembered for the file
    under the version main wrote (no reading in it) is not used; the file is read again and
    its identity is the upload's, the digest of the same records without blank lines."""
    data = tmp_path / "ages.csv"
    data.write_bytes(b"age\n1\n\n2\n3\n\n")
    plain = tmp_path / "plain.csv"
    plain.write_bytes(b"age\n1\n2\n3\n")
    version, _ = identity.file_version(data, "csv")
    memo = _Memo()
    # main's version of this very file: the digest's format, the format, the stamps
    main_version = "|".join(part for part in version.split("|")
                            if not part.startswith("reading"))
    memo.remember(str(data), main_version, "sha256:" + "0" * 64)
    counted = reads(settled)
    assert content_digest(FileSource(data, "csv"), memo=memo) == content_digest(
        FileSource(plain, "csv"))
    assert counted == ["read", "read"]
