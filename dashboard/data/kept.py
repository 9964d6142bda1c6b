"""Uploads a steward chose to keep on the server: written into the data folder, recorded.

"Keep this file on the server" writes the uploaded bytes into the data folder
(``EPSILON_LAB_DATA``) under the upload's name made safe, atomically and never over another
file (a hidden temporary file in the same folder, then a hard link under the first free name:
``os.link`` fails rather than replace). The kept file is then checked to read as the same
dataset (its content identity equal to the upload's) and recorded in the dataset declarations
file (a table ``kept_files``: path, content identity, when). "Remove from the server" deletes
only a file so recorded, and only while it still holds that content: never a file the
administrator put there. No streamlit here (``dashboard.workspace`` draws the buttons).
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import unicodedata
from datetime import UTC, datetime
from pathlib import Path

from engine import DATA_ENV
from engine.sources import FileSource, data_folder
from plan.identity import content_digest
from release import roles
from release.access import AccessDenied, Action
from release.declarations import DeclarationStore
from release.store import StoreError

__all__ = ["KeepError", "safe_name", "keep_upload", "kept_dataset", "find_kept",
           "remove_kept", "MAX_STEM"]

#: The longest file name kept, before its suffix and a " (n)" (well under any file system's
#: 255 bytes, counted in characters of the restricted alphabet below: one byte each).
MAX_STEM = 100
_GZIP = b"\x1f\x8b"
_KNOWN_SUFFIXES = (".csv.gz", ".tsv.gz", ".txt.gz", ".csv", ".tsv", ".txt", ".gz")
#: Letters, digits, space and a few marks: no path separator, no glob character (the engine
#: refuses *?[]{} in paths), no quote, no control character.
_UNSAFE = re.compile(r"[^A-Za-z0-9 ._()+,=@-]+")
_TABLE = """CREATE TABLE IF NOT EXISTS kept_files (
    path TEXT PRIMARY KEY, dataset TEXT NOT NULL, name TEXT NOT NULL, kept TEXT NOT NULL,
    kept_by TEXT NOT NULL DEFAULT '')"""


class KeepError(RuntimeError):
    """The file was not kept (or not removed); the message says why and what to do."""


class KeepDenied(KeepError, AccessDenied):
    """The person acting may not keep or remove data on the server (only a steward may); the
    message says so. Nothing was written or removed."""


def _suffix_for(name: str, data: bytes) -> str:
    """The kept file's suffix: one the data folder offers, and that says how it is read
    (gzip by its first bytes, not by its name; a .tsv stays .tsv)."""
    if data[:2] == _GZIP:
        return ".csv.gz"
    return ".tsv" if name.lower().endswith(".tsv") else ".csv"


def safe_name(name: str, data: bytes = b"") -> str:
    """``name`` as a plain file name of the data folder: its last path part, letters folded to
    ASCII where they can be, other characters replaced by "_", no leading dot (not hidden),
    at most ``MAX_STEM`` characters before a suffix the data folder lists (.csv, .csv.gz,
    .tsv; from ``data``'s first bytes for gzip)."""
    base = re.split(r"[\\/]", str(name))[-1]
    suffix = _suffix_for(base, data)
    stem = base
    for known in _KNOWN_SUFFIXES:
        if stem.lower().endswith(known):
            stem = stem[: -len(known)]
            break
    stem = unicodedata.normalize("NFKD", stem).encode("ascii", "ignore").decode()
    stem = _UNSAFE.sub("_", stem)
    stem = re.sub(r"\s+", " ", stem)
    stem = stem.lstrip(" ._-").rstrip(" .")[:MAX_STEM].rstrip(" .")
    return (stem or "upload") + suffix


def _split(name: str) -> tuple[str, str]:
    for known in (".csv.gz", ".csv", ".tsv"):
        if name.endswith(known):
            return name[: -len(known)], known
    return name, ""


def _root(folder: str | os.PathLike | None) -> Path:
    chosen = data_folder() if folder is None else Path(folder)
    if chosen is None:
        raise KeepError(f"No data folder is set on this server: its administrator sets "
                        f"{DATA_ENV} to a folder for uploads to be kept there.")
    try:
        root = chosen.resolve(strict=True)
    except (OSError, RuntimeError):
        root = None
    if root is None or not root.is_dir():
        raise KeepError(f"The data folder ({DATA_ENV}) does not exist or is not a folder: "
                        "the file was not kept.")
    return root


def _write_new(root: Path, name: str, data: bytes) -> Path:
    """Write ``data`` as ``name`` in ``root`` (else "stem (2).csv", …), all at once: the file
    appears complete or not at all, and never replaces another."""
    stem, suffix = _split(name)
    handle, temporary = tempfile.mkstemp(dir=root, prefix=".epsilon-lab-keeping-",
                                         suffix=".part")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        for n in range(1, 1000):
            target = root / (f"{stem}{suffix}" if n == 1 else f"{stem} ({n}){suffix}")
            try:
                os.link(temporary, target)   # fails if the name is taken: never overwrites
            except FileExistsError:
                continue
            return target
        raise KeepError(f"The data folder holds too many files named like {name}: rename "
                        "the file and upload it again.")
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temporary)


