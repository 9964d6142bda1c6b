"""The one exception type the engine raises, and its data-folder variant.

Every failure a user can cause or meet (a bad column, a file changed or removed, a cluster
down) reaches the caller as :class:`EngineError`, whose message says what is wrong and what
to do; the dashboard shows it with ``st.error`` and keeps the page usable.
"""

from __future__ import annotations


class EngineError(RuntimeError):
    """A dataset or query the engine cannot answer; the message says what to do about it."""


class DataFolderError(EngineError):
    """A name in the server's data folder that cannot be listed or opened safely."""
