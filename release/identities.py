"""The content digests of data files, remembered per file version across processes and
restarts: releasing an unchanged file again does not read every cell to identify it.

One row per file path: the file's version (``plan.identity.file_version``: the digest's format,
the reading, size, modification and change times in ns, inode and device, each Parquet
part's too) and the digest computed for exactly that version. A file whose version differs
in any of these is read again (new content, as any changed file), and the row is replaced.
Only versions old enough to be safe from a same-tick rewrite are kept
(``plan.identity.RACY_SECONDS``). Nothing here is published: it is a cache of what
``plan.identity.content_digest`` computes, kept beside the ledger with the same access.

A store that cannot be opened or written is only a slower release: the digest is computed
from the data, as if nothing were remembered.

Path: ``EPSILON_LAB_IDENTITIES``, else ``identities.sqlite`` beside the ledger.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from plan.identity import CellsDigest, cells_digest, content_digest
from release.store import SqliteStore, StoreError, store_path

__all__ = ["IDENTITIES_ENV", "FileIdentities", "identities_path", "known_digest",
           "digest_from_cells"]

#: The environment variable naming the file of remembered identities.
IDENTITIES_ENV = "EPSILON_LAB_IDENTITIES"


def identities_path(path: str | os.PathLike | None = None, *,
                    ledger: str | os.PathLike | None = None) -> Path:
    """``path``, else ``EPSILON_LAB_IDENTITIES``, else ``identities.sqlite`` beside ``ledger``
    (the ledger's file; default: the default ledger's)."""
    if path is None and ledger is not None and not os.environ.get(IDENTITIES_ENV, "").strip():
        path = Path(ledger).expanduser().absolute().parent / "identities.sqlite"
    return store_path(path, IDENTITIES_ENV, "identities.sqlite", "File identities")


class FileIdentities(SqliteStore):
    """The remembered digests at ``path`` (default :func:`identities_path`); a
    ``plan.identity.DigestMemo``."""

    FORMAT = "epsilon-lab-file-identities"
    ENV = IDENTITIES_ENV
    WHAT = "The file identities file"
    SCHEMA = (
        "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        """CREATE TABLE IF NOT EXISTS file_digests (
            path TEXT PRIMARY KEY,
            version TEXT NOT NULL,
            digest TEXT NOT NULL CHECK (digest LIKE 'sha256:%'),
            recorded TEXT NOT NULL)""",
    )

    def __init__(self, path: str | os.PathLike | None = None, *,
                 ledger: str | os.PathLike | None = None, timeout: float = 5.0) -> None:
        super().__init__(identities_path(path, ledger=ledger), timeout=timeout)

    def recall(self, path: str, version: str) -> str | None:
        """The digest remembered for ``path`` at exactly ``version`` (None: not known, or the
        store cannot be read)."""
        try:
            found = self.read("looking a file's identity up", "SELECT digest FROM file_digests "
                              "WHERE path = ? AND version = ?", (path, version))
        except StoreError:
            return None
        return found[0][0] if found else None

    def remember(self, path: str, version: str, digest: str) -> None:
        """Keep ``digest`` for ``path`` at ``version`` (replacing an older version's); a store
        that cannot be written is left as it is."""
        try:
            with self.connection("remembering a file's identity", write=True) as c:
                c.execute("INSERT OR REPLACE INTO file_digests VALUES (?, ?, ?, ?)",
                          (path, version, digest,
                           datetime.now(UTC).isoformat(timespec="seconds")))
        except StoreError:
            return


def _memo(ledger: str | os.PathLike | None) -> FileIdentities | None:
    try:
        return FileIdentities(ledger=ledger)
    except StoreError:   # a store path that cannot be used: identify from the data
        return None


def digest_from_cells(data: object, *, ledger: str | os.PathLike | None = None
                      ) -> CellsDigest | None:
    """``plan.identity.cells_digest(data)``: a CSV file's digest to compute from the cells
    the release's engine reads (None when it is remembered beside ``ledger``, or ``data``
    is no CSV file); remembered there once computed, as :func:`known_digest` does."""
    return cells_digest(data, memo=_memo(ledger))


def known_digest(data: object, *, ledger: str | os.PathLike | None = None) -> str:
    """``plan.identity.content_digest(data)``, remembered across processes beside ``ledger``
    for a file (a frame has no version to remember it by). Raises what ``content_digest``
    raises."""
    return content_digest(data, memo=_memo(ledger))