def _store(store: DeclarationStore | None) -> DeclarationStore:
    return DeclarationStore() if store is None else store


def _digest(path: Path) -> str:
    return content_digest(FileSource(path, "csv"))


def keep_upload(data: bytes, name: str, dataset: str, *, folder=None, store=None) -> Path:
    """Keep an upload (its ``data``, its ``name`` as uploaded, its content identity
    ``dataset``) in the data folder; return the kept file's path.

    Raises
    ------
    KeepError
        No data folder, it cannot be written, the file would not read back as the same
        dataset, or the record cannot be written (then no file is left behind).
    """
    who = roles.who(roles.check(Action.KEEP_DATA, KeepDenied))
    root = _root(folder)
    try:
        path = _write_new(root, safe_name(name, data), data)
    except OSError as exc:
        raise KeepError(f"The file could not be written into the data folder "
                        f"({exc.strerror or type(exc).__name__}): ask the administrator to "
                        f"make {DATA_ENV} writable by the app.") from None
    try:
        same = _digest(path) == dataset
    except Exception:  # noqa: BLE001 — whatever the engine makes of it, it is not the same
        same = False
    if not same:
        path.unlink(missing_ok=True)
        raise KeepError("This file would not read from the data folder as it reads here "
                        "(its encoding or compression): save it as 'CSV UTF-8' and upload "
                        "it again to keep it. It stays in this session's memory.")
    try:
        with _store(store).connection("recording a kept file", write=True) as c:
            c.execute(_TABLE)
            if "kept_by" not in {r[1] for r in c.execute("PRAGMA table_info(kept_files)")}:
                # who kept it (issue 33), added in place; files kept before: nobody recorded
                c.execute("ALTER TABLE kept_files ADD COLUMN kept_by TEXT NOT NULL DEFAULT ''")
            c.execute("INSERT OR REPLACE INTO kept_files (path, dataset, name, kept, kept_by) "
                      "VALUES (?, ?, ?, ?, ?)",
                      (str(path), dataset, path.name,
                       datetime.now(UTC).isoformat(timespec="seconds"), who))
    except StoreError as exc:
        path.unlink(missing_ok=True)
        raise KeepError(f"The file was not kept: {exc}") from None
    return path


def kept_dataset(path: str | os.PathLike, *, store=None) -> str | None:
    """The content identity a file was kept with, if it was kept by this app (None: not, or
    the record cannot be read)."""
    try:
        with _store(store).connection("reading the kept files") as c:
            if c.execute("SELECT 1 FROM sqlite_master WHERE name = 'kept_files'").fetchone() \
                    is None:
                return None
            row = c.execute("SELECT dataset FROM kept_files WHERE path = ?",
                            (str(Path(path).absolute()),)).fetchone()
    except StoreError:
        return None
    return None if row is None else row[0]


def find_kept(dataset: str, *, folder=None, store=None) -> Path | None:
    """A file of the data folder kept with the content identity ``dataset`` that still holds
    it (None: none; the same content is then not kept twice)."""
    try:
        root = _root(folder)
        with _store(store).connection("reading the kept files") as c:
            if c.execute("SELECT 1 FROM sqlite_master WHERE name = 'kept_files'").fetchone() \
                    is None:
                return None
            paths = [Path(r[0]) for r in c.execute(
                "SELECT path FROM kept_files WHERE dataset = ? ORDER BY kept", (dataset,))]
    except (KeepError, StoreError):
        return None
    for path in paths:
        try:
            if path.parent == root and path.is_file() and _digest(path) == dataset:
                return path
        except Exception:  # noqa: BLE001 — unreadable now: not a copy to offer
            continue
    return None


def remove_kept(path: str | os.PathLike, *, store=None) -> bytes:
    """Delete a file this app kept (and its record); return its bytes (the session holds them
    in memory again).

    Raises
    ------
    KeepError
        The file was not kept by this app, or no longer holds what was kept (replaced by
        someone): nothing is deleted.
    """
    roles.check(Action.KEEP_DATA, KeepDenied)
    path = Path(path).absolute()
    dataset = kept_dataset(path, store=store)
    if dataset is None:
        raise KeepError(f"{path.name} was not kept from an upload here: only the server's "
                        "administrator removes the data folder's other files.")
    try:
        data = path.read_bytes()
        same = _digest(path) == dataset
    except OSError as exc:
        raise KeepError(f"{path.name} cannot be read any more ({exc.strerror or exc}): it "
                        "was not removed.") from None
    except Exception:  # noqa: BLE001 — unreadable now: it is not what was kept
        same = False
    if not same:
        raise KeepError(f"{path.name} changed since it was kept (someone replaced it): it was "
                        "not removed; ask the server's administrator.")
    try:
        with _store(store).connection("forgetting a kept file", write=True) as c:
            path.unlink()
            c.execute("DELETE FROM kept_files WHERE path = ?", (str(path),))
    except (OSError, StoreError) as exc:
        raise KeepError(f"{path.name} was not removed "
                        f"({getattr(exc, 'strerror', None) or exc}).") from None
    return data
