"""Datasets for Epsilon Lab (compatibility): the names pages and tests import from here.

The code lives in ``dashboard.data``: ``model`` (ColumnDomain, LoadedDataset), ``columns``
(which columns the queries can use), ``builtins`` (the built-in data), ``upload`` (the CSV
upload parser), ``facts`` and ``truth`` (what the engine computes), ``folder`` (the server's
data folder).
"""

from __future__ import annotations

from dashboard.data.builtins import (  # noqa: F401
    BUILTIN_DATASETS,
    DATA_DIR,
    MAX_SYNTHETIC_ROWS,
    MAX_VISITS_ROWS,
    PERSON_IDS,
    TEACHING_DATASETS,
    VISITS_DEFAULT_MAX_ROWS,
    load_builtin,
    synthetic_census,
)
from dashboard.data.columns import categorical_columns, numeric_columns  # noqa: F401
from dashboard.data.model import (  # noqa: F401
    MAX_CATEGORIES,
    ColumnDomain,
    DatasetError,
    EngineError,
    LoadedDataset,
    profile,
)
from dashboard.data.upload import (  # noqa: F401
    GZIP_EXPANSION_LIMIT,
    MAX_NAME_LENGTH,
    MAX_UPLOAD_COLUMNS,
    MAX_UPLOAD_MB,
    MAX_UPLOAD_ROWS,
    MISSING_MARKERS,
    NUMERIC_SHARE,
    load_upload,
)
