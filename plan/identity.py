"""A dataset's identity: its name and a SHA-256 of its content, streamed and cached.

A file is hashed byte for byte (an upload's bytes hash the same as the file it came from, so
the app and the command line name the same data alike); a Parquet folder by its files' paths
and hashes; an in-memory frame with no file behind it by its columns, types and values.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["DatasetIdentity", "file_hash", "bytes_hash", "frame_hash", "content_hash",
           "CHUNK_BYTES", "FRAME_CHUNK_ROWS"]

#: Bytes read at a time: memory stays bounded whatever the file's size.
CHUNK_BYTES = 1 << 20
#: Rows of a frame hashed at a time (8 bytes per row and column in flight).
FRAME_CHUNK_ROWS = 1 << 16
_CACHE_SIZE = 256

_cache: OrderedDict[tuple[str, int, int, int], str] = OrderedDict()
_lock = threading.Lock()


@dataclass(frozen=True)
class DatasetIdentity:
    """How the ledger knows a dataset: its name and the hash of its content."""

    name: str
    content_hash: str

    def describe(self) -> str:
        return f"{self.name} ({self.content_hash[:19]}…)"


def _digest(h: hashlib._Hash) -> str:
    return "sha256:" + h.hexdigest()


def bytes_hash(data: bytes) -> str:
    """The hash of bytes held in memory (an upload): equal to :func:`file_hash` of a file
    holding the same bytes."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"data must be bytes, got {type(data).__name__}")
    h = hashlib.sha256()
    view = memoryview(data)
    for start in range(0, len(view), CHUNK_BYTES):
        h.update(view[start:start + CHUNK_BYTES])
    return _digest(h)


def _hash_regular_file(path: Path, info: os.stat_result) -> str:
    key = (str(path), info.st_mtime_ns, info.st_size, info.st_ino)
    with _lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    h = hashlib.sha256()
    with open(path, "rb") as stream:
        while chunk := stream.read(CHUNK_BYTES):
            h.update(chunk)
    after = path.stat()
    if (after.st_mtime_ns, after.st_size) != (info.st_mtime_ns, info.st_size):
        raise OSError(f"{path} changed while it was being hashed; try again")
    digest = _digest(h)
    with _lock:
        _cache[key] = digest
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return digest


def file_hash(path: str | os.PathLike) -> str:
    """The hash of a file, or of a folder of Parquet files.

    A file: SHA-256 of its bytes, read in chunks of :data:`CHUNK_BYTES`. A folder: SHA-256 over
    its ``*.parquet`` files in sorted order, each as its relative path and its own hash (a
    renamed or added part changes it). Cached per file by path, modification time, size and
    inode: a file rewritten in place gets a new time and is hashed again.

    Raises
    ------
    OSError
        The path cannot be read, or a folder holds no Parquet file.
    """
    root = Path(path).absolute()
    info = root.stat()
    if stat.S_ISREG(info.st_mode):
        return _hash_regular_file(root, info)
    if not stat.S_ISDIR(info.st_mode):
        raise OSError(f"{root} is neither a file nor a folder")
    parts = sorted(p for p in root.rglob("*.parquet") if p.is_file())
    if not parts:
        raise OSError(f"the folder {root} holds no .parquet files")
    h = hashlib.sha256(b"parquet-folder\x00")
    for part in parts:
        relative = part.relative_to(root).as_posix().encode("utf-8")
        h.update(len(relative).to_bytes(4, "big") + relative)
        h.update(_hash_regular_file(part, part.stat()).encode("ascii"))
    return _digest(h)


def frame_hash(frame: pd.DataFrame) -> str:
    """The hash of a frame's content: column names, dtypes and values in row order.

    For data with no file behind it (a generated dataset). Values are hashed with pandas'
    stable per-row hash (``hash_pandas_object``, which distinguishes missing values), a block
    of :data:`FRAME_CHUNK_ROWS` rows at a time. The same rows read from a CSV and from a
    Parquet file may differ in dtype, and then in hash: hash the file when there is one.
    """
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"frame must be a pandas DataFrame, got {type(frame).__name__}")
    h = hashlib.sha256(b"frame\x00")
    header = "\x1f".join(f"{c}\x1e{frame[c].dtype}" for c in frame.columns)
    h.update(header.encode("utf-8") + b"\x00")
    h.update(int(len(frame)).to_bytes(8, "big"))
    for start in range(0, len(frame), FRAME_CHUNK_ROWS):
        block = frame.iloc[start:start + FRAME_CHUNK_ROWS]
        for column in block.columns:
            values = pd.util.hash_pandas_object(block[column], index=False).to_numpy()
            h.update(np.ascontiguousarray(values, dtype="<u8").tobytes())
    return _digest(h)


def content_hash(data: str | os.PathLike | bytes | pd.DataFrame) -> str:
    """:func:`file_hash` for a path, :func:`bytes_hash` for bytes, :func:`frame_hash` for a
    frame."""
    if isinstance(data, pd.DataFrame):
        return frame_hash(data)
    if isinstance(data, bytes | bytearray | memoryview):
        return bytes_hash(data)
    if isinstance(data, str | os.PathLike):
        return file_hash(data)
    raise TypeError(f"data must be a path, bytes or a DataFrame, got {type(data).__name__}")
