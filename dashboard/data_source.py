"""The loaded data as a release reads it: its engine source (:func:`source_of`), the content
digest the ledger records for it (:func:`content_hash_of`) and its identity in the ledger
(:func:`identity_of`).

Below the Release plan page's panels (budget, release, the plan's declarations) that all ask
it, so that none of them imports another for it.
"""

from __future__ import annotations

import streamlit as st

from dashboard.data.builtins import DATA_DIR
from dashboard.datasets import LoadedDataset
from engine.sources import FrameSource
from plan.identity import DatasetIdentity, content_digest
from release.identities import known_digest

__all__ = ["source_of", "content_hash_of", "identity_of", "BUILTIN_FILES"]


def source_of(loaded: LoadedDataset):
    """The engine source a release reads: the data-folder file (scanned by the engine, out
    of core, a CSV's cells as text), an upload's cells (``LoadedDataset.cells``: each cell
    read on its own, as a CSV's are), else the frame in memory (a built-in)."""
    if loaded.file is not None:
        return loaded.file
    if loaded.cells is not None:
        return FrameSource(loaded.cells)
    return FrameSource(loaded.frame)


#: Built-ins read from a file of ``data/``: a release names them by that file's hash, as
#: ``python -m release --data data/<file>`` does, so both count against one budget.
BUILTIN_FILES = {"Adult (UCI census income)": "adult.csv.gz", "Iris": "iris.csv"}


def content_hash_of(loaded: LoadedDataset) -> str | None:
    """The content digest a release records for ``loaded``: a built-in's source file's (so
    the app and the command line on that file are one dataset in the ledger, even where the
    app's loader tidies the frame); an upload's cells' (what its release reads: the same
    digest as the file it came from); None for a data-folder file
    (``release.run`` digests it)."""
    if loaded.file is None and loaded.cells is not None:
        # an upload: the digest of exactly the cells its release reads, the same function
        # as the same file's on the command line (issue 31; not its typed frame, where
        # "1,500", "inf" or one "?" read otherwise)
        return content_digest(loaded.cells)
    name = BUILTIN_FILES.get(loaded.name)
    if name is None or loaded.file is not None or not loaded.key.startswith("builtin:"):
        return None
    return known_digest(DATA_DIR / name)   # remembered per file version beside the ledger



@st.cache_data(show_spinner="Identifying the data by its content…", max_entries=16)
def _digest(_loaded: LoadedDataset, data_key: str) -> str:
    pinned = content_hash_of(_loaded)
    if pinned is not None:
        return pinned
    source = source_of(_loaded)
    # a data-folder file's digest is remembered per file version beside the ledger
    return known_digest(source.frame if isinstance(source, FrameSource) else source)


def identity_of(loaded: LoadedDataset, data_key: str):
    """The ledger's identity of the loaded data (its name and content digest), cached by the
    data's key (a file's key holds its version)."""
    return DatasetIdentity(loaded.name, _digest(loaded, data_key))
